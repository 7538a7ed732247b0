//! PostgreSQL connections as the checkpointer ([`crate::checkpoint::PostgresSaver`])
//! and the store ([`crate::store::postgres::PostgresStore`]) both make them: TLS
//! through rustls with `ring`, certificates checked by the platform's verifier, and a
//! `deadpool` pool of connections on tokio.

use std::time::Duration;

use deadpool_postgres::{BuildError, Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres_rustls::MakeRustlsConnect;

/// rustls with `ring`, checking certificates with the platform's verifier.
pub(crate) fn tls_connector() -> Result<MakeRustlsConnect, rustls::Error> {
    use rustls_platform_verifier::ConfigVerifierExt;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = rustls::ClientConfig::with_platform_verifier()?;
    Ok(MakeRustlsConnect::new(config))
}

/// A pool of at most `max_size` connections made by `config` over `tls`; `timeout`,
/// when given, bounds both the wait for a free connection and the making of one.
/// Connections are recycled the fast way (no query to check them).
pub(crate) fn pool(
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
    max_size: usize,
    timeout: Option<Duration>,
) -> Result<Pool, BuildError> {
    let recycling_method = RecyclingMethod::Fast;
    let manager = Manager::from_config(config, tls, ManagerConfig { recycling_method });
    Pool::builder(manager)
        .max_size(max_size)
        .runtime(Runtime::Tokio1)
        .wait_timeout(timeout)
        .create_timeout(timeout)
        .build()
}
