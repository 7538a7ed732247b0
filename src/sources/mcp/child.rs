//! A stdio server's process as an rmcp transport, with its stdout read through
//! [`BoundedLines`] (the message size limit).
//!
//! rmcp's `TokioChildProcess` builds its line reader on the child's stdout itself,
//! with no place for a reader in between, so this is that transport again with one:
//! the same reader and writer (rmcp's `AsyncRwTransport`) and the same shutdown as
//! the MCP specification describes it (stdin closed, then `SIGTERM`, then `SIGKILL`,
//! a few seconds apart), the process killed when the transport is dropped.
//!
//! The process also dies with this one: on Linux it is started with
//! `PR_SET_PDEATHSIG` = `SIGKILL`, so a parent killed with `kill -9` (no destructor
//! runs) does not leave its servers running. The kernel sends that signal when the
//! *thread* that started the child ends, not only the process, so every server is
//! started from one thread kept for the life of the process ([`on_spawner_thread`]),
//! never from a tokio worker or a caller's thread that may end first. Elsewhere the
//! server is killed when its transport is dropped, as before.

use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::Transport;
use rmcp::RoleClient;
use tokio::process::{ChildStdin, ChildStdout};

use super::limits::StdoutNotes;
use super::message_limit::BoundedLines;
use super::StdioServer;

/// How long the shutdown waits for the process after each step.
const EXIT_WAIT: Duration = Duration::from_secs(3);

/// The stand-in for a refused line is short, but rmcp's reader must take it even
/// with a tiny limit.
const STAND_IN_ROOM: usize = 4096;

pub(crate) struct ChildProcess {
    /// Killed (its whole process group) when dropped before it exited.
    child: Option<Box<dyn ChildWrapper>>,
    transport: AsyncRwTransport<RoleClient, BoundedLines<ChildStdout>, ChildStdin>,
    notes: Arc<StdoutNotes>,
}

type Job = Box<dyn FnOnce() + Send>;

/// Runs `job` on the thread that starts every server (made on first use, kept for the
/// life of the process; see the module's doc) and waits for its result.
async fn on_spawner_thread<T: Send + 'static>(
    job: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    static SPAWNER: OnceLock<std::io::Result<mpsc::Sender<Job>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("ironloop-mcp-spawner".into())
            .spawn(move || {
                for job in rx {
                    // A job that panics drops its answer (its caller is told) and
                    // must not take the thread, and every later start, with it.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                }
            })
            .map(|_| tx)
    });
    let spawner = spawner
        .as_ref()
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot start a thread: {e}")))?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _ = tx.send(job());
    });
    spawner
        .send(job)
        .map_err(|_| std::io::Error::other("the thread that starts MCP servers is gone"))?;
    rx.await
        .map_err(|_| std::io::Error::other("starting the MCP server panicked"))?
}

/// Makes the child get `SIGKILL` when this process ends, however it ends.
#[cfg(target_os = "linux")]
fn die_with_parent(cmd: &mut tokio::process::Command) {
    let parent = std::process::id();
    // SAFETY: between fork and exec only async-signal-safe calls are made (prctl,
    // getppid, _exit), touching no memory of the parent's.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died before the line above: no signal will come.
            if u32::try_from(libc::getppid()).ok() != Some(parent) {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_cmd: &mut tokio::process::Command) {}

impl ChildProcess {
    /// Starts `server` (see the module's doc for where and how), in a process group
    /// of its own.
    pub(crate) async fn start(
        server: &StdioServer,
        max_message_bytes: usize,
        label: String,
    ) -> std::io::Result<Self> {
        let server = server.clone();
        // The I/O of the child's pipes belongs to the caller's runtime.
        let runtime = tokio::runtime::Handle::current();
        on_spawner_thread(move || {
            let _entered = runtime.enter();
            let mut cmd = tokio::process::Command::new(&server.command);
            cmd.args(&server.args);
            for (k, v) in &server.env {
                cmd.env(k, v);
            }
            if let Some(dir) = &server.cwd {
                cmd.current_dir(dir);
            }
            die_with_parent(&mut cmd);
            let mut wrap = CommandWrap::from(cmd);
            wrap.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
            Self::spawn(wrap, max_message_bytes, label)
        })
        .await
    }

    /// Spawns `cmd` with piped stdin / stdout (stderr inherited).
    fn spawn(
        mut cmd: CommandWrap,
        max_message_bytes: usize,
        server: String,
    ) -> std::io::Result<Self> {
        use std::process::Stdio;
        cmd.command_mut()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn()?;
        let stdin = child.stdin().take();
        let stdout = child.stdout().take();
        let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
            return Err(std::io::Error::other(
                "the child's stdin / stdout were not piped",
            ));
        };
        let read = BoundedLines::new(stdout, max_message_bytes, server);
        let notes = read.notes();
        let transport = AsyncRwTransport::new_client(read, stdin)
            .with_max_line_length(max_message_bytes.saturating_add(STAND_IN_ROOM));
        Ok(ChildProcess {
            child: Some(child),
            transport,
            notes,
        })
    }

    /// What the server has printed on its stdout so far.
    pub(crate) fn notes(&self) -> Arc<StdoutNotes> {
        self.notes.clone()
    }

    pub(crate) fn id(&self) -> Option<u32> {
        self.child.as_ref()?.id()
    }

    async fn wait_for_exit(child: &mut Box<dyn ChildWrapper>) -> bool {
        matches!(
            tokio::time::timeout(EXIT_WAIT, child.wait()).await,
            Ok(Ok(_)) | Ok(Err(_))
        )
    }

    /// stdin closed, then `SIGTERM`, then `SIGKILL`.
    async fn shutdown(&mut self) -> std::io::Result<()> {
        self.transport.close().await?;
        let Some(child) = self.child.as_mut() else {
            return Ok(());
        };
        if Self::wait_for_exit(child).await {
            self.child = None;
            return Ok(());
        }
        #[cfg(unix)]
        if child.signal(libc::SIGTERM).is_ok() && Self::wait_for_exit(child).await {
            self.child = None;
            return Ok(());
        }
        let killed = Box::into_pin(child.kill()).await;
        self.child = None;
        killed
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // `kill` (not `start_kill`) waits for the process, so none is left a zombie.
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    let _ = Box::into_pin(child.kill()).await;
                });
            } else {
                let _ = child.start_kill();
            }
        }
    }
}

impl Transport<RoleClient> for ChildProcess {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.transport.send(item)
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.transport.receive()
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        self.shutdown()
    }
}
