//! The service with a real gRPC client over a unix socket.
//!
//! Proofs are real: tiny StackedDrg sectors (`c2_testkit::demo`, the
//! oracle tests' set-up and cached parameters) proved through the facade
//! on the CPU and verified. A registered sector's C1 would need ~14 min of
//! parameter generation on CI's two cores, so [`TinyEngine`] (below) reads
//! the request's `vanilla_proof` as a tiny sector's seed and partition
//! count; every other step (gRPC, decoding, the job table, priorities,
//! cancellation, draining) is the service's own. The facade engine
//! ([`FilecoinEngine`]) is exercised on what needs no parameters: malformed
//! and tampered C1 outputs fail with the typed error's message.

mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use c2_testkit::demo::{self, TinyConfig};
use common::{await_done, blinding, connect, porep_request, tiny_params, Daemon, TinyEngine};
use porep_c2::{prove_instance, ProverConfig};
use porep_c2_service::proto::await_proof_response::Status as AwaitStatus;
use porep_c2_service::proto::proving_engine_client::ProvingEngineClient;
use porep_c2_service::proto::{self, ProofKind as WireKind};
use porep_c2_service::{FilecoinEngine, JobsConfig};
use tonic::transport::Channel;

/// Where the oracle tests cache the tiny sector's parameters (the same
/// folder, so CI generates them once).
fn test_params_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("test-params")
}

/// The library's proof of the same tiny sector and blinding.
fn library_proof(seed: u64, partitions: usize, sector: u64) -> Vec<u8> {
    let instance = demo::tiny_instance(&TinyConfig { seed, partitions, ..TinyConfig::default() }).unwrap();
    let params = tiny_params(&test_params_dir());
    prove_instance(&instance, &params, &blinding(sector, partitions), &ProverConfig::default()).unwrap().0
}

/// Waits until job `id` runs (polls GetStatus' queues).
async fn wait_running(c: &mut ProvingEngineClient<Channel>) {
    let t = Instant::now();
    loop {
        let s = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
        if s.queues.iter().any(|q| q.in_progress > 0) {
            return;
        }
        assert!(t.elapsed() < Duration::from_secs(120), "no job started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One runner: a proof through gRPC equals the library's bytes; then, while
/// it runs, a low and a high priority request queue (the high one proves
/// first), a queued one is cancelled, a repeated request id gets the same
/// job, status and metrics say so, and an unknown proof kind is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn proofs_priorities_cancellation_and_status_through_grpc() {
    let engine = Arc::new(TinyEngine::new(tiny_params(&test_params_dir())));
    let daemon = Daemon::start(engine, 1).await;
    let mut c = daemon.client().await;

    // Job A runs; B (low), C (high) and D (normal) queue behind it.
    let a = c.submit_proof(porep_request("a", b"1:1", 1, proto::Priority::Normal)).await.unwrap().into_inner();
    wait_running(&mut c).await;
    let b = c.submit_proof(porep_request("b", b"2:1", 2, proto::Priority::Low)).await.unwrap().into_inner();
    let cc = c.submit_proof(porep_request("c", b"3:1", 3, proto::Priority::High)).await.unwrap().into_inner();
    let d = c.submit_proof(porep_request("d", b"4:1", 4, proto::Priority::Normal)).await.unwrap().into_inner();
    assert_eq!((b.queue_position, cc.queue_position), (0, 0), "C goes ahead of B");
    // The same request id again: the same job, not a second proof.
    let again = c.submit_proof(porep_request("b", b"2:1", 2, proto::Priority::Low)).await.unwrap().into_inner();
    assert_eq!(again.job_id, b.job_id);
    // D is cancelled while queued.
    let cancel = c.cancel_proof(proto::CancelProofRequest { job_id: d.job_id.clone() }).await.unwrap().into_inner();
    assert!(!cancel.was_running);
    assert_eq!(await_done(&mut c, &d.job_id).await.status, AwaitStatus::Cancelled as i32);
    // A short AwaitProof times out while B waits behind C.
    let short = c.await_proof(proto::AwaitProofRequest { job_id: b.job_id.clone(), timeout_ms: 1 }).await.unwrap();
    assert_eq!(short.into_inner().status, AwaitStatus::Timeout as i32);
    let status = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
    let q = status.queues.iter().find(|q| q.proof_kind == "porep-c2").expect("a PoRep queue");
    assert_eq!((q.pending, q.in_progress), (2, 1), "{status:?}");

    let (ra, rb, rc) = (
        await_done(&mut c, &a.job_id).await,
        await_done(&mut c, &b.job_id).await,
        await_done(&mut c, &cc.job_id).await,
    );
    for r in [&ra, &rb, &rc] {
        assert_eq!(r.status, AwaitStatus::Completed as i32, "{}: {}", r.job_id, r.error_message);
        assert_eq!(r.proof.len(), 192);
    }
    // C (high) ended before B (low), though B was queued first: its total
    // time is shorter by at least B's own proof.
    assert!(rc.total_ms < rb.total_ms && rc.queue_wait_ms < rb.queue_wait_ms, "C {rc:?} B {rb:?}");
    // The daemon's bytes are the library's for the same sector and r, s.
    assert_eq!(ra.proof, library_proof(1, 1, 1));

    let status = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
    assert_eq!((status.total_proofs_completed, status.total_proofs_failed), (3, 0));
    let metrics = c.get_metrics(proto::GetMetricsRequest {}).await.unwrap().into_inner().prometheus_text;
    assert!(metrics.contains("porep_c2_proofs_completed_total{proof_kind=\"porep-c2\"} 3"), "{metrics}");
    assert!(metrics.contains("porep_c2_proofs_cancelled_total{proof_kind=\"porep-c2\"} 1"), "{metrics}");
    assert!(metrics.contains("\nprocess_resident_memory_bytes "), "{metrics}");
    // Proved on the CPU: no device worked, so no GPU-busy series and no
    // device named as a job's current one.
    assert!(!metrics.contains("porep_c2_gpu_busy_seconds_total{"), "{metrics}");
    assert!(status.gpus.iter().all(|g| g.current_job_id.is_empty()), "{status:?}");

    // Kinds this service does not prove: UNIMPLEMENTED; no kind: INVALID_ARGUMENT.
    let mut post = porep_request("p", b"", 1, proto::Priority::Critical);
    post.proof_kind = WireKind::WinningPost as i32;
    let e = c.prove(proto::ProveRequest { submit: Some(post.clone()) }).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unimplemented, "{e}");
    post.proof_kind = 0;
    assert_eq!(c.submit_proof(post).await.unwrap_err().code(), tonic::Code::InvalidArgument);
    daemon.stop().await;
}

/// A running proof is cancelled (four partitions: it stops between them);
/// then a proof still running when the daemon is stopped is finished and
/// answered, the one queued behind it is answered CANCELLED, and the
/// socket is gone afterwards: no client hangs.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn running_proofs_cancel_and_a_stopping_daemon_answers_everyone() {
    let engine = Arc::new(TinyEngine::new(tiny_params(&test_params_dir())));
    let daemon = Daemon::start(engine, 1).await;
    let mut c = daemon.client().await;
    let long = c.submit_proof(porep_request("long", b"5:4", 5, proto::Priority::Normal)).await.unwrap().into_inner();
    wait_running(&mut c).await;
    let cancel = c.cancel_proof(proto::CancelProofRequest { job_id: long.job_id.clone() }).await.unwrap().into_inner();
    assert!(cancel.was_running);
    let r = await_done(&mut c, &long.job_id).await;
    assert_eq!(r.status, AwaitStatus::Cancelled as i32, "{r:?}");

    let running = c.submit_proof(porep_request("run", b"6:1", 6, proto::Priority::Normal)).await.unwrap().into_inner();
    wait_running(&mut c).await;
    let queued =
        c.submit_proof(porep_request("queued", b"7:1", 7, proto::Priority::Normal)).await.unwrap().into_inner();
    let (mut c1, mut c2) = (c.clone(), c.clone());
    let (j1, j2) = (running.job_id.clone(), queued.job_id.clone());
    let w1 = tokio::spawn(async move { await_done(&mut c1, &j1).await });
    let w2 = tokio::spawn(async move { await_done(&mut c2, &j2).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let socket = daemon.socket.clone();
    daemon.stop().await;
    let (r1, r2) = (w1.await.unwrap(), w2.await.unwrap());
    assert_eq!(r1.status, AwaitStatus::Completed as i32, "{r1:?}");
    assert_eq!(r2.status, AwaitStatus::Cancelled as i32, "{r2:?}");
    assert!(!socket.exists());
    assert!(connect(&socket).await.is_err());
}

/// The facade's engine: bad C1 outputs fail with the typed error's text,
/// before any parameter is read; the service keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn malformed_and_tampered_c1_outputs_fail_with_the_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let config =
        ProverConfig { params: porep_c2::ParamsSource::CacheDir(dir.path().to_path_buf()), ..ProverConfig::default() };
    let daemon = Daemon::start(Arc::new(FilecoinEngine::new(config)), 2).await;
    let mut c = daemon.client().await;
    let prove = |c: &mut ProvingEngineClient<Channel>, r| {
        let mut c = c.clone();
        async move { c.prove(proto::ProveRequest { submit: Some(r) }).await.unwrap().into_inner().result.unwrap() }
    };
    // Not JSON.
    let r = prove(&mut c, porep_request("", b"{not json", 1, proto::Priority::Normal)).await;
    assert_eq!(r.status, AwaitStatus::Failed as i32);
    assert!(r.error_message.contains("C1"), "{}", r.error_message);
    // A valid committed-capacity 2 KiB C1 output, then tampered.
    let made_for =
        c2_synth::CcSectorConfig { prover_id: porep_c2_service::prover_id_from_actor(1000), ..Default::default() };
    let cc = c2_synth::cc_sector(filecoin_proofs_api::RegisteredSealProof::StackedDrg2KiBV1_1, &made_for).unwrap();
    let json = serde_json::to_vec(&cc.c1).unwrap();
    // The wrong registered proof for this C1.
    let mut wrong = porep_request("", &json, cc.sector_id, proto::Priority::Normal);
    wrong.registered_proof = 8;
    let r = prove(&mut c, wrong).await;
    assert!(r.status == AwaitStatus::Failed as i32 && r.error_message.contains("registered_proof 8"), "{r:?}");
    // Another sector number: the replica id no longer matches.
    let r = prove(&mut c, porep_request("", &json, cc.sector_id + 1, proto::Priority::Normal)).await;
    assert_eq!(r.status, AwaitStatus::Failed as i32, "{r:?}");
    // comm_r flipped.
    let mut bad = cc.c1.clone();
    bad.comm_r[3] ^= 1;
    let r = prove(&mut c, porep_request("", &serde_json::to_vec(&bad).unwrap(), cc.sector_id, proto::Priority::Normal))
        .await;
    assert_eq!(r.status, AwaitStatus::Failed as i32, "{r:?}");
    // The untouched C1 passes every check and stops at the missing parameters.
    let r = prove(&mut c, porep_request("", &json, cc.sector_id, proto::Priority::Normal)).await;
    assert!(r.status == AwaitStatus::Failed as i32 && r.error_message.contains("parameter"), "{r:?}");
    let status = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
    assert_eq!((status.total_proofs_completed, status.total_proofs_failed), (0, 5));
    daemon.stop().await;
}

/// PreloadSRS / EvictSRS through the facade's engine (a set read once and
/// held, reported by GetStatus, freed by EvictSRS), their refusals, and a
/// full queue refusing with RESOURCE_EXHAUSTED.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parameter_sets_preload_and_evict_and_a_full_queue_refuses() {
    // The tiny sector's parameters under the 2 KiB file name: preloading
    // reads and holds a file; nothing proves with it here.
    let dir = tempfile::tempdir().unwrap();
    let id = filecoin_proofs_api::RegisteredSealProof::StackedDrg2KiBV1_1.circuit_identifier().unwrap();
    let params = tiny_params(&test_params_dir());
    porep_c2::write_parameters(&params, &porep_c2::params_path(dir.path(), &id), None).unwrap();
    let config =
        ProverConfig { params: porep_c2::ParamsSource::CacheDir(dir.path().to_path_buf()), ..ProverConfig::default() };
    let daemon = Daemon::start(Arc::new(FilecoinEngine::new(config)), 1).await;
    let mut c = daemon.client().await;
    let preload = |id: &str| proto::PreloadSrsRequest { circuit_id: id.into() };
    let evict = |id: &str| proto::EvictSrsRequest { circuit_id: id.into() };

    let first = c.preload_srs(preload("porep-2k")).await.unwrap().into_inner();
    assert!(!first.already_loaded, "{first:?}");
    assert!(c.preload_srs(preload("porep-2k")).await.unwrap().into_inner().already_loaded);
    let status = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
    assert_eq!(status.loaded_srs.len(), 1, "{status:?}");
    let set = &status.loaded_srs[0];
    assert_eq!(set.circuit_id, "porep-2k");
    assert_eq!(set.size_bytes, porep_c2::parameter_bytes(&params) as u64);
    // On the CPU the set is in host memory only: WARM, not HOT.
    assert_eq!(set.tier, proto::srs_status::Tier::Warm as i32, "{set:?}");
    // A set whose file is missing: the typed error's text; an unknown id: INVALID_ARGUMENT.
    let e = c.preload_srs(preload("porep-8m")).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::FailedPrecondition, "{e}");
    assert!(e.message().contains("not found"), "{e}");
    assert_eq!(c.preload_srs(preload("porep-1t")).await.unwrap_err().code(), tonic::Code::InvalidArgument);

    let freed = c.evict_srs(evict("porep-2k")).await.unwrap().into_inner();
    assert!(freed.was_loaded && freed.freed_bytes == set.size_bytes, "{freed:?}");
    let again = c.evict_srs(evict("porep-2k")).await.unwrap().into_inner();
    assert!(!again.was_loaded && again.freed_bytes == 0, "{again:?}");
    let status = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
    assert!(status.loaded_srs.is_empty(), "{status:?}");
    daemon.stop().await;

    // Back-pressure: one runner, at most two jobs queued or running.
    let engine = Arc::new(TinyEngine::new(tiny_params(&test_params_dir())));
    let daemon =
        Daemon::with_jobs(engine, JobsConfig { concurrent_proofs: 1, max_pending: 2, ..JobsConfig::default() }).await;
    let mut c = daemon.client().await;
    let a = c.submit_proof(porep_request("", b"21:1", 21, proto::Priority::Normal)).await.unwrap().into_inner();
    let b = c.submit_proof(porep_request("", b"22:1", 22, proto::Priority::Normal)).await.unwrap().into_inner();
    let e = c.submit_proof(porep_request("", b"23:1", 23, proto::Priority::Normal)).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::ResourceExhausted, "{e}");
    // Nothing was lost: both accepted jobs complete.
    for job in [a.job_id, b.job_id] {
        assert_eq!(await_done(&mut c, &job).await.status, AwaitStatus::Completed as i32);
    }
    daemon.stop().await;
}

/// A device that fails mid-batch loses no proof (the CPU-side part of the
/// multi-GPU failure run): two workers stand for two GPUs, device 0 faults
/// at every partition it takes. It is fenced after its first fault and its
/// partitions finish on device 1; when device 1 fails too, the facade's
/// retry backend (the CPU) proves. Every proof completes and was verified
/// by the facade before it was returned, the retries are counted in the
/// metrics, and the service keeps answering. (That a retried partition has
/// the clean run's bytes is `tests/faults.rs`' test of the facade.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failing_device_mid_batch_loses_no_proof() {
    use porep_c2::{PartitionJob, PartitionProver, ProveTimings};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    struct FakeGpu {
        device: usize,
        dead: AtomicBool,
        proved: AtomicUsize,
        failed: AtomicUsize,
    }
    impl PartitionProver for FakeGpu {
        fn name(&self) -> String {
            format!("fake-gpu:{}", self.device)
        }
        fn device(&self) -> Option<usize> {
            Some(self.device)
        }
        fn prove(
            &self,
            job: PartitionJob<'_>,
        ) -> Result<(bellperson::groth16::Proof<blstrs::Bls12>, ProveTimings), porep_c2::Error> {
            if self.dead.load(Ordering::SeqCst) {
                self.failed.fetch_add(1, Ordering::SeqCst);
                return Err(porep_c2::Error::Worker { worker: self.name(), message: "injected device fault".into() });
            }
            // As long as a partition takes a GPU: the other worker takes
            // the proof's next partition meanwhile.
            std::thread::sleep(std::time::Duration::from_millis(300));
            self.proved.fetch_add(1, Ordering::SeqCst);
            let data = job.partition_data.into_synthesized()?;
            let (proof, mut steps) =
                porep_c2::prove_synthesized(data, job.params, job.r, job.s, &porep_c2::HostStages::cpu())?;
            steps.gpu = Some(porep_c2::GpuTimes { device: self.device, ..Default::default() });
            Ok((proof, steps))
        }
    }
    let gpus: Vec<Arc<FakeGpu>> = [true, false]
        .into_iter()
        .enumerate()
        .map(|(device, dead)| {
            Arc::new(FakeGpu { device, dead: dead.into(), proved: AtomicUsize::new(0), failed: AtomicUsize::new(0) })
        })
        .collect();
    // A fence outlasts the test (the default 5-minute cool-down did not,
    // once, on a loaded box: device 0 came back mid-test).
    let backend = porep_c2::Backend::workers(gpus.iter().map(|g| g.clone() as Arc<dyn PartitionProver>).collect())
        .with_fences(porep_c2::WorkerFences::with_cool_down(Duration::from_secs(24 * 3600)));
    let engine = Arc::new(TinyEngine { params: tiny_params(&test_params_dir()), backend: backend.clone() });
    let daemon = Daemon::start(engine, 2).await;
    let mut c = daemon.client().await;
    let run = |c: &mut ProvingEngineClient<Channel>, sectors: Vec<u64>| {
        let mut c = c.clone();
        async move {
            let mut jobs = Vec::new();
            for s in sectors {
                let r = porep_request("", format!("{s}:2").as_bytes(), s, proto::Priority::Normal);
                jobs.push(c.submit_proof(r).await.unwrap().into_inner().job_id);
            }
            for job in &jobs {
                let r = await_done(&mut c, job).await;
                assert_eq!(r.status, AwaitStatus::Completed as i32, "{job}: {}", r.error_message);
                assert_eq!(r.proof.len(), 2 * 192, "{job}");
            }
        }
    };
    // Two proofs of two partitions, then one: ten tiny partitions took
    // 233 s of CI's two cores, and six show every transition.
    run(&mut c, vec![31, 32]).await;
    let (failed, proved) = (gpus[0].failed.load(Ordering::SeqCst), gpus[1].proved.load(Ordering::SeqCst));
    assert_eq!(failed, 1, "device 0 is fenced after its first fault");
    assert_eq!(proved, 4, "device 1 proved every partition");
    assert_eq!(backend.fenced_workers(), vec!["fake-gpu:0".to_string()]);
    let retries = |n| format!("porep_c2_partition_retries_total{{proof_kind=\"porep-c2\"}} {n}");
    let metrics = c.get_metrics(proto::GetMetricsRequest {}).await.unwrap().into_inner().prometheus_text;
    assert!(metrics.contains(&retries(1)), "{} in\n{metrics}", retries(1));
    for line in [
        "porep_c2_worker_healthy{worker=\"fake-gpu:0\"} 0",
        "porep_c2_worker_healthy{worker=\"fake-gpu:1\"} 1",
        "porep_c2_partitions_total{device=\"1\"} 4",
    ] {
        assert!(metrics.contains(line), "{line} in\n{metrics}");
    }
    // Device 1 fails too: the CPU proves the rest, the service keeps answering.
    gpus[1].dead.store(true, Ordering::SeqCst);
    run(&mut c, vec![34]).await;
    assert_eq!(gpus[1].failed.load(Ordering::SeqCst), 1, "device 1 is fenced after its first fault");
    assert_eq!(backend.healthy_workers(), 0);
    let metrics = c.get_metrics(proto::GetMetricsRequest {}).await.unwrap().into_inner().prometheus_text;
    assert!(metrics.contains(&retries(3)), "{} in\n{metrics}", retries(3));
    for line in ["porep_c2_partitions_total{device=\"1\"} 4", "porep_c2_partitions_total{device=\"cpu\"} 2"] {
        assert!(metrics.contains(line), "{line} in\n{metrics}");
    }
    let status = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
    assert_eq!((status.total_proofs_completed, status.total_proofs_failed), (3, 0));
    daemon.stop().await;
}

/// Partitions proved in batches (issue 42: a GPU worker that streams its
/// parameters runs a batch's MSMs in one pass) give the bytes of the CPU
/// oracle's one-at-a-time run, and a member that fails alone is proved
/// again on the retry backend while its batch's others keep their proofs.
/// A worker standing for such a GPU takes up to 3 partitions per turn and
/// holds each turn 200 ms, so the partitions synthesized meanwhile wait
/// and form the next batch (the pipeline never waits for one to fill).
#[test]
fn partitions_proved_in_batches_give_the_one_at_a_time_bytes() {
    use porep_c2::{Backend, PartitionJob, PartitionProver, ProveTimings};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;
    type Out = Result<(bellperson::groth16::Proof<blstrs::Bls12>, ProveTimings), porep_c2::Error>;
    struct Batching {
        batches: Mutex<Vec<Vec<usize>>>,
        fail_once: AtomicBool,
    }
    impl Batching {
        fn one(&self, job: PartitionJob<'_>) -> Out {
            let data = job.partition_data.into_synthesized()?;
            porep_c2::prove_synthesized(data, job.params, job.r, job.s, &porep_c2::HostStages::cpu())
        }
    }
    impl PartitionProver for Batching {
        fn name(&self) -> String {
            "batching".into()
        }
        fn prove(&self, job: PartitionJob<'_>) -> Out {
            self.batches.lock().unwrap().push(vec![job.partition]);
            std::thread::sleep(Duration::from_millis(200));
            self.one(job)
        }
        fn max_batch(&self) -> usize {
            3
        }
        fn prove_batch(&self, jobs: Vec<PartitionJob<'_>>) -> Vec<Out> {
            self.batches.lock().unwrap().push(jobs.iter().map(|j| j.partition).collect());
            std::thread::sleep(Duration::from_millis(200));
            let n = jobs.len();
            jobs.into_iter()
                .enumerate()
                .map(|(i, job)| {
                    // The second member of the first batch of three fails,
                    // as a device error would.
                    if n == 3 && i == 1 && self.fail_once.swap(false, Ordering::SeqCst) {
                        return Err(porep_c2::Error::Worker { worker: self.name(), message: "injected".into() });
                    }
                    self.one(job)
                })
                .collect()
        }
    }
    // Partitions of a small synthetic shape (994 constraints, random
    // parameters: the proofs do not verify, so verification is off): the
    // equality of bytes is the check, at milliseconds per proof.
    let shape = demo_shape();
    let instance = c2_testkit::synthetic::SyntheticPorep::new(shape, 7);
    let params = instance.parameters(5);
    let partitions = 7;
    let pairs = blinding(42, partitions);
    let oracle_config = ProverConfig { verify: false, ..ProverConfig::default() };
    let (oracle, _) = prove_instance(&instance, &params, &pairs, &oracle_config).expect("CPU proof");

    let worker = Arc::new(Batching { batches: Mutex::new(Vec::new()), fail_once: AtomicBool::new(true) });
    let mut config = ProverConfig {
        verify: false,
        // Never fenced: the failed member is proved again on the worker.
        backend: Backend::workers(vec![worker.clone() as Arc<dyn PartitionProver>])
            .with_fences(porep_c2::WorkerFences::with_cool_down(Duration::ZERO)),
        retry_backend: Some(Backend::cpu()),
        ..ProverConfig::default()
    };
    config.pipeline.synthesis_workers = 2;
    let (bytes, report) = prove_instance(&instance, &params, &pairs, &config).expect("batched proof");
    assert_eq!(bytes, oracle, "batched proofs differ from the one-at-a-time CPU run");
    let batches = worker.batches.lock().unwrap().clone();
    assert!(batches.iter().all(|b| (1..=3).contains(&b.len())), "batches within the worker's bound: {batches:?}");
    let first_three = batches.iter().find(|b| b.len() == 3).expect("partitions that waited form a full batch");
    // The failed member alone was proved again (by itself, on the worker);
    // every other partition once.
    let retried: Vec<usize> =
        report.partitions.iter().filter(|p| p.retried_after.is_some()).map(|p| p.partition).collect();
    assert_eq!(retried, vec![first_three[1]], "only the failed member is retried: {batches:?}");
    let mut seen: Vec<usize> = batches.iter().flatten().copied().collect();
    seen.sort_unstable();
    let mut want: Vec<usize> = (0..partitions).chain(retried).collect();
    want.sort_unstable();
    assert_eq!(seen, want, "every partition once, the failed one twice: {batches:?}");
}

/// Partitions of several proofs in flight share a batch (issue 42: one
/// streamed pass of the parameters serves partitions of every proof
/// waiting for the worker, not only one proof's): three proofs of 7
/// partitions each on one worker that proves up to 4 per turn and holds
/// each turn 150 ms. Each proof's bytes equal its own one-at-a-time CPU
/// run (results go back to the proof that left the partition), every
/// batch is within the bound, and some batch holds partitions of two
/// proofs (each proof's blinding tells its partitions apart).
#[test]
fn partitions_of_proofs_in_flight_share_batches_and_keep_their_bytes() {
    use porep_c2::{Backend, PartitionJob, PartitionProver, ProveTimings};
    use std::sync::Mutex;
    type Out = Result<(bellperson::groth16::Proof<blstrs::Bls12>, ProveTimings), porep_c2::Error>;
    struct Batching {
        /// Each batch's members: (partition, r).
        batches: Mutex<Vec<Vec<(usize, blstrs::Scalar)>>>,
    }
    impl PartitionProver for Batching {
        fn name(&self) -> String {
            "batching".into()
        }
        fn prove(&self, job: PartitionJob<'_>) -> Out {
            self.prove_batch(vec![job]).pop().expect("one result")
        }
        fn max_batch(&self) -> usize {
            4
        }
        fn prove_batch(&self, jobs: Vec<PartitionJob<'_>>) -> Vec<Out> {
            self.batches.lock().unwrap().push(jobs.iter().map(|j| (j.partition, j.r)).collect());
            std::thread::sleep(Duration::from_millis(150));
            jobs.into_iter()
                .map(|job| {
                    let data = job.partition_data.into_synthesized()?;
                    porep_c2::prove_synthesized(data, job.params, job.r, job.s, &porep_c2::HostStages::cpu())
                })
                .collect()
        }
    }
    let instance = c2_testkit::synthetic::SyntheticPorep::new(demo_shape(), 7);
    let params = instance.parameters(5);
    let (proofs, partitions) = (3u64, 7);
    let pairs: Vec<_> = (0..proofs).map(|p| blinding(100 + p, partitions)).collect();
    let oracle_config = ProverConfig { verify: false, ..ProverConfig::default() };
    let oracles: Vec<Vec<u8>> = pairs
        .iter()
        .map(|pairs| prove_instance(&instance, &params, pairs, &oracle_config).expect("CPU proof").0)
        .collect();

    let worker = Arc::new(Batching { batches: Mutex::new(Vec::new()) });
    let config = ProverConfig {
        verify: false,
        backend: Backend::workers(vec![worker.clone() as Arc<dyn PartitionProver>]),
        ..ProverConfig::default()
    };
    let proved: Vec<Vec<u8>> = std::thread::scope(|s| {
        let handles: Vec<_> = pairs
            .iter()
            .map(|pairs| s.spawn(|| prove_instance(&instance, &params, pairs, &config).expect("batched proof").0))
            .collect();
        handles.into_iter().map(|h| h.join().expect("a proving thread")).collect()
    });
    let batches = worker.batches.lock().unwrap().clone();
    for (p, (bytes, oracle)) in proved.iter().zip(&oracles).enumerate() {
        assert_eq!(bytes, oracle, "proof {p}: bytes differ from its one-at-a-time CPU run; batches {batches:?}");
    }
    assert!(batches.iter().all(|b| (1..=4).contains(&b.len())), "batches within the bound: {batches:?}");
    let proof_of = |r: &blstrs::Scalar| pairs.iter().position(|ps| ps.iter().any(|(pr, _)| pr == r));
    let mixed = batches.iter().any(|b| {
        let owners: std::collections::BTreeSet<_> = b.iter().map(|(_, r)| proof_of(r)).collect();
        owners.len() > 1
    });
    assert!(mixed, "some batch holds partitions of two proofs: {batches:?}");
    let members: usize = batches.iter().map(Vec::len).sum();
    assert_eq!(members, (proofs as usize) * partitions, "every partition once: {batches:?}");
}

/// The 32 GiB partition's shape divided by 2^17: 994 constraints, 328
/// public inputs.
fn demo_shape() -> c2_testkit::synthetic::SyntheticShape {
    c2_testkit::synthetic::SyntheticShape::porep_32gib().scaled(1 << 17)
}
