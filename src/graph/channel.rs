//! State channels: how the writes of one step become the next state.

use std::fmt;
use std::sync::Arc;

use super::error::GraphError;
use super::messages::MessageList;
use super::value::Val;

/// Folds the writes of one step into a channel's value (e.g. `operator.add`, or a
/// Python callable). Called once per write, in task order.
pub trait Reducer: Send + Sync {
    fn reduce(&self, channel: &str, current: Option<Val>, update: Val) -> Result<Val, GraphError>;

    /// The value the channel holds before any write (LangGraph's `list()` for
    /// `Annotated[list, operator.add]`, `0` for `int`), made afresh for every run;
    /// `None` when it starts empty and its first write is taken as it is.
    fn initial(&self) -> Option<Val> {
        None
    }

    /// LangGraph's `Overwrite`: `Some(value)` when `update` asks to replace the
    /// channel's value with `value` instead of being folded in by the reducer.
    fn overwrite(&self, _update: &Val) -> Option<Val> {
        None
    }
}

/// How a channel combines writes.
#[derive(Clone)]
pub enum ChannelKind {
    /// One write per step at most; it replaces the value.
    LastValue,
    /// Any number of writes, folded by the reducer.
    Reducer(Arc<dyn Reducer>),
    /// Messages merged by id (`add_messages`), in Rust.
    Messages,
}

impl fmt::Debug for ChannelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChannelKind::LastValue => f.write_str("LastValue"),
            ChannelKind::Reducer(_) => f.write_str("Reducer"),
            ChannelKind::Messages => f.write_str("Messages"),
        }
    }
}

impl ChannelKind {
    /// The value a fresh channel holds: a reducer's starting value (an empty list for
    /// messages), nothing for a last-value channel.
    pub fn initial(&self) -> Option<Val> {
        match self {
            ChannelKind::LastValue => None,
            ChannelKind::Reducer(r) => r.initial(),
            ChannelKind::Messages => Some(Val::Messages(MessageList::new())),
        }
    }
}

/// A channel and its current value.
#[derive(Clone, Debug)]
pub struct Channel {
    pub kind: ChannelKind,
    pub value: Option<Val>,
    /// Incremented on every change.
    pub version: u64,
}

impl Channel {
    /// A channel holding its kind's starting value ([`ChannelKind::initial`]).
    pub fn new(kind: ChannelKind) -> Self {
        Channel {
            value: kind.initial(),
            kind,
            version: 0,
        }
    }

    /// Applies the writes of one step, in order.
    pub fn apply(&mut self, name: &str, writes: Vec<Val>) -> Result<(), GraphError> {
        if writes.is_empty() {
            return Ok(());
        }
        match &self.kind {
            ChannelKind::LastValue => {
                if writes.len() > 1 {
                    return Err(GraphError::InvalidUpdate(format!(
                        "At key '{name}': can receive only one value per step, got {}; give the key a reducer (e.g. \
                         Annotated[list, operator.add]) to combine concurrent writes",
                        writes.len()
                    )));
                }
                self.value = writes.into_iter().next();
            }
            ChannelKind::Reducer(r) => {
                let mut cur = self.value.take();
                // As LangGraph: one `Overwrite` a step replaces the value; the writes
                // after it in that step are dropped, a second one is an error.
                let mut overwritten = false;
                for w in writes {
                    if let Some(v) = r.overwrite(&w) {
                        if overwritten {
                            return Err(GraphError::InvalidUpdate(format!(
                                "channel {name:?}: Can receive only one Overwrite value per \
                                 super-step; write Overwrite(...) from one task of the step"
                            )));
                        }
                        overwritten = true;
                        cur = Some(v);
                    } else if !overwritten {
                        cur = Some(r.reduce(name, cur, w)?);
                    }
                }
                self.value = cur;
            }
            ChannelKind::Messages => {
                let mut list = match self.value.take() {
                    Some(Val::Messages(l)) => l,
                    None => MessageList::new(),
                    Some(other) => {
                        return Err(GraphError::InvalidUpdate(format!(
                            "channel {name:?} holds {} instead of messages",
                            other.type_name()
                        )))
                    }
                };
                for w in writes {
                    match w {
                        Val::Messages(new) => list
                            .add(new.iter().cloned())
                            .map_err(|e| GraphError::InvalidUpdate(format!("{name:?}: {e}")))?,
                        other => {
                            return Err(GraphError::InvalidUpdate(format!(
                                "channel {name:?} takes messages, got {}",
                                other.type_name()
                            )))
                        }
                    }
                }
                self.value = Some(Val::Messages(list));
            }
        }
        self.version += 1;
        Ok(())
    }
}
