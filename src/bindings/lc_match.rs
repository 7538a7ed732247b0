//! Whether a langchain-core message object still holds the message it was made of.
//!
//! An object handed to Python code that usually hands it straight back (a model's
//! answer, a tool node's result; `lc_messages::hand_out`) is taken back as the very
//! message it was made of when its fields still say what that message says: reading
//! it field by field would build a new string, list and JSON value per field, and an
//! agent round hands back one or two such objects. The comparison reads the object's
//! `__dict__` against the message, value by value and type by type, allocating
//! nothing; anything it does not recognise, or finds different, sends the object
//! through the full read, which is always right. Equal here means the full read would
//! give the message back: every value is compared in the exact type the read would
//! turn into the message's (`str`, `int`, `float`, `bool`, `None`, `dict`, `list`;
//! a subclass of any of them is a difference), dicts in order (the core keeps keys
//! in their order), and a field the read ignores is ignored.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString};
use serde_json::{Map, Value};

use crate::message::{Content, InvalidToolCall, Message, MessageKind};
use crate::tool::ToolCall;

/// What the comparison found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// The fields are the message's.
    Same,
    /// The fields are the message's, but the id was taken away (`None`): the message
    /// with a fresh id.
    NoId,
    /// Something differs, or could not be told: read the object.
    Differs,
}

/// Whether `fields` (a langchain-core message's `__dict__`) still holds `m`.
pub fn held(fields: &Bound<'_, PyDict>, m: &Message) -> Held {
    let mut seen = 0usize;
    let mut no_id = false;
    for (k, v) in fields.iter() {
        let Ok(k) = k.cast_exact::<PyString>() else {
            return Held::Differs;
        };
        let Ok(k) = k.to_str() else {
            return Held::Differs;
        };
        let same = match k {
            "id" if v.is_none() => {
                no_id = true;
                true
            }
            "id" => v.cast::<PyString>().is_ok_and(|s| str_is(s, &m.id)),
            "content" => content_is(&v, &m.content),
            "additional_kwargs" => map_is(&v, &m.additional_kwargs),
            "response_metadata" => map_is(&v, &m.response_metadata),
            "type" => exact_str_is(&v, kind_type(&m.kind)),
            "name" => opt_str_is(&v, m.name.as_deref()),
            _ => match kind_field(k, &v, &m.kind) {
                Some(same) => same,
                // A field the read ignores (langchain-core's `example`, ...).
                None => continue,
            },
        };
        if !same {
            return Held::Differs;
        }
        seen += 1;
    }
    // A field the read needs was deleted: it would read its default.
    if seen != 6 + kind_fields(&m.kind) {
        return Held::Differs;
    }
    if no_id {
        Held::NoId
    } else {
        Held::Same
    }
}

/// langchain-core's `type` of a message kind.
fn kind_type(kind: &MessageKind) -> &'static str {
    match kind {
        MessageKind::Human => "human",
        MessageKind::System => "system",
        MessageKind::Ai { .. } => "ai",
        MessageKind::Tool { .. } => "tool",
        MessageKind::Remove => "remove",
    }
}

/// How many fields of its own a kind's class has, beyond the six every message has.
fn kind_fields(kind: &MessageKind) -> usize {
    match kind {
        MessageKind::Ai { .. } | MessageKind::Tool { .. } => 3,
        _ => 0,
    }
}

/// A kind's own field `k` compared (`None`: not one of the kind's fields).
fn kind_field(k: &str, v: &Bound<'_, PyAny>, kind: &MessageKind) -> Option<bool> {
    Some(match (k, kind) {
        ("tool_calls", MessageKind::Ai { tool_calls, .. }) => calls_are(v, tool_calls),
        (
            "invalid_tool_calls",
            MessageKind::Ai {
                invalid_tool_calls, ..
            },
        ) => invalid_calls_are(v, invalid_tool_calls),
        ("usage_metadata", MessageKind::Ai { usage, .. }) => match usage {
            None => v.is_none(),
            Some(u) => value_is(v, &u.to_langchain()),
        },
        ("tool_call_id", MessageKind::Tool { tool_call_id, .. }) => exact_str_is(v, tool_call_id),
        ("status", MessageKind::Tool { status, .. }) => exact_str_is(v, status.as_str()),
        ("artifact", MessageKind::Tool { artifact, .. }) => match artifact {
            None => v.is_none(),
            Some(a) => value_is(v, a),
        },
        _ => return None,
    })
}

fn str_is(s: &Bound<'_, PyString>, want: &str) -> bool {
    s.to_str().is_ok_and(|t| t == want)
}

fn exact_str_is(v: &Bound<'_, PyAny>, want: &str) -> bool {
    v.cast_exact::<PyString>().is_ok_and(|s| str_is(s, want))
}

fn opt_str_is(v: &Bound<'_, PyAny>, want: Option<&str>) -> bool {
    match want {
        None => v.is_none(),
        Some(w) => exact_str_is(v, w),
    }
}

fn content_is(v: &Bound<'_, PyAny>, c: &Content) -> bool {
    match c {
        Content::Text(s) => exact_str_is(v, s),
        Content::Parts(parts) => list_is(v, parts, |x, p| value_is(x, &p.to_value())),
    }
}

/// Whether `v` is a list (exactly) of as many items as `want`, each `item_is` its own.
fn list_is<T>(
    v: &Bound<'_, PyAny>,
    want: &[T],
    item_is: impl Fn(&Bound<'_, PyAny>, &T) -> bool,
) -> bool {
    v.cast_exact::<PyList>()
        .is_ok_and(|l| l.len() == want.len() && l.iter().zip(want).all(|(x, w)| item_is(&x, w)))
}

/// A tool call as langchain-core's dict, `{"name", "args", "id", "type"}` in that
/// order (as the object was made).
fn calls_are(v: &Bound<'_, PyAny>, calls: &[ToolCall]) -> bool {
    list_is(v, calls, |d, c| {
        entries_are(
            d,
            &[
                ("name", Want::Str(Some(&c.name))),
                ("args", Want::Value(&c.arguments)),
                ("id", Want::Str(Some(&c.id))),
                ("type", Want::Str(Some("tool_call"))),
            ],
        )
    })
}

fn invalid_calls_are(v: &Bound<'_, PyAny>, calls: &[InvalidToolCall]) -> bool {
    list_is(v, calls, |d, c| {
        entries_are(
            d,
            &[
                ("name", Want::Str(c.name.as_deref())),
                ("args", Want::Str(c.args.as_deref())),
                ("id", Want::Str(c.id.as_deref())),
                ("error", Want::Str(c.error.as_deref())),
                ("type", Want::Str(Some("invalid_tool_call"))),
            ],
        )
    })
}

/// What one entry of a dict should hold.
enum Want<'a> {
    /// A `str`, or `None` for `None`.
    Str(Option<&'a str>),
    Value(&'a Value),
}

/// Whether `d` is a dict of exactly `want`'s entries, in that order.
fn entries_are(d: &Bound<'_, PyAny>, want: &[(&str, Want<'_>)]) -> bool {
    let Ok(d) = d.cast_exact::<PyDict>() else {
        return false;
    };
    d.len() == want.len()
        && d.iter().zip(want).all(|((k, v), (wk, wv))| {
            exact_str_is(&k, wk)
                && match wv {
                    Want::Str(s) => opt_str_is(&v, *s),
                    Want::Value(x) => value_is(&v, x),
                }
        })
}

fn map_is(v: &Bound<'_, PyAny>, m: &Map<String, Value>) -> bool {
    let Ok(d) = v.cast_exact::<PyDict>() else {
        return false;
    };
    d.len() == m.len()
        && d.iter()
            .zip(m)
            .all(|((k, x), (wk, wx))| exact_str_is(&k, wk) && value_is(&x, wx))
}

/// Whether `v` is `want` as the read would take it (see the module's doc).
fn value_is(v: &Bound<'_, PyAny>, want: &Value) -> bool {
    match want {
        Value::Null => v.is_none(),
        Value::Bool(b) => v.cast_exact::<PyBool>().is_ok_and(|x| x.is_true() == *b),
        Value::Number(n) => {
            if v.is_exact_instance_of::<PyInt>() {
                match (n.as_i64(), n.as_u64()) {
                    (Some(i), _) => v.extract::<i64>().is_ok_and(|x| x == i),
                    (None, Some(u)) => v.extract::<u64>().is_ok_and(|x| x == u),
                    _ => false,
                }
            } else if v.is_exact_instance_of::<PyFloat>() {
                n.is_f64()
                    && n.as_f64().is_some_and(|f| {
                        v.extract::<f64>().is_ok_and(|x| x.to_bits() == f.to_bits())
                    })
            } else {
                false
            }
        }
        Value::String(s) => exact_str_is(v, s),
        Value::Array(a) => list_is(v, a, value_is),
        Value::Object(o) => map_is(v, o),
    }
}
