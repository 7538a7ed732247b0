//! Processes a `bash` command leaves running outside its process group.
//!
//! A command runs as the leader of its own process group, and the whole group is
//! killed when the call ends. A process that leaves the group (`setsid cmd &`,
//! `nohup setsid …`, a daemon's double fork) would survive that. So every command
//! gets a marker in its environment, [`MARKER_VAR`] = a value unique to the call,
//! which every process it starts inherits; when the call ends, the processes of this
//! user whose environment holds the marker are killed too (Linux: a scan of
//! `/proc/<pid>/environ`, the technique CI runners use for build processes).
//!
//! What holds: anything started from the command that keeps the environment it was
//! given, in any session or process group. What does not: a process that clears or
//! rewrites its environment before it execs (`env -i cmd &`), or one that runs as
//! another user (`sudo`); a cgroup per command would catch those too, and needs
//! privileges a library does not have. On systems without `/proc` only the process
//! group is killed.

use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable that marks every process a `bash` call starts.
pub const MARKER_VAR: &str = "IRONLOOP_BASH_CALL";

/// A marker value no other call of any process has: this process's id and a counter.
pub fn new_marker() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Kills (SIGKILL) every process of this user whose environment holds `marker`,
/// scanning again until a scan finds none (a process may start another between the
/// scan and the kill), at most a few times. Returns how many were killed.
#[cfg(target_os = "linux")]
pub fn kill_marked(marker: &str) -> usize {
    let entry = format!("{MARKER_VAR}={marker}").into_bytes();
    let me = std::process::id();
    let mut killed = 0;
    for _ in 0..5 {
        let mut found = 0;
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return killed;
        };
        for e in dir.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if pid == me {
                continue;
            }
            // Another user's environment is unreadable: skipped, as it cannot be ours.
            let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
                continue;
            };
            if env.split(|&b| b == 0).any(|v| v == entry.as_slice()) {
                if let Ok(pid) = libc::pid_t::try_from(pid) {
                    // SAFETY: kill has no memory-safety preconditions; a process that
                    // is gone already gives ESRCH, which is ignored.
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                    }
                    found += 1;
                }
            }
        }
        killed += found;
        if found == 0 {
            break;
        }
    }
    killed
}

/// Without `/proc` only the process group is killed (see the module's doc).
#[cfg(not(target_os = "linux"))]
pub fn kill_marked(_marker: &str) -> usize {
    0
}
