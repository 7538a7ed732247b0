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
    /// Shared strings, not `String`s: appending to a list whose older version is still
    /// held (the previous step's state, a snapshot) copies the set's path of nodes, and
    /// a node copy clones every id in it — a reference-count increment each, where a
    /// `String` would be an allocation and a copy (measured in W9: ~40 µs a turn at
    /// 2,000 messages).
    ids: HashSet<Arc<str>>,
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
            l.ids.insert(Arc::from(m.id.as_str()));
            l.items.push_back(m);
        }
        l
    }

    /// Whether a message of this id is in the list.
    pub fn contains_id(&self, id: &str) -> bool {
        self.ids.contains(id)
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
    /// whose id is present replaces it in place, any other message is appended, and a
    /// `RemoveMessage` marks its id for removal once the whole update is merged (so a
    /// message removed twice in one update is removed once, and one removed then sent
    /// again stays where it was). A `RemoveMessage` with id `__remove_all__` makes the
    /// list the update's messages after it. On error the list is left unchanged.
    pub fn add(
        &mut self,
        updates: impl IntoIterator<Item = Arc<Message>>,
    ) -> Result<(), MessagesError> {
        let updates: Vec<Arc<Message>> = updates.into_iter().collect();
        let is_remove = |m: &Arc<Message>| matches!(m.kind, MessageKind::Remove);
        if let Some(i) = updates
            .iter()
            .rposition(|m| is_remove(m) && m.id == REMOVE_ALL_MESSAGES)
        {
            let generation = self.generation + 1;
            *self = Self::from_messages(updates[i + 1..].iter().cloned());
            self.generation = generation;
            return Ok(());
        }
        let mut next = self.clone();
        let mut to_remove: std::collections::HashSet<&str> = std::collections::HashSet::new();
        for m in &updates {
            if next.ids.contains(m.id.as_str()) {
                if is_remove(m) {
                    to_remove.insert(&m.id);
                } else {
                    to_remove.remove(m.id.as_str());
                    let pos = next.position(&m.id).expect("ids and items agree");
                    next.items.set(pos, m.clone());
                    next.generation += 1;
                }
            } else if is_remove(m) {
                return Err(MessagesError::RemoveMissing(m.id.clone()));
            } else {
                next.ids.insert(Arc::from(m.id.as_str()));
                next.items.push_back(m.clone());
            }
        }
        if !to_remove.is_empty() {
            next.items.retain(|m| !to_remove.contains(m.id.as_str()));
            for id in to_remove {
                next.ids.remove(id);
            }
            next.generation += 1;
        }
        *self = next;
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
    fn removals_apply_after_the_whole_update_as_in_langgraph() {
        let ids = |l: &MessageList| l.iter().map(|m| m.id.clone()).collect::<Vec<_>>();
        let rm = |id: &str| Arc::new(Message::remove(id));
        let mut l = MessageList::from_messages([human("a", "1"), human("b", "2")]);
        l.add([rm("a"), rm("a")]).unwrap();
        assert_eq!(ids(&l), ["b"], "a duplicate RemoveMessage is tolerated");

        let mut l = MessageList::from_messages([human("a", "1"), human("b", "2")]);
        l.add([rm("a"), human("a", "again")]).unwrap();
        assert_eq!(
            ids(&l),
            ["a", "b"],
            "removed then re-sent: replaced in place"
        );
        assert_eq!(l.get(0).unwrap().content.text(), "again");

        let mut l = MessageList::from_messages([human("a", "1")]);
        l.add([human("n", "new"), rm("n")]).unwrap();
        assert_eq!(ids(&l), ["a"], "added then removed in one update");

        let before = ids(&l);
        assert!(l.add([human("x", "x"), rm("missing")]).is_err());
        assert_eq!(ids(&l), before, "a refused update changes nothing");

        l.add([human("y", "y"), rm(REMOVE_ALL_MESSAGES), human("z", "z")])
            .unwrap();
        assert_eq!(
            ids(&l),
            ["z"],
            "only what follows the last remove-all is kept"
        );
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
