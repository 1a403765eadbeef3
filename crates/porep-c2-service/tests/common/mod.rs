//! What the service tests share: the tiny-sector engine (real proofs of
//! tiny StackedDrg sectors named by the request) and a daemon on a unix
//! socket with a client.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bellperson::groth16::Parameters;
use blstrs::{Bls12, Scalar};
use c2_testkit::demo::{self, TinyConfig};
use porep_c2::{prove_instance, Backend, CancelToken, ProverConfig};
use porep_c2_service::proto::{self, proving_engine_client::ProvingEngineClient, ProofKind as WireKind};
use porep_c2_service::{
    request_config, serve_with, Engine, EngineError, Jobs, JobsConfig, Listen, LoadedSet, Metrics, Placement,
    ProofKind, ProofOutput, ProofRequest, ServeOptions,
};
use tonic::transport::Channel;

/// The tiny sector's parameters from `dir` (generated there once): its
/// circuit does not depend on the partition count, so one set serves every
/// request.
pub fn tiny_params(dir: &Path) -> Arc<Parameters<Bls12>> {
    static PARAMS: Mutex<Option<Arc<Parameters<Bls12>>>> = Mutex::new(None);
    let mut p = PARAMS.lock().unwrap_or_else(|e| e.into_inner());
    p.get_or_insert_with(|| {
        let instance =
            demo::tiny_instance(&TinyConfig { partitions: 2, ..TinyConfig::default() }).expect("tiny sector");
        demo::ensure_parameters(&instance, dir, demo::TINY_PARAMS_SEED).expect("tiny parameters").0
    })
    .clone()
}

/// Blinding for a request: fixed per sector number, so the library can
/// make the same proof.
pub fn blinding(sector: u64, partitions: usize) -> Vec<(Scalar, Scalar)> {
    (0..partitions).map(|k| (Scalar::from(sector * 100 + k as u64 + 1), Scalar::from(sector * 100 + 51))).collect()
}

/// A tiny sector named by a request: `vanilla_proof` is `"<seed>:<partitions>"`.
fn tiny_of(request: &ProofRequest) -> Result<TinyConfig, EngineError> {
    let text = String::from_utf8_lossy(&request.vanilla_proof).to_string();
    let (seed, parts) = text
        .split_once(':')
        .ok_or_else(|| EngineError::Invalid(format!("vanilla_proof {text:?} is not <seed>:<partitions>")))?;
    let parse = |s: &str| s.parse::<u64>().map_err(|e| EngineError::Invalid(format!("{s:?}: {e}")));
    Ok(TinyConfig { seed: parse(seed)?, partitions: parse(parts)? as usize, ..TinyConfig::default() })
}

/// Proves tiny sectors through the facade (`prove_instance`: synthesis,
/// CPU stages, verification), honouring the request's priority and
/// cancellation like `FilecoinEngine`.
pub struct TinyEngine {
    /// The tiny sector's parameters.
    pub params: Arc<Parameters<Bls12>>,
    /// How partitions are proved (the CPU stages; a test's workers).
    pub backend: Backend,
}

impl TinyEngine {
    /// Proving on the CPU stages.
    pub fn new(params: Arc<Parameters<Bls12>>) -> Self {
        Self { params, backend: Backend::cpu() }
    }
}

impl Engine for TinyEngine {
    fn supports(&self, kind: ProofKind) -> bool {
        kind == ProofKind::PorepSealCommit
    }

    fn prove(
        &self,
        request: &ProofRequest,
        cancel: &CancelToken,
        placement: &Arc<Placement>,
    ) -> Result<ProofOutput, EngineError> {
        let tiny = tiny_of(request)?;
        let instance = demo::tiny_instance(&tiny).map_err(|e| EngineError::Invalid(e.to_string()))?;
        let base = ProverConfig { backend: self.backend.clone(), ..ProverConfig::default() };
        let config = request_config(&base, request, cancel, placement);
        let pairs = blinding(request.sector_number, tiny.partitions);
        ProofOutput::from_result(prove_instance(&instance, &self.params, &pairs, &config))
    }

    fn preload(&self, _: &str) -> Result<bool, EngineError> {
        Ok(true)
    }

    fn evict(&self, _: &str) -> Result<u64, EngineError> {
        Ok(0)
    }

    fn loaded(&self) -> Vec<LoadedSet> {
        Vec::new()
    }

    fn worker_health(&self) -> Vec<(String, bool)> {
        self.backend.worker_health()
    }
}

/// A running service on a unix socket in a temporary folder.
pub struct Daemon {
    _dir: tempfile::TempDir,
    /// The socket.
    pub socket: PathBuf,
    /// The service's job table.
    pub jobs: Jobs,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    handle: Option<tokio::task::JoinHandle<Result<(), porep_c2_service::ServeError>>>,
}

impl Daemon {
    /// The service over `engine` with `concurrent_proofs` runners, no
    /// urgent-only ones (every job takes its turn on those runners), and 8
    /// pending at most.
    pub async fn start(engine: Arc<dyn Engine>, concurrent_proofs: usize) -> Self {
        let jobs = JobsConfig { concurrent_proofs, urgent_proofs: 0, max_pending: 8, ..JobsConfig::default() };
        Self::with_jobs(engine, jobs).await
    }

    /// The service over `engine` with `jobs`.
    pub async fn with_jobs(engine: Arc<dyn Engine>, jobs: JobsConfig) -> Self {
        Self::with_options(engine, jobs, 256 << 20).await
    }

    /// The service over `engine` with `jobs` and a message limit.
    pub async fn with_options(engine: Arc<dyn Engine>, jobs: JobsConfig, max_message_bytes: usize) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("cuzk.sock");
        let jobs = Jobs::start(engine, jobs, Arc::new(Metrics::default()));
        let table = jobs.clone();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<()>();
        let options = ServeOptions { max_message_bytes, ..ServeOptions::new(Listen::Unix(socket.clone())) };
        let handle = tokio::spawn(async move {
            serve_with(
                &options,
                jobs,
                async {
                    let _ = rx.await;
                },
                move || {
                    let _ = ready_tx.send(());
                },
            )
            .await
        });
        ready_rx.await.unwrap();
        Self { _dir: dir, socket, jobs: table, stop: Some(tx), handle: Some(handle) }
    }

    /// A client of it.
    pub async fn client(&self) -> ProvingEngineClient<Channel> {
        connect(&self.socket).await.unwrap()
    }

    /// Stops it (draining) and waits for the server to end.
    pub async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        self.handle.take().unwrap().await.unwrap().unwrap();
    }
}

/// A gRPC client over the unix socket at `path` (as Curio's `unix://` address).
pub async fn connect(path: &Path) -> Result<ProvingEngineClient<Channel>, tonic::transport::Error> {
    porep_c2_service::client::connect(&Listen::Unix(path.to_path_buf())).await
}

/// A PoRep request of the tiny engine's dialect (`vanilla` names a tiny sector).
pub fn porep_request(id: &str, vanilla: &[u8], sector: u64, priority: proto::Priority) -> proto::SubmitProofRequest {
    proto::SubmitProofRequest {
        request_id: id.into(),
        proof_kind: WireKind::PorepSealCommit as i32,
        registered_proof: 5,
        priority: priority as i32,
        vanilla_proof: vanilla.to_vec(),
        sector_number: sector,
        miner_id: 1000,
        ..Default::default()
    }
}

/// Curio's WindowPoSt and WinningPoSt requests (the library's builders).
#[allow(unused_imports)]
pub use porep_c2_service::curio::{window_post as curio_window_post, winning_post as curio_winning_post};

/// Waits for job `job` to end.
pub async fn await_done(c: &mut ProvingEngineClient<Channel>, job: &str) -> proto::AwaitProofResponse {
    c.await_proof(proto::AwaitProofRequest { job_id: job.into(), timeout_ms: 0 }).await.unwrap().into_inner()
}
