//! A read-only view of a graph's state, cheap to clone and hand to tasks.

use std::collections::HashMap;
use std::sync::Arc;

use super::reserved::is_hidden;
use super::value::Val;

#[derive(Clone, Debug)]
pub struct StateView {
    pub(crate) names: Arc<Vec<String>>,
    pub(crate) index: Arc<HashMap<String, usize>>,
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
}
