//! LangGraph's search filters: `{"field": value}` matches equal values (a dict
//! value matches a dict field by field, a list element by element), and
//! `{"field": {"$op": value}}` compares with `$eq`, `$ne`, `$gt`, `$gte`, `$lt`,
//! `$lte`. Numbers compare as numbers (`1 == 1.0`), text as text.

use std::cmp::Ordering;

use serde_json::{Map, Value};

use super::{Result, StoreError};

const OPERATORS: [&str; 6] = ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"];

/// A checked filter: its operators are known.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter(Map<String, Value>);

impl Filter {
    /// Checks `spec` (a JSON object) and keeps it.
    pub fn new(spec: Map<String, Value>) -> Result<Self> {
        fn check(v: &Value) -> Result<()> {
            if let Value::Object(m) = v {
                for (k, inner) in m {
                    if k.starts_with('$') && !OPERATORS.contains(&k.as_str()) {
                        return Err(StoreError::Invalid(format!(
                            "unsupported filter operator {k:?}; use one of {}",
                            OPERATORS.join(", ")
                        )));
                    }
                    check(inner)?;
                }
            }
            Ok(())
        }
        for v in spec.values() {
            check(v)?;
        }
        Ok(Filter(spec))
    }

    /// Whether the item `value` passes every condition. A key is a field, or a
    /// dotted path into nested objects (`"user.level"`) when no field has that name.
    pub fn matches(&self, value: &Map<String, Value>) -> bool {
        self.0
            .iter()
            .all(|(k, want)| compare(lookup(value, k).unwrap_or(&Value::Null), want))
    }
}

fn lookup<'v>(value: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
    if let Some(v) = value.get(key) {
        return Some(v);
    }
    let mut parts = key.split('.');
    let mut at = value.get(parts.next()?)?;
    for p in parts {
        at = at.as_object()?.get(p)?;
    }
    Some(at)
}

/// A non-finite float as the host sends it (`{"__float__": "inf" | "-inf" | "nan"}`:
/// JSON has no infinities).
fn special(v: &Value) -> Option<f64> {
    let m = v.as_object().filter(|m| m.len() == 1)?;
    match m.get("__float__")?.as_str()? {
        "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        "nan" => Some(f64::NAN),
        _ => None,
    }
}

fn compare(have: &Value, want: &Value) -> bool {
    if special(want).is_some() {
        return equal(have, want);
    }
    match want {
        Value::Object(m) if m.keys().any(|k| k.starts_with('$')) => {
            m.iter().all(|(op, arg)| apply(have, op, arg))
        }
        Value::Object(m) => match have {
            Value::Object(h) => m
                .iter()
                .all(|(k, w)| compare(h.get(k).unwrap_or(&Value::Null), w)),
            _ => false,
        },
        Value::Array(ws) => match have {
            Value::Array(hs) => {
                hs.len() == ws.len() && hs.iter().zip(ws).all(|(h, w)| compare(h, w))
            }
            _ => false,
        },
        _ => equal(have, want),
    }
}

fn apply(have: &Value, op: &str, arg: &Value) -> bool {
    match op {
        "$eq" => equal(have, arg),
        "$ne" => !equal(have, arg),
        _ => {
            let Some(ord) = order(have, arg) else {
                return false;
            };
            match op {
                "$gt" => ord == Ordering::Greater,
                "$gte" => ord != Ordering::Less,
                "$lt" => ord == Ordering::Less,
                "$lte" => ord != Ordering::Greater,
                _ => false,
            }
        }
    }
}

/// Equality as Python's `==` on the decoded values: numbers by value.
fn equal(a: &Value, b: &Value) -> bool {
    if let Some(x) = special(b) {
        return a.as_f64() == Some(x);
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| equal(v, w)))
        }
        _ => a == b,
    }
}

/// How `a` compares with `b`: numbers (or numeric text against a number) as numbers,
/// text as text; `None` when they do not compare.
fn order(a: &Value, b: &Value) -> Option<Ordering> {
    fn num(v: &Value) -> Option<f64> {
        if let Some(x) = special(v) {
            return Some(x);
        }
        match v {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }
    match (a, b) {
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => num(a)?.partial_cmp(&num(b)?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(v: Value) -> Filter {
        Filter::new(v.as_object().unwrap().clone()).unwrap()
    }

    fn item(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn equality_nested_and_numbers_by_value() {
        let it = item(json!({"a": 1, "b": {"c": "x", "d": 2}, "l": [1, 2]}));
        assert!(f(json!({"a": 1.0})).matches(&it));
        assert!(f(json!({"b": {"c": "x"}})).matches(&it));
        assert!(f(json!({"l": [1, 2]})).matches(&it));
        assert!(!f(json!({"l": [1]})).matches(&it));
        assert!(f(json!({"missing": null})).matches(&it));
        assert!(!f(json!({"a": 2})).matches(&it));
    }

    #[test]
    fn operators_compare() {
        let it = item(json!({"score": 4.5, "name": "bob"}));
        assert!(f(json!({"score": {"$gt": 4, "$lte": 4.5}})).matches(&it));
        assert!(!f(json!({"score": {"$lt": 4}})).matches(&it));
        assert!(f(json!({"name": {"$ne": "al"}})).matches(&it));
        assert!(f(json!({"name": {"$gte": "b"}})).matches(&it));
        assert!(!f(json!({"missing": {"$gt": 1}})).matches(&it));
    }

    #[test]
    fn dotted_paths_and_infinities() {
        let it = item(json!({"user": {"access-level": "x"}, "n": 5}));
        assert!(f(json!({"user.access-level": "x"})).matches(&it));
        assert!(f(json!({"n": {"$lt": {"__float__": "inf"}}})).matches(&it));
        assert!(f(json!({"n": {"$gt": {"__float__": "-inf"}}})).matches(&it));
        assert!(!f(json!({"n": {"$eq": {"__float__": "nan"}}})).matches(&it));
        assert!(f(json!({"n": {"$ne": {"__float__": "nan"}}})).matches(&it));
    }

    #[test]
    fn unknown_operator_is_refused_with_the_known_ones() {
        let e = Filter::new(item(json!({"a": {"$regex": "x"}}))).unwrap_err();
        assert!(e.to_string().contains("$gte"), "{e}");
    }
}
