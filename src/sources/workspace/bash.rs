//! `bash`: a command run in the root as the leader of its own process group, its output
//! captured head and tail, the whole group killed when the call ends.

use super::*;

// ---------------------------------------------------------------- bash

/// The head and the tail of a stream, at most `cap` bytes together, and how much
/// went by in between.
pub(super) struct Capture {
    pub(super) head: Vec<u8>,
    pub(super) tail: VecDeque<u8>,
    pub(super) total: usize,
    pub(super) cap: usize,
}

impl Capture {
    pub(super) fn new(cap: usize) -> Self {
        Capture {
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
            cap,
        }
    }

    pub(super) fn push(&mut self, mut buf: &[u8]) {
        self.total += buf.len();
        let head_cap = self.cap - self.cap / 2;
        if self.head.len() < head_cap {
            let k = buf.len().min(head_cap - self.head.len());
            self.head.extend_from_slice(&buf[..k]);
            buf = &buf[k..];
        }
        let tail_cap = self.cap / 2;
        if buf.len() >= tail_cap {
            self.tail.clear();
            self.tail.extend(&buf[buf.len() - tail_cap..]);
        } else {
            let drop = (self.tail.len() + buf.len()).saturating_sub(tail_cap);
            self.tail.drain(..drop);
            self.tail.extend(buf);
        }
    }

    pub(super) fn render(&self) -> String {
        let mut s = String::from_utf8_lossy(&self.head).into_owned();
        let omitted = self.total - self.head.len() - self.tail.len();
        if omitted > 0 {
            if !s.ends_with('\n') {
                s.push('\n');
            }
            s.push_str(&format!("[truncated: {omitted} bytes omitted]\n"));
        }
        let (a, b) = self.tail.as_slices();
        let mut tail = a.to_vec();
        tail.extend_from_slice(b);
        s.push_str(&String::from_utf8_lossy(&tail));
        s
    }
}

/// Kills a command's whole process group (the command ran as its leader), unless
/// that was done already: when the call ends any way, nothing it started survives.
pub(super) struct KillGroup {
    pub(super) pgid: Option<u32>,
    /// The call's [`strays::MARKER_VAR`] value, until its processes are killed.
    pub(super) marker: Option<String>,
}

impl KillGroup {
    pub(super) fn kill(&mut self) {
        self.kill_group();
        if let Some(marker) = self.marker.take() {
            strays::kill_marked(&marker);
        }
    }

    pub(super) fn kill_group(&mut self) {
        #[cfg(unix)]
        if let Some(pgid) = self.pgid.take() {
            if let Ok(pgid) = libc::pid_t::try_from(pgid) {
                // SAFETY: killpg has no memory-safety preconditions; a group that is
                // gone already gives ESRCH, which is ignored.
                unsafe {
                    libc::killpg(pgid, libc::SIGKILL);
                }
            }
        }
        #[cfg(not(unix))]
        {
            self.pgid = None;
        }
    }
}

impl Drop for KillGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

pub(super) async fn pump<R: AsyncRead + Unpin>(mut r: R, into: Arc<Mutex<Capture>>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => into
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(&buf[..n]),
        }
    }
}

pub(super) enum End {
    Exited(io::Result<std::process::ExitStatus>),
    TimedOut,
    Cancelled,
}

impl Workspace {
    pub(super) async fn bash(&self, call: Call<'_>) -> Result<ToolOutput, ToolError> {
        let Call { tool, args, cancel } = call;
        let command = str_arg(tool, args, "command")?;
        let max_t = self.max_bash_timeout();
        let limit = self.bash_limit(tool, args, max_t)?;
        let marker = strays::new_marker();
        let mut child = self
            .bash_command(command, &marker)
            .spawn()
            .map_err(|e| failed(tool, format!("could not start bash: {}", io_reason(&e))))?;
        let mut group = KillGroup {
            pgid: child.id(),
            marker: Some(marker),
        };
        let cap = self.opts.max_output_bytes;
        let (out, err) = (
            Arc::new(Mutex::new(Capture::new(cap))),
            Arc::new(Mutex::new(Capture::new(cap))),
        );
        let mut readers = Vec::new();
        if let Some(s) = child.stdout.take() {
            readers.push(AbortOnDrop(tokio::spawn(pump(s, out.clone()))));
        }
        if let Some(s) = child.stderr.take() {
            readers.push(AbortOnDrop(tokio::spawn(pump(s, err.clone()))));
        }
        let end = tokio::select! {
            s = child.wait() => End::Exited(s),
            _ = tokio::time::sleep(limit) => End::TimedOut,
            _ = cancel.cancelled() => End::Cancelled,
        };
        // The command if it still runs, and whatever it left running.
        group.kill();
        if !matches!(end, End::Exited(_)) {
            let _ = child.kill().await;
        }
        let _ = tokio::time::timeout(
            PIPE_GRACE,
            futures::future::join_all(readers.iter_mut().map(|r| &mut r.0)),
        )
        .await;
        drop(readers);
        let render = || render_output(&out, &err);
        match end {
            End::Cancelled => Err(cancelled(tool)),
            End::TimedOut => {
                let so_far = render();
                let so_far = if so_far.is_empty() {
                    "It printed nothing.".to_owned()
                } else {
                    format!("Its output until then:\n{so_far}")
                };
                Err(failed(
                    tool,
                    format!(
                        "the command `{}` timed out after {}s and was killed, with every process \
                         it started: run something quicker, or pass a larger timeout_seconds (at \
                         most {}). {}",
                        clip_chars(command, 200),
                        secs(limit),
                        secs(max_t),
                        so_far.trim_end()
                    ),
                ))
            }
            End::Exited(Err(e)) => Err(failed(
                tool,
                format!("waiting for the command failed: {}", io_reason(&e)),
            )),
            End::Exited(Ok(status)) => {
                let head = exit_head(status);
                let body = render();
                let text = if body.is_empty() {
                    format!("{head} (no output)")
                } else {
                    format!("{head}\n{}", body.trim_end_matches('\n'))
                };
                Ok(ToolOutput::text(text))
            }
        }
    }
}

impl Workspace {
    /// The run's time limit: `timeout_seconds` when given (above 0, at most `max_t`),
    /// else the workspace's default.
    fn bash_limit(&self, tool: &str, args: &Value, max_t: Duration) -> Result<Duration, ToolError> {
        match args.get("timeout_seconds").and_then(Value::as_f64) {
            None => Ok(self.opts.bash_timeout),
            Some(t) if t > 0.0 && t <= max_t.as_secs_f64() => Ok(Duration::from_secs_f64(t)),
            Some(t) => Err(ToolError::InvalidArgs {
                tool: tool.to_owned(),
                reason: format!(
                    "timeout_seconds must be above 0 and at most {}, got {t}",
                    secs(max_t)
                ),
            }),
        }
    }

    /// `bash -c command` in the root, its output piped, with only the allowed and the
    /// configured environment (and `marker`, by which strays are found), in a process
    /// group of its own (killed whole).
    fn bash_command(&self, command: &str, marker: &str) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg("-c")
            .arg(command)
            .current_dir(self.root.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .env_clear();
        for name in BASH_ENV_ALLOWED {
            if let Some(v) = std::env::var_os(name) {
                cmd.env(name, v);
            }
        }
        cmd.envs(self.opts.bash_env.iter().map(|(k, v)| (k, v)));
        cmd.env(strays::MARKER_VAR, marker);
        #[cfg(unix)]
        cmd.process_group(0);
        cmd
    }
}

/// What the command printed, as `[stdout]` and `[stderr]` sections (each only when
/// something was printed there).
fn render_output(out: &Mutex<Capture>, err: &Mutex<Capture>) -> String {
    let out = out.lock().unwrap_or_else(|p| p.into_inner());
    let err = err.lock().unwrap_or_else(|p| p.into_inner());
    let mut s = String::new();
    for (label, c) in [("stdout", &*out), ("stderr", &*err)] {
        if c.total > 0 {
            let text = c.render();
            s.push_str(&format!("[{label}]\n{text}"));
            if !text.ends_with('\n') {
                s.push('\n');
            }
        }
    }
    s
}

/// How the command ended: its exit code, else the signal that killed it.
fn exit_head(status: std::process::ExitStatus) -> String {
    match status.code() {
        Some(c) => format!("exit code: {c}"),
        None => {
            #[cfg(unix)]
            let s = {
                use std::os::unix::process::ExitStatusExt;
                status
                    .signal()
                    .map(|s| format!("killed by signal {s}"))
                    .unwrap_or_else(|| "no exit code".into())
            };
            #[cfg(not(unix))]
            let s = "no exit code".to_owned();
            s
        }
    }
}

pub(super) struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
