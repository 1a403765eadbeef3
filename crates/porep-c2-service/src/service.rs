//! The cuzk.v1 `ProvingEngine` over the job table: decoding, status codes,
//! waiting. No proving logic lives here.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tonic::{Request, Response, Status};

use crate::engine::EngineError;
use crate::jobs::{Admission, Finished, JobState, Jobs, Outcome, SubmitError};
use crate::metrics::DeviceSample;
use crate::proto::{self, await_proof_response::Status as AwaitStatus, proving_engine_server::ProvingEngine};
use crate::request::ProofRequest;

/// The gRPC service (cheap to clone).
#[derive(Clone)]
pub struct ProvingService {
    jobs: Jobs,
    started: Instant,
    devices: Arc<DeviceCache>,
}

/// Each device's status line and metrics sample.
type Samples = Arc<Vec<(proto::GpuStatus, DeviceSample)>>;

/// Device samples, taken at most every [`DEVICE_SAMPLE_AGE`]: opening a
/// device and asking its free memory costs milliseconds per device, and
/// status pages poll.
#[derive(Default)]
struct DeviceCache {
    last: Mutex<Option<(Instant, Samples)>>,
}

/// How old a device sample may be when `GetStatus` or `GetMetrics` answers.
pub const DEVICE_SAMPLE_AGE: Duration = Duration::from_secs(2);

/// A request's place among `max_pending`, taken by the admission layer
/// ([`crate::server`]) before the body was read; the handler hands it to
/// the job table. Cloneable for `http::Extensions`; taken once.
#[derive(Clone)]
pub struct AdmissionTicket(pub Arc<Mutex<Option<Admission>>>);

impl ProvingService {
    /// The service over `jobs`.
    pub fn new(jobs: Jobs) -> Self {
        Self { jobs, started: Instant::now(), devices: Arc::default() }
    }

    /// Decodes and queues a request; `UNIMPLEMENTED` for proof kinds this
    /// service does not prove, `INVALID_ARGUMENT` for unknown enums,
    /// `RESOURCE_EXHAUSTED` when full, `UNAVAILABLE` while draining.
    fn submit(
        &self,
        r: Option<proto::SubmitProofRequest>,
        ticket: Option<&AdmissionTicket>,
    ) -> Result<proto::SubmitProofResponse, Status> {
        let admission = ticket.and_then(|t| t.0.lock().unwrap_or_else(|p| p.into_inner()).take());
        let r = r.ok_or_else(|| Status::invalid_argument("ProveRequest.submit is missing"))?;
        let request = ProofRequest::from_wire(r).map_err(Status::invalid_argument)?;
        if !self.jobs.engine().supports(request.kind) {
            return Err(Status::unimplemented(EngineError::Unimplemented(request.kind).to_string()));
        }
        let (job, place) = self.jobs.submit(request, admission).map_err(|e| match e {
            SubmitError::Full(_) => Status::resource_exhausted(e.to_string()),
            SubmitError::Closing => Status::unavailable(e.to_string()),
        })?;
        Ok(proto::SubmitProofResponse {
            job_id: job.id.clone(),
            queue_position: place as u32,
            assigned_gpu: String::new(),
        })
    }

    /// The engine's devices, sampled at most every [`DEVICE_SAMPLE_AGE`].
    async fn device_samples(&self) -> Result<Samples, Status> {
        if let Some((at, v)) = &*self.devices.last.lock().unwrap_or_else(|p| p.into_inner()) {
            if at.elapsed() < DEVICE_SAMPLE_AGE {
                return Ok(v.clone());
            }
        }
        let devices = self.jobs.engine().devices();
        let v = Arc::new(
            tokio::task::spawn_blocking(move || device_samples(&devices))
                .await
                .map_err(|e| Status::internal(e.to_string()))?,
        );
        *self.devices.last.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), v.clone()));
        Ok(v)
    }

    /// Waits for job `id` (at most `timeout`, if given).
    async fn wait(&self, id: &str, timeout: Option<Duration>) -> Result<proto::AwaitProofResponse, Status> {
        let job = self.jobs.get(id).ok_or_else(|| Status::not_found(format!("no job {id:?}")))?;
        let mut rx = job.watch();
        let done = async {
            loop {
                if let JobState::Done(f) = &*rx.borrow_and_update() {
                    return Some(f.clone());
                }
                if rx.changed().await.is_err() {
                    return None;
                }
            }
        };
        let finished = match timeout {
            Some(t) => tokio::time::timeout(t, done).await.ok().flatten(),
            None => done.await,
        };
        Ok(match finished {
            Some(f) => response(id, &f),
            None => proto::AwaitProofResponse {
                job_id: id.to_string(),
                status: AwaitStatus::Timeout as i32,
                ..Default::default()
            },
        })
    }
}

/// The wire answer for a finished job.
fn response(id: &str, f: &Finished) -> proto::AwaitProofResponse {
    let ms = |d: Duration| d.as_millis() as u64;
    let mut r = proto::AwaitProofResponse {
        job_id: id.to_string(),
        queue_wait_ms: ms(f.queue_wait),
        total_ms: ms(f.total),
        ..Default::default()
    };
    match &f.outcome {
        Outcome::Completed(o) => {
            r.status = AwaitStatus::Completed as i32;
            r.proof = o.proof.clone();
            r.srs_load_ms = ms(o.params_load);
            r.synthesis_ms = ms(o.synthesis);
            r.gpu_compute_ms = ms(o.gpu_compute);
        }
        Outcome::Failed(why) => {
            r.status = AwaitStatus::Failed as i32;
            r.error_message = why.clone();
        }
        Outcome::Cancelled => r.status = AwaitStatus::Cancelled as i32,
    }
    r
}

/// The devices `ordinals` (those an engine proves on) as the driver lists
/// them, with their free memory where a device answers (none without the
/// `cuda` feature, or for an engine on the CPU).
pub fn device_samples(ordinals: &[usize]) -> Vec<(proto::GpuStatus, DeviceSample)> {
    if ordinals.is_empty() {
        return Vec::new();
    }
    let Ok(list) = c2_cuda::devices() else { return Vec::new() };
    list.into_iter()
        .filter(|d| ordinals.contains(&d.ordinal))
        .map(|d| {
            #[cfg(feature = "cuda")]
            let free = c2_cuda::Gpu::open(d.ordinal).and_then(|g| g.memory()).map(|(f, _)| f as u64).unwrap_or(0);
            #[cfg(not(feature = "cuda"))]
            let free = 0u64;
            let total = d.total_memory as u64;
            (
                proto::GpuStatus {
                    ordinal: d.ordinal as u32,
                    name: d.name.clone(),
                    vram_total_bytes: total,
                    vram_free_bytes: free,
                    ..Default::default()
                },
                DeviceSample { ordinal: d.ordinal as u32, used_bytes: total.saturating_sub(free), total_bytes: total },
            )
        })
        .collect()
}

/// An engine error as a status (preload / evict).
fn engine_status(e: EngineError) -> Status {
    match e {
        EngineError::Unimplemented(_) => Status::unimplemented(e.to_string()),
        EngineError::Invalid(_) => Status::invalid_argument(e.to_string()),
        EngineError::Cancelled => Status::cancelled(e.to_string()),
        EngineError::Prover(_) => Status::failed_precondition(crate::jobs::error_chain(&e)),
        EngineError::Panicked(_) => Status::internal(e.to_string()),
    }
}

#[tonic::async_trait]
impl ProvingEngine for ProvingService {
    async fn submit_proof(
        &self,
        request: Request<proto::SubmitProofRequest>,
    ) -> Result<Response<proto::SubmitProofResponse>, Status> {
        let ticket = request.extensions().get::<AdmissionTicket>().cloned();
        self.submit(Some(request.into_inner()), ticket.as_ref()).map(Response::new)
    }

    async fn await_proof(
        &self,
        request: Request<proto::AwaitProofRequest>,
    ) -> Result<Response<proto::AwaitProofResponse>, Status> {
        let r = request.into_inner();
        let timeout = (r.timeout_ms > 0).then(|| Duration::from_millis(r.timeout_ms));
        self.wait(&r.job_id, timeout).await.map(Response::new)
    }

    async fn prove(&self, request: Request<proto::ProveRequest>) -> Result<Response<proto::ProveResponse>, Status> {
        let ticket = request.extensions().get::<AdmissionTicket>().cloned();
        let submitted = self.submit(request.into_inner().submit, ticket.as_ref())?;
        let result = self.wait(&submitted.job_id, None).await?;
        Ok(Response::new(proto::ProveResponse { result: Some(result) }))
    }

    async fn cancel_proof(
        &self,
        request: Request<proto::CancelProofRequest>,
    ) -> Result<Response<proto::CancelProofResponse>, Status> {
        let id = request.into_inner().job_id;
        let was_running = self.jobs.cancel(&id).ok_or_else(|| Status::not_found(format!("no job {id:?}")))?;
        Ok(Response::new(proto::CancelProofResponse { was_running }))
    }

    async fn get_status(
        &self,
        _request: Request<proto::GetStatusRequest>,
    ) -> Result<Response<proto::GetStatusResponse>, Status> {
        let gpus = self.device_samples().await?;
        let loaded = self.jobs.engine().loaded();
        let running = self.jobs.running();
        let gpus = gpus
            .iter()
            .map(|(g, _)| {
                let mut g = g.clone();
                // The earliest-started job with a partition on this device.
                if let Some(j) = running.iter().find(|j| j.devices().contains(&(g.ordinal as usize))) {
                    g.current_job_id = j.id.clone();
                    g.current_proof_kind = j.request.kind.name().to_string();
                }
                g
            })
            .collect();
        let (completed, failed) = self.jobs.metrics().totals();
        Ok(Response::new(proto::GetStatusResponse {
            gpus,
            loaded_srs: loaded
                .into_iter()
                .map(|s| proto::SrsStatus {
                    circuit_id: s.circuit_id,
                    tier: if s.on_device { proto::srs_status::Tier::Hot } else { proto::srs_status::Tier::Warm } as i32,
                    size_bytes: s.bytes,
                    ref_count: 0,
                })
                .collect(),
            queues: self
                .jobs
                .queues()
                .into_iter()
                .map(|(kind, pending, in_progress)| proto::QueueStatus {
                    proof_kind: kind.name().to_string(),
                    pending: pending as u32,
                    in_progress: in_progress as u32,
                })
                .collect(),
            total_proofs_completed: completed,
            total_proofs_failed: failed,
            uptime_seconds: self.started.elapsed().as_secs(),
            pinned_memory_bytes: 0,
            pinned_memory_limit_bytes: 0,
        }))
    }

    async fn get_metrics(
        &self,
        _request: Request<proto::GetMetricsRequest>,
    ) -> Result<Response<proto::GetMetricsResponse>, Status> {
        let devices: Vec<DeviceSample> = self.device_samples().await?.iter().map(|(_, d)| d.clone()).collect();
        let workers = self.jobs.engine().worker_health();
        let text = self.jobs.metrics().prometheus(&self.jobs.queues(), &devices, &workers);
        Ok(Response::new(proto::GetMetricsResponse { prometheus_text: text }))
    }

    async fn preload_srs(
        &self,
        request: Request<proto::PreloadSrsRequest>,
    ) -> Result<Response<proto::PreloadSrsResponse>, Status> {
        let id = request.into_inner().circuit_id;
        let jobs = self.jobs.clone();
        let t = Instant::now();
        let already = tokio::task::spawn_blocking(move || jobs.engine().preload(&id))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(engine_status)?;
        Ok(Response::new(proto::PreloadSrsResponse {
            already_loaded: already,
            load_time_ms: t.elapsed().as_millis() as u64,
        }))
    }

    async fn evict_srs(
        &self,
        request: Request<proto::EvictSrsRequest>,
    ) -> Result<Response<proto::EvictSrsResponse>, Status> {
        let id = request.into_inner().circuit_id;
        let jobs = self.jobs.clone();
        let freed = tokio::task::spawn_blocking(move || jobs.engine().evict(&id))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(engine_status)?;
        Ok(Response::new(proto::EvictSrsResponse { was_loaded: freed > 0, freed_bytes: freed }))
    }
}
