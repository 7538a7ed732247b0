//! The tagged forms of checkpoint JSON: how a host value that plain JSON cannot hold
//! exactly is written, and how a reader tells such a form from plain data.
//!
//! A host value is stored as plain JSON when it is plain JSON: a dict with text keys
//! of which none is reserved, a list, a string of Unicode scalar values, an integer
//! that fits in 64 bits, a finite float, a bool or null. Anything else is an object
//! carrying the tag key [`TYPE_KEY`] and exactly one other key:
//!
//! | form | written for |
//! |---|---|
//! | `{"__ironloop_type__": "tuple" / "set" / "frozenset", "items": [...]}` | those collections |
//! | `{"__ironloop_type__": "float", "value": "nan" / "inf" / "-inf"}` | floats JSON has no number for |
//! | `{"__ironloop_type__": "int", "value": "-0x1f..."}` | integers beyond 64 bits (hexadecimal: no digit limit on reading) |
//! | `{"__ironloop_type__": "str", "parts": ["text", 55296, ...]}` | strings holding lone surrogates (each one a number) |
//! | `{"__ironloop_type__": "dict", "items": [[key, value], ...]}` | a dict with a reserved key ([`is_reserved_key`]) or a key that is not plain text |
//! | `{"__ironloop_type__": "module:qualname", "value": ...}` | an enum, dataclass, model or `Send`: its data, and the name of its type |
//!
//! and a message is `{"__ironloop_message__": {...}}`. Escaping every dict that has a
//! reserved key is what makes the forms unambiguous: a user's (or a model's) dict that
//! happens to look like a tag comes back as that same dict, never as what the tag says.
//!
//! A type's name is only a key into the reader's allowlist; nothing here, nor in the
//! host's decoder, imports what a stored value names.

use serde_json::{Map, Value};

/// The key of every tagged form but a message's.
pub const TYPE_KEY: &str = "__ironloop_type__";
/// The one key of a stored message.
pub const MESSAGE_KEY: &str = "__ironloop_message__";
/// What every tag key starts with: a dict with a key starting so is escaped.
pub const RESERVED_PREFIX: &str = "__ironloop_";

/// Whether a dict with the key `k` must be written in the escaped form: `k` could be a
/// tag key, now or in a later version.
pub fn is_reserved_key(k: &str) -> bool {
    k.starts_with(RESERVED_PREFIX)
}

/// The tagged form `{TYPE_KEY: kind, field: value}`.
pub fn tagged(kind: &str, field: &str, value: Value) -> Value {
    let mut m = Map::with_capacity(2);
    m.insert(TYPE_KEY.to_owned(), Value::String(kind.to_owned()));
    m.insert(field.to_owned(), value);
    Value::Object(m)
}

/// A float as checkpoint JSON: a number when finite (`-0.0` included), else tagged.
pub fn float(f: f64) -> Value {
    match serde_json::Number::from_f64(f) {
        Some(n) => Value::Number(n),
        None => {
            let name = if f.is_nan() {
                "nan"
            } else if f > 0.0 {
                "inf"
            } else {
                "-inf"
            };
            tagged("float", "value", Value::String(name.to_owned()))
        }
    }
}

/// One piece of a string that is not valid Unicode (see [`str_parts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    /// A lone surrogate code point (U+D800 to U+DFFF).
    Surrogate(u16),
}

/// The pieces of a string given as WTF-8 (UTF-8 in which surrogate code points are
/// encoded like any other, as Python's `surrogatepass` writes them); `None` if the
/// bytes are not WTF-8.
pub fn wtf8_pieces(bytes: &[u8]) -> Option<Vec<Piece>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        // A surrogate is ED A0..BF 80..BF; valid UTF-8 never has ED followed by A0..BF.
        if bytes[i] == 0xED && bytes.get(i + 1).is_some_and(|b| *b >= 0xA0) {
            let (b1, b2) = (bytes[i + 1], *bytes.get(i + 2)?);
            if !(0xA0..=0xBF).contains(&b1) || !(0x80..=0xBF).contains(&b2) {
                return None;
            }
            if start < i {
                out.push(Piece::Text(
                    std::str::from_utf8(&bytes[start..i]).ok()?.to_owned(),
                ));
            }
            out.push(Piece::Surrogate(
                0xD000 | (u16::from(b1 & 0x3F) << 6) | u16::from(b2 & 0x3F),
            ));
            i += 3;
            start = i;
        } else {
            i += 1;
        }
    }
    if start < bytes.len() {
        out.push(Piece::Text(
            std::str::from_utf8(&bytes[start..]).ok()?.to_owned(),
        ));
    }
    Some(out)
}

/// The WTF-8 bytes of `pieces` (the inverse of [`wtf8_pieces`]).
pub fn wtf8_bytes(pieces: &[Piece]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in pieces {
        match p {
            Piece::Text(s) => out.extend_from_slice(s.as_bytes()),
            Piece::Surrogate(c) => out.extend_from_slice(&[
                0xE0 | (c >> 12) as u8,
                0x80 | ((c >> 6) & 0x3F) as u8,
                0x80 | (c & 0x3F) as u8,
            ]),
        }
    }
    out
}

/// The tagged form of a string made of `pieces`.
pub fn str_form(pieces: &[Piece]) -> Value {
    let parts = pieces
        .iter()
        .map(|p| match p {
            Piece::Text(s) => Value::String(s.clone()),
            Piece::Surrogate(c) => Value::from(*c),
        })
        .collect();
    tagged("str", "parts", Value::Array(parts))
}

/// The pieces of a stored `"str"` form's parts; `None` if one is neither text nor a
/// surrogate's code point.
pub fn pieces_of(parts: &[Value]) -> Option<Vec<Piece>> {
    parts
        .iter()
        .map(|p| match p {
            Value::String(s) => Some(Piece::Text(s.clone())),
            Value::Number(n) => n
                .as_u64()
                .filter(|c| (0xD800..=0xDFFF).contains(c))
                .map(|c| Piece::Surrogate(c as u16)),
            _ => None,
        })
        .collect()
}

/// What a stored JSON object is: a tagged form, or (`None`) a plain dict.
#[derive(Debug, PartialEq)]
pub enum Tag<'a> {
    /// A message's fields.
    Message(&'a Value),
    Tuple(&'a [Value]),
    Set(&'a [Value]),
    FrozenSet(&'a [Value]),
    Float(f64),
    /// An integer beyond 64 bits, in hexadecimal (`-0x1f`).
    Int(&'a str),
    /// A string's parts (see [`pieces_of`]).
    Str(&'a [Value]),
    /// An escaped dict's `[key, value]` pairs.
    Dict(&'a [Value]),
    /// A value of the type named `module:qualname`.
    Type {
        path: &'a str,
        value: &'a Value,
    },
}

/// The tagged form `map` is, if it is one. Only the exact shapes the encoder writes
/// count: any other object (an extra key, a tag that is not text, a field of the wrong
/// kind) is plain data.
pub fn tag_of(map: &Map<String, Value>) -> Option<Tag<'_>> {
    if map.len() == 1 {
        return map.get(MESSAGE_KEY).map(Tag::Message);
    }
    if map.len() != 2 {
        return None;
    }
    let kind = map.get(TYPE_KEY)?.as_str()?;
    let items = || {
        map.get("items")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
    };
    let text = || map.get("value").and_then(Value::as_str);
    Some(match kind {
        "tuple" => Tag::Tuple(items()?),
        "set" => Tag::Set(items()?),
        "frozenset" => Tag::FrozenSet(items()?),
        "dict" => Tag::Dict(items()?),
        "float" => Tag::Float(match text()? {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            _ => return None,
        }),
        "int" => Tag::Int(text()?),
        "str" => Tag::Str(map.get("parts")?.as_array()?),
        path if path.contains(':') => Tag::Type {
            path,
            value: map.get("value")?,
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn floats_json_cannot_hold_are_tagged_and_read_back() {
        for f in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let v = float(f);
            let Some(Tag::Float(g)) = tag_of(v.as_object().unwrap()) else {
                panic!("{v} is not a float tag");
            };
            assert!(g.is_nan() && f.is_nan() || g == f);
        }
        assert_eq!(float(-0.0).as_f64().unwrap().to_bits(), (-0.0f64).to_bits());
        assert_eq!(float(1.5), json!(1.5));
    }

    #[test]
    fn lone_surrogates_round_trip_through_pieces() {
        // "a" U+D800 "é" U+DFFF U+1F600: what Python's surrogatepass writes.
        let mut bytes = b"a".to_vec();
        bytes.extend_from_slice(&[0xED, 0xA0, 0x80]);
        bytes.extend_from_slice("é".as_bytes());
        bytes.extend_from_slice(&[0xED, 0xBF, 0xBF]);
        bytes.extend_from_slice("😀".as_bytes());
        let pieces = wtf8_pieces(&bytes).unwrap();
        assert_eq!(
            pieces,
            vec![
                Piece::Text("a".into()),
                Piece::Surrogate(0xD800),
                Piece::Text("é".into()),
                Piece::Surrogate(0xDFFF),
                Piece::Text("😀".into()),
            ]
        );
        assert_eq!(wtf8_bytes(&pieces), bytes);
        let form = str_form(&pieces);
        let Some(Tag::Str(parts)) = tag_of(form.as_object().unwrap()) else {
            panic!("{form} is not a str tag");
        };
        assert_eq!(pieces_of(parts).unwrap(), pieces);
        // Not WTF-8: a truncated surrogate, a stray continuation byte.
        assert_eq!(wtf8_pieces(&[b'a', 0xED, 0xA0]), None);
        assert_eq!(wtf8_pieces(&[0x80]), None);
        // A part that is no surrogate is refused.
        assert_eq!(pieces_of(&[json!(65)]), None);
    }

    #[test]
    fn only_exact_shapes_are_tags() {
        assert_eq!(
            tag_of(&obj(json!({TYPE_KEY: "tuple", "items": [1]}))),
            Some(Tag::Tuple(&[json!(1)]))
        );
        for plain in [
            json!({TYPE_KEY: "tuple", "items": [1], "x": 1}),
            json!({TYPE_KEY: 3, "items": [1]}),
            json!({TYPE_KEY: "tuple", "value": [1]}),
            json!({TYPE_KEY: "float", "value": "NaN"}),
            json!({TYPE_KEY: "os", "value": 1}),
            json!({MESSAGE_KEY: {}, "x": 1}),
            json!({"a": 1}),
        ] {
            assert_eq!(tag_of(&obj(plain.clone())), None, "{plain}");
        }
        let named = obj(json!({TYPE_KEY: "m:C", "value": {"a": 1}}));
        assert_eq!(
            tag_of(&named),
            Some(Tag::Type {
                path: "m:C",
                value: &json!({"a": 1})
            })
        );
    }

    #[test]
    fn reserved_keys_are_those_of_the_tags_and_any_later_ones() {
        assert!(is_reserved_key(TYPE_KEY) && is_reserved_key(MESSAGE_KEY));
        assert!(is_reserved_key("__ironloop_future__"));
        assert!(!is_reserved_key("__type__") && !is_reserved_key("ironloop"));
    }
}
