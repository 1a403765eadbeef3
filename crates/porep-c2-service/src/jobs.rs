//! The job table and its runners: requests queue by priority (then
//! arrival), a fixed number of runner threads prove them through the
//! [`Engine`], clients wait on a job's state, and nothing is dropped
//! silently: every job ends completed, failed (with the error's text) or
//! cancelled, also when the service drains.
//!
//! The table keeps results, never request bodies: a job holds its vanilla
//! proofs only while it is queued or proving (a 32 GiB C1 output is tens of
//! MB), and the record of finished jobs is bounded by count and by bytes.
//! A repeated `request_id` joins the job only while that job is queued or
//! running with the same request (same [`ProofRequest::digest`]), or when it
//! completed with the same request; a failed or cancelled job is never
//! replayed (Curio retries a failed task with the same id and must get a new
//! attempt), and the same id with another request is a new job.

use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use porep_c2::CancelToken;
use tokio::sync::watch;

use crate::engine::{Engine, EngineError, Placement, ProofOutput};
use crate::metrics::Metrics;
use crate::request::{ProofKind, ProofRequest, RequestInfo};

/// How the job table runs.
#[derive(Clone, Debug)]
pub struct JobsConfig {
    /// Proofs proved at once (each one's partitions share the backend's GPU
    /// workers, which take turns by priority). Default 2: one proof's
    /// synthesis and parameter reads overlap another's GPU work.
    pub concurrent_proofs: usize,
    /// Runners beside those that take only urgent jobs (priority HIGH or
    /// CRITICAL: WindowPoSt and WinningPoSt as Curio sends them), so a PoSt
    /// starts at once even while `concurrent_proofs` C2 proofs run, and its
    /// partitions then take the GPU workers' next turns by priority.
    /// Default 2: a WindowPoSt partition and a WinningPoSt at once.
    pub urgent_proofs: usize,
    /// Jobs queued or running at most; a submit beyond is refused
    /// (`RESOURCE_EXHAUSTED`), so a node backs off instead of piling up
    /// C1 outputs here. Default 32.
    pub max_pending: usize,
    /// Finished jobs remembered for `AwaitProof` and request-id
    /// deduplication (oldest forgotten first). Default 1024.
    pub keep_finished: usize,
    /// Bytes of finished jobs' records at most (proofs and error messages,
    /// plus a fixed 512 per job; oldest forgotten first). Default 64 MiB:
    /// 1024 records of 32 GiB proofs (1,920 bytes each) take ~2.5 MB.
    pub keep_finished_bytes: usize,
}

impl Default for JobsConfig {
    fn default() -> Self {
        Self {
            concurrent_proofs: 2,
            urgent_proofs: 2,
            max_pending: 32,
            keep_finished: 1024,
            keep_finished_bytes: 64 << 20,
        }
    }
}

/// How a job ended.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// The proof.
    Completed(ProofOutput),
    /// Why not: the typed error's message (with its causes).
    Failed(String),
    /// Cancelled before or while proving.
    Cancelled,
}

impl Outcome {
    /// Bytes its record holds (the proof or the message).
    fn bytes(&self) -> usize {
        match self {
            Outcome::Completed(o) => o.proof.len(),
            Outcome::Failed(why) => why.len(),
            Outcome::Cancelled => 0,
        }
    }
}

/// The lowest priority the urgent runners take: HIGH (WindowPoSt's).
pub const URGENT_PRIORITY: i32 = crate::proto::Priority::High as i32;

/// Bytes a finished record costs besides its outcome (ids, timings, maps).
const RECORD_OVERHEAD: usize = 512;

/// A finished job's outcome with its timings.
#[derive(Clone, Debug)]
pub struct Finished {
    /// How it ended.
    pub outcome: Outcome,
    /// Submitted until a runner took it.
    pub queue_wait: Duration,
    /// Submitted until it ended.
    pub total: Duration,
}

/// Where a job is.
#[derive(Clone, Debug)]
pub enum JobState {
    /// Waiting for a runner.
    Queued,
    /// Being proved.
    Running,
    /// Ended.
    Done(Arc<Finished>),
}

/// One job.
pub struct Job {
    /// The id given to the client.
    pub id: String,
    /// What it proves (the request without its body).
    pub request: RequestInfo,
    /// The request with its body while queued; taken by the runner that
    /// proves it and dropped when the proof ends, or dropped when the job
    /// ends otherwise.
    body: Mutex<Option<ProofRequest>>,
    submitted: Instant,
    cancel: CancelToken,
    state: watch::Sender<JobState>,
    placement: Arc<Placement>,
}

impl Job {
    /// Its state now.
    pub fn state(&self) -> JobState {
        self.state.borrow().clone()
    }

    /// A receiver of its state changes.
    pub fn watch(&self) -> watch::Receiver<JobState> {
        self.state.subscribe()
    }

    /// The devices proving its partitions now (empty while it synthesizes
    /// or waits for a worker, and on the CPU).
    pub fn devices(&self) -> std::collections::BTreeSet<usize> {
        self.placement.devices()
    }

    fn take_body(&self) -> Option<ProofRequest> {
        self.body.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// A job waiting in the queue: higher priority first, then earlier.
struct Queued {
    priority: i32,
    seq: u64,
    job: Arc<Job>,
}

impl PartialEq for Queued {
    fn eq(&self, o: &Self) -> bool {
        (self.priority, self.seq) == (o.priority, o.seq)
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Queued {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.priority.cmp(&o.priority).then(o.seq.cmp(&self.seq))
    }
}

#[derive(Default)]
struct Table {
    jobs: HashMap<String, Arc<Job>>,
    by_request: HashMap<String, String>,
    queue: BinaryHeap<Queued>,
    running: Vec<Arc<Job>>,
    finished: VecDeque<String>,
    /// Bytes of the finished records (outcomes plus overhead).
    finished_bytes: usize,
    /// Requests admitted by [`Jobs::admit`] and still being received or
    /// decoded: they count against `max_pending`.
    receiving: usize,
    seq: u64,
    closing: bool,
}

/// Why a submit was refused.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    /// The queue holds `max_pending` jobs.
    #[error("{0} proofs queued or running: the service's max_pending; retry later")]
    Full(usize),
    /// The service is draining for shutdown.
    #[error("the service is shutting down")]
    Closing,
}

/// A place among the `max_pending` requests, taken before a request's body
/// is received ([`Jobs::admit`]) and given back when the request is queued
/// (it then counts as a job) or dropped.
pub struct Admission {
    inner: Option<Arc<Inner>>,
}

impl Drop for Admission {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            inner.lock().receiving -= 1;
        }
    }
}

/// The job table (cheap to clone: shared).
#[derive(Clone)]
pub struct Jobs {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Arc<dyn Engine>,
    config: JobsConfig,
    table: Mutex<Table>,
    wake: Condvar,
    metrics: Arc<Metrics>,
    ids: AtomicU64,
}

impl Jobs {
    /// A table proving with `engine`; starts `config.concurrent_proofs`
    /// runner threads and `config.urgent_proofs` urgent-only ones (they end
    /// when the table is drained).
    pub fn start(engine: Arc<dyn Engine>, config: JobsConfig, metrics: Arc<Metrics>) -> Self {
        let inner = Arc::new(Inner {
            engine,
            config: config.clone(),
            table: Mutex::new(Table::default()),
            wake: Condvar::new(),
            metrics,
            ids: AtomicU64::new(1),
        });
        let runners = (0..config.concurrent_proofs.max(1)).map(|n| (format!("prover-{n}"), 0));
        let urgent = (0..config.urgent_proofs).map(|n| (format!("urgent-{n}"), URGENT_PRIORITY));
        for (name, min_priority) in runners.chain(urgent) {
            let inner = inner.clone();
            let spawned = std::thread::Builder::new().name(name.clone()).spawn(move || inner.run(min_priority));
            if let Err(e) = spawned {
                log::error!("porep-c2-service: runner thread {name} did not start: {e}");
            }
        }
        Self { inner }
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<dyn Engine> {
        &self.inner.engine
    }

    /// The metrics the jobs update.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.inner.metrics
    }

    /// Takes a place for a request about to be received, or refuses at
    /// once (before its body is read) when `max_pending` requests are
    /// queued, running or being received, or the service is draining.
    pub fn admit(&self) -> Result<Admission, SubmitError> {
        let mut t = self.inner.lock();
        if t.closing {
            return Err(SubmitError::Closing);
        }
        let pending = t.queue.len() + t.running.len() + t.receiving;
        if pending >= self.inner.config.max_pending {
            return Err(SubmitError::Full(pending));
        }
        t.receiving += 1;
        Ok(Admission { inner: Some(self.inner.clone()) })
    }

    /// Queues `request` (in the place `admission` holds, if any), or
    /// returns the job already made for its `request_id` when that job is
    /// queued or running with the same request, or completed with it (a
    /// client retrying after a lost answer gets the same job). A failed or
    /// cancelled job, or one of another request, is not reused: the request
    /// becomes a new job. Returns the job and its place in the queue.
    pub fn submit(
        &self,
        request: ProofRequest,
        admission: Option<Admission>,
    ) -> Result<(Arc<Job>, usize), SubmitError> {
        let info = request.info();
        let mut t = self.inner.lock();
        // The admission's place becomes this request's (as a job, or
        // nothing when it joins one): given back here, under the lock.
        let admitted = admission.is_some_and(|mut a| a.inner.take().is_some());
        if admitted {
            t.receiving -= 1;
        }
        if let Some(job) = t.by_request.get(&info.request_id).and_then(|id| t.jobs.get(id)).cloned() {
            let reusable = job.request.digest == info.digest
                && match job.state() {
                    JobState::Queued | JobState::Running => true,
                    JobState::Done(f) => matches!(f.outcome, Outcome::Completed(_)),
                };
            if reusable && !info.request_id.is_empty() {
                let place = match t.queue.iter().find(|q| q.job.id == job.id) {
                    Some(mine) => t.queue.iter().filter(|q| *q > mine).count(),
                    None => 0,
                };
                return Ok((job, place));
            }
        }
        if t.closing {
            return Err(SubmitError::Closing);
        }
        // Without an admission, the requests being received count too.
        let pending = t.queue.len() + t.running.len() + if admitted { 0 } else { t.receiving };
        if pending >= self.inner.config.max_pending {
            return Err(SubmitError::Full(pending));
        }
        let id = format!("job-{}", self.inner.ids.fetch_add(1, Ordering::Relaxed));
        let job = Arc::new(Job {
            id: id.clone(),
            request: info,
            body: Mutex::new(Some(request)),
            submitted: Instant::now(),
            cancel: CancelToken::new(),
            state: watch::channel(JobState::Queued).0,
            placement: Arc::default(),
        });
        if !job.request.request_id.is_empty() {
            // A job of the same id before this one stays until it ends (its
            // waiting clients are answered); the id names the new one now.
            t.by_request.insert(job.request.request_id.clone(), id.clone());
        }
        t.jobs.insert(id, job.clone());
        t.seq += 1;
        let seq = t.seq;
        let entry = Queued { priority: job.request.priority, seq, job: job.clone() };
        // Ahead of it: every queued job that pops first.
        let place = t.queue.iter().filter(|q| *q > &entry).count();
        t.queue.push(entry);
        drop(t);
        self.inner.metrics.submitted(job.request.kind);
        // Every runner looks: an urgent-only one may not take this job.
        self.inner.wake.notify_all();
        Ok((job, place))
    }

    /// Bytes of request bodies the table holds now (queued jobs' and
    /// running jobs' vanilla proofs), and of its finished records.
    pub fn held_bytes(&self) -> (usize, usize) {
        let t = self.inner.lock();
        let queued: usize = t.queue.iter().map(|q| q.job.request.body_bytes).sum();
        let running: usize = t.running.iter().map(|j| j.request.body_bytes).sum();
        (queued + running, t.finished_bytes)
    }

    /// Jobs the table remembers (queued, running and finished).
    pub fn remembered(&self) -> usize {
        self.inner.lock().jobs.len()
    }

    /// The job `id` (finished ones while remembered).
    pub fn get(&self, id: &str) -> Option<Arc<Job>> {
        self.inner.lock().jobs.get(id).cloned()
    }

    /// Cancels job `id`: a queued job ends cancelled at once, a running one
    /// is told to stop (it ends cancelled at its next check). `Some(true)`
    /// when it was running, `None` when there is no such job.
    pub fn cancel(&self, id: &str) -> Option<bool> {
        let mut t = self.inner.lock();
        let job = t.jobs.get(id)?.clone();
        job.cancel.cancel();
        let running = matches!(job.state(), JobState::Running);
        let queued = t.queue.iter().any(|q| q.job.id == id);
        if queued {
            t.queue.retain(|q| q.job.id != id);
            self.inner.finish(&mut t, &job, Outcome::Cancelled, Duration::ZERO);
        }
        Some(running)
    }

    /// Queued and running jobs per proof kind.
    pub fn queues(&self) -> Vec<(ProofKind, usize, usize)> {
        let t = self.inner.lock();
        let mut out: Vec<(ProofKind, usize, usize)> = Vec::new();
        let mut add = |kind: ProofKind, queued: usize, running: usize| match out.iter_mut().find(|x| x.0 == kind) {
            Some(x) => {
                x.1 += queued;
                x.2 += running;
            }
            None => out.push((kind, queued, running)),
        };
        for q in t.queue.iter() {
            add(q.job.request.kind, 1, 0);
        }
        for j in &t.running {
            add(j.request.kind, 0, 1);
        }
        out
    }

    /// The jobs running now.
    pub fn running(&self) -> Vec<Arc<Job>> {
        self.inner.lock().running.clone()
    }

    /// Stops taking work: new submits are refused, queued jobs end
    /// cancelled (their waiting clients are told), running ones are left to
    /// finish; returns once none runs. The runner threads then exit.
    pub fn drain(&self) {
        let mut t = self.inner.lock();
        t.closing = true;
        while let Some(q) = t.queue.pop() {
            q.job.cancel.cancel();
            self.inner.finish(&mut t, &q.job, Outcome::Cancelled, Duration::ZERO);
        }
        self.inner.wake.notify_all();
        while !t.running.is_empty() {
            t = self.inner.wake.wait(t).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a job's end, publishes it and forgets the oldest finished
    /// jobs beyond the bound.
    fn finish(&self, t: &mut Table, job: &Arc<Job>, outcome: Outcome, queue_wait: Duration) {
        // The body goes now (a cancelled queued job still held it).
        drop(job.take_body());
        let done = Arc::new(Finished { outcome, queue_wait, total: job.submitted.elapsed() });
        self.metrics.finished(job.request.kind, &done);
        t.finished_bytes += done.outcome.bytes() + RECORD_OVERHEAD;
        job.state.send_replace(JobState::Done(done));
        t.running.retain(|j| j.id != job.id);
        t.finished.push_back(job.id.clone());
        while t.finished.len() > self.config.keep_finished || t.finished_bytes > self.config.keep_finished_bytes {
            let Some(old) = t.finished.pop_front() else { break };
            let Some(j) = t.jobs.remove(&old) else { continue };
            if let JobState::Done(f) = j.state() {
                t.finished_bytes = t.finished_bytes.saturating_sub(f.outcome.bytes() + RECORD_OVERHEAD);
            }
            // Only when the id still names this job (a newer one may own it).
            if t.by_request.get(&j.request.request_id) == Some(&old) {
                t.by_request.remove(&j.request.request_id);
            }
        }
    }

    /// A runner: takes the best queued job of at least `min_priority`,
    /// proves it, records the outcome.
    fn run(&self, min_priority: i32) {
        loop {
            let mut t = self.lock();
            let job = loop {
                // The heap's top is its highest priority: when that is too
                // low for this runner, every queued job is.
                if t.queue.peek().is_some_and(|q| q.priority >= min_priority) {
                    if let Some(q) = t.queue.pop() {
                        break q.job;
                    }
                }
                if t.closing {
                    return;
                }
                t = self.wake.wait(t).unwrap_or_else(|p| p.into_inner());
            };
            t.running.push(job.clone());
            job.state.send_replace(JobState::Running);
            drop(t);
            let queue_wait = job.submitted.elapsed();
            log::info!(
                "porep-c2-service: {} ({}, sector {} of miner {}, priority {}) proving after {:.1} s in the queue",
                job.id,
                job.request.kind.name(),
                job.request.sector_number,
                job.request.miner_id,
                job.request.priority,
                queue_wait.as_secs_f64()
            );
            let engine = self.engine.clone();
            let cancel = job.cancel.clone();
            // The runner owns the body while it proves; it is dropped as
            // soon as the engine returns.
            let result = match job.take_body() {
                Some(request) => {
                    // A panic in the engine fails this job, not the runner.
                    let prove = || engine.prove(&request, &cancel, &job.placement);
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(prove))
                        .unwrap_or_else(|p| Err(EngineError::Panicked(porep_c2::panic_message(&*p))))
                }
                None => Err(EngineError::Panicked("the job's request was gone before it was proved".into())),
            };
            let outcome = match result {
                Ok(out) => Outcome::Completed(out),
                Err(EngineError::Cancelled) => Outcome::Cancelled,
                Err(e) => Outcome::Failed(error_chain(&e)),
            };
            match &outcome {
                Outcome::Completed(o) => log::info!(
                    "porep-c2-service: {} completed in {:.1} s ({} bytes)",
                    job.id,
                    job.submitted.elapsed().as_secs_f64(),
                    o.proof.len()
                ),
                Outcome::Failed(why) => log::warn!("porep-c2-service: {} failed: {why}", job.id),
                Outcome::Cancelled => log::info!("porep-c2-service: {} cancelled", job.id),
            }
            let mut t = self.lock();
            self.finish(&mut t, &job, outcome, queue_wait);
            drop(t);
            // Wakes a drain waiting for the running jobs.
            self.wake.notify_all();
        }
    }
}

/// An error with its causes, `a: b: c`.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(c) = source {
        let text = c.to_string();
        if !s.contains(&text) {
            s.push_str(": ");
            s.push_str(&text);
        }
        source = c.source();
    }
    s
}
