//! What a node meets in production, through a real gRPC client over a unix
//! socket: request ids that Curio reuses for retries, memory under a stream
//! of large requests, a full queue refusing before a body is read,
//! `GetStatus` while a parameter set loads, and a panicking prover.
//!
//! The engine here is scripted (it answers at once, fails or panics when
//! told), so these run in seconds; real proofs through the real engine are
//! `scripts/curio_client_check.py` (CI) and `tests/service.rs`.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{await_done, curio_window_post, curio_winning_post, Daemon};
use porep_c2::{CancelToken, ProverConfig};
use porep_c2_service::proto;
use porep_c2_service::proto::await_proof_response::Status as AwaitStatus;
use porep_c2_service::proto::proving_engine_client::ProvingEngineClient;
use porep_c2_service::{
    Engine, EngineError, FilecoinEngine, JobsConfig, LoadedSet, Placement, ProofKind, ProofOutput, ProofRequest,
};
use tonic::transport::Channel;

/// Answers every request with 192 bytes that name the call (so a test can
/// tell a re-proof from a replayed answer): byte 0 is the call's number.
/// `fail_first` calls fail; a body of `panic` panics; each proof takes `hold`
/// (ending early when cancelled).
#[derive(Default)]
struct ScriptedEngine {
    calls: AtomicUsize,
    fail_first: usize,
    hold: Duration,
}

impl Engine for ScriptedEngine {
    fn supports(&self, _: ProofKind) -> bool {
        true
    }

    fn prove(
        &self,
        request: &ProofRequest,
        cancel: &CancelToken,
        _: &Arc<Placement>,
    ) -> Result<ProofOutput, EngineError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let t = Instant::now();
        while t.elapsed() < self.hold {
            if cancel.is_cancelled() {
                return Err(EngineError::Cancelled);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if request.vanilla_proof == b"panic" {
            panic!("injected engine panic");
        }
        if n < self.fail_first {
            return Err(EngineError::Invalid(format!("injected failure of call {n}")));
        }
        Ok(ProofOutput { proof: vec![n as u8; 192], ..Default::default() })
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
}

/// A request as Curio's PoRep task builds it (2 KiB, sector `sector` of
/// miner 1000, `body` as `vanilla_proof`).
fn curio_request(sector: u64, body: &[u8]) -> proto::SubmitProofRequest {
    porep_c2_service::curio::porep(1000, sector, 5, 2048, body.to_vec())
}

async fn prove(c: &mut ProvingEngineClient<Channel>, r: proto::SubmitProofRequest) -> proto::AwaitProofResponse {
    c.prove(proto::ProveRequest { submit: Some(r) }).await.unwrap().into_inner().result.unwrap()
}

/// Curio retries a failed task with the same request id: the retry must be
/// proved again, never answered with the old failure. The same id while the
/// job runs joins it; after it completed with the same request the record
/// answers; another request under the id is a new job; a cancelled job is
/// not replayed either.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn request_ids_never_replay_a_failure_or_another_request() {
    let engine = Arc::new(ScriptedEngine { fail_first: 1, hold: Duration::from_millis(300), ..Default::default() });
    let daemon = Daemon::start(engine.clone(), 1).await;
    let mut c = daemon.client().await;

    // The first attempt fails (injected), the retry with the same id and
    // body is proved again.
    let failed = prove(&mut c, curio_request(7, b"c1 of sector 7")).await;
    assert_eq!(failed.status, AwaitStatus::Failed as i32, "{failed:?}");
    assert!(failed.error_message.contains("injected failure"), "{}", failed.error_message);
    let retried = prove(&mut c, curio_request(7, b"c1 of sector 7")).await;
    assert_eq!(retried.status, AwaitStatus::Completed as i32, "{retried:?}");
    assert_ne!(retried.job_id, failed.job_id);
    assert_eq!(retried.proof[0], 1, "proved by the engine's second call");

    // Completed with the same request: the record answers (no third call).
    let again = prove(&mut c, curio_request(7, b"c1 of sector 7")).await;
    assert_eq!((again.job_id.as_str(), again.proof[0]), (retried.job_id.as_str(), 1));
    assert_eq!(engine.calls.load(Ordering::SeqCst), 2);

    // Another request under the same id (the sector re-sealed, a new C1):
    // a new job, a new proof.
    let other = prove(&mut c, curio_request(7, b"a new c1 of sector 7")).await;
    assert_eq!(other.status, AwaitStatus::Completed as i32);
    assert_ne!(other.job_id, retried.job_id);
    assert_eq!(other.proof[0], 2);

    // While a job runs, the same id and request joins it.
    let first = c.submit_proof(curio_request(8, b"c1 of sector 8")).await.unwrap().into_inner();
    let joined = c.submit_proof(curio_request(8, b"c1 of sector 8")).await.unwrap().into_inner();
    assert_eq!(joined.job_id, first.job_id);
    assert_eq!(await_done(&mut c, &first.job_id).await.status, AwaitStatus::Completed as i32);

    // Cancelled, then retried with the same id: proved, not CANCELLED.
    let queued = c.submit_proof(curio_request(9, b"c1 of sector 9")).await.unwrap().into_inner();
    c.cancel_proof(proto::CancelProofRequest { job_id: queued.job_id.clone() }).await.unwrap();
    assert_eq!(await_done(&mut c, &queued.job_id).await.status, AwaitStatus::Cancelled as i32);
    let after_cancel = prove(&mut c, curio_request(9, b"c1 of sector 9")).await;
    assert_eq!(after_cancel.status, AwaitStatus::Completed as i32, "{after_cancel:?}");
    assert_ne!(after_cancel.job_id, queued.job_id);
    daemon.stop().await;
}

/// PoSt never waits for C2: with the one C2 runner busy and another C2
/// proof queued, Curio's WindowPoSt (HIGH) and WinningPoSt (CRITICAL) start
/// at once on the urgent runners, and end before the queued C2 starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn post_starts_at_once_while_c2_runs() {
    let hold = Duration::from_millis(1000);
    let engine = Arc::new(ScriptedEngine { hold, ..Default::default() });
    let jobs = JobsConfig { concurrent_proofs: 1, max_pending: 8, ..JobsConfig::default() };
    assert_eq!(jobs.urgent_proofs, 2, "the default");
    let daemon = Daemon::with_jobs(engine, jobs).await;
    let mut c = daemon.client().await;
    let running = c.submit_proof(curio_request(1, b"c2 of sector 1")).await.unwrap().into_inner();
    let t = Instant::now();
    while !matches!(daemon.jobs.get(&running.job_id).unwrap().state(), porep_c2_service::jobs::JobState::Running) {
        assert!(t.elapsed() < Duration::from_secs(10), "the first C2 never started");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let queued = c.submit_proof(curio_request(2, b"c2 of sector 2")).await.unwrap().into_inner();
    let randomness = [7u8; 32];
    let window = curio_window_post(1000, 13, 32 << 30, &randomness, vec![b"sector".to_vec()], 0);
    assert_eq!(window.request_id, "wdpost-1000-0-[7 7 7 7 7 7 7 7]");
    let winning = curio_winning_post(1000, 3, 32 << 30, &randomness, vec![b"sector".to_vec()]);
    assert_eq!(winning.request_id, "winpost-1000-0707070707070707");
    let window = c.submit_proof(window).await.unwrap().into_inner();
    let winning = c.submit_proof(winning).await.unwrap().into_inner();
    // The urgent runners pick the PoSt jobs up asynchronously: poll until
    // both run (well within the C2 job's 1 s hold), the queued C2 job
    // still pending behind the running one all the while.
    let t = Instant::now();
    loop {
        let status = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
        let queue =
            |name: &str| status.queues.iter().find(|q| q.proof_kind == name).map(|q| (q.pending, q.in_progress));
        assert_eq!(queue("porep-c2"), Some((1, 1)), "{status:?}");
        if (queue("window-post"), queue("winning-post")) == (Some((0, 1)), Some((0, 1))) {
            break;
        }
        assert!(t.elapsed() < Duration::from_millis(300), "PoSt did not start at once: {status:?}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }

    let (w, win, q) = (
        await_done(&mut c, &window.job_id).await,
        await_done(&mut c, &winning.job_id).await,
        await_done(&mut c, &queued.job_id).await,
    );
    for r in [&w, &win, &q] {
        assert_eq!(r.status, AwaitStatus::Completed as i32, "{r:?}");
    }
    // The PoSt jobs did not queue; the C2 one waited for the first C2.
    assert!(w.queue_wait_ms < 300 && win.queue_wait_ms < 300, "{w:?} {win:?}");
    assert!(q.queue_wait_ms >= 300, "{q:?}");
    assert!(w.total_ms < q.total_ms && win.total_ms < q.total_ms, "{w:?} {win:?} {q:?}");
    daemon.stop().await;
}

/// Resident set size of this process, bytes (Linux).
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    pages * 4096
}

/// The daemon keeps results, not requests: 1,000 requests with 8 MiB
/// bodies (8 GB in all, each proved and remembered) leave no body behind,
/// and the process' memory stays flat after the first hundred.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_stays_flat_under_a_stream_of_large_requests() {
    let engine = Arc::new(ScriptedEngine::default());
    let jobs = JobsConfig { concurrent_proofs: 2, max_pending: 8, ..JobsConfig::default() };
    let daemon = Daemon::with_jobs(engine.clone(), jobs).await;
    let c = daemon.client().await;
    const BODY: usize = 8 << 20;
    const REQUESTS: usize = 1000;
    let body = Arc::new(vec![0x5au8; BODY]);
    let mut after_warm_up = 0;
    let start = Instant::now();
    // Four clients at once, 250 requests each, in rounds of 100.
    for round in 0..REQUESTS / 100 {
        let tasks: Vec<_> = (0..4)
            .map(|t| {
                let (mut c, body) = (c.clone(), body.clone());
                tokio::spawn(async move {
                    for i in 0..25 {
                        let n = round * 100 + t * 25 + i;
                        let mut r = curio_request(n as u64, &body);
                        r.vanilla_proof[0] = n as u8;
                        let out = prove(&mut c, r).await;
                        assert_eq!(out.status, AwaitStatus::Completed as i32, "{out:?}");
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        // The allocator's working set settles within the first 200
        // (measured: 160 MB after 100, 253-294 MB from 200 to 1,000).
        if round == 1 {
            after_warm_up = rss_bytes();
        }
        eprintln!("after {} requests: RSS {:.0} MB", (round + 1) * 100, rss_bytes() as f64 / 1e6);
    }
    let end = rss_bytes();
    let (bodies, records) = daemon.jobs.held_bytes();
    eprintln!(
        "{REQUESTS} requests of {} MiB in {:.1} s: RSS {:.0} MB after 200, {:.0} MB after {REQUESTS}; bodies held {bodies} B, records {records} B ({} jobs)",
        BODY >> 20,
        start.elapsed().as_secs_f64(),
        after_warm_up as f64 / 1e6,
        end as f64 / 1e6,
        daemon.jobs.remembered()
    );
    assert_eq!(engine.calls.load(Ordering::SeqCst), REQUESTS);
    assert_eq!(bodies, 0, "every job ended: no body is held");
    assert!(records <= 1024 * (192 + 512), "{records}");
    // 800 more requests (6.7 GB) after the warm-up: growth stays within a
    // few bodies' worth (allocator slack), where keeping them would add 6.7 GB.
    let growth = end.saturating_sub(after_warm_up);
    assert!(growth < 128 << 20, "RSS grew {growth} bytes over {} requests", REQUESTS - 200);
    daemon.stop().await;
}

/// With `max_pending` jobs queued or running, `Prove` is refused with
/// RESOURCE_EXHAUSTED before its body is read: a body larger than the
/// message limit gets the queue's answer, not the decoder's.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_daemon_refuses_before_reading_the_body() {
    let engine = Arc::new(ScriptedEngine { hold: Duration::from_secs(30), ..Default::default() });
    let jobs = JobsConfig { concurrent_proofs: 1, max_pending: 1, ..JobsConfig::default() };
    let daemon = Daemon::with_options(engine, jobs, 1 << 20).await;
    let mut c = daemon.client().await;
    // With room, a body over the limit is the decoder's error.
    let big = vec![1u8; 2 << 20];
    let e = c.prove(proto::ProveRequest { submit: Some(curio_request(1, &big)) }).await.unwrap_err();
    assert_ne!(e.code(), tonic::Code::ResourceExhausted, "{e}");
    assert!(!e.message().contains("max_pending"), "{e}");
    // One proof running fills the daemon.
    let running = c.submit_proof(curio_request(2, b"small")).await.unwrap().into_inner();
    let t = Instant::now();
    let e = c.prove(proto::ProveRequest { submit: Some(curio_request(3, &big)) }).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::ResourceExhausted, "{e}");
    assert!(e.message().contains("max_pending"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(5), "answered at once");
    // Status calls still pass while it is full.
    c.get_status(proto::GetStatusRequest {}).await.unwrap();
    c.cancel_proof(proto::CancelProofRequest { job_id: running.job_id.clone() }).await.unwrap();
    assert_eq!(await_done(&mut c, &running.job_id).await.status, AwaitStatus::Cancelled as i32);
    // Room again: a request is taken (and cancelled: it would hold 30 s).
    let taken = c.submit_proof(curio_request(4, b"small")).await.unwrap().into_inner();
    c.cancel_proof(proto::CancelProofRequest { job_id: taken.job_id.clone() }).await.unwrap();
    assert_eq!(await_done(&mut c, &taken.job_id).await.status, AwaitStatus::Cancelled as i32);
    daemon.stop().await;
}

/// A panicking engine fails its job with the panic's message (not
/// "invalid request"), and the service keeps proving.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_panicking_prover_fails_one_job_and_the_daemon_serves_on() {
    let daemon = Daemon::start(Arc::new(ScriptedEngine::default()), 1).await;
    let mut c = daemon.client().await;
    let out = prove(&mut c, curio_request(1, b"panic")).await;
    assert_eq!(out.status, AwaitStatus::Failed as i32);
    assert!(out.error_message.contains("panicked: injected engine panic"), "{}", out.error_message);
    let out = prove(&mut c, curio_request(2, b"fine")).await;
    assert_eq!(out.status, AwaitStatus::Completed as i32, "{out:?}");
    daemon.stop().await;
}

/// `GetStatus` answers within 100 ms while the real engine preloads a
/// parameter set (here: a read that blocks on a FIFO until the test lets
/// it fail), instead of waiting on the load.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn status_answers_during_a_preload() {
    let dir = tempfile::tempdir().unwrap();
    let id = filecoin_proofs_api::RegisteredSealProof::StackedDrg2KiBV1_1.circuit_identifier().unwrap();
    let fifo = porep_c2::params_path(dir.path(), &id);
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
    assert!(made.success());
    let config =
        ProverConfig { params: porep_c2::ParamsSource::CacheDir(dir.path().to_path_buf()), ..ProverConfig::default() };
    let daemon = Daemon::start(Arc::new(FilecoinEngine::new(config)), 1).await;
    let mut c = daemon.client().await;
    let mut loader = c.clone();
    let preload =
        tokio::spawn(
            async move { loader.preload_srs(proto::PreloadSrsRequest { circuit_id: "porep-2k".into() }).await },
        );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!preload.is_finished(), "the preload waits on its file");
    for _ in 0..3 {
        let t = Instant::now();
        let status = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
        let took = t.elapsed();
        assert!(took < Duration::from_millis(100), "GetStatus took {took:?} during a preload");
        assert!(status.loaded_srs.is_empty(), "{status:?}");
    }
    // Let the load end: a few bytes and end of file, a truncated set.
    std::fs::write(&fifo, b"not parameters").unwrap();
    let e = preload.await.unwrap().unwrap_err();
    assert_eq!(e.code(), tonic::Code::FailedPrecondition, "{e}");
    daemon.stop().await;
}
