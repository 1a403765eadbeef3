//! The listener: a unix socket (Curio's default is
//! `unix:///run/curio/cuzk.sock`) or TCP, the gRPC server with Curio's
//! message limits, and a draining shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;

use tokio_stream::wrappers::{TcpListenerStream, UnixListenerStream};

use crate::jobs::Jobs;
use crate::proto::proving_engine_server::ProvingEngineServer;
use crate::service::ProvingService;

/// Where to listen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listen {
    /// A unix socket at this path.
    Unix(PathBuf),
    /// TCP.
    Tcp(SocketAddr),
}

impl Listen {
    /// `unix:///abs/path.sock`, `unix:relative.sock`, or `host:port`.
    pub fn parse(s: &str) -> Result<Self, String> {
        if let Some(path) = s.strip_prefix("unix://").or_else(|| s.strip_prefix("unix:")) {
            if path.is_empty() {
                return Err(format!("listen = {s:?}: no socket path"));
            }
            return Ok(Self::Unix(PathBuf::from(path)));
        }
        s.parse::<SocketAddr>()
            .map(Self::Tcp)
            .map_err(|e| format!("listen = {s:?}: neither unix:///path nor host:port ({e})"))
    }
}

impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unix(p) => write!(f, "unix://{}", p.display()),
            Self::Tcp(a) => write!(f, "{a}"),
        }
    }
}

/// Errors of the server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Binding the socket failed.
    #[error("listening on {listen}: {source}")]
    Bind {
        /// Where.
        listen: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The gRPC server failed.
    #[error("gRPC server: {0}")]
    Transport(#[from] tonic::transport::Error),
}

/// Serves `jobs` on `listen` until `shutdown` resolves, then drains:
/// new requests are refused, queued proofs end cancelled (their clients are
/// told), running ones finish and are answered, and only then does the
/// server stop. `ready` is called once the socket is bound.
pub async fn serve(
    listen: &Listen,
    jobs: Jobs,
    max_message_bytes: usize,
    shutdown: impl Future<Output = ()> + Send + 'static,
    ready: impl FnOnce(),
) -> Result<(), ServeError> {
    let service = ProvingEngineServer::new(ProvingService::new(jobs.clone()))
        .max_decoding_message_size(max_message_bytes)
        .max_encoding_message_size(max_message_bytes);
    let drained = async move {
        shutdown.await;
        log::info!("porep-c2-service: shutting down: refusing new proofs, finishing the running ones");
        let j = jobs.clone();
        if let Err(e) = tokio::task::spawn_blocking(move || j.drain()).await {
            log::error!("porep-c2-service: draining: {e}");
        }
    };
    let bind = |source| ServeError::Bind { listen: listen.to_string(), source };
    let router = tonic::transport::Server::builder().add_service(service);
    match listen {
        Listen::Unix(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(bind)?;
            }
            // A socket left by a process that died: connecting to it fails.
            if path.exists() && std::os::unix::net::UnixStream::connect(path).is_err() {
                std::fs::remove_file(path).map_err(bind)?;
            }
            let listener = tokio::net::UnixListener::bind(path).map_err(bind)?;
            log::info!("porep-c2-service: listening on {listen}");
            ready();
            let out = router.serve_with_incoming_shutdown(UnixListenerStream::new(listener), drained).await;
            let _ = std::fs::remove_file(path);
            out?;
        }
        Listen::Tcp(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await.map_err(bind)?;
            log::info!("porep-c2-service: listening on {listen}");
            ready();
            router.serve_with_incoming_shutdown(TcpListenerStream::new(listener), drained).await?;
        }
    }
    log::info!("porep-c2-service: stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_parse() {
        assert_eq!(Listen::parse("unix:///run/x.sock").unwrap(), Listen::Unix("/run/x.sock".into()));
        assert_eq!(Listen::parse("unix:x.sock").unwrap(), Listen::Unix("x.sock".into()));
        assert_eq!(Listen::parse("127.0.0.1:9820").unwrap(), Listen::Tcp("127.0.0.1:9820".parse().unwrap()));
        assert!(Listen::parse("unix://").is_err());
        assert!(Listen::parse("localhost").is_err());
        assert_eq!(Listen::parse("unix:///a.sock").unwrap().to_string(), "unix:///a.sock");
    }
}
