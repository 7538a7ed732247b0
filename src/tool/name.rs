//! Tool names as the model providers accept them.
//!
//! OpenAI and Anthropic both accept a tool name only when it matches
//! `^[a-zA-Z0-9_-]{1,64}$`, and answer any other with an opaque HTTP 400 for the whole
//! request. So a name written by the user (`@tool`, `Tool(...)`, a LangChain tool, a
//! [`ToolBuilder`](super::ToolBuilder)) is checked where the tool is defined or
//! registered ([`check`]), and a name that comes from elsewhere (an MCP server, an
//! OpenAPI `operationId`) is made to fit ([`sanitize`], [`unique`]) with the original
//! kept for the call to the server.

use std::collections::HashSet;

/// The longest name the providers accept, in characters (all ASCII, so bytes too).
pub const MAX_NAME: usize = 64;

/// The rule, as the error messages state it.
pub const NAME_RULE: &str = "^[a-zA-Z0-9_-]{1,64}$ (ASCII letters, digits, `_` and `-`; \
                             1 to 64 characters)";

/// Why a tool name is refused, with a name that would be accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the tool name {shown} is not accepted by model providers: {problem}. A tool name must \
     match {NAME_RULE}; rename the tool, e.g. to {suggestion:?}"
)]
pub struct ToolNameError {
    /// The refused name, quoted and shortened for the message.
    pub shown: String,
    pub problem: String,
    /// [`sanitize`] of the name.
    pub suggestion: String,
}

fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// `Ok` when `name` matches [`NAME_RULE`]; otherwise what is wrong with it.
pub fn check(name: &str) -> Result<(), ToolNameError> {
    let problem = if name.is_empty() {
        Some("it is empty".to_owned())
    } else if let Some((i, c)) = name.chars().enumerate().find(|(_, c)| !allowed(*c)) {
        Some(format!("it contains {c:?} at position {i}"))
    } else if name.len() > MAX_NAME {
        Some(format!(
            "it is {} characters long, over the limit of {MAX_NAME}",
            name.len()
        ))
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(refused(name, problem)),
    }
}

/// The error for `name`, refused for `problem`.
pub fn refused(name: &str, problem: String) -> ToolNameError {
    let mut shown: String = name.chars().take(80).collect();
    if shown.len() < name.len() {
        shown.push('…');
    }
    ToolNameError {
        shown: format!("{shown:?}"),
        problem,
        suggestion: sanitize(name),
    }
}

/// `raw` made to fit [`NAME_RULE`]: each character outside `[a-zA-Z0-9_-]` becomes `_`
/// (an empty name becomes `tool`); a name still over 64 characters keeps its first 55,
/// then `_` and 8 hex digits of a hash of the whole `raw` name, so two long names that
/// share their start stay apart, the same way on every run and machine.
pub fn sanitize(raw: &str) -> String {
    let mut s: String = raw
        .chars()
        .map(|c| if allowed(c) { c } else { '_' })
        .collect();
    if s.is_empty() {
        s.push_str("tool");
    }
    if s.len() > MAX_NAME {
        let tag = format!("_{:08x}", stable_hash(raw.as_bytes()));
        s.truncate(MAX_NAME - tag.len());
        s.push_str(&tag);
    }
    s
}

/// `name` (already valid), or when `taken` holds it, `name_2`, `name_3`… (the stem cut
/// so the whole stays within 64 characters); the result is added to `taken`. Given the
/// names in a fixed order (the server's or the spec's), the outcome is the same on
/// every run.
pub fn unique(name: &str, taken: &mut HashSet<String>) -> String {
    let mut candidate = name.to_owned();
    let mut n = 2;
    while taken.contains(&candidate) {
        let suffix = format!("_{n}");
        let mut stem = name.to_owned();
        stem.truncate(MAX_NAME - suffix.len());
        candidate = format!("{stem}{suffix}");
        n += 1;
    }
    taken.insert(candidate.clone());
    candidate
}

/// 32-bit FNV-1a: small, and fixed by its definition (std's hasher may change between
/// Rust releases, and a tool's name must not).
fn stable_hash(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_provider_alphabet_up_to_64() {
        for ok in ["add", "get_weather", "a-b_C9", &"x".repeat(64)] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn refuses_what_providers_reject_and_suggests_a_fix() {
        let e = check("bad name").unwrap_err();
        assert_eq!(e.problem, "it contains ' ' at position 3");
        assert_eq!(e.suggestion, "bad_name");
        let text = e.to_string();
        assert!(text.contains("\"bad name\"") && text.contains("^[a-zA-Z0-9_-]{1,64}$"));
        assert!(text.contains("\"bad_name\""), "{text}");
        assert_eq!(check("").unwrap_err().problem, "it is empty");
        assert_eq!(check("").unwrap_err().suggestion, "tool");
        assert!(check("a\0b").unwrap_err().problem.contains("'\\0'"));
        assert!(check("../etc").unwrap_err().problem.contains("'.'"));
        assert!(check("ns.tool").is_err());
        assert!(check("é").is_err());
        let long = "y".repeat(10_000);
        let e = check(&long).unwrap_err();
        assert_eq!(
            e.problem,
            "it is 10000 characters long, over the limit of 64"
        );
        assert!(e.shown.len() < 100, "the message shows a shortened name");
        assert_eq!(check(&e.suggestion), Ok(()));
    }

    #[test]
    fn sanitize_maps_characters_and_keeps_long_names_apart() {
        assert_eq!(sanitize("files/read.v2"), "files_read_v2");
        assert_eq!(sanitize("a b"), "a_b");
        let a = format!("{}_alpha", "p".repeat(70));
        let b = format!("{}_beta", "p".repeat(70));
        let (sa, sb) = (sanitize(&a), sanitize(&b));
        assert_eq!(sa.len(), 64);
        assert_ne!(sa, sb);
        assert_eq!(sa, sanitize(&a), "stable");
        assert!(sa.starts_with(&"p".repeat(55)));
        assert_eq!(check(&sa), Ok(()));
        // The hash is FNV-1a's, fixed: a name does not change between releases.
        assert_eq!(stable_hash(b"a"), 0xe40c_292c);
    }

    #[test]
    fn unique_numbers_later_duplicates() {
        let mut taken = HashSet::new();
        assert_eq!(unique("a_b", &mut taken), "a_b");
        assert_eq!(unique("a_b", &mut taken), "a_b_2");
        assert_eq!(unique("a_b", &mut taken), "a_b_3");
        let long = "z".repeat(64);
        assert_eq!(unique(&long, &mut taken), long);
        let second = unique(&long, &mut taken);
        assert_eq!(second.len(), 64);
        assert!(second.ends_with("_2"));
    }
}
