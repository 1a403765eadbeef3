//! Fault tests (CPU only, run in CI): a stage backend that fails mid-proof,
//! as a GPU can, must cost time but not the proof. The failed partition is
//! synthesized again and proved on `retry_backend`; the bytes equal a clean
//! run's for the same (r, s), and the proof verifies.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use c2_msm::{CpuMsm, Density, Msm, MsmError};
use c2_ntt::{CpuNtt, Ntt, NttError};
use common::SyntheticInstance;
use ff::Field;
use porep_c2::{
    prove_instance, prove_synthesized, Backend, Error, GpuError, HostStages, OutOfBudget, PartitionJob,
    PartitionProver, ProofInstance, ProveTimings, ProverConfig, WorkerFences, Workers,
};
use rand::SeedableRng;

/// CpuMsm that fails its `fail_at`-th call (0-based) like a GPU would,
/// with `fault` (by default a backend fault).
struct FlakyMsm {
    calls: AtomicUsize,
    fail_at: usize,
    fault: Option<MsmError>,
}

impl FlakyMsm {
    fn new(fail_at: usize) -> Self {
        Self { calls: AtomicUsize::new(0), fail_at, fault: None }
    }

    fn injected(&self) -> Result<(), MsmError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == self.fail_at {
            let fault = MsmError::Backend { backend: "flaky", message: "injected device fault".into() };
            return Err(self.fault.clone().unwrap_or(fault));
        }
        Ok(())
    }
}

impl Msm for FlakyMsm {
    fn name(&self) -> &'static str {
        "flaky"
    }
    fn msm_g1(&self, b: &[G1Affine], s: &[Scalar], m: Option<&Density>) -> Result<G1Projective, MsmError> {
        self.injected()?;
        CpuMsm.msm_g1(b, s, m)
    }
    fn msm_g2(&self, b: &[G2Affine], s: &[Scalar], m: Option<&Density>) -> Result<G2Projective, MsmError> {
        self.injected()?;
        CpuMsm.msm_g2(b, s, m)
    }
}

/// CpuNtt that fails its first call.
struct FlakyNtt(AtomicUsize);

impl Ntt for FlakyNtt {
    fn name(&self) -> &'static str {
        "flaky"
    }
    fn compute_h(&self, a: Vec<Scalar>, b: Vec<Scalar>, c: Vec<Scalar>) -> Result<Vec<Scalar>, NttError> {
        if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            return Err(NttError::Backend { backend: "flaky", message: "injected device fault".into() });
        }
        CpuNtt.compute_h(a, b, c)
    }
}

/// A whole-partition worker on the CPU that fails the `fail_at`-th call
/// (counted over every worker sharing `calls`) as a GPU worker can: a device
/// error outside the stages.
struct CpuWorker {
    calls: Arc<AtomicUsize>,
    fail_at: Option<usize>,
}

impl PartitionProver for CpuWorker {
    fn name(&self) -> String {
        "cpu-worker".into()
    }
    fn prove(&self, job: PartitionJob<'_>) -> Result<(bellperson::groth16::Proof<blstrs::Bls12>, ProveTimings), Error> {
        assert!(job.params_key.starts_with("synthetic"), "params key {}", job.params_key);
        if Some(self.calls.fetch_add(1, Ordering::SeqCst)) == self.fail_at {
            return Err(Error::Worker { worker: self.name(), message: "injected worker fault".into() });
        }
        cpu(job)
    }
}

/// Proves a job on the CPU stages, as a worker that succeeds does.
fn cpu(job: PartitionJob<'_>) -> Result<(bellperson::groth16::Proof<blstrs::Bls12>, ProveTimings), Error> {
    prove_synthesized(job.partition_data.into_synthesized()?, job.params, job.r, job.s, &HostStages::cpu())
}

type Setup = (SyntheticInstance, bellperson::groth16::Parameters<blstrs::Bls12>, Vec<(Scalar, Scalar)>);

fn setup() -> Setup {
    setup_with(3)
}

/// A synthetic instance of `partitions` partitions, its parameters and
/// blinding pairs.
fn setup_with(partitions: usize) -> Setup {
    let instance = SyntheticInstance { partitions, rounds: 200 };
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(42);
    let params = instance.generate_parameters(&mut rng).expect("parameters");
    let pairs = (0..partitions).map(|_| (Scalar::random(&mut rng), Scalar::random(&mut rng))).collect();
    (instance, params, pairs)
}

fn config(backend: Backend) -> ProverConfig {
    ProverConfig { backend, ..ProverConfig::default() }
}

#[test]
fn a_failed_msm_is_retried_and_the_proof_is_unchanged() {
    let (instance, params, pairs) = setup();
    let (clean, _) = prove_instance(&instance, &params, &pairs, &config(Backend::cpu())).unwrap();
    // Each partition runs 8 MSMs (H, L, A×2, B_G1×2, B_G2×2): call 11 is
    // partition 1's A aux part, in the middle of a proof.
    let flaky = Backend::staged(Arc::new(CpuNtt), Arc::new(FlakyMsm::new(11)));
    let (bytes, report) = prove_instance(&instance, &params, &pairs, &config(flaky)).unwrap();
    assert_eq!(bytes, clean, "retried proof differs from the clean one");
    let retried: Vec<_> = report.partitions.iter().filter_map(|p| p.retried_after.as_ref()).collect();
    assert_eq!(retried.len(), 1, "{:?}", report.partitions);
    assert_eq!(report.retries(), 1, "the report counts the retry");
    assert!(retried[0].contains("injected device fault"), "{}", retried[0]);
}

#[test]
fn progress_hears_of_every_partition_once_also_after_a_retry() {
    let (instance, params, pairs) = setup();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let progress = porep_c2::Progress::new(move |k| log.lock().unwrap().push(k));
    let flaky = Backend::staged(Arc::new(CpuNtt), Arc::new(FlakyMsm::new(11)));
    let cfg = ProverConfig { progress: Some(progress), ..config(flaky) };
    prove_instance(&instance, &params, &pairs, &cfg).unwrap();
    let mut done = seen.lock().unwrap().clone();
    done.sort_unstable();
    assert_eq!(done, vec![0, 1, 2]);
}

#[test]
fn a_failed_ntt_is_retried_and_the_proof_is_unchanged() {
    let (instance, params, pairs) = setup();
    let (clean, _) = prove_instance(&instance, &params, &pairs, &config(Backend::cpu())).unwrap();
    let flaky = Backend::staged(Arc::new(FlakyNtt(AtomicUsize::new(0))), Arc::new(CpuMsm));
    let (bytes, report) = prove_instance(&instance, &params, &pairs, &config(flaky)).unwrap();
    assert_eq!(bytes, clean);
    assert_eq!(report.partitions.iter().filter(|p| p.retried_after.is_some()).count(), 1);
}

#[test]
fn without_a_retry_backend_the_fault_is_a_typed_error() {
    let (instance, params, pairs) = setup();
    let flaky = Backend::staged(Arc::new(CpuNtt), Arc::new(FlakyMsm::new(3)));
    let cfg = ProverConfig { retry_backend: None, ..config(flaky) };
    match prove_instance(&instance, &params, &pairs, &cfg) {
        Err(e @ Error::Msm(MsmError::Backend { .. })) => assert!(e.is_backend_failure()),
        other => panic!("expected the injected MSM error, got {other:?}"),
    }
}

/// What a device pool says when it cannot serve a request.
fn out_of_budget_gpu() -> GpuError {
    GpuError::OutOfBudget(OutOfBudget { requested: 4 << 30, largest_free: 3 << 30, free: 6 << 30, budget: 24 << 30 })
}

/// What a GPU stage returns when its device pool cannot serve a request.
fn out_of_budget() -> MsmError {
    MsmError::Gpu(out_of_budget_gpu())
}

#[test]
fn a_device_out_of_memory_is_a_matchable_error_and_is_retried() {
    let (instance, params, pairs) = setup();
    let oom = || {
        let msm = FlakyMsm { fault: Some(out_of_budget()), ..FlakyMsm::new(3) };
        Backend::staged(Arc::new(CpuNtt), Arc::new(msm))
    };
    // Without a retry backend the caller gets the device's own typed error,
    // one variant whatever the stage: no string inspection.
    let cfg = ProverConfig { retry_backend: None, ..config(oom()) };
    match prove_instance(&instance, &params, &pairs, &cfg) {
        Err(e @ Error::Gpu { stage: "MSM", source: GpuError::OutOfBudget(OutOfBudget { requested, .. }) }) => {
            assert_eq!(requested, 4 << 30);
            assert!(e.is_device_out_of_memory() && e.is_backend_failure(), "{e:?}");
            let source = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<GpuError>());
            assert!(source.is_some_and(GpuError::is_out_of_memory), "{source:?}");
        }
        other => panic!("expected the device's out-of-memory error, got {other:?}"),
    }
    // With the default retry backend the partition is proved on the CPU and
    // the report names the cause.
    let (clean, _) = prove_instance(&instance, &params, &pairs, &config(Backend::cpu())).unwrap();
    let (bytes, report) = prove_instance(&instance, &params, &pairs, &config(oom())).unwrap();
    assert_eq!(bytes, clean);
    let retried: Vec<_> = report.partitions.iter().filter_map(|p| p.retried_after.as_ref()).collect();
    assert_eq!(retried.len(), 1, "{:?}", report.partitions);
    assert!(retried[0].contains("device memory budget exhausted"), "{}", retried[0]);
}

#[test]
fn bad_input_is_not_retried() {
    // Parameters of another circuit: a typed mismatch, never a retry.
    let (instance, _, pairs) = setup();
    let other = SyntheticInstance { partitions: 3, rounds: 50 };
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
    let wrong = other.generate_parameters(&mut rng).unwrap();
    let err = prove_instance(&instance, &wrong, &pairs, &config(Backend::cpu())).unwrap_err();
    assert!(matches!(err, Error::ParamsMismatch { .. }), "{err:?}");
    assert!(!err.is_backend_failure());
}

#[test]
fn a_cancelled_proof_is_a_typed_error_and_memory_admission_is_enforced() {
    use porep_c2::PipelineConfig;
    let (instance, params, pairs) = setup();
    let token = c2_sched::CancelToken::new();
    token.cancel();
    let cfg = ProverConfig {
        pipeline: PipelineConfig { cancel: Some(token), ..Default::default() },
        ..config(Backend::cpu())
    };
    assert!(matches!(prove_instance(&instance, &params, &pairs, &cfg), Err(Error::Cancelled)));
    // A partition declared larger than the whole host budget: typed, no hang.
    let cfg = ProverConfig {
        pipeline: PipelineConfig {
            host_budget: Some(c2_sched::HostBudget::new(1 << 20)),
            item_bytes: 2 << 20,
            ..Default::default()
        },
        ..config(Backend::cpu())
    };
    assert!(matches!(prove_instance(&instance, &params, &pairs, &cfg), Err(Error::HostMemory(_))));
    // And within the budget the proof is the clean one.
    let (clean, _) = prove_instance(&instance, &params, &pairs, &config(Backend::cpu())).unwrap();
    let budget = c2_sched::HostBudget::new(10 << 20);
    let cfg = ProverConfig {
        pipeline: PipelineConfig {
            host_budget: Some(budget.clone()),
            item_bytes: 4 << 20,
            synthesis_workers: 3,
            ..Default::default()
        },
        ..config(Backend::cpu())
    };
    let (bytes, report) = prove_instance(&instance, &params, &pairs, &cfg).unwrap();
    assert_eq!(bytes, clean);
    assert_eq!(budget.used(), 0);
    // Permits are settled to what each synthesized partition holds (a, b, c
    // and the witness here): the peak is between one partition and all.
    let held: Vec<usize> = report.partitions.iter().map(|p| p.host_bytes).collect();
    let one = held.iter().copied().max().unwrap();
    assert!(one > 0, "every partition reports its host bytes: {held:?}");
    assert!(
        (one..=held.iter().sum::<usize>()).contains(&budget.settled_peak()),
        "settled peak {} against partitions holding {held:?}",
        budget.settled_peak()
    );
}

#[test]
fn partitions_spread_over_workers_and_a_failed_worker_is_retried() {
    let (instance, params, pairs) = setup();
    let (clean, _) = prove_instance(&instance, &params, &pairs, &config(Backend::cpu())).unwrap();
    // Two workers sharing one call counter; the second partition proved
    // (whichever worker takes it) fails.
    let calls = Arc::new(AtomicUsize::new(0));
    let workers: Vec<Arc<dyn PartitionProver>> = (0..2)
        .map(|_| Arc::new(CpuWorker { calls: calls.clone(), fail_at: Some(1) }) as Arc<dyn PartitionProver>)
        .collect();
    let backend = Backend::workers(workers);
    let cfg = ProverConfig {
        pipeline: porep_c2::PipelineConfig { synthesis_workers: 2, ..Default::default() },
        ..config(backend)
    };
    let (bytes, report) = prove_instance(&instance, &params, &pairs, &cfg).unwrap();
    assert_eq!(bytes, clean, "proof through two workers (one failing) differs from the CPU one");
    // Every partition went to a worker once; the failed one was synthesized
    // again and proved on the other worker (the failed one is fenced), and
    // the report says why.
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    let retried: Vec<_> = report.partitions.iter().filter_map(|p| p.retried_after.as_ref()).collect();
    assert_eq!(retried.len(), 1, "{:?}", report.partitions);
    assert!(retried[0].contains("injected worker fault"), "{}", retried[0]);
    // Without a retry backend the worker's fault is the typed error.
    let failing =
        Backend::workers(vec![Arc::new(CpuWorker { calls: Arc::new(AtomicUsize::new(0)), fail_at: Some(1) })]);
    let cfg = ProverConfig { retry_backend: None, ..config(failing) };
    match prove_instance(&instance, &params, &pairs, &cfg) {
        Err(e @ Error::Worker { .. }) => assert!(e.is_backend_failure()),
        other => panic!("expected the injected device error, got {other:?}"),
    }
}

/// Records the `r` of each partition it proves, holding the worker a while.
struct RecordingWorker {
    log: Arc<std::sync::Mutex<Vec<Scalar>>>,
    hold: std::time::Duration,
}

impl PartitionProver for RecordingWorker {
    fn name(&self) -> String {
        "recording-worker".into()
    }
    fn prove(&self, job: PartitionJob<'_>) -> Result<(bellperson::groth16::Proof<blstrs::Bls12>, ProveTimings), Error> {
        self.log.lock().unwrap().push(job.r);
        std::thread::sleep(self.hold);
        cpu(job)
    }
}

/// Proof A (priority 0) starts on `workers` recording workers (each
/// holding a partition 120 ms); proof B (priority 5) arrives 40 ms later.
/// Both have `partitions` partitions. Returns the order the workers took
/// them in: `100 + k` for A's partition k, `200 + k` for B's.
fn order_of_two_priorities(workers: usize, partitions: usize) -> Vec<u64> {
    let (instance, params, _) = setup_with(partitions);
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let provers = (0..workers)
        .map(|_| {
            let hold = std::time::Duration::from_millis(120);
            Arc::new(RecordingWorker { log: log.clone(), hold }) as Arc<dyn PartitionProver>
        })
        .collect();
    // A long grace so a busy CI machine cannot make B's consumer late.
    let gates = porep_c2::WorkerGates::with_grace(std::time::Duration::from_millis(300));
    let backend = Backend::Workers(Workers { gates, ..Workers::new(provers) });
    let n = partitions as u64;
    let pairs = |base: u64| (0..n).map(|k| (Scalar::from(base + k), Scalar::from(7u64))).collect::<Vec<_>>();
    let with_priority = |priority| ProverConfig {
        verify: false,
        pipeline: porep_c2::PipelineConfig { priority, ..Default::default() },
        ..config(backend.clone())
    };
    std::thread::scope(|s| {
        let a = s.spawn(|| prove_instance(&instance, &params, &pairs(100), &with_priority(0)).map(|_| ()));
        std::thread::sleep(std::time::Duration::from_millis(40));
        let b = s.spawn(|| prove_instance(&instance, &params, &pairs(200), &with_priority(5)).map(|_| ()));
        a.join().unwrap().unwrap();
        b.join().unwrap().unwrap();
    });
    let known = |r: &Scalar| (100..100 + n).chain(200..200 + n).find(|&x| Scalar::from(x) == *r).expect("a known r");
    let order: Vec<u64> = log.lock().unwrap().iter().map(known).collect();
    assert_eq!(order.len(), 2 * partitions, "{order:?}");
    order
}

/// Whether B's partitions (200 + k) form one run in `order`.
fn one_run_of_b(order: &[u64]) -> bool {
    let b: Vec<usize> = (0..order.len()).filter(|&i| order[i] >= 200).collect();
    b.windows(2).all(|w| w[1] == w[0] + 1)
}

#[test]
fn a_higher_priority_proof_takes_a_shared_worker_first() {
    // One worker: B's three partitions go next, in a row, then A's
    // remaining two: usually [A0, B0, B1, B2, A1, A2]. With equal
    // priorities the two proofs would alternate at the worker (A0, B0, A1,
    // B1, ...).
    let order = order_of_two_priorities(1, 3);
    assert!(one_run_of_b(&order), "{order:?}");
}

#[test]
fn priorities_hold_across_two_devices() {
    // Two workers (two devices): A's first two partitions take both; B's
    // six go next on both workers, in a row, before A's remaining four.
    let order = order_of_two_priorities(2, 6);
    assert!(one_run_of_b(&order), "{order:?}");
    assert!(order[order.len() - 1] < 200, "A ends last: {order:?}");
}

/// A worker that keeps the parameter keys it is asked to preload and to
/// prove with, as a device cache would.
struct KeyedWorker {
    preloaded: std::sync::Mutex<Vec<String>>,
    proved: std::sync::Mutex<Vec<String>>,
}

impl PartitionProver for KeyedWorker {
    fn name(&self) -> String {
        "keyed-worker".into()
    }
    fn prove(&self, job: PartitionJob<'_>) -> Result<(bellperson::groth16::Proof<blstrs::Bls12>, ProveTimings), Error> {
        self.proved.lock().unwrap().push(job.params_key.to_string());
        cpu(job)
    }
    fn preload(
        &self,
        _params: &bellperson::groth16::Parameters<blstrs::Bls12>,
        params_key: &str,
    ) -> Result<bool, Error> {
        self.preloaded.lock().unwrap().push(params_key.to_string());
        Ok(true)
    }
}

#[test]
fn preload_warms_every_worker_under_the_key_proofs_use() {
    let (instance, params, pairs) = setup();
    assert_eq!(Backend::cpu().preload(instance.parameter_id(), &params).unwrap(), 0, "nothing to preload on the CPU");
    let workers: Vec<Arc<KeyedWorker>> =
        (0..2).map(|_| Arc::new(KeyedWorker { preloaded: Default::default(), proved: Default::default() })).collect();
    let backend = Backend::workers(workers.iter().map(|w| w.clone() as Arc<dyn PartitionProver>).collect());
    assert_eq!(backend.preload(instance.parameter_id(), &params).unwrap(), 2);
    let (bytes, _) = prove_instance(&instance, &params, &pairs, &config(backend)).unwrap();
    let (clean, _) = prove_instance(&instance, &params, &pairs, &config(Backend::cpu())).unwrap();
    assert_eq!(bytes, clean);
    let mut proved_keys = Vec::new();
    for w in &workers {
        let pre = w.preloaded.lock().unwrap().clone();
        assert_eq!(pre.len(), 1, "each worker preloads once: {pre:?}");
        assert!(pre[0].starts_with(instance.parameter_id()), "{pre:?}");
        proved_keys.extend(w.proved.lock().unwrap().iter().cloned());
        assert!(w.proved.lock().unwrap().iter().all(|k| *k == pre[0]), "prove used another key than preload");
    }
    assert_eq!(proved_keys.len(), 3, "all partitions proved by the workers");
}

/// A worker on device `device` that proves on the CPU (holding the worker
/// `hold` per partition, as a GPU takes time), or fails every partition
/// while `dead` with a device error, as a GPU that lost its context does.
struct DeviceWorker {
    device: usize,
    dead: std::sync::atomic::AtomicBool,
    /// Panics instead of returning the device error (a bug in a worker).
    panics: bool,
    hold: std::time::Duration,
    proved: AtomicUsize,
    failed: AtomicUsize,
}

impl DeviceWorker {
    fn new(device: usize, dead: bool, hold_ms: u64) -> Arc<Self> {
        Arc::new(Self {
            device,
            dead: dead.into(),
            panics: false,
            hold: std::time::Duration::from_millis(hold_ms),
            proved: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
        })
    }

    /// A worker of `device` that panics in every partition.
    fn panicking(device: usize) -> Arc<Self> {
        let mut w = Self::new(device, true, 0);
        Arc::get_mut(&mut w).expect("fresh").panics = true;
        w
    }
}

impl PartitionProver for DeviceWorker {
    fn name(&self) -> String {
        format!("gpu{}", self.device)
    }
    fn device(&self) -> Option<usize> {
        Some(self.device)
    }
    fn prove(&self, job: PartitionJob<'_>) -> Result<(bellperson::groth16::Proof<blstrs::Bls12>, ProveTimings), Error> {
        std::thread::sleep(self.hold);
        if self.dead.load(Ordering::SeqCst) {
            self.failed.fetch_add(1, Ordering::SeqCst);
            if self.panics {
                panic!("injected panic in a GPU worker");
            }
            let lost =
                GpuError::Driver { op: "cuLaunchKernel", error: porep_c2::DriverError::LaunchFailed, kernel: None };
            return Err(Error::gpu("MSM", lost));
        }
        self.proved.fetch_add(1, Ordering::SeqCst);
        cpu(job)
    }
}

fn workers_backend(workers: &[Arc<DeviceWorker>], fences: WorkerFences) -> Backend {
    let provers = workers.iter().map(|w| w.clone() as Arc<dyn PartitionProver>).collect();
    Backend::Workers(Workers { fences, ..Workers::new(provers) })
}

#[test]
fn a_faulted_device_is_fenced_and_its_partitions_finish_on_the_other() {
    // Two devices of one worker each; device 0 faults at every partition.
    // The healthy device holds each partition 300 ms, so while it proves one
    // the other consumer takes the next (to device 0): the fault happens
    // mid-batch. No retry backend: every proof must come from device 1.
    let (instance, params, pairs) = setup_with(4);
    let (clean, _) = prove_instance(&instance, &params, &pairs, &config(Backend::cpu())).unwrap();
    let devices = [DeviceWorker::new(0, true, 0), DeviceWorker::new(1, false, 300)];
    let backend = workers_backend(&devices, WorkerFences::default());
    let cfg = ProverConfig {
        retry_backend: None,
        pipeline: porep_c2::PipelineConfig { synthesis_workers: 2, ..Default::default() },
        ..config(backend.clone())
    };
    let (bytes, report) = prove_instance(&instance, &params, &pairs, &cfg).unwrap();
    assert_eq!(bytes, clean, "proof with a failed device differs from the CPU one");
    let failed = devices[0].failed.load(Ordering::SeqCst);
    assert_eq!(failed, 1, "device 0 is fenced after its first fault");
    assert_eq!(devices[1].proved.load(Ordering::SeqCst), 4, "device 1 proved every partition");
    assert_eq!(report.retries(), 1, "{:?}", report.partitions);
    assert_eq!(backend.healthy_workers(), 1);
    assert_eq!(backend.fenced_workers(), vec!["gpu0".to_string()]);
    // A second proof does not touch the fenced device at all.
    let (bytes, report) = prove_instance(&instance, &params, &pairs, &cfg).unwrap();
    assert_eq!((bytes, report.retries()), (clean, 0));
    assert_eq!(devices[0].failed.load(Ordering::SeqCst), 1);
    assert_eq!(devices[1].proved.load(Ordering::SeqCst), 8);
}

#[test]
fn with_every_device_fenced_the_cpu_proves_and_a_device_returns_after_its_cool_down() {
    let (instance, params, pairs) = setup();
    let (clean, _) = prove_instance(&instance, &params, &pairs, &config(Backend::cpu())).unwrap();
    // Both workers of the one device: the first fault fences both.
    let device = [DeviceWorker::new(0, true, 0), DeviceWorker::new(0, true, 0)];
    let cool_down = std::time::Duration::from_millis(400);
    let backend = workers_backend(&device, WorkerFences::with_cool_down(cool_down));
    let (bytes, report) = prove_instance(&instance, &params, &pairs, &config(backend.clone())).unwrap();
    assert_eq!(bytes, clean, "the CPU's retries give the clean proof");
    let failed: usize = device.iter().map(|w| w.failed.load(Ordering::SeqCst)).sum();
    assert!((1..=2).contains(&failed), "one fault per worker at most, got {failed}");
    // Every partition went to the CPU, those after the fault without
    // touching the device: each says why.
    assert_eq!(report.retries(), 3, "{:?}", report.partitions);
    assert_eq!(backend.healthy_workers(), 0);
    assert_eq!(backend.fenced_workers().len(), 2);
    // Without a retry backend a fenced device is a typed error.
    let cfg = ProverConfig { retry_backend: None, ..config(backend.clone()) };
    match prove_instance(&instance, &params, &pairs, &cfg) {
        Err(e @ Error::NoHealthyWorker { workers: 2 }) => assert!(e.is_backend_failure()),
        other => panic!("expected NoHealthyWorker, got {other:?}"),
    }
    // The device recovers; after the cool-down it proves again.
    device.iter().for_each(|w| w.dead.store(false, Ordering::SeqCst));
    std::thread::sleep(cool_down + std::time::Duration::from_millis(50));
    assert_eq!(backend.healthy_workers(), 2);
    let (bytes, report) = prove_instance(&instance, &params, &pairs, &config(backend)).unwrap();
    assert_eq!((bytes, report.retries()), (clean, 0));
    assert_eq!(device.iter().map(|w| w.proved.load(Ordering::SeqCst)).sum::<usize>(), 3);
}

#[test]
fn running_out_of_device_memory_fences_nothing() {
    // A pool that cannot serve one request (another process took the
    // memory) is not a dead device: that partition goes to the CPU, the
    // worker keeps taking the next ones.
    struct OnceOutOfMemory(AtomicUsize);
    impl PartitionProver for OnceOutOfMemory {
        fn name(&self) -> String {
            "gpu0".into()
        }
        fn device(&self) -> Option<usize> {
            Some(0)
        }
        fn prove(
            &self,
            job: PartitionJob<'_>,
        ) -> Result<(bellperson::groth16::Proof<blstrs::Bls12>, ProveTimings), Error> {
            if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
                return Err(Error::gpu("worker", out_of_budget_gpu()));
            }
            cpu(job)
        }
    }
    let (instance, params, pairs) = setup();
    let (clean, _) = prove_instance(&instance, &params, &pairs, &config(Backend::cpu())).unwrap();
    let worker = Arc::new(OnceOutOfMemory(AtomicUsize::new(0)));
    let backend = Backend::workers(vec![worker.clone() as Arc<dyn PartitionProver>]);
    let (bytes, report) = prove_instance(&instance, &params, &pairs, &config(backend.clone())).unwrap();
    assert_eq!(bytes, clean);
    assert_eq!(report.retries(), 1);
    assert_eq!(worker.0.load(Ordering::SeqCst), 3, "the worker took every partition");
    assert!(backend.fenced_workers().is_empty());
}

#[test]
fn a_fault_drill_fails_its_device_and_the_proof_is_unchanged() {
    let (instance, params, pairs) = setup_with(4);
    let (clean, _) = prove_instance(&instance, &params, &pairs, &config(Backend::cpu())).unwrap();
    // Both devices healthy (each holds a partition 100 ms, so both take
    // some); the drill fails device 0's first partition once: it is fenced
    // for the rest of the proof and device 1 proves that partition again.
    let devices = [DeviceWorker::new(0, false, 100), DeviceWorker::new(1, false, 100)];
    let drill = porep_c2::FaultDrill { device: 0, from: 0, faults: Some(1) };
    let (backend, counts) = workers_backend(&devices, WorkerFences::default()).with_fault_drill(drill);
    let cfg = ProverConfig {
        retry_backend: None,
        pipeline: porep_c2::PipelineConfig { synthesis_workers: 2, ..Default::default() },
        ..config(backend.clone())
    };
    let (bytes, report) = prove_instance(&instance, &params, &pairs, &cfg).unwrap();
    assert_eq!(bytes, clean);
    assert_eq!(counts.injected.load(Ordering::SeqCst), 1);
    assert_eq!(report.retries(), 1, "{:?}", report.partitions);
    assert_eq!(backend.fenced_workers(), vec!["gpu0".to_string()]);
    assert_eq!(devices[1].proved.load(Ordering::SeqCst), 4, "device 1 proved the failed partition again");
    // On the CPU stages a drill changes nothing.
    let (cpu, counts) = Backend::cpu().with_fault_drill(drill);
    let (bytes, _) = prove_instance(&instance, &params, &pairs, &config(cpu)).unwrap();
    assert_eq!((bytes, counts.injected.load(Ordering::SeqCst)), (clean, 0));
}

#[test]
fn a_worker_that_panics_is_a_fenced_device_fault_and_the_proof_survives() {
    // One device's worker panics mid-partition (as a bug or a driver
    // wrapper could); the other device's worker proves. The panic must not
    // tear down the proof: device 0 is fenced, its partition proved on
    // device 1, and the retry says it was a panic.
    let (instance, params, pairs) = setup();
    let (clean, _) = prove_instance(&instance, &params, &pairs, &config(Backend::cpu())).unwrap();
    let devices = [DeviceWorker::panicking(0), DeviceWorker::new(1, false, 100)];
    let backend = workers_backend(&devices, WorkerFences::default());
    let cfg = ProverConfig {
        retry_backend: None,
        pipeline: porep_c2::PipelineConfig { synthesis_workers: 2, ..Default::default() },
        ..config(backend.clone())
    };
    let (bytes, report) = prove_instance(&instance, &params, &pairs, &cfg).unwrap();
    assert_eq!(bytes, clean, "proof after a worker panic differs from the CPU one");
    assert_eq!(devices[0].failed.load(Ordering::SeqCst), 1, "the panicking device is fenced after one panic");
    assert_eq!(backend.fenced_workers(), vec!["gpu0".to_string()]);
    let retried: Vec<_> = report.partitions.iter().filter_map(|p| p.retried_after.as_ref()).collect();
    assert_eq!(retried.len(), 1, "{:?}", report.partitions);
    assert!(retried[0].contains("panicked: injected panic in a GPU worker"), "{}", retried[0]);
    // With no healthy worker and no retry backend, the client is told the cause.
    let lone = workers_backend(&[DeviceWorker::panicking(0)], WorkerFences::default());
    match prove_instance(&instance, &params, &pairs, &ProverConfig { retry_backend: None, ..config(lone) }) {
        Err(e @ Error::Worker { .. }) => assert!(e.to_string().contains("panicked: injected panic"), "{e}"),
        other => panic!("expected the worker's panic as a device fault, got {other:?}"),
    }
}

/// Several threads asking for the same missing parameter set at once: one
/// generates it (under the set's lock, into a file of its own renamed into
/// place), the others wait and read it; every caller gets the same set and
/// no partial or lock-less file is left but the lock.
#[test]
fn concurrent_parameter_requests_generate_once() {
    let dir = tempfile::tempdir().unwrap();
    let instance = SyntheticInstance { partitions: 1, rounds: 64 };
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| c2_testkit::demo::ensure_parameters(&instance, dir.path(), 5).unwrap()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(results.iter().filter(|(_, generated)| *generated).count(), 1, "generated once");
    assert!(results.iter().all(|(p, _)| **p == *results[0].0), "the same set for every caller");
    let mut names: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert!(names.iter().all(|n| !n.contains(".partial")), "{names:?}");
    assert_eq!(names.len(), 3, "params, vk and the lock: {names:?}");
}

/// From a test binary (in `target/<profile>/deps`), the tools' folder for
/// the tiny sector's parameters is the tests' own, so `cargo run --release
/// --example prove` and `cargo test --release` generate them once.
#[test]
fn the_tools_share_the_tests_parameter_folder() {
    assert_eq!(c2_testkit::demo::tiny_params_dir(), common::test_params_dir());
}

/// The urgent lane (`Workers::urgent`): a proof of at least the lane's
/// priority whose partitions fit the lane's shape is proved by the urgent
/// worker, and nothing else is: not a lower priority, not a partition larger
/// than the lane was planned for, not while the lane's device is fenced.
/// Bytes equal the CPU's throughout.
#[test]
fn urgent_proofs_take_the_urgent_lane_and_nothing_else_does() {
    use porep_c2::plan::PartitionShape;
    use porep_c2::{UrgentLane, UrgentWorkers};
    let (instance, params, pairs) = setup_with(2);
    let (clean, _) = prove_instance(&instance, &params, &pairs, &config(Backend::cpu())).unwrap();
    let shape = PartitionShape::of_parameters(&params);
    let run = |lane_shape: PartitionShape, ordinary_dead: bool, priority: i32| {
        let ordinary = DeviceWorker::new(0, ordinary_dead, 0);
        let lane = DeviceWorker::new(0, false, 0);
        let urgent = UrgentWorkers::new(vec![lane.clone()], UrgentLane { min_priority: 4, shape: lane_shape });
        let workers = Workers::new(vec![ordinary.clone() as Arc<dyn PartitionProver>]).with_urgent(urgent);
        let cfg = ProverConfig {
            pipeline: porep_c2::PipelineConfig { priority, ..Default::default() },
            ..config(Backend::Workers(workers))
        };
        if ordinary_dead {
            // A first proof faults on the ordinary worker and fences device 0
            // (the retry backend, the CPU, proves it).
            let (bytes, _) = prove_instance(
                &instance,
                &params,
                &pairs,
                &ProverConfig { pipeline: Default::default(), ..cfg.clone() },
            )
            .unwrap();
            assert_eq!(bytes, clean);
        }
        let (bytes, _) = prove_instance(&instance, &params, &pairs, &cfg).unwrap();
        assert_eq!(bytes, clean, "lane {lane_shape:?}, priority {priority}");
        (ordinary.proved.load(Ordering::SeqCst), lane.proved.load(Ordering::SeqCst))
    };
    // CRITICAL (4) and above, fitting: the lane proves both partitions.
    assert_eq!(run(shape, false, 4), (0, 2));
    assert_eq!(run(shape, false, 5), (0, 2));
    // HIGH (3): the ordinary worker.
    assert_eq!(run(shape, false, 3), (2, 0));
    // A lane planned for smaller partitions (a domain of 2, fewer inputs):
    // the ordinary worker, whatever the priority.
    let tiny = PartitionShape { log_domain: 1, ..shape };
    assert_eq!(run(tiny, false, 4), (2, 0));
    let few_inputs = PartitionShape { inputs: shape.inputs - 1, ..shape };
    assert_eq!(run(few_inputs, false, 4), (2, 0));
    // The lane's device fenced after a fault: the lane takes nothing.
    assert_eq!(run(shape, true, 4), (0, 0));
}
