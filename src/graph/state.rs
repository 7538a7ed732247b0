//! A read-only view of a graph's state, cheap to clone and hand to tasks.

use std::sync::Arc;

use super::reserved::{is_hidden, ROOT};
use super::value::Val;
use super::NameMap;

#[derive(Clone, Debug)]
pub struct StateView {
    pub(crate) names: Arc<Vec<String>>,
    pub(crate) index: Arc<NameMap<usize>>,
    pub(crate) values: Arc<Vec<Option<Val>>>,
    pub(crate) versions: Arc<Vec<u64>>,
}

impl StateView {
    pub fn get(&self, channel: &str) -> Option<&Val> {
        self.index
            .get(channel)
            .and_then(|&i| self.values[i].as_ref())
    }

    /// The channels that have a value, in declaration order (hidden `__` channels
    /// left out).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Val)> {
        self.names
            .iter()
            .zip(self.values.iter())
            .filter(|(n, _)| !is_hidden(n))
            .filter_map(|(n, v)| v.as_ref().map(|v| (n.as_str(), v)))
    }

    /// The version of a channel: it changes whenever the channel's value does.
    pub fn version(&self, channel: &str) -> Option<u64> {
        self.index.get(channel).map(|&i| self.versions[i])
    }

    /// When the view shows the [`ROOT`] channel and nothing else (a graph whose state
    /// is one bare value), that channel's value (`Some(None)` while it is empty).
    pub fn root(&self) -> Option<Option<&Val>> {
        let mut visible = self.names.iter().filter(|n| !is_hidden(n));
        match (visible.next(), visible.next()) {
            (Some(n), None) if n == ROOT => Some(self.get(ROOT)),
            _ => None,
        }
    }

    /// The channels `p` selects, in its order.
    pub(crate) fn project(&self, p: &Projection) -> StateView {
        StateView {
            names: p.names.clone(),
            index: p.index.clone(),
            values: Arc::new(p.from.iter().map(|&i| self.values[i].clone()).collect()),
            versions: Arc::new(p.from.iter().map(|&i| self.versions[i]).collect()),
        }
    }
}

/// Part of the state, in a given order: what a node whose input schema names some of
/// the channels sees, or what a run returns when the graph has an output schema.
#[derive(Clone, Debug)]
pub(crate) struct Projection {
    names: Arc<Vec<String>>,
    index: Arc<NameMap<usize>>,
    /// Each selected channel's position in the full state.
    from: Vec<usize>,
}

impl Projection {
    /// Selects `names` (each a key of `all`, the full state's index).
    pub(crate) fn new(all: &NameMap<usize>, names: &[String]) -> Self {
        Projection {
            names: Arc::new(names.to_vec()),
            index: Arc::new(
                names
                    .iter()
                    .enumerate()
                    .map(|(i, n)| (n.clone(), i))
                    .collect(),
            ),
            from: names.iter().map(|n| all[n]).collect(),
        }
    }

    pub(crate) fn contains(&self, channel: &str) -> bool {
        self.index.contains_key(channel)
    }
}
