//! The listener: a unix socket (Curio's default is
//! `unix:///run/curio/cuzk.sock`) or TCP, the gRPC server with Curio's
//! message limits, and a draining shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio_stream::wrappers::{TcpListenerStream, UnixListenerStream};

use crate::jobs::{Jobs, SubmitError};
use crate::proto::proving_engine_server::ProvingEngineServer;
use crate::service::{AdmissionTicket, ProvingService};

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

/// How the server listens, beyond the address.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Where.
    pub listen: Listen,
    /// Largest gRPC message either way, bytes.
    pub max_message_bytes: usize,
    /// A unix socket's permission bits (default `0o660`: the daemon's user
    /// and group may connect, nobody else).
    pub socket_mode: u32,
    /// A unix socket's group, by name or number (`None`: the daemon's own):
    /// a Curio running as another user connects as a member of it.
    pub socket_group: Option<String>,
}

impl ServeOptions {
    /// `listen` with Curio's message limit and the default socket mode.
    pub fn new(listen: Listen) -> Self {
        Self {
            listen,
            max_message_bytes: crate::client::MAX_MESSAGE_BYTES,
            socket_mode: DEFAULT_SOCKET_MODE,
            socket_group: None,
        }
    }
}

/// A unix socket's default permission bits: owner and group read and write.
pub const DEFAULT_SOCKET_MODE: u32 = 0o660;

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
    let options = ServeOptions { max_message_bytes, ..ServeOptions::new(listen.clone()) };
    serve_with(&options, jobs, shutdown, ready).await
}

/// [`serve`] with every option: a unix socket gets `socket_mode` and
/// `socket_group`; a path left by a dead daemon is replaced only when it is
/// a socket nobody answers on (anything else there is an error, never
/// removed).
pub async fn serve_with(
    options: &ServeOptions,
    jobs: Jobs,
    shutdown: impl Future<Output = ()> + Send + 'static,
    ready: impl FnOnce(),
) -> Result<(), ServeError> {
    let listen = &options.listen;
    let service = ProvingEngineServer::new(ProvingService::new(jobs.clone()))
        .max_decoding_message_size(options.max_message_bytes)
        .max_encoding_message_size(options.max_message_bytes);
    let admit = AdmitLayer(jobs.clone());
    let drained = async move {
        shutdown.await;
        log::info!("porep-c2-service: shutting down: refusing new proofs, finishing the running ones");
        let j = jobs.clone();
        if let Err(e) = tokio::task::spawn_blocking(move || j.drain()).await {
            log::error!("porep-c2-service: draining: {e}");
        }
    };
    let bind = |source| ServeError::Bind { listen: listen.to_string(), source };
    let router = tonic::transport::Server::builder().layer(admit).add_service(service);
    match listen {
        Listen::Unix(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(bind)?;
            }
            remove_stale_socket(path).map_err(bind)?;
            let listener = tokio::net::UnixListener::bind(path).map_err(bind)?;
            set_socket_access(path, options.socket_mode, options.socket_group.as_deref()).map_err(bind)?;
            log::info!("porep-c2-service: listening on {listen} (mode {:o})", options.socket_mode);
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

/// Removes a socket left at `path` by a daemon that died (nobody answers on
/// it). A live socket, or anything that is not a socket (a file, a folder,
/// a link), is an error: the path is left alone.
fn remove_stale_socket(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if !meta.file_type().is_socket() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!("{} exists and is not a socket: not removing it", path.display()),
        ));
    }
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AddrInUse,
            format!("another daemon answers on {}", path.display()),
        ));
    }
    std::fs::remove_file(path)
}

/// Gives the socket its mode and group.
fn set_socket_access(path: &Path, mode: u32, group: Option<&str>) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(group) = group.filter(|g| !g.is_empty()) {
        let gid = match group.parse::<u32>() {
            Ok(gid) => gid,
            Err(_) => nix::unistd::Group::from_name(group)
                .map_err(std::io::Error::from)?
                .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, format!("no group {group:?}")))?
                .gid
                .as_raw(),
        };
        std::os::unix::fs::chown(path, None, Some(gid))?;
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// The admission layer: `Prove` and `SubmitProof` take a place among the
/// job table's `max_pending` before their body is read; with none left
/// they are answered `RESOURCE_EXHAUSTED` at once and the body (up to the
/// message limit, 256 MiB) is never received or decoded. Other methods
/// pass.
#[derive(Clone)]
struct AdmitLayer(Jobs);

impl<S> tower::Layer<S> for AdmitLayer {
    type Service = Admit<S>;

    fn layer(&self, inner: S) -> Admit<S> {
        Admit { inner, jobs: self.0.clone() }
    }
}

#[derive(Clone)]
struct Admit<S> {
    inner: S,
    jobs: Jobs,
}

/// The methods that carry a proof request's body.
const ADMITTED_PATHS: [&str; 2] = ["/cuzk.v1.ProvingEngine/Prove", "/cuzk.v1.ProvingEngine/SubmitProof"];

impl<S, B> tower::Service<http::Request<B>> for Admit<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<tonic::body::Body>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        if ADMITTED_PATHS.contains(&request.uri().path()) {
            match self.jobs.admit() {
                Ok(a) => {
                    request.extensions_mut().insert(AdmissionTicket(Arc::new(Mutex::new(Some(a)))));
                }
                Err(e) => {
                    let status = match e {
                        SubmitError::Full(_) => tonic::Status::resource_exhausted(e.to_string()),
                        SubmitError::Closing => tonic::Status::unavailable(e.to_string()),
                    };
                    return Box::pin(std::future::ready(Ok(status.into_http())));
                }
            }
        }
        Box::pin(self.inner.call(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_stale_sockets_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        // A file is never removed.
        let file = dir.path().join("not-a-socket");
        std::fs::write(&file, b"data").unwrap();
        let e = remove_stale_socket(&file).unwrap_err();
        assert!(e.to_string().contains("not a socket"), "{e}");
        assert!(file.exists());
        // Nothing there: fine.
        remove_stale_socket(&dir.path().join("none")).unwrap();
        // A live socket is another daemon's; a dead one goes.
        let sock = dir.path().join("s.sock");
        let live = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        assert!(remove_stale_socket(&sock).unwrap_err().to_string().contains("another daemon"));
        drop(live);
        remove_stale_socket(&sock).unwrap();
        assert!(!sock.exists());
    }

    #[test]
    fn sockets_get_their_mode_and_group() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("s.sock");
        let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let gid = std::fs::metadata(&sock).unwrap().gid();
        set_socket_access(&sock, 0o660, Some(&gid.to_string())).unwrap();
        let meta = std::fs::metadata(&sock).unwrap();
        assert_eq!((meta.permissions().mode() & 0o777, meta.gid()), (0o660, gid));
        set_socket_access(&sock, 0o600, None).unwrap();
        assert_eq!(std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777, 0o600);
        let e = set_socket_access(&sock, 0o660, Some("no-such-group-porep-c2")).unwrap_err();
        assert!(e.to_string().contains("no-such-group-porep-c2"), "{e}");
    }

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
