//! A stdio server's process as an rmcp transport, with its stdout read through
//! [`BoundedLines`] (the message size limit).
//!
//! rmcp's `TokioChildProcess` builds its line reader on the child's stdout itself,
//! with no place for a reader in between, so this is that transport again with one:
//! the same reader and writer (rmcp's `AsyncRwTransport`) and the same shutdown as
//! the MCP specification describes it (stdin closed, then `SIGTERM`, then `SIGKILL`,
//! a few seconds apart), the process killed when the transport is dropped.

use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::Transport;
use rmcp::RoleClient;
use tokio::process::{ChildStdin, ChildStdout};

use super::message_limit::BoundedLines;

/// How long the shutdown waits for the process after each step.
const EXIT_WAIT: Duration = Duration::from_secs(3);

/// The stand-in for a refused line is short, but rmcp's reader must take it even
/// with a tiny limit.
const STAND_IN_ROOM: usize = 4096;

pub(crate) struct ChildProcess {
    /// Killed (its whole process group) when dropped before it exited.
    child: Option<Box<dyn ChildWrapper>>,
    transport: AsyncRwTransport<RoleClient, BoundedLines<ChildStdout>, ChildStdin>,
}

impl ChildProcess {
    /// Spawns `cmd` with piped stdin / stdout (stderr inherited).
    pub(crate) fn spawn(
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
        let transport = AsyncRwTransport::new_client(read, stdin)
            .with_max_line_length(max_message_bytes.saturating_add(STAND_IN_ROOM));
        Ok(ChildProcess {
            child: Some(child),
            transport,
        })
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
