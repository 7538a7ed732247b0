//! A namespace's vectors as rows of a matrix kept in fixed-size chunks.
//!
//! Why chunks: one `Vec<f32>` grown by doubling copies itself at every growth, and
//! at 100,000 rows of 384 dimensions the superseded copies add up to ~200 MB that the
//! allocator may not have handed back to the OS yet (W13 once measured 3,775 B an
//! item instead of ~1,780). Here every chunk but the first is allocated once at its
//! full size and never moves; only the first grows (by doubling, up to one chunk), so
//! a namespace of a few items stays small. A full matrix wastes at most its last
//! chunk's unwritten tail, whose pages the OS has not even mapped yet.
//!
//! A search still reads the rows straight through, a chunk at a time, and splits the
//! chunks between the cores.

/// Floats a chunk holds (1 MiB): large enough that a scan reads long runs, small
/// enough that a namespace's unused tail is negligible beside 100,000 items.
const CHUNK_FLOATS: usize = 1 << 18;

/// Rows the first chunk starts with.
const FIRST_ROWS: usize = 8;

/// Rows of `dims` numbers, row-major, in chunks of [`Matrix::chunk_rows`] rows.
/// Invariant: every chunk but the last holds exactly `chunk_rows` rows.
#[derive(Debug, Default)]
pub struct Matrix {
    dims: usize,
    rows: usize,
    chunks: Vec<Vec<f32>>,
}

impl Matrix {
    /// Numbers a row (0 until the first row or [`Matrix::set_dims`]).
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// How many rows it holds.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Sets the row size, once: the first size given stays (a row of another size
    /// is the caller's to refuse).
    pub fn set_dims(&mut self, dims: usize) {
        if self.dims == 0 {
            self.dims = dims;
        }
    }

    /// Rows a chunk holds at this row size.
    pub fn chunk_rows(&self) -> usize {
        (CHUNK_FLOATS / self.dims.max(1)).max(1)
    }

    /// The chunks in order, each a whole number of rows.
    pub fn chunks(&self) -> &[Vec<f32>] {
        &self.chunks
    }

    /// Sizes the first chunk for `rows` rows (up to a chunk) before they come: a copy
    /// loaded from a database knows its size, so its first chunk never grows.
    pub fn reserve(&mut self, rows: usize) {
        if self.chunks.is_empty() && self.dims > 0 && rows > 0 {
            let n = rows.min(self.chunk_rows()) * self.dims;
            self.chunks.push(Vec::with_capacity(n));
        }
    }

    /// Appends `row` (of [`Matrix::dims`] numbers; the caller checks).
    pub fn push(&mut self, row: &[f32]) {
        debug_assert_eq!(row.len(), self.dims);
        let full = self.chunk_rows() * self.dims;
        match self.chunks.last_mut() {
            Some(c) if c.len() < full => {
                if c.len() + row.len() > c.capacity() {
                    // Only a first chunk (or one shrunk by `truncate`) is short of
                    // room: it doubles, never past a chunk.
                    let want = c.capacity().max(FIRST_ROWS * self.dims) * 2;
                    c.reserve_exact(want.min(full) - c.len());
                }
                c.extend_from_slice(row);
            }
            _ => {
                let cap = if self.chunks.is_empty() {
                    (FIRST_ROWS * self.dims).min(full)
                } else {
                    full
                };
                let mut c = Vec::with_capacity(cap);
                c.extend_from_slice(row);
                self.chunks.push(c);
            }
        }
        self.rows += 1;
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> &[f32] {
        let (c, at) = self.place(i);
        &self.chunks[c][at..at + self.dims]
    }

    /// Every row in order.
    pub fn iter_rows(&self) -> impl Iterator<Item = &[f32]> {
        let d = self.dims.max(1);
        self.chunks.iter().flat_map(move |c| c.chunks_exact(d))
    }

    /// Copies row `from` over row `to` (compaction moves rows down: `to < from`).
    pub fn copy_row(&mut self, from: usize, to: usize) {
        let ((cf, af), (ct, at), d) = (self.place(from), self.place(to), self.dims);
        if cf == ct {
            self.chunks[cf].copy_within(af..af + d, at);
        } else if cf > ct {
            let (lo, hi) = self.chunks.split_at_mut(cf);
            lo[ct][at..at + d].copy_from_slice(&hi[0][af..af + d]);
        } else {
            let (lo, hi) = self.chunks.split_at_mut(ct);
            hi[0][at..at + d].copy_from_slice(&lo[cf][af..af + d]);
        }
    }

    /// Keeps the first `rows` rows and gives the chunks past them back.
    pub fn truncate(&mut self, rows: usize) {
        if rows >= self.rows {
            return;
        }
        let cr = self.chunk_rows();
        self.chunks.truncate(rows.div_ceil(cr));
        if let Some(last) = self.chunks.last_mut() {
            last.truncate((rows - (rows.saturating_sub(1) / cr) * cr) * self.dims);
            last.shrink_to_fit();
        }
        self.rows = rows;
    }

    /// The chunk row `i` is in and where its numbers start there.
    fn place(&self, i: usize) -> (usize, usize) {
        let cr = self.chunk_rows();
        (i / cr, (i % cr) * self.dims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(dims: usize, rows: usize) -> Matrix {
        let mut m = Matrix::default();
        m.set_dims(dims);
        for i in 0..rows {
            let r: Vec<f32> = (0..dims).map(|j| (i * 1000 + j) as f32).collect();
            m.push(&r);
        }
        m
    }

    #[test]
    fn rows_span_chunks_that_never_move() {
        let dims = 384;
        let m = filled(dims, 2000);
        let cr = m.chunk_rows();
        assert_eq!(cr, 682);
        assert_eq!(m.chunks().len(), 3);
        // Every chunk after the first was allocated at its full size, once.
        for c in &m.chunks()[1..] {
            assert_eq!(c.capacity(), cr * dims);
        }
        assert_eq!(m.chunks()[0].len(), cr * dims);
        assert_eq!(m.row(1500)[3], 1_500_003.0);
        assert_eq!(m.iter_rows().count(), 2000);
        assert_eq!(m.iter_rows().nth(681).unwrap()[0], 681_000.0);
    }

    #[test]
    fn a_small_matrix_stays_small() {
        let m = filled(384, 3);
        assert_eq!(m.chunks().len(), 1);
        assert!(m.chunks()[0].capacity() <= FIRST_ROWS * 384);
        let mut r = Matrix::default();
        r.set_dims(4);
        r.reserve(5);
        assert_eq!(r.chunks()[0].capacity(), 20, "reserved exactly");
    }

    #[test]
    fn copy_and_truncate_keep_the_invariant() {
        let mut m = filled(300, 2000);
        let cr = m.chunk_rows();
        m.copy_row(cr + 5, 2);
        m.copy_row(10, 3);
        m.copy_row(1, 1999);
        assert_eq!(m.row(2)[0], ((cr + 5) * 1000) as f32);
        assert_eq!(m.row(3)[7], 10_007.0);
        assert_eq!(m.row(1999)[0], 1000.0);
        m.truncate(cr + 1);
        assert_eq!(m.rows(), cr + 1);
        assert_eq!(m.chunks().len(), 2);
        assert_eq!(m.chunks()[1].len(), 300);
        // It grows again past a shrunk last chunk.
        for _ in 0..cr {
            m.push(&[1.0; 300]);
        }
        assert_eq!(m.chunks().len(), 3);
        assert_eq!(m.chunks()[1].len(), cr * 300);
        m.truncate(0);
        assert_eq!((m.rows(), m.chunks().len()), (0, 0));
    }
}
