//! Opening a resolved path so that what is opened is inside the root, whatever
//! another process does to the tree between the check and the use.
//!
//! [`Root::resolve`](super::path::Root::resolve) checks a path by its name; a process
//! that swaps a file or a directory for a symlink after that check (a rename race)
//! would otherwise hand the tools a file outside the root. So the file tools open
//! through [`open_confined`]:
//!
//! - On Linux ≥ 5.6 the kernel resolves the path below the root itself
//!   (`openat2` with `RESOLVE_BENEATH`: no `..` above it, no absolute symlinks, no
//!   `/proc` magic links); on older kernels and other systems, the last component is
//!   opened with `O_NOFOLLOW`.
//! - Either way, the opened descriptor is checked after the fact: on Linux the path
//!   the kernel gives for it (`/proc/self/fd/N`) must lie inside the root.
//! - It must be a regular file (a FIFO would block a reader; it is opened
//!   non-blocking and refused) with exactly one link: a hard link is the same file as
//!   a name outside the root, and nothing on the file says which name is the "real"
//!   one, so a file with several links is refused for reading and writing alike.

use std::fs::File;
use std::io;
use std::path::Path;

use super::path::Root;

/// What the file is opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    /// Writing, creating the file when it does not exist (never truncating on open:
    /// the caller truncates once the descriptor is checked).
    Write,
}

/// Why a file could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// Opened, or about to be, outside the root, or not a single-link regular file:
    /// the text says which, for the model.
    Refused(String),
    /// The system said no.
    Io(io::Error),
}

impl From<io::Error> for OpenError {
    fn from(e: io::Error) -> Self {
        OpenError::Io(e)
    }
}

/// Opens `path` (a path [`Root::resolve`] gave, so under the root's canonical path)
/// for `access`, refusing anything that turns out to be outside the root, not a
/// regular file, or a file with more than one hard link.
pub fn open_confined(root: &Root, path: &Path, access: Access) -> Result<File, OpenError> {
    let file = open_beneath(root, path, access)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(OpenError::Refused(if meta.is_dir() {
            "it is a directory, not a file".into()
        } else {
            "it is not a regular file (a pipe, a socket or a device)".into()
        }));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let links = meta.nlink();
        if links > 1 {
            return Err(OpenError::Refused(format!(
                "it has {links} hard links: a hard link can be the same file as one outside \
                 the workspace root, so the workspace tools neither read nor write a file \
                 with more than one link (copy it to make an ordinary file)"
            )));
        }
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let opened = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))?;
        if !opened.starts_with(root.path()) {
            return Err(OpenError::Refused(format!(
                "it was replaced while being opened and now leads to {}, outside the \
                 workspace root",
                opened.display()
            )));
        }
    }
    Ok(file)
}

#[cfg(unix)]
fn flags(access: Access) -> libc::c_int {
    let base = libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY;
    match access {
        Access::Read => base | libc::O_RDONLY,
        Access::Write => base | libc::O_WRONLY | libc::O_CREAT,
    }
}

#[cfg(target_os = "linux")]
fn open_beneath(root: &Root, path: &Path, access: Access) -> Result<File, OpenError> {
    use std::ffi::CString;
    use std::os::fd::FromRawFd;
    use std::os::unix::ffi::OsStrExt;

    /// `struct open_how` of linux/openat2.h (libc's is `non_exhaustive`).
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
    const RESOLVE_BENEATH: u64 = 0x08;

    let rel = path.strip_prefix(root.path()).map_err(|_| {
        OpenError::Refused(format!("{} is outside the workspace root", path.display()))
    })?;
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let c_rel = CString::new(rel.as_os_str().as_bytes())
        .map_err(|_| OpenError::Refused("the path contains a NUL byte".into()))?;
    let dir = File::open(root.path())?;
    let how = OpenHow {
        flags: flags(access) as u64,
        mode: if access == Access::Write { 0o666 } else { 0 },
        resolve: RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
    };
    use std::os::fd::AsRawFd;
    // SAFETY: `dir` is an open descriptor, `c_rel` a NUL-terminated string and `how`
    // a live `open_how` of the size passed; the kernel only reads them.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            c_rel.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd >= 0 {
        // SAFETY: the kernel just returned this descriptor, owned by nobody else.
        return Ok(unsafe { File::from_raw_fd(fd as libc::c_int) });
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        // Before Linux 5.6, or a seccomp filter that hides it: open by name below.
        Some(libc::ENOSYS) | Some(libc::EPERM) => open_nofollow(path, access),
        Some(libc::EXDEV) | Some(libc::ELOOP) => Err(OpenError::Refused(
            "it was replaced by a symlink while being opened: a path may only lead to \
             places inside the workspace root"
                .into(),
        )),
        _ => Err(OpenError::Io(err)),
    }
}

#[cfg(all(unix, not(target_os = "linux")))]
fn open_beneath(_root: &Root, path: &Path, access: Access) -> Result<File, OpenError> {
    open_nofollow(path, access)
}

#[cfg(unix)]
fn open_nofollow(path: &Path, access: Access) -> Result<File, OpenError> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = std::fs::OpenOptions::new();
    match access {
        Access::Read => o.read(true),
        Access::Write => o.write(true).create(true),
    };
    o.custom_flags(flags(access) & !(libc::O_CREAT | libc::O_WRONLY));
    o.open(path).map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            OpenError::Refused(
                "it was replaced by a symlink while being opened: a path may only lead to \
                 places inside the workspace root"
                    .into(),
            )
        } else {
            OpenError::Io(e)
        }
    })
}

#[cfg(not(unix))]
fn open_beneath(_root: &Root, path: &Path, access: Access) -> Result<File, OpenError> {
    let mut o = std::fs::OpenOptions::new();
    match access {
        Access::Read => o.read(true),
        Access::Write => o.write(true).create(true),
    };
    Ok(o.open(path)?)
}
