//! The `add_messages` reducer over a persistent list: appending to a long history is
//! O(1) and a snapshot of it is a pointer copy, so a step costs the same at message
//! 3,000 as at message 10.

use std::sync::Arc;

use imbl::{HashSet, Vector};

use crate::message::{Message, MessageKind};

/// The id of a `RemoveMessage` that clears the whole list.
pub const REMOVE_ALL_MESSAGES: &str = "__remove_all__";

#[derive(Clone, Default)]
pub struct MessageList {
    items: Vector<Arc<Message>>,
    ids: HashSet<String>,
    /// Bumped whenever a change is not a pure append (replace, remove), so that views
    /// built from an older version know whether they can be extended in place.
    generation: u64,
}

impl PartialEq for MessageList {
    fn eq(&self, other: &Self) -> bool {
        self.items.len() == other.items.len()
            && self
                .items
                .iter()
                .zip(other.items.iter())
                .all(|(a, b)| Arc::ptr_eq(a, b) || a == b)
    }
}

impl std::fmt::Debug for MessageList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.items.iter()).finish()
    }
}

/// Why `add_messages` refused an update.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MessagesError {
    /// LangGraph's wording, so that ported code matching on it keeps working.
    #[error("Attempting to delete a message with an ID that doesn't exist ('{0}')")]
    RemoveMissing(String),
}

impl MessageList {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn from_messages<I: IntoIterator<Item = Arc<Message>>>(ms: I) -> Self {
        let mut l = Self::new();
        for m in ms {
            l.ids.insert(m.id.clone());
            l.items.push_back(m);
        }
        l
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn get(&self, i: usize) -> Option<&Arc<Message>> {
        self.items.get(i)
    }

    pub fn last(&self) -> Option<&Arc<Message>> {
        self.items.last()
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Arc<Message>> + ExactSizeIterator {
        self.items.iter()
    }

    pub fn to_vec(&self) -> Vec<Arc<Message>> {
        self.items.iter().cloned().collect()
    }

    fn position(&self, id: &str) -> Option<usize> {
        // Replacements usually target recent messages: search from the end.
        (0..self.items.len())
            .rev()
            .find(|&i| self.items[i].id == id)
    }

    /// Merges `updates` into the list as LangGraph's `add_messages` does: a message
    /// whose id is present replaces it, a `RemoveMessage` removes it (or everything,
    /// with id `__remove_all__`), any other message is appended.
    pub fn add(
        &mut self,
        updates: impl IntoIterator<Item = Arc<Message>>,
    ) -> Result<(), MessagesError> {
        for m in updates {
            if matches!(m.kind, MessageKind::Remove) {
                if m.id == REMOVE_ALL_MESSAGES {
                    self.items.clear();
                    self.ids.clear();
                } else {
                    let pos = self
                        .position(&m.id)
                        .ok_or_else(|| MessagesError::RemoveMissing(m.id.clone()))?;
                    self.items.remove(pos);
                    self.ids.remove(&m.id);
                }
                self.generation += 1;
            } else if self.ids.contains(&m.id) {
                let pos = self.position(&m.id).expect("ids and items agree");
                self.items.set(pos, m);
                self.generation += 1;
            } else {
                self.ids.insert(m.id.clone());
                self.items.push_back(m);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn human(id: &str, text: &str) -> Arc<Message> {
        let mut m = Message::human(text);
        m.id = id.into();
        Arc::new(m)
    }

    #[test]
    fn appends_replaces_and_removes_by_id() {
        let mut l = MessageList::new();
        l.add([human("a", "1"), human("b", "2")]).unwrap();
        let g = l.generation();
        l.add([human("c", "3")]).unwrap();
        assert_eq!(l.generation(), g, "a pure append keeps the generation");
        l.add([human("b", "two")]).unwrap();
        assert_eq!(l.get(1).unwrap().content.text(), "two");
        assert_eq!(l.len(), 3);
        l.add([Arc::new(Message::remove("a"))]).unwrap();
        assert_eq!(
            l.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
            ["b", "c"]
        );
        assert!(l.generation() > g);
        assert_eq!(
            l.add([Arc::new(Message::remove("zz"))]),
            Err(MessagesError::RemoveMissing("zz".into()))
        );
        l.add([
            Arc::new(Message::remove(REMOVE_ALL_MESSAGES)),
            human("d", "4"),
        ])
        .unwrap();
        assert_eq!(l.len(), 1);
    }

    #[test]
    fn snapshots_share_structure() {
        let mut l = MessageList::new();
        for i in 0..1000 {
            l.add([human(&i.to_string(), "x")]).unwrap();
        }
        let snap = l.clone();
        l.add([human("new", "y")]).unwrap();
        assert_eq!(snap.len(), 1000);
        assert_eq!(l.len(), 1001);
        assert!(Arc::ptr_eq(snap.get(999).unwrap(), l.get(999).unwrap()));
    }
}
