//! The names the engine reserves for itself, in one place.
//!
//! They are written into checkpoints (pending writes, the `node` of a write), so
//! their spelling is part of the on-disk format: changing one breaks old threads.

/// The prefix of every name the engine keeps out of sight (`StateView::iter`, error
/// messages listing the state's channels).
pub const HIDDEN_PREFIX: &str = "__";

/// The one channel of a graph whose state is a bare value rather than a dict of keys
/// (LangGraph's `StateGraph(Annotated[list, operator.add])`): nodes receive and return
/// that value. Not hidden: it is the state.
pub const ROOT: &str = "__root__";

/// The `node` of the writes the engine makes itself (resetting join barriers).
pub const ENGINE_NODE: &str = "__engine__";

/// The hidden channel of the deferred nodes (`add_node(defer=True)`) triggered while
/// other tasks were due: a JSON list of their names, kept in checkpoints.
pub const DEFER_CHANNEL: &str = "__defer__";

/// The prefix of a join barrier's hidden channel; the join's index follows.
const JOIN_PREFIX: &str = "__join__:";

/// Whether a channel (or node) name is one of the engine's own ([`ROOT`] is not: it
/// holds a graph's whole state).
pub fn is_hidden(name: &str) -> bool {
    name.starts_with(HIDDEN_PREFIX) && name != ROOT
}

/// Characters a node name may not contain: LangGraph's namespace separators, which
/// task ids (`<checkpoint>:<index>:<node>`) and stream namespaces (`node:task`) use.
pub const RESERVED_CHARS: [char; 2] = ['|', ':'];

/// The hidden channel of the `i`-th join barrier.
pub(crate) fn join_channel(i: usize) -> String {
    format!("{JOIN_PREFIX}{i}")
}

/// The pseudo-channels of pending writes and of values the host's codec decodes
/// outside any state channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reserved {
    /// A pending write marking a task as finished: its other writes are complete.
    Done,
    /// A pending write holding the value a task's `interrupt()` resumes with.
    Resume,
    /// A pending write holding the value a task paused on with `interrupt()`.
    Interrupt,
    /// A pending write holding one `goto` of a finished task.
    Goto,
    /// The argument of a `Send` (a task record's `arg`, a `goto` write's `arg`).
    Send,
    /// A pending write holding what a call made inside a task returned (LangGraph's
    /// functional API: a `@task` called from an `@entrypoint`), keyed by the call's id.
    Return,
    /// A pending write holding, as text, the error a task failed the run with
    /// (LangGraph's `ERROR` write): `get_state` shows it as the task's `error`.
    Error,
}

impl Reserved {
    pub const fn as_str(self) -> &'static str {
        match self {
            Reserved::Done => "__done__",
            Reserved::Resume => "__resume__",
            Reserved::Interrupt => "__interrupt__",
            Reserved::Goto => "__goto__",
            Reserved::Send => "__send__",
            Reserved::Return => "__return__",
            Reserved::Error => "__error__",
        }
    }

    /// The reserved name `s` spells, if any.
    pub fn parse(s: &str) -> Option<Reserved> {
        Some(match s {
            "__done__" => Reserved::Done,
            "__resume__" => Reserved::Resume,
            "__interrupt__" => Reserved::Interrupt,
            "__goto__" => Reserved::Goto,
            "__send__" => Reserved::Send,
            "__return__" => Reserved::Return,
            "__error__" => Reserved::Error,
            _ => return None,
        })
    }
}

/// Why a checkpoint was taken: its record's `source` and its metadata's `"source"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The run's input was written.
    Input,
    /// A step of the loop ended.
    Loop,
    /// `update_state` wrote to the state.
    Update,
    /// `update_state(..., as_node="__copy__")` copied a checkpoint beside it.
    Fork,
}

impl Source {
    pub const fn as_str(self) -> &'static str {
        match self {
            Source::Input => "input",
            Source::Loop => "loop",
            Source::Update => "update",
            Source::Fork => "fork",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_names_round_trip() {
        for r in [
            Reserved::Done,
            Reserved::Resume,
            Reserved::Interrupt,
            Reserved::Goto,
            Reserved::Send,
            Reserved::Return,
        ] {
            assert!(is_hidden(r.as_str()));
            assert_eq!(Reserved::parse(r.as_str()), Some(r));
        }
        assert_eq!(Reserved::parse("count"), None);
        assert!(!is_hidden(ROOT));
        assert_eq!(join_channel(3), "__join__:3");
    }
}
