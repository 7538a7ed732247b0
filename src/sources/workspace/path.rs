//! Confinement of paths to a workspace root.
//!
//! A path the model gives is refused when it is absolute, when its `..` components
//! climb above the root, or when it resolves — following symlinks — to a place
//! outside the root. Resolution is lexical first (`a/../b` is `b`; a `..` with
//! nothing left to pop is refused), then physical: the longest prefix that exists is
//! canonicalized (every symlink in it followed) and must stay inside the canonical
//! root; the components that do not exist yet (a file about to be written) are
//! appended to it. A dangling symlink on the way is refused, since writing through it
//! would create its target wherever it points.
//!
//! This guards against a model's mistakes and against symlinks already in the tree;
//! it is not a sandbox against another process that swaps directories for symlinks
//! between the check and the use.

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Why a path cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathError {
    /// Refused: absolute, or leaving the root through `..` or a symlink.
    Refused(String),
    /// The filesystem said no (a component is a file, permission denied…).
    Io(String),
}

impl PathError {
    pub fn message(&self) -> &str {
        match self {
            PathError::Refused(m) | PathError::Io(m) => m,
        }
    }
}

/// A path inside the workspace, ready to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Where to operate: the canonical path of the longest existing prefix, with the
    /// components that do not exist yet appended.
    pub path: PathBuf,
    /// Whether the whole path exists.
    pub exists: bool,
}

/// The canonical root every path is confined to.
#[derive(Debug, Clone)]
pub struct Root {
    canonical: PathBuf,
}

impl Root {
    /// Canonicalizes `root`, which must be an existing directory.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Root> {
        let root = root.as_ref();
        let canonical = std::fs::canonicalize(root).map_err(|e| {
            io::Error::new(e.kind(), format!("workspace root {}: {e}", root.display()))
        })?;
        if !canonical.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("workspace root {} is not a directory", root.display()),
            ));
        }
        Ok(Root { canonical })
    }

    /// The canonical root.
    pub fn path(&self) -> &Path {
        &self.canonical
    }

    /// `p` (inside the root) as the model sees it: relative, with `/` separators;
    /// `.` for the root itself.
    pub fn display(&self, p: &Path) -> String {
        let rel = p.strip_prefix(&self.canonical).unwrap_or(p);
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.is_empty() {
            ".".to_owned()
        } else {
            parts.join("/")
        }
    }

    /// Resolves `user` (a path relative to the root) or says why it is refused.
    pub fn resolve(&self, user: &str) -> Result<Resolved, PathError> {
        let mut rel = PathBuf::new();
        for c in Path::new(user).components() {
            match c {
                Component::Prefix(_) | Component::RootDir => {
                    return Err(PathError::Refused(format!(
                        "`{user}` is an absolute path: give a path relative to the workspace \
                         root (e.g. `src/main.py`, or `.` for the root itself)"
                    )))
                }
                Component::CurDir => {}
                Component::ParentDir => {
                    if !rel.pop() {
                        return Err(PathError::Refused(format!(
                            "`{user}` leaves the workspace root through `..`: every path must \
                             stay inside the root"
                        )));
                    }
                }
                Component::Normal(s) => rel.push(s),
            }
        }
        let joined = self.canonical.join(&rel);
        let mut existing = joined.clone();
        let mut missing: Vec<OsString> = Vec::new();
        let canonical = loop {
            match std::fs::canonicalize(&existing) {
                Ok(c) => break c,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    let is_link = std::fs::symlink_metadata(&existing)
                        .map(|m| m.file_type().is_symlink())
                        .unwrap_or(false);
                    if is_link {
                        return Err(PathError::Refused(format!(
                            "`{user}` goes through the symlink `{}`, whose target does not \
                             exist: symlinks are followed only to existing places inside the \
                             workspace root",
                            self.display(&existing)
                        )));
                    }
                    match existing.file_name() {
                        Some(n) if existing != self.canonical => missing.push(n.to_owned()),
                        _ => {
                            return Err(PathError::Io(format!(
                                "the workspace root {} no longer exists",
                                self.canonical.display()
                            )))
                        }
                    }
                    existing.pop();
                }
                Err(e) => {
                    return Err(PathError::Io(format!(
                        "cannot resolve `{user}`: {}",
                        io_reason(&e)
                    )))
                }
            }
        };
        if !canonical.starts_with(&self.canonical) {
            return Err(PathError::Refused(format!(
                "`{user}` resolves through a symlink to {}, outside the workspace root: every \
                 path must stay inside the root",
                canonical.display()
            )));
        }
        let exists = missing.is_empty();
        let mut path = canonical;
        path.extend(missing.into_iter().rev());
        Ok(Resolved { path, exists })
    }
}

/// An I/O error in words, without the OS error number.
pub fn io_reason(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "no such file or directory".into(),
        io::ErrorKind::PermissionDenied => "permission denied".into(),
        io::ErrorKind::NotADirectory => "a component of the path is a file, not a directory".into(),
        io::ErrorKind::IsADirectory => "it is a directory".into(),
        _ => {
            let s = e.to_string();
            match s.find(" (os error") {
                Some(i) => s[..i].to_owned(),
                None => s,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_refusals() {
        let dir = std::env::temp_dir();
        let root = Root::new(&dir).unwrap();
        for p in ["/etc/passwd", "..", "../x", "a/../../x", "./../x"] {
            assert!(
                matches!(root.resolve(p), Err(PathError::Refused(_))),
                "{p} should be refused"
            );
        }
        assert_eq!(root.resolve("").unwrap().path, root.path());
        assert_eq!(root.resolve("a/..").unwrap().path, root.path());
    }
}
