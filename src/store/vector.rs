//! Exact cosine ranking. Vectors are stored normalised (unit length, or all zeros
//! for a zero vector), so a cosine similarity is one dot product, and a search is one
//! pass of dot products over the candidates' vectors (`index` keeps them as one
//! matrix and the best page in a bounded heap) — no approximate index, so no recall
//! to lose.

/// How a search scores a vector against the query (LangGraph's PostgreSQL
/// `distance_type`), every score higher-is-closer as LangGraph reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Metric {
    /// Cosine similarity: vectors are stored normalised, a score is one dot product.
    #[default]
    Cosine,
    /// The dot product of the vectors as given (stored unnormalised).
    InnerProduct,
    /// Minus the Euclidean distance (stored unnormalised).
    L2,
}

impl Metric {
    /// LangGraph's name for it (`"cosine"`, `"inner_product"`, `"l2"`).
    pub fn parse(name: &str) -> Option<Metric> {
        match name {
            "cosine" => Some(Metric::Cosine),
            "inner_product" => Some(Metric::InnerProduct),
            "l2" => Some(Metric::L2),
            _ => None,
        }
    }

    /// A vector as this metric keeps it: normalised for cosine, as given otherwise.
    pub fn stored(self, v: Vec<f32>) -> Vec<f32> {
        match self {
            Metric::Cosine => normalized(v),
            Metric::InnerProduct | Metric::L2 => v,
        }
    }
}

/// `v` scaled to unit length; a zero vector stays zero (its similarity to anything
/// is 0, as LangGraph's).
pub fn normalized(mut v: Vec<f32>) -> Vec<f32> {
    let norm = dot(&v, &v).sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// The dot product. On x86-64 with AVX2 and FMA (checked once, at run time) the same
/// loop is compiled for those instructions: a search is one pass of dot products, and
/// the wider lanes halve it.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has AVX2 and FMA, checked just above.
            return unsafe { dot_avx2(a, b) };
        }
    }
    dot_lanes(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    dot_lanes(a, b)
}

/// `out[i]` = the dot product of `query` with row `i` of `rows` (row-major, rows of
/// `query.len()` numbers): a search's pass, with the CPU's features checked once for
/// the whole pass rather than once a row.
pub fn scores(query: &[f32], rows: &[f32], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has AVX2 and FMA, checked just above.
            return unsafe { scores_avx2(query, rows, out) };
        }
    }
    scores_lanes(query, rows, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn scores_avx2(query: &[f32], rows: &[f32], out: &mut [f32]) {
    scores_lanes(query, rows, out)
}

#[inline(always)]
fn scores_lanes(query: &[f32], rows: &[f32], out: &mut [f32]) {
    if query.is_empty() {
        return;
    }
    for (row, o) in rows.chunks_exact(query.len()).zip(out) {
        *o = dot_lanes(query, row);
    }
}

/// 32 independent sums (four AVX registers, eight SSE ones), so that the additions
/// do not wait on each other; the compiler vectorises the inner loop.
#[inline(always)]
fn dot_lanes(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 32;
    let mut acc = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ta, tb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            acc[i] += x[i] * y[i];
        }
    }
    let tail: f32 = ta.iter().zip(tb).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

/// A vector as stored in a database: little-endian `f32`s.
pub fn to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A stored vector read back; `None` if the bytes are not whole `f32`s.
pub fn from_bytes(b: &[u8]) -> Option<Vec<f32>> {
    if !b.len().is_multiple_of(4) {
        return None;
    }
    Some(
        b.chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_of_normalised_vectors_is_their_dot() {
        let a = normalized(vec![3.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]);
        let b = normalized(vec![3.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]);
        assert!((dot(&a, &b) - 1.0).abs() < 1e-6);
        let z = normalized(vec![0.0; 9]);
        assert_eq!(dot(&a, &z), 0.0);
    }

    #[test]
    fn scores_are_each_rows_dot() {
        let q = normalized((0..40).map(|i| i as f32).collect());
        let rows: Vec<f32> = (0..40 * 3).map(|i| ((i * 7) % 11) as f32).collect();
        let mut out = vec![0f32; 3];
        scores(&q, &rows, &mut out);
        for (r, o) in rows.chunks_exact(40).zip(&out) {
            assert!((dot(&q, r) - o).abs() < 1e-4);
        }
    }

    #[test]
    fn metrics_keep_vectors_as_they_score_them() {
        assert_eq!(Metric::parse("l2"), Some(Metric::L2));
        assert_eq!(Metric::parse("hamming"), None);
        assert_eq!(Metric::L2.stored(vec![3.0, 4.0]), vec![3.0, 4.0]);
        assert_eq!(Metric::Cosine.stored(vec![3.0, 4.0]), vec![0.6, 0.8]);
    }

    #[test]
    fn bytes_round_trip() {
        let v = vec![1.5f32, -2.25, 0.0];
        assert_eq!(from_bytes(&to_bytes(&v)).unwrap(), v);
        assert!(from_bytes(&[1, 2, 3]).is_none());
    }
}
