//! The in-process store: namespaces in order (a `BTreeMap`, so those under a prefix
//! are one range), items of a namespace in insertion order (as LangGraph's
//! `InMemoryStore` lists them), each namespace's vectors one matrix beside its items
//! (`index::Space`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{RwLock, RwLockWriteGuard};

use super::index::{rank, Space};
use super::namespace::{self, has_prefix, Namespace};
use super::{check_puts, now_secs, parse_object, ttl};
use super::{
    Item, ListNamespaces, Op, OpResult, PutValue, Result, Search, StoreBackend, StoreError,
};
use async_trait::async_trait;

/// One stored item (its vectors are rows of its namespace's matrix). Kept small:
/// W13 holds 100,000 of them, so the TTL (which most items lack) is boxed apart —
/// one pointer, null without a TTL, instead of two `Option<f64>`s (40 bytes an
/// entry, not 64).
#[derive(Debug)]
struct Entry {
    value: Box<str>,
    created_at: f64,
    updated_at: f64,
    ttl: Option<Box<Ttl>>,
}

/// An item's TTL: when it expires, and the minutes a refresh restarts.
#[derive(Debug)]
struct Ttl {
    expires_at: f64,
    minutes: f64,
}

impl Entry {
    fn expires_at(&self) -> Option<f64> {
        self.ttl.as_ref().map(|t| t.expires_at)
    }

    fn item(&self, ns: &Namespace, key: &str, score: Option<f32>) -> Item {
        Item {
            namespace: ns.clone(),
            key: key.to_owned(),
            value: self.value.to_string(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            score,
        }
    }

    fn refresh(&mut self, now: f64) {
        if let Some(t) = &mut self.ttl {
            t.expires_at = ttl::deadline(t.minutes, now);
        }
    }
}

type Spaces = BTreeMap<Namespace, Space<Entry>>;

/// LangGraph's `InMemoryStore`, in Rust: lost when the process ends.
#[derive(Debug, Default)]
pub struct MemoryStore {
    spaces: RwLock<Spaces>,
    dims: Option<usize>,
    closed: AtomicBool,
}

impl MemoryStore {
    /// A store whose vectors (if any) have `dims` numbers.
    pub fn new(dims: Option<usize>) -> Self {
        MemoryStore {
            dims,
            ..Default::default()
        }
    }

    fn write(&self) -> RwLockWriteGuard<'_, Spaces> {
        self.spaces.write().unwrap_or_else(|p| p.into_inner())
    }

    /// How many items the store holds (expired ones not yet swept included).
    pub fn len(&self) -> usize {
        let spaces = self.spaces.read().unwrap_or_else(|p| p.into_inner());
        spaces.values().map(Space::len).sum()
    }

    /// Whether the store holds no item.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Runs `ops` synchronously (what [`StoreBackend::batch`] does; nothing here
    /// waits).
    pub fn run(&self, ops: Vec<Op>) -> Result<Vec<OpResult>> {
        if self.closed.load(Ordering::Acquire) {
            return Err(StoreError::Closed);
        }
        check_puts(&ops, self.dims)?;
        let mut spaces = self.write();
        let now = now_secs();
        Ok(ops
            .into_iter()
            .map(|op| match op {
                Op::Get {
                    namespace,
                    key,
                    refresh_ttl,
                } => OpResult::Item(get(&mut spaces, &namespace, &key, refresh_ttl, now)),
                Op::Put {
                    namespace,
                    key,
                    value,
                } => {
                    put(&mut spaces, namespace, key, value, now);
                    OpResult::Done
                }
                Op::Search(s) => OpResult::Items(search(&mut spaces, &s, now)),
                Op::ListNamespaces(l) => OpResult::Namespaces(list(&spaces, &l, now)),
            })
            .collect())
    }

    /// Deletes the expired items; returns how many.
    pub fn sweep_now(&self) -> usize {
        let now = now_secs();
        let mut spaces = self.write();
        let mut n = 0;
        spaces.retain(|_, items| {
            n += items.retain(|e| !ttl::expired(e.expires_at(), now));
            !items.is_empty()
        });
        n
    }
}

fn get(spaces: &mut Spaces, ns: &Namespace, key: &str, refresh: bool, now: f64) -> Option<Item> {
    let e = spaces.get_mut(ns)?.get_mut(key)?;
    if ttl::expired(e.expires_at(), now) {
        return None;
    }
    if refresh {
        e.refresh(now);
    }
    Some(e.item(ns, key, None))
}

fn put(spaces: &mut Spaces, ns: Namespace, key: String, value: Option<PutValue>, now: f64) {
    let Some(v) = value else {
        if let Some(items) = spaces.get_mut(&ns) {
            items.remove(&key, true);
            if items.is_empty() {
                spaces.remove(&ns);
            }
        }
        return;
    };
    let items = spaces.entry(ns).or_default();
    let created_at = match items.get(&key) {
        Some(old) if !ttl::expired(old.expires_at(), now) => old.created_at,
        _ => now,
    };
    let entry = Entry {
        value: v.json.into_boxed_str(),
        created_at,
        updated_at: now,
        ttl: v.ttl_minutes.map(|minutes| {
            Box::new(Ttl {
                expires_at: ttl::deadline(minutes, now),
                minutes,
            })
        }),
    };
    items.put(&key, entry, v.vectors.into_iter().map(|(_, x)| x).collect());
}

fn search(spaces: &mut Spaces, s: &Search, now: f64) -> Vec<Item> {
    let under = || {
        spaces
            .range(s.prefix.clone()..)
            .take_while(|(ns, _)| has_prefix(ns, &s.prefix))
    };
    let live = |e: &Entry| {
        !ttl::expired(e.expires_at(), now)
            && s.filter
                .as_ref()
                .is_none_or(|f| parse_object(&e.value).is_some_and(|v| f.matches(&v)))
    };
    let page: Vec<(Option<f32>, Namespace, String)> = match &s.query {
        Some(q) => {
            let names: Vec<&Namespace> = under().map(|(ns, _)| ns).collect();
            let want = s.offset.saturating_add(s.limit);
            let r = rank(under().map(|(_, sp)| sp), q, want, s.limit, |_, _, e| {
                live(e)
            });
            let mut kept: Vec<_> = r
                .hits
                .into_iter()
                .skip(s.offset)
                .map(|(sc, si, k)| (Some(sc), names[si].clone(), k.to_owned()))
                .collect();
            // Items without vectors come after the ranked ones, as in LangGraph.
            let room = s.limit.saturating_sub(kept.len());
            kept.extend(
                r.plain
                    .into_iter()
                    .take(room)
                    .map(|(si, k)| (None, names[si].clone(), k.to_owned())),
            );
            kept
        }
        None => under()
            .flat_map(|(ns, items)| items.iter().map(move |(k, e)| (ns, k, e)))
            .filter(|(_, _, e)| live(e))
            .skip(s.offset)
            .take(s.limit)
            .map(|(ns, k, _)| (None, ns.clone(), k.to_owned()))
            .collect(),
    };
    page.into_iter()
        .filter_map(|(score, ns, key)| {
            let e = spaces.get_mut(&ns)?.get_mut(&key)?;
            if s.refresh_ttl {
                e.refresh(now);
            }
            Some(e.item(&ns, &key, score))
        })
        .collect()
}

fn list(spaces: &Spaces, op: &ListNamespaces, now: f64) -> Vec<Namespace> {
    let live = spaces
        .iter()
        .filter(|(_, items)| {
            items
                .iter()
                .any(|(_, e)| !ttl::expired(e.expires_at(), now))
        })
        .map(|(ns, _)| ns.as_slice());
    namespace::list(live, op)
}

#[async_trait]
impl StoreBackend for MemoryStore {
    async fn setup(&self) -> Result<()> {
        Ok(())
    }

    async fn batch(&self, ops: Vec<Op>) -> Result<Vec<OpResult>> {
        self.run(ops)
    }

    async fn sweep(&self) -> Result<usize> {
        if self.closed.load(Ordering::Acquire) {
            return Err(StoreError::Closed);
        }
        Ok(self.sweep_now())
    }

    async fn close(&self) -> Result<()> {
        self.closed.store(true, Ordering::Release);
        Ok(())
    }
}
