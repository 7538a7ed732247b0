//! One namespace's items with their vectors in one contiguous matrix, and the exact
//! ranking over the namespaces under a prefix — shared by the three backends (the
//! in-memory store keeps its items here; SQLite and PostgreSQL keep their in-process
//! copy of the vectors here).
//!
//! Why a matrix: a search is one pass of dot products over every vector, bound by
//! memory bandwidth. Vectors boxed one per item cost a pointer chase and an
//! allocation header each (~15 % more memory at 384 dimensions) and scatter the pass;
//! rows of a [`Matrix`] (fixed-size chunks, see `matrix`) are read straight through,
//! split between the cores, with no allocation per item. A replaced or deleted item's rows become holes (skipped) and
//! the matrix is compacted when holes outnumber live rows.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap};
use std::ops::Bound;

use indexmap::IndexMap;

use super::matrix::Matrix;
use super::vector::{dot, normalized, scores, Metric};

/// Rows past which a scan is split between threads: below it (~1.5 MB at 384
/// dimensions) starting a thread costs more than it saves.
const PARALLEL_FLOATS: usize = 1 << 19;

/// No owner: a hole left by a replaced or deleted item.
const HOLE: u32 = u32::MAX;

/// An item of a [`Space`]: the backend's own data (`meta`) and its rows.
#[derive(Debug)]
pub struct Slot<E> {
    pub meta: E,
    first: u32,
    count: u32,
}

/// A namespace's items in order (insertion order; a replaced item keeps its place)
/// with their vectors (as `metric` keeps them: normalised for cosine) as rows of one
/// matrix.
#[derive(Debug)]
pub struct Space<E> {
    items: IndexMap<Box<str>, Slot<E>>,
    metric: Metric,
    /// The rows; their size is set by the first vector.
    data: Matrix,
    /// Each row's item (its position in `items`), or [`HOLE`].
    owner: Vec<u32>,
    holes: usize,
}

impl<E> Default for Space<E> {
    fn default() -> Self {
        Space {
            items: IndexMap::new(),
            metric: Metric::Cosine,
            data: Matrix::default(),
            owner: Vec::new(),
            holes: 0,
        }
    }
}

impl<E> Space<E> {
    /// An empty space whose vectors are scored by `metric`.
    pub fn with_metric(metric: Metric) -> Self {
        Space {
            metric,
            ..Space::default()
        }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn get(&self, key: &str) -> Option<&E> {
        self.items.get(key).map(|s| &s.meta)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut E> {
        self.items.get_mut(key).map(|s| &mut s.meta)
    }

    /// The items in order, with their keys.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &E)> {
        self.items.iter().map(|(k, s)| (&**k, &s.meta))
    }

    /// Makes room for `rows` more vectors of `dims` numbers, exactly: a copy loaded
    /// from a database knows its size, and a list grown by doubling would keep up to
    /// twice its bytes (and leave the smaller copies to the allocator).
    fn reserve(&mut self, rows: usize, dims: usize) {
        self.data.set_dims(dims);
        if self.data.dims() == dims {
            self.data.reserve(rows);
            self.owner.reserve_exact(rows);
        }
    }

    /// Inserts or replaces `key` (a replaced item keeps its place), its vectors
    /// normalised. A vector whose size differs from the space's first is dropped
    /// (`check_puts` refuses those before a write; this guards a database written
    /// with another `dims`).
    pub fn put(&mut self, key: &str, meta: E, vectors: Vec<Vec<f32>>) {
        let pos = match self.items.get_index_of(key) {
            Some(pos) => {
                self.free_rows(pos);
                pos
            }
            None => {
                let slot = Slot {
                    meta,
                    first: 0,
                    count: 0,
                };
                let (pos, _) = self.items.insert_full(key.into(), slot);
                return self.put_rows(pos, vectors);
            }
        };
        self.items[pos].meta = meta;
        self.put_rows(pos, vectors);
    }

    /// Appends `vectors` as the rows of the item at `pos` (whose old rows are freed).
    fn put_rows(&mut self, pos: usize, vectors: Vec<Vec<f32>>) {
        let first = self.owner.len() as u32;
        let mut count = 0;
        for v in vectors {
            self.data.set_dims(v.len());
            if v.len() != self.data.dims() || v.is_empty() {
                continue;
            }
            self.data.push(&self.metric.stored(v));
            self.owner.push(pos as u32);
            count += 1;
        }
        let slot = &mut self.items[pos];
        (slot.first, slot.count) = (first, count);
        self.maybe_compact();
    }

    /// Removes `key`. `keep_order`: the later items keep their order (an O(n) shift,
    /// as LangGraph's dict); otherwise the last item takes its place.
    pub fn remove(&mut self, key: &str, keep_order: bool) -> Option<E> {
        let pos = self.items.get_index_of(key)?;
        self.free_rows(pos);
        let (_, slot) = if keep_order {
            let out = self.items.shift_remove_index(pos)?;
            let p = pos as u32;
            self.owner
                .iter_mut()
                .filter(|o| **o != HOLE && **o > p)
                .for_each(|o| *o -= 1);
            out
        } else {
            let out = self.items.swap_remove_index(pos)?;
            if let Some(moved) = self.items.get_index(pos).map(|(_, s)| (s.first, s.count)) {
                let (f, c) = (moved.0 as usize, moved.1 as usize);
                self.owner[f..f + c]
                    .iter_mut()
                    .for_each(|o| *o = pos as u32);
            }
            out
        };
        self.maybe_compact();
        Some(slot.meta)
    }

    /// Keeps the items `keep` accepts, in order; returns how many were removed.
    pub fn retain(&mut self, mut keep: impl FnMut(&E) -> bool) -> usize {
        let (before, owner, mut freed) = (self.items.len(), &mut self.owner, 0);
        self.items.retain(|_, s| {
            let kept = keep(&s.meta);
            if !kept {
                let (f, c) = (s.first as usize, s.count as usize);
                owner[f..f + c].fill(HOLE);
                freed += c;
            }
            kept
        });
        self.holes += freed;
        let removed = before - self.items.len();
        if removed > 0 {
            for (pos, s) in self.items.values().enumerate() {
                let (f, c) = (s.first as usize, s.count as usize);
                self.owner[f..f + c].fill(pos as u32);
            }
            self.maybe_compact();
        }
        removed
    }

    fn free_rows(&mut self, pos: usize) {
        let slot = &mut self.items[pos];
        let (f, c) = (slot.first as usize, slot.count as usize);
        slot.count = 0;
        self.owner[f..f + c].iter_mut().for_each(|o| *o = HOLE);
        self.holes += c;
    }

    /// Rewrites the matrix without its holes once they are more than half of it, so
    /// that replacing items does not grow it without bound.
    fn maybe_compact(&mut self) {
        if self.holes == 0 || self.holes * 2 < self.owner.len() {
            return;
        }
        let mut next = 0usize;
        for (pos, slot) in self.items.values_mut().enumerate() {
            let (f, c) = (slot.first as usize, slot.count as usize);
            if c > 0 && f != next {
                (0..c).for_each(|i| self.data.copy_row(f + i, next + i));
            }
            self.owner[next..next + c]
                .iter_mut()
                .for_each(|o| *o = pos as u32);
            slot.first = next as u32;
            next += c;
        }
        self.data.truncate(next);
        self.owner.truncate(next);
        self.owner.shrink_to_fit();
        self.holes = 0;
    }

    /// Each item's best score against `query` over its vectors, at its position;
    /// `None` for an item without vectors (or when the sizes differ).
    fn best_scores(&self, query: &Query) -> Vec<Option<f32>> {
        let mut best = vec![None; self.items.len()];
        let q = if self.metric == Metric::Cosine {
            &query.unit
        } else {
            &query.raw
        };
        if self.data.dims() == 0 || q.len() != self.data.dims() || self.owner.is_empty() {
            return best;
        }
        let mut rows = row_scores(q, &self.data);
        if self.metric == Metric::L2 {
            // |q - v| from the dot product: |q|² + |v|² - 2 q·v.
            for (s, row) in rows.iter_mut().zip(self.data.iter_rows()) {
                *s = -(query.norm2 + dot(row, row) - 2.0 * *s).max(0.0).sqrt();
            }
        }
        for (&o, s) in self.owner.iter().zip(rows) {
            if o != HOLE {
                let b = &mut best[o as usize];
                *b = Some(b.map_or(s, |x: f32| x.max(s)));
            }
        }
        best
    }
}

/// Every row's dot product with `query`, the matrix's chunks split between the
/// cores when there are enough rows to pay for a thread.
fn row_scores(query: &[f32], data: &Matrix) -> Vec<f32> {
    let mut out = vec![0f32; data.rows()];
    let cr = data.chunk_rows();
    let score_all = |chunks: &[Vec<f32>], out: &mut [f32]| {
        for (chunk, part) in chunks.iter().zip(out.chunks_mut(cr)) {
            scores(query, chunk, part);
        }
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads < 2 || data.rows() * data.dims() < PARALLEL_FLOATS {
        score_all(data.chunks(), &mut out);
        return out;
    }
    // Every chunk but the last is full, so a group of `per` chunks is `per * cr` rows.
    let per = data.chunks().len().div_ceil(threads);
    std::thread::scope(|scope| {
        for (group, part) in data.chunks().chunks(per).zip(out.chunks_mut(per * cr)) {
            scope.spawn(move || score_all(group, part));
        }
    });
    out
}

/// A search's query in the forms the metrics score with.
struct Query {
    raw: Vec<f32>,
    unit: Vec<f32>,
    /// `|raw|²`, for L2.
    norm2: f32,
}

impl Query {
    fn new(raw: &[f32]) -> Self {
        Query {
            raw: raw.to_vec(),
            unit: normalized(raw.to_vec()),
            norm2: dot(raw, raw),
        }
    }
}

/// One ranked hit: its score, the space it is in (the caller's index) and its key.
pub type Hit<'a> = (f32, usize, &'a str);

/// A ranked search's candidates: the best `want` items with vectors, best first,
/// and (in order) up to `plain_cap` accepted items without vectors, which LangGraph
/// lists after the ranked ones.
pub struct Ranked<'a> {
    pub hits: Vec<Hit<'a>>,
    pub plain: Vec<(usize, &'a str)>,
}

/// Ranks the items of `spaces` (the namespaces under the search's prefix, numbered
/// by their position) that `accept` takes, by their score against `query` (each
/// space's metric: cosine similarity unless set otherwise), keeping
/// the best `want` in a bounded heap (no list of every score).
pub fn rank<'a, E: 'a>(
    spaces: impl IntoIterator<Item = &'a Space<E>>,
    query: &[f32],
    want: usize,
    plain_cap: usize,
    mut accept: impl FnMut(usize, &str, &E) -> bool,
) -> Ranked<'a> {
    let query = Query::new(query);
    let mut heap: BinaryHeap<Worst<'a>> = BinaryHeap::with_capacity(want + 1);
    let mut plain = Vec::new();
    let mut seq = 0usize;
    for (si, space) in spaces.into_iter().enumerate() {
        let best = space.best_scores(&query);
        for ((key, slot), score) in space.items.iter().zip(best) {
            seq += 1;
            // The heap's test first: `accept` may parse the item's JSON.
            let wanted = match score {
                Some(s) => want > 0 && (heap.len() < want || heap.peek().is_some_and(|w| s > w.0)),
                None => plain.len() < plain_cap,
            };
            if !wanted || !accept(si, key, &slot.meta) {
                continue;
            }
            match score {
                Some(s) => {
                    heap.push(Worst(s, seq, (s, si, key)));
                    if heap.len() > want {
                        heap.pop();
                    }
                }
                None => plain.push((si, &**key)),
            }
        }
    }
    // Best first; equal scores in the items' order (as a stable sort would have them).
    let hits = heap.into_sorted_vec().into_iter().map(|w| w.2).collect();
    Ranked { hits, plain }
}

/// A database store's in-process copy of its vectors (SQLite's, PostgreSQL's): a
/// search scores the copy rather than reading every vector back from the database
/// (~100 ms for 100,000 vectors from SQLite, against a few ms in memory). Keyed by the
/// namespace's text (`namespace::to_text`); `version` is the database's change
/// counter when the copy was loaded (`None`: not loaded).
#[derive(Debug)]
pub struct Copy<E> {
    pub version: Option<i64>,
    pub spaces: BTreeMap<String, Space<E>>,
    /// How every space's vectors are scored.
    pub metric: Metric,
}

impl<E> Default for Copy<E> {
    fn default() -> Self {
        Copy::with_metric(Metric::Cosine)
    }
}

/// A database search's page: (score, namespace text, key), best first.
pub type Page = Vec<(f32, String, String)>;

impl<E> Copy<E> {
    /// An empty copy (not loaded) whose vectors are scored by `metric`.
    pub fn with_metric(metric: Metric) -> Self {
        Copy {
            version: None,
            spaces: BTreeMap::new(),
            metric,
        }
    }

    /// The space `p`, made (with the copy's metric) if missing.
    pub fn space(&mut self, p: String) -> &mut Space<E> {
        let metric = self.metric;
        self.spaces
            .entry(p)
            .or_insert_with(|| Space::with_metric(metric))
    }

    /// The spaces under the namespace text `p` (itself and `p.…`; every space when
    /// `p` is empty), in order.
    fn under<'a>(&'a self, p: &'a str) -> impl Iterator<Item = (&'a String, &'a Space<E>)> {
        let (lo, hi) = (format!("{p}."), format!("{p}/"));
        self.spaces
            .range::<str, _>((Bound::Included(p), Bound::Unbounded))
            // `/` follows `.`: past `p/` no name starts with `p.`.
            .take_while(move |(sp, _)| p.is_empty() || sp.as_str() < hi.as_str())
            .filter(move |(sp, _)| p.is_empty() || sp.as_str() == p || sp.starts_with(&lo))
    }

    /// [`rank`] over the spaces under `p`, `accept` given the space's name: the best
    /// `want` hits, and up to `plain_cap` items without vectors.
    pub fn rank(
        &self,
        p: &str,
        query: &[f32],
        want: usize,
        plain_cap: usize,
        mut accept: impl FnMut(&str, &str, &E) -> bool,
    ) -> (Page, Vec<(String, String)>) {
        let names: Vec<&String> = self.under(p).map(|(n, _)| n).collect();
        let r = rank(
            self.under(p).map(|(_, sp)| sp),
            query,
            want,
            plain_cap,
            |si, k, e| accept(names[si], k, e),
        );
        let hits = r
            .hits
            .into_iter()
            .map(|(sc, si, k)| (sc, names[si].clone(), k.to_owned()))
            .collect();
        let plain = r
            .plain
            .into_iter()
            .map(|(si, k)| (names[si].clone(), k.to_owned()))
            .collect();
        (hits, plain)
    }

    /// The item `key` of the space `p`, if the copy holds it.
    pub fn get_mut(&mut self, p: &str, key: &str) -> Option<&mut E> {
        self.spaces.get_mut(p)?.get_mut(key)
    }

    /// Removes `key` from the space `p` (order is not kept: a database search
    /// orders by the database).
    pub fn remove(&mut self, p: &str, key: &str) {
        if let Some(space) = self.spaces.get_mut(p) {
            space.remove(key, false);
        }
    }
}

/// Builds a [`Copy`] from a database's rows: one row per (item, vector), an item
/// without vectors once with `None`, each item's rows together (a join ordered by
/// namespace and key) — so no item's vectors are held twice while loading.
#[derive(Debug)]
pub struct Loader<E> {
    copy: Copy<E>,
    current: Option<(String, String, E, Vec<Vec<f32>>)>,
}

impl<E> Loader<E> {
    pub fn new(version: i64, metric: Metric) -> Self {
        let mut copy = Copy::with_metric(metric);
        copy.version = Some(version);
        Loader {
            copy,
            current: None,
        }
    }

    /// Sizes the space `p` for its `rows` vectors of `dims` numbers before its rows
    /// come (what the database counts in one query).
    pub fn reserve(&mut self, p: &str, rows: usize, dims: usize) {
        let space = self.copy.space(p.to_owned());
        space.reserve(rows, dims);
    }

    pub fn push(&mut self, p: &str, key: &str, meta: E, vector: Option<Vec<f32>>) {
        let same = matches!(&self.current, Some((cp, ck, _, _)) if cp == p && ck == key);
        if !same {
            self.flush();
            self.current = Some((p.to_owned(), key.to_owned(), meta, Vec::new()));
        }
        if let (Some((_, _, _, vs)), Some(v)) = (&mut self.current, vector) {
            vs.push(v);
        }
    }

    fn flush(&mut self) {
        if let Some((p, k, meta, vs)) = self.current.take() {
            self.copy.space(p).put(&k, meta, vs);
        }
    }

    pub fn finish(mut self) -> Copy<E> {
        self.flush();
        self.copy
    }
}

/// A hit (with its score and its place in the scan) ordered so that the heap's top
/// is the worst kept, the one to drop: the lowest score, and of equal scores the
/// later item.
struct Worst<'a>(f32, usize, Hit<'a>);

impl PartialEq for Worst<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Worst<'_> {}
impl PartialOrd for Worst<'_> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Worst<'_> {
    fn cmp(&self, o: &Self) -> Ordering {
        o.0.total_cmp(&self.0).then(self.1.cmp(&o.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space(n: usize) -> Space<usize> {
        let mut s = Space::default();
        for i in 0..n {
            let v = vec![(i as f32).cos(), (i as f32).sin(), 0.5];
            s.put(&format!("k{i}"), i, vec![v]);
        }
        s
    }

    fn exact(s: &Space<usize>, q: &[f32], k: usize) -> Vec<String> {
        let q = normalized(q.to_vec());
        let mut all: Vec<(f32, &str)> = s
            .items
            .iter()
            .map(|(key, sl)| {
                let row = s.data.row(sl.first as usize);
                let d: f32 = row.iter().zip(&q).map(|(a, b)| a * b).sum();
                (d, &**key)
            })
            .collect();
        all.sort_by(|a, b| b.0.total_cmp(&a.0));
        all.into_iter().take(k).map(|(_, k)| k.to_owned()).collect()
    }

    fn keys(r: &Ranked<'_>) -> Vec<String> {
        r.hits.iter().map(|h| h.2.to_owned()).collect()
    }

    #[test]
    fn ranks_exactly_through_replacements_and_deletes() {
        let mut s = space(200);
        for i in (0..200).step_by(3) {
            s.put(&format!("k{i}"), i, vec![vec![1.0, (i as f32) * 0.01, 0.0]]);
        }
        for i in (0..200).step_by(7) {
            s.remove(&format!("k{i}"), i % 2 == 0);
        }
        let q = [0.3, -0.2, 0.9];
        let got = rank([&s], &q, 10, 0, |_, _, _| true);
        assert_eq!(keys(&got), exact(&s, &q, 10));
    }

    #[test]
    fn compaction_keeps_every_item_its_vector() {
        let mut s = space(50);
        for round in 0..4 {
            for i in 0..50 {
                s.put(
                    &format!("k{i}"),
                    i,
                    vec![vec![i as f32 + round as f32, 1.0, 0.0]],
                );
            }
        }
        assert!(
            s.owner.len() <= 100,
            "holes are reclaimed: {}",
            s.owner.len()
        );
        assert_eq!(s.len(), 50);
        let q = [1.0, 0.0, 0.0];
        assert_eq!(
            keys(&rank([&s], &q, 5, 0, |_, _, _| true)),
            exact(&s, &q, 5)
        );
    }

    #[test]
    fn accept_filters_and_plain_items_follow() {
        let mut s = space(30);
        s.put("novec", 99, vec![]);
        let q = [1.0, 0.0, 0.0];
        let r = rank([&s], &q, 4, 3, |_, _, m| m % 2 == 0 || *m == 99);
        assert_eq!(r.hits.len(), 4);
        assert!(r
            .hits
            .iter()
            .all(|h| h.2[1..].parse::<usize>().unwrap() % 2 == 0));
        assert!(r.hits.windows(2).all(|w| w[0].0 >= w[1].0));
        assert_eq!(r.plain, vec![(0, "novec")]);
        // Equal scores keep the items' order.
        let mut t: Space<usize> = Space::default();
        for i in 0..20 {
            t.put(&format!("t{i}"), i, vec![vec![1.0, (i % 2) as f32, 0.0]]);
        }
        let tied: Vec<&str> = rank([&t], &q, 6, 0, |_, _, _| true)
            .hits
            .iter()
            .map(|h| h.2)
            .collect();
        assert_eq!(tied, ["t0", "t2", "t4", "t6", "t8", "t10"]);
        assert!(rank([&s], &q, 0, 0, |_, _, _| true).hits.is_empty());
    }

    #[test]
    fn a_copy_ranks_only_the_namespaces_under_the_prefix() {
        let mut c: Copy<()> = Copy::default();
        for (i, ns) in ["a", "a.b", "a-b", "ab", "a.b.c", "b"].iter().enumerate() {
            let v = vec![1.0, i as f32 * 0.1, 0.0];
            c.spaces
                .entry(ns.to_string())
                .or_default()
                .put("k", (), vec![v]);
        }
        let under = |p: &str| {
            let (hits, _) = c.rank(p, &[1.0, 0.0, 0.0], 10, 0, |_, _, _| true);
            let mut ns: Vec<String> = hits.into_iter().map(|h| h.1).collect();
            ns.sort();
            ns
        };
        assert_eq!(under("a"), ["a", "a.b", "a.b.c"]);
        assert_eq!(under("a.b"), ["a.b", "a.b.c"]);
        assert_eq!(under("").len(), 6);
    }

    #[test]
    fn each_metric_scores_and_ranks_as_langgraph_reports() {
        // a is nearer the query by angle, b by distance, c by inner product.
        let vs = [
            ("a", vec![0.1, 0.0]),
            ("b", vec![0.9, 0.3]),
            ("c", vec![5.0, 5.0]),
        ];
        let q = [1.0, 0.0];
        let ranked = |metric: Metric| {
            let mut c: Copy<()> = Copy::with_metric(metric);
            for (k, v) in &vs {
                c.space("n".into()).put(k, (), vec![v.clone()]);
            }
            c.rank("n", &q, 3, 0, |_, _, _| true).0
        };
        let cos = ranked(Metric::Cosine);
        assert_eq!(cos[0].2, "a");
        assert!((cos[0].0 - 1.0).abs() < 1e-6);
        let ip = ranked(Metric::InnerProduct);
        assert_eq!(ip[0].2, "c");
        assert!((ip[0].0 - 5.0).abs() < 1e-5);
        let l2 = ranked(Metric::L2);
        assert_eq!(l2[0].2, "b");
        let want = -(0.1f32 * 0.1 + 0.3 * 0.3).sqrt();
        assert!((l2[0].0 - want).abs() < 1e-5, "{} vs {want}", l2[0].0);
    }

    #[test]
    fn a_loader_groups_an_items_rows() {
        let mut l: Loader<u8> = Loader::new(7, Metric::Cosine);
        l.reserve("a", 2, 2);
        l.push("a", "k1", 1, Some(vec![1.0, 0.0]));
        l.push("a", "k1", 1, Some(vec![0.0, 1.0]));
        l.push("a", "k2", 2, None);
        l.push("b", "k1", 3, Some(vec![1.0, 1.0]));
        let c = l.finish();
        assert_eq!(c.version, Some(7));
        let (hits, plain) = c.rank("a", &[0.0, 1.0], 5, 5, |_, _, _| true);
        assert_eq!(hits.len(), 1);
        assert!(
            (hits[0].0 - 1.0).abs() < 1e-6,
            "the best of k1's two vectors"
        );
        assert_eq!(plain, [("a".to_owned(), "k2".to_owned())]);
        assert_eq!(c.spaces["b"].get("k1"), Some(&3));
        assert_eq!(
            c.spaces["a"].data.chunks()[0].capacity(),
            4,
            "reserved exactly"
        );
    }

    #[test]
    fn a_large_space_is_scored_in_parallel_the_same() {
        let mut s: Space<usize> = Space::default();
        let dims = 64;
        for i in 0..(PARALLEL_FLOATS / dims + 1000) {
            let v: Vec<f32> = (0..dims)
                .map(|j| ((i * 31 + j * 17) % 97) as f32 - 48.0)
                .collect();
            s.put(&format!("k{i}"), i, vec![v]);
        }
        let q: Vec<f32> = (0..dims).map(|j| (j % 5) as f32 - 2.0).collect();
        assert!(s.data.chunks().len() > 2, "the rows span chunks");
        let rows = row_scores(&normalized(q.clone()), &s.data);
        let flat: Vec<f32> = s.data.iter_rows().flatten().copied().collect();
        let mut one = vec![0f32; rows.len()];
        scores(&normalized(q), &flat, &mut one);
        assert_eq!(rows, one);
    }
}
