//! Namespaces: paths of labels, LangGraph's rules for them, and how a listing
//! matches, truncates and pages them.
//!
//! A namespace is stored as its labels joined by `.` (a label may not hold one), so
//! that the namespaces under a prefix are a range of text in the databases.

use std::collections::BTreeSet;

use super::{Result, StoreError};

/// A namespace: `("users", "42", "prefs")`.
pub type Namespace = Vec<String>;

/// Which end of a namespace a [`MatchCondition`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchKind {
    Prefix,
    Suffix,
}

/// LangGraph's `MatchCondition`: `path` may hold `"*"`, which matches any label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchCondition {
    pub kind: MatchKind,
    pub path: Namespace,
}

impl MatchCondition {
    pub fn matches(&self, ns: &[String]) -> bool {
        if ns.len() < self.path.len() {
            return false;
        }
        let same = |(n, p): (&String, &String)| p == "*" || n == p;
        match self.kind {
            MatchKind::Prefix => ns.iter().zip(&self.path).all(same),
            MatchKind::Suffix => ns.iter().rev().zip(self.path.iter().rev()).all(same),
        }
    }
}

/// Checks each label: text, not empty, without `.` or NUL (the `.` joins labels in
/// the databases).
pub fn validate_labels(ns: &[String]) -> Result<()> {
    for label in ns {
        let why = if label.is_empty() {
            "labels cannot be empty strings"
        } else if label.contains('.') {
            "labels cannot contain periods ('.')"
        } else if label.contains('\0') {
            "labels cannot contain NUL bytes"
        } else {
            continue;
        };
        return Err(StoreError::Invalid(format!(
            "invalid namespace label {label:?} in {ns:?}: {why}; use another separator \
             (e.g. '-' or '_') or split it into several labels"
        )));
    }
    Ok(())
}

/// [`validate_labels`], and what a put's namespace needs besides: at least one label.
/// (LangGraph's public `put` also reserves the root label `"langgraph"`; a batch may
/// write there, so that rule stays in the host's `put`.)
pub fn validate_for_put(ns: &[String]) -> Result<()> {
    if ns.is_empty() {
        return Err(StoreError::Invalid(
            "a namespace cannot be empty: give at least one label, e.g. (\"users\",)".into(),
        ));
    }
    validate_labels(ns)
}

/// The namespace as stored: its labels joined by `.`.
pub fn to_text(ns: &[String]) -> String {
    ns.join(".")
}

/// The namespace a stored text names.
pub fn from_text(text: &str) -> Namespace {
    if text.is_empty() {
        Vec::new()
    } else {
        text.split('.').map(str::to_owned).collect()
    }
}

/// Whether `ns` is `prefix` or under it (label by label).
pub fn has_prefix(ns: &[String], prefix: &[String]) -> bool {
    ns.len() >= prefix.len() && ns[..prefix.len()] == *prefix
}

/// A listing of `all` (each namespace once): those matching every condition, cut to
/// `max_depth` labels (then each once), sorted, then paged.
pub fn list<'a>(
    all: impl IntoIterator<Item = &'a [String]>,
    op: &super::ListNamespaces,
) -> Vec<Namespace> {
    let mut out = BTreeSet::new();
    for ns in all {
        if op.conditions.iter().all(|c| c.matches(ns)) {
            let depth = op.max_depth.map_or(ns.len(), |d| d.min(ns.len()));
            out.insert(ns[..depth].to_vec());
        }
    }
    out.into_iter().skip(op.offset).take(op.limit).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(s: &[&str]) -> Namespace {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn wildcards_match_any_label_from_either_end() {
        let c = MatchCondition {
            kind: MatchKind::Prefix,
            path: ns(&["a", "*"]),
        };
        assert!(c.matches(&ns(&["a", "b", "c"])));
        assert!(!c.matches(&ns(&["a"])));
        let s = MatchCondition {
            kind: MatchKind::Suffix,
            path: ns(&["*", "c"]),
        };
        assert!(s.matches(&ns(&["a", "b", "c"])));
        assert!(!s.matches(&ns(&["a", "c", "b"])));
    }

    #[test]
    fn dotted_empty_and_reserved_namespaces_are_refused() {
        assert!(validate_for_put(&ns(&["a.b"])).is_err());
        assert!(validate_for_put(&ns(&["a", ""])).is_err());
        assert!(validate_for_put(&[]).is_err());
        assert!(validate_for_put(&ns(&["users", "x"])).is_ok());
        let e = validate_labels(&ns(&["a.b"])).unwrap_err().to_string();
        assert!(e.contains("periods"), "{e}");
    }

    #[test]
    fn listing_truncates_dedupes_sorts_and_pages() {
        let all = [ns(&["b", "x", "1"]), ns(&["a", "y"]), ns(&["b", "x", "2"])];
        let op = super::super::ListNamespaces {
            conditions: vec![],
            max_depth: Some(2),
            limit: 10,
            offset: 0,
        };
        let got = list(all.iter().map(|v| v.as_slice()), &op);
        assert_eq!(got, vec![ns(&["a", "y"]), ns(&["b", "x"])]);
        let paged = super::super::ListNamespaces {
            offset: 1,
            limit: 1,
            ..op
        };
        assert_eq!(
            list(all.iter().map(|v| v.as_slice()), &paged),
            vec![ns(&["b", "x"])]
        );
    }
}
