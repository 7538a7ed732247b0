//! A run's options as LangGraph names them, each name spelled here once: the
//! `durability` values and the stream modes. The bindings parse a caller's strings
//! with these functions (and expose the tables to Python), so a wrong name is refused
//! in one place, with the names it could have been.

use super::run::Durability;
use super::stream::modes;
use super::GraphError;

/// LangGraph's `durability` values, in the order its documentation lists them.
pub const DURABILITIES: [(&str, Durability); 3] = [
    ("sync", Durability::Sync),
    ("async", Durability::Async),
    ("exit", Durability::Exit),
];

/// The stream modes the engine streams itself: LangGraph's, and ironloop's own `tools`.
pub const STREAM_MODES: [(&str, u8); 6] = [
    ("values", modes::VALUES),
    ("updates", modes::UPDATES),
    ("custom", modes::CUSTOM),
    ("messages", modes::MESSAGES),
    ("debug", modes::DEBUG),
    ("tools", modes::TOOLS),
];

/// LangGraph's stream modes that show part of the `debug` events (the bindings take
/// them out of those events): `tasks`, and `checkpoints`.
pub const DEBUG_VIEWS: [&str; 2] = ["tasks", "checkpoints"];

/// The durability `name` stands for.
pub fn durability(name: &str) -> Result<Durability, GraphError> {
    DURABILITIES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, d)| *d)
        .ok_or_else(|| {
            GraphError::Config(format!(
                "durability must be 'sync', 'async' or 'exit', got {name:?}"
            ))
        })
}

/// The bit of stream mode `name`, or `None` for a name that is not one of
/// [`STREAM_MODES`].
pub fn stream_mode_bit(name: &str) -> Option<u8> {
    STREAM_MODES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, b)| *b)
}

/// The bit set of the stream modes `names`; an unknown name is refused with the list
/// of those a run takes.
pub fn stream_modes<S: AsRef<str>>(names: &[S]) -> Result<u8, GraphError> {
    names.iter().try_fold(0, |bits, name| {
        let name = name.as_ref();
        let bit = stream_mode_bit(name).ok_or_else(|| {
            let mut known: Vec<&str> = STREAM_MODES.iter().map(|(n, _)| *n).collect();
            known.extend(DEBUG_VIEWS);
            let last = known.pop().unwrap_or_default();
            GraphError::Config(format!(
                "unknown stream_mode {name:?}: use {} or {last}",
                known.join(", ")
            ))
        })?;
        Ok(bits | bit)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_to_their_values_and_others_are_refused() {
        assert_eq!(durability("exit").unwrap(), Durability::Exit);
        let err = durability("never").unwrap_err().to_string();
        assert!(err.contains("'sync', 'async' or 'exit'"), "{err}");
        assert_eq!(
            stream_modes(&["values", "tools"]).unwrap(),
            modes::VALUES | modes::TOOLS
        );
        let err = stream_modes(&["value"]).unwrap_err().to_string();
        assert!(err.ends_with("debug, tools, tasks or checkpoints"), "{err}");
    }
}
