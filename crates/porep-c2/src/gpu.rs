//! The whole GPU path for one partition (feature `cuda`), composed at device
//! level within a planned working set ([`crate::plan`]): a and b uploaded
//! and transformed, c uploaded into b's buffer after a·b, H left in a's
//! buffer and the witness uploaded into b's (or, for a `Partition::Witness`
//! when the plan has room, only the witness uploaded and a, b, c computed
//! from the shape's constraint matrices on the device); every MSM over parameter
//! vectors kept resident per device ([`c2_vram::SrsCache`], as many as the
//! plan leaves room for) or streamed from host memory in chunks. Blinding
//! and assembly are the CPU path's (`groth16`), so proofs are bit-identical
//! for the same `r`, `s`, whatever the budget.
//!
//! Device memory: [`gpu_backend`] reserves one [`VramPool`] per device (free
//! memory minus a margin, or a cap: [`GpuBackendConfig::vram`]), plans it
//! for [`GpuBackendConfig::plan_for`] ([`crate::plan::plan_device`]: a
//! device that cannot hold one worker is refused, one that holds fewer
//! workers than asked gets fewer, with a warning), and carves each worker
//! two arenas of its own (partition vectors, MSM scratch) before the NTT
//! tables and the parameter sets take the rest. No cuMemAlloc/cuMemFree
//! (and no implicit device synchronisation) happens per partition, and no
//! worker can fragment another's memory.
//!
//! [`gpu_backend`] makes one [`GpuProver`] per planned worker on every
//! device (sharing that device's NTT tables and parameter cache); the
//! facade's pipeline gives each its own consumer thread, so one worker's
//! uploads and host work overlap another's kernels, and partitions spread
//! over devices.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use bellperson::groth16::{Parameters, Proof};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use c2_abc::{AbcStream, ChunkedMatrices, DeviceMatrices, GpuAbc, PinnedChunks};
use c2_core::{Density, Synthesized};
use c2_cuda::{
    DeviceBuffer, DeviceMemory, Event, Gpu, GpuError, PinnedBuffer, PinnedShared, Stager, Stream, StreamPriority,
};
use c2_msm::gpu::{DeviceDensity, DeviceScalars, GpuCurve, GpuMsm, GpuMsmConfig, PrecomputedBases, G1, G2};
use c2_ntt::GpuNtt;
use c2_sched::YieldGate;
use c2_vram::{ResidentSrs, SrsCache, SrsSource, VramConfig, VramPool};

use crate::pins::{HostPins, PinnedSet};
use crate::plan::{
    keeps_urgent_lane, plan_device, plan_device_host_abc, DevicePlan, PartitionShape, MATRIX_SLOT_BYTES, SHARED_SLACK,
};

use crate::backend::{Backend, Partition, PartitionJob, PartitionProver, UrgentLane, UrgentWorkers, Witness, Workers};
use crate::config::ShapeMatrices;
use crate::error::Error;
use crate::groth16::{
    assemble, check_parameters, check_parameters_for, run_msms, G1Query, Mask, MsmStep, PartitionMsms, Scalars,
};
use crate::report::{timed, GpuTimes, ProveTimings};

mod batch;

/// A device error of the GPU worker (uploads, events, the pool).
fn dev(e: impl Into<GpuError>) -> Error {
    Error::gpu("worker", e)
}

/// How [`gpu_backend`] sets up the devices.
#[derive(Clone, Debug)]
pub struct GpuBackendConfig {
    /// Device ordinals; empty = every device the driver lists.
    pub devices: Vec<usize>,
    /// Provers per device: two let one partition's uploads and host work
    /// overlap another's kernels (ARCHITECTURE.md, "Lessons from prior art").
    pub workers_per_device: usize,
    /// Keep parameter sets on the devices between partitions and proofs
    /// (when they fit beside the workers' buffers).
    pub resident_params: bool,
    /// MSM tuning for every worker.
    pub msm: GpuMsmConfig,
    /// The per-device memory reservation: by default the driver's free
    /// memory minus 2 GiB, held while the backend lives. Set a cap (e.g.
    /// 16 GiB) when other GPU work (PoSt) shares the device, or to behave
    /// like a smaller card.
    pub vram: VramConfig,
    /// The largest partition the devices are planned for (default: a 32 GiB
    /// sector's); smaller partitions fit the same arenas. A device whose
    /// budget cannot hold one worker for it is refused at start
    /// ([`Error::DeviceTooSmall`]).
    pub plan_for: PartitionShape,
    /// Host bytes of streamed parameter vectors the backend may page-lock
    /// (once per process, for the sets a device cannot keep resident; no
    /// memory is added: the loaded set's own vectors are registered), so
    /// their chunks go to the device at the DMA engine's speed instead of
    /// through the staging slots. 0: always staged. Default 64 GiB (one
    /// 32 GiB sector's 47.5 GB set and the small sizes').
    pub pin_streamed_params: usize,
    /// Where a shape's constraint matrices do not fit on a device, stream
    /// them in row chunks for every partition so a, b, c are still
    /// computed there (the chunks are page-locked once per process: 7.4 GB
    /// of host memory for the 32 GiB shape). `false`: a, b, c are then
    /// computed on the host (12.5 GB of host memory per 32 GiB partition in
    /// flight, ~2.5 s of host work and ~1.8 s of PCIe each). Default true.
    pub stream_matrices: bool,
    /// Keep a shape's matrices on the device with their repeated blocks
    /// stored once (`c2_abc::RepeatedMatrices`: a partition's challenge
    /// sub-circuits, about 1/18 of the 7.34 GB at 32 GiB), in place of the
    /// whole matrices and, under a streamed plan, in place of the streamed
    /// chunks when it fits beside the resident parameters (then no matrix
    /// byte crosses PCIe per partition). Same a, b, c, hence the same
    /// bytes. Measured on an H100 (2026-12-07, real 32 GiB partition,
    /// verified, bytes == the run without it): 18 blocks of 7,237,665 rows,
    /// 0.41 GB on the device instead of 7.34; at a 24 GiB cap 2.45 s and
    /// 41.1 GB host-to-device per partition against 2.57 s and 48.5 GB
    /// with streamed chunks; the product 20.7 ms against 18.6 ms from the
    /// whole matrices. Default true.
    pub repeated_matrices: bool,
    /// Precomputed copies of each resident H query, `(window bits,
    /// copies)` ([`GpuMsm::precompute`]): built on the device by the first
    /// partition of a parameter set (a 2^27 H: ~19 s at (20, 4)), kept
    /// while the set is resident, where the device's pool has room after
    /// the workers' arenas and the parameters (else the H MSM runs over the
    /// resident H, with one warning). Measured on the H200 (BENCHMARKS.md,
    /// sessions 22-23): G1 2^27 with (20, 4) 902.3 vs 996.7 ms alone, a
    /// 32 GiB-shaped partition's H 908-909 vs 1015-1016 ms (same bytes),
    /// 51.5 GB of points: they fit beside the 32 GiB set with one worker,
    /// not two (36.5 GB free). `None` by default: the build (~19 s per set
    /// and device) pays only in a long-lived process, and two workers
    /// overlap more than the copies save. The copies sit outside the
    /// parameter cache's accounting: a second parameter set may then
    /// stream.
    pub h_copies: Option<(u32, u32)>,
    /// One more worker per device for urgent proofs (default: WinningPoSt,
    /// priority CRITICAL): arenas planned for [`UrgentLane::shape`] (~1.5
    /// GB, mostly MSM scratch for every window in one pass; taken from the
    /// budget before the ordinary workers are planned) and streams of the
    /// device's greatest priority, so such
    /// a proof starts at once beside the partitions in flight instead of
    /// waiting for a worker (a 32 GiB C2 partition holds one for ~1.6 s of
    /// kernels); while it runs, the device's other workers queue no new
    /// transform or MSM (`c2_sched::YieldGate`), so only their kernels
    /// already running are ahead of it (a running kernel keeps its SMs;
    /// priority orders only waiting blocks). `None`: no lane; urgent proofs
    /// take the ordinary workers' next turns.
    pub urgent_lane: Option<UrgentLane>,
    /// The most partitions of one proof whose MSMs a worker runs in one
    /// streamed pass of the parameters it cannot keep resident (issue 42:
    /// a 16 GiB card streams a 32 GiB partition's 47.4 GB per pass).
    /// Bounded by the plan ([`DevicePlan::max_batch`]: what the worker's
    /// vectors arena holds of the members' compact witnesses and bucket
    /// totals; 1 when every vector is resident), and by the partitions
    /// waiting when a worker frees up (a batch never waits to fill). Each
    /// member holds its H on the host, page-locked, between its compute_h
    /// and the passes (4.3 GB at 32 GiB; the vectors are kept for reuse).
    /// `None`: the plan's bound; `Some(1)`: one partition at a time. On a
    /// device that keeps no urgent lane while one was asked for, at most
    /// [`URGENT_TURN_BATCH`].
    /// Default `None`. Measured on an H100 with the pool capped at 16 GiB
    /// (real 32 GiB CC sector, generated parameters, 5 proofs with 2 in
    /// flight, 2026-12-07): 2.17 s/partition against 2.54 one partition
    /// per pass, 13.9 GB host-to-device per partition against 47.5 (a
    /// member of a batch of 9, 36 of the 50, moves 47.4/9 GB of parameters
    /// and its H's 4.3 GB), every proof verified, bytes == the uncapped
    /// proof's.
    pub max_batch: Option<usize>,
    /// Host bytes per device that its workers may page-lock for their
    /// batch members' H (shared equally by the device's ordinary workers;
    /// [`PartitionShape::batch_member_host_bytes`] per member: 4 GiB at
    /// 32 GiB), a bound on [`GpuBackendConfig::max_batch`] beside the
    /// plan's. This memory is outside the facade's host budget and is kept
    /// by the worker for later batches. Default 40 GiB: a whole 32 GiB
    /// proof's 10 partitions per pass with one worker per device (5 each
    /// with two), where a partition at a 16 GiB cap moves 4.7 GB of
    /// parameters and its H's 4.3 GB (9.1 GB; 10.3 at 8); with the
    /// 47.5 GB parameter set (page-locked in place, no copy) and the 9 GB
    /// of matrices, 100 GB of a 128 GB host.
    pub batch_host_bytes: usize,
}

impl Default for GpuBackendConfig {
    fn default() -> Self {
        Self {
            devices: Vec::new(),
            workers_per_device: 2,
            resident_params: true,
            msm: GpuMsmConfig::default(),
            vram: VramConfig::default(),
            plan_for: PartitionShape::for_sector_size(32 << 30).expect("32 GiB is a registered size"),
            pin_streamed_params: 64 << 30,
            stream_matrices: true,
            repeated_matrices: true,
            h_copies: None,
            urgent_lane: Some(UrgentLane::default()),
            max_batch: None,
            batch_host_bytes: 40 << 30,
        }
    }
}

/// A [`Backend::Workers`] of [`GpuProver`]s on the configured devices.
/// Logs the devices in one line; an error ([`Error::Gpu`], e.g.
/// [`GpuError::is_no_gpu`]) when no device can be used.
pub fn gpu_backend(config: &GpuBackendConfig) -> Result<Backend, Error> {
    let ordinals = if config.devices.is_empty() {
        (0..c2_cuda::devices().map_err(backend_err)?.len()).collect()
    } else {
        config.devices.clone()
    };
    if ordinals.is_empty() {
        return Err(backend_err(GpuError::NoDevice(c2_cuda::NoGpu::NoDevices)));
    }
    let mut workers: Vec<Arc<dyn PartitionProver>> = Vec::new();
    let mut urgent: Vec<Arc<dyn PartitionProver>> = Vec::new();
    let mut names = Vec::new();
    let wanted = config.workers_per_device.max(1);
    let shape = &config.plan_for;
    // One registry for every device: registrations are portable.
    let pins = Arc::new(HostPins::new(config.pin_streamed_params));
    let chunked = Arc::new(ChunkedSets::default());
    for &d in &ordinals {
        let gpu = Gpu::open(d).map_err(backend_err)?;
        let pool = VramPool::new(&gpu, &config.vram).map_err(backend_err)?;
        // The urgent lane's arenas first (its roomy plan: every vector and
        // the matrices of its small shape on the device), so the ordinary
        // workers are planned on what is left, unless that would move their
        // a, b, c to the host (`plan::keeps_urgent_lane`: at a 16 GiB cap
        // the lane's ~1.5 GB is what z and the matrix chunks need, and a
        // 32 GiB partition measured 6.1 s with host a, b, c against 2.6 s
        // streamed, H100 2026-12-07), where urgent proofs take the ordinary
        // workers' next turns instead.
        let planner = if config.stream_matrices { plan_device } else { plan_device_host_abc };
        let budget = pool.budget();
        let lane_plan = match &config.urgent_lane {
            // The plan `plan::lane_bytes` counts.
            Some(lane) => Some(
                plan_device(1 << 50, 1, &lane.shape).map_err(|source| Error::DeviceTooSmall { device: d, source })?,
            ),
            None => None,
        };
        let lane_bytes = lane_plan.as_ref().map_or(0, DevicePlan::per_worker);
        let with_lane = planner(budget.saturating_sub(lane_bytes), wanted, shape);
        let without = || planner(budget, wanted, shape).map_err(|source| Error::DeviceTooSmall { device: d, source });
        let (plan, lane_plan) = match (lane_plan, with_lane) {
            (None, _) => (without()?, None),
            (Some(lp), Ok(p)) => {
                let alone = without()?;
                if keeps_urgent_lane(&p, &alone) {
                    (p, Some(lp))
                } else {
                    log::warn!(
                        "porep-c2: GPU {d}: no urgent lane: its {:.1} GB would leave the ordinary workers' a, b, c to the host; urgent proofs take their next turns",
                        lane_bytes as f64 / 1e9
                    );
                    (alone, None)
                }
            }
            (Some(_), Err(_)) => {
                log::warn!(
                    "porep-c2: GPU {d}: no urgent lane: {:.1} GB does not fit beside one worker; urgent proofs take the ordinary workers' turns",
                    lane_bytes as f64 / 1e9
                );
                (without()?, None)
            }
        };
        let ordinary = ordinary_workers(config, lane_plan.is_some());
        let config = &ordinary;
        let lane = match lane_plan {
            Some(lp) => {
                let vectors = pool.carve(lp.vectors_bytes).map_err(backend_err)?;
                let msm = pool.carve(lp.msm_bytes).map_err(backend_err)?;
                Some((lp, vectors, msm))
            }
            None => None,
        };
        if plan.workers < wanted {
            log::warn!(
                "porep-c2: GPU {d}: {:.1} GB holds {} of the {wanted} workers asked for (2^{} partitions need {:.1} GB each beside {:.1} GB of tables)",
                plan.budget as f64 / 1e9,
                plan.workers,
                shape.log_domain,
                plan.per_worker() as f64 / 1e9,
                plan.tables_bytes as f64 / 1e9,
            );
        }
        log::info!("porep-c2: GPU {d} plan: {}", plan.describe(shape));
        let batch = batch_bound(config, &plan);
        if plan.max_batch > 1 && batch < plan.max_batch {
            log::info!(
                "porep-c2: GPU {d}: batches of up to {batch} partitions per worker (max_batch {:?}; {:.1} GB of page-locked host memory per worker for their H at 2^{})",
                config.max_batch,
                (batch * shape.batch_member_host_bytes()) as f64 / 1e9,
                shape.log_domain
            );
        }
        // The workers' arenas first, each one piece of the pool, then the
        // NTT tables; the parameter sets get the rest.
        let mut arenas = Vec::with_capacity(plan.workers);
        for _ in 0..plan.workers {
            let vectors = pool.carve(plan.vectors_bytes).map_err(backend_err)?;
            let msm = pool.carve(plan.msm_bytes).map_err(backend_err)?;
            arenas.push((vectors, msm));
        }
        let ntt = Arc::new(GpuNtt::with_memory(pool.memory())?);
        ntt.prepare(shape.log_domain)?;
        let shared = DeviceShared {
            ntt,
            srs: SrsCache::new(pool.memory()),
            epoch: device_epoch(&gpu).map_err(backend_err)?,
            abc: Arc::new(GpuAbc::with_memory(pool.memory())?),
            matrices: Arc::default(),
            pins: pins.clone(),
            chunked: chunked.clone(),
            h_copies: Arc::new(HCopies::new(config.h_copies, pool.memory())?),
            yield_gate: Arc::default(),
        };
        for (w, (vectors, msm)) in arenas.iter().enumerate() {
            let memory = WorkerMemory { vectors: vectors.memory(), msm: msm.memory() };
            workers.push(Arc::new(GpuProver::new(
                (d, w),
                shared.clone(),
                memory,
                &plan,
                config,
                StreamPriority::Normal,
            )?));
        }
        if let (Some((lane_plan, vectors, msm)), Some(lane)) = (&lane, &config.urgent_lane) {
            let memory = WorkerMemory { vectors: vectors.memory(), msm: msm.memory() };
            let w = plan.workers;
            let prover = GpuProver::new((d, w), shared.clone(), memory, lane_plan, config, StreamPriority::Urgent)?;
            log::info!("porep-c2: GPU {d} urgent lane (cuda:{d}/{w}): {}", lane_plan.describe(&lane.shape));
            urgent.push(Arc::new(prover));
        }
        names.push(format!("{d}: {}, {:.1} GB reserved", gpu.info().name, pool.budget() as f64 / 1e9));
    }
    log::info!(
        "porep-c2: proving on {} GPU(s) [{}], parameters {}",
        ordinals.len(),
        names.join("; "),
        if config.resident_params { "resident as far as they fit" } else { "streamed" }
    );
    let workers = Workers::new(workers);
    Ok(Backend::Workers(match &config.urgent_lane {
        Some(lane) if !urgent.is_empty() => workers.with_urgent(UrgentWorkers::new(urgent, lane.clone())),
        _ => workers,
    }))
}

/// The most partitions a worker batches on a device that keeps no urgent
/// lane while one was asked for (a 16 GiB card, `plan::keeps_urgent_lane`):
/// a WinningPoSt there waits for the turn in hand, ~2.2 s per 32 GiB
/// partition of a batch (H100, 16 GiB cap, 2026-12-07), so ~7 s at 3
/// instead of ~20 s at the plan's 9. With 3 a partition still moves a third
/// of the streamed parameters (15.8 of 47.4 GB at 16 GiB) plus its H:
/// ~20 GB, which a 25 GB/s link moves in the 2 s of its kernels. A device
/// that serves no urgent proofs (`urgent_lane: None`) batches fully.
pub const URGENT_TURN_BATCH: usize = 3;

/// `config` as a device's ordinary workers use it: where urgent proofs
/// were asked for and the device keeps no lane for them (`lane_kept`
/// false), they take these workers' turns and wait for the batch in hand,
/// so batches are at most [`URGENT_TURN_BATCH`].
fn ordinary_workers(config: &GpuBackendConfig, lane_kept: bool) -> GpuBackendConfig {
    match config.urgent_lane {
        Some(_) if !lane_kept => GpuBackendConfig {
            max_batch: Some(config.max_batch.map_or(URGENT_TURN_BATCH, |m| m.min(URGENT_TURN_BATCH))),
            ..config.clone()
        },
        _ => config.clone(),
    }
}

/// The most partitions an ordinary worker of `plan` batches: the config's
/// bound ([`GpuBackendConfig::max_batch`]), the plan's (device memory) and
/// the page-locked host memory each worker may hold for its members' H
/// ([`GpuBackendConfig::batch_host_bytes`]); at least 1.
pub fn batch_bound(config: &GpuBackendConfig, plan: &DevicePlan) -> usize {
    let bound = plan.batch_within(&config.plan_for, config.batch_host_bytes);
    config.max_batch.map_or(bound, |m| m.min(bound)).max(1)
}

/// A device error while the backend starts.
fn backend_err(e: impl Into<GpuError>) -> Error {
    Error::gpu("backend", e)
}

/// An event recorded (and completed) once per device: the time origin of
/// every worker's kernel spans there ([`GpuTimes::spans_ms`]).
fn device_epoch(gpu: &Arc<Gpu>) -> Result<Arc<Event>, GpuError> {
    let (stream, epoch) = (gpu.stream()?, gpu.event()?);
    epoch.record(&stream)?;
    epoch.synchronize()?;
    Ok(Arc::new(epoch))
}

/// The constraint matrices on one device, by parameter id (`None`: that
/// shape's did not fit, so its a, b, c come from the host).
pub type DeviceMatrixSets = Mutex<Vec<(String, Option<Arc<DeviceMatrices>>)>>;

/// Constraint matrices in page-locked row chunks, by parameter id, for the
/// devices that stream them (shared by every device: the registration is
/// portable). Built once per shape and process (7.4 GB of host memory at
/// 32 GiB, page-locked while the backend lives).
pub type ChunkedSets = Mutex<Vec<(String, Arc<PinnedChunks>)>>;

/// What a device's workers share: the NTT (its tables), the parameter
/// cache, the sparse product with the constraint matrices kept on the
/// device, and the device's time origin (a completed event: the origin of
/// [`GpuTimes::spans_ms`]).
#[derive(Clone)]
pub struct DeviceShared {
    /// The NTT and its tables (on the device's pool).
    pub ntt: Arc<GpuNtt>,
    /// Resident parameter sets.
    pub srs: Arc<SrsCache>,
    /// The time origin.
    pub epoch: Arc<Event>,
    /// a, b, c from the constraint matrices (on the device's pool).
    pub abc: Arc<GpuAbc>,
    /// The matrices on the device, by parameter id (`None`: they did not fit).
    pub matrices: Arc<DeviceMatrixSets>,
    /// Page-locked streamed parameter vectors (shared by every device).
    pub pins: Arc<HostPins>,
    /// Page-locked constraint-matrix chunks (shared by every device).
    pub chunked: Arc<ChunkedSets>,
    /// Precomputed copies of the resident H queries.
    pub h_copies: Arc<HCopies>,
    /// Urgent proofs in flight on the device: its ordinary workers wait
    /// before each transform and MSM they queue while one runs.
    pub yield_gate: Arc<YieldGate>,
}

/// Precomputed copies of the resident H query of one device
/// ([`GpuBackendConfig::h_copies`]) for the parameter set proved last;
/// `None` where they did not fit (the H MSM then runs over the resident H).
pub struct HCopies {
    /// (window bits, copies) asked for; `None`: never built.
    want: Option<(u32, u32)>,
    /// Builds the copies in the device's pool (an MSM instance of its own:
    /// the workers' scratch arenas stay theirs).
    builder: Option<GpuMsm>,
    sets: Mutex<Vec<(String, HCopySet)>>,
    /// A worker's MSM budget could not plan a pass over the copies (said
    /// once).
    warned: std::sync::atomic::AtomicBool,
}

/// One parameter set's H copies (`None`: they did not fit).
type HCopySet = Option<Arc<PrecomputedBases<G1>>>;

impl HCopies {
    /// Copies as `want` says, built in `memory` (the device's pool).
    pub fn new(want: Option<(u32, u32)>, memory: DeviceMemory) -> Result<Self, Error> {
        let builder = want.map(|_| GpuMsm::with_memory(memory, GpuMsmConfig::default())).transpose()?;
        Ok(Self { want, builder, sets: Mutex::new(Vec::new()), warned: Default::default() })
    }

    /// Says once that a worker's per-pass MSM budget (`budget`) holds no
    /// pass over the copies, so H runs over the parameters.
    fn too_big_for_budget(&self, budget: Option<usize>) {
        if !self.warned.swap(true, std::sync::atomic::Ordering::Relaxed) {
            log::warn!(
                "porep-c2: the H copies {:?} need more MSM scratch per pass than a worker's budget ({:.1} GB); H runs over the parameters",
                self.want,
                budget.unwrap_or(0) as f64 / 1e9
            );
        }
    }

    /// The copies of the set `key` (whose resident H is `h`): built now on
    /// the first call for the key; `None` when none are wanted or they did
    /// not fit. The lock is held while building, so two workers never build
    /// the same copies twice.
    fn get(&self, key: &str, h: &DeviceBuffer<G1Affine>) -> Result<HCopySet, Error> {
        let (Some((c, copies)), Some(builder)) = (self.want, &self.builder) else { return Ok(None) };
        let mut sets = self.sets.lock().map_err(|_| dev(GpuError::Invalid("H copies poisoned by a panic".into())))?;
        if let Some((_, set)) = sets.iter().find(|(k, _)| k == key) {
            return Ok(set.clone());
        }
        // One set's copies at a time (51.5 GB at 2^27 with four): those of
        // an earlier set go back to the pool once no partition holds them.
        sets.clear();
        let set = match builder.precompute::<G1>(h, c, copies) {
            Ok(p) => Some(Arc::new(p)),
            Err(c2_msm::MsmError::Gpu(e)) if e.is_out_of_memory() => {
                log::warn!("porep-c2: {copies} copies of H ({c}-bit windows) do not fit beside {key}: {e}; H runs over the parameters");
                None
            }
            Err(e) => return Err(e.into()),
        };
        sets.push((key.to_string(), set.clone()));
        Ok(set)
    }

    /// Drops the copies of `key`; the device bytes they held.
    fn evict(&self, key: &str) -> usize {
        let Ok(mut sets) = self.sets.lock() else { return 0 };
        match sets.iter().position(|(k, _)| k == key) {
            Some(i) => sets.swap_remove(i).1.map_or(0, |p| p.device_bytes()),
            None => 0,
        }
    }
}

/// A worker's two arenas (carved from its device's pool): the partition's
/// vectors, and the MSM's scratch and density masks.
pub struct WorkerMemory {
    /// Two domain vectors and the inputs.
    pub vectors: DeviceMemory,
    /// Streamed-base slots, split and pass scratch, masks.
    pub msm: DeviceMemory,
}

/// The events that order one partition's copies and kernels.
struct Marks {
    copy_start: Event,
    a_up: Event,
    b_up: Event,
    ntt_start: Event,
    mul_done: Event,
    c_up: Event,
    h_done: Event,
    aux_up: Event,
    msms_start: Event,
    msms_end: Event,
}

impl Marks {
    fn new(gpu: &Arc<Gpu>) -> Result<Self, GpuError> {
        Ok(Self {
            copy_start: gpu.event()?,
            a_up: gpu.event()?,
            b_up: gpu.event()?,
            ntt_start: gpu.event()?,
            mul_done: gpu.event()?,
            c_up: gpu.event()?,
            h_done: gpu.event()?,
            aux_up: gpu.event()?,
            msms_start: gpu.event()?,
            msms_end: gpu.event()?,
        })
    }
}

/// One GPU worker: the whole partition on one device.
pub struct GpuProver {
    device: usize,
    worker: usize,
    gpu: Arc<Gpu>,
    /// This worker's vectors arena.
    vectors: DeviceMemory,
    ntt: Arc<GpuNtt>,
    msm: GpuMsm,
    srs: Arc<SrsCache>,
    resident: bool,
    stream: Stream,
    /// Pinned staging slots and copy stream for the partition's vectors.
    /// Held for a whole partition: one partition at a time per worker, also
    /// when several proofs share the backend (the stream, events and MSM
    /// scratch are the worker's).
    stager: Mutex<Stager>,
    marks: Marks,
    /// The device's time origin (shared by its workers).
    epoch: Arc<Event>,
    /// a, b, c on the device (the plan holds the witness vector and the
    /// matrices).
    abc_on_device: bool,
    /// a, b, c on the device from streamed matrix chunks (z and the chunk
    /// slots in the MSM arena during compute_h).
    abc_streamed: bool,
    /// Matrices kept with their repeated blocks stored once
    /// ([`GpuBackendConfig::repeated_matrices`]).
    repeated_matrices: bool,
    /// Device bytes the parameter cache leaves free beside the shared
    /// part's slack: the plan's room for the matrices' repeated form
    /// ([`DevicePlan::repeated_bytes`]), which the first partition uploads
    /// after the parameters (or a preload) took their room.
    params_reserve: usize,
    /// The device's matrices in chunks (shared by every device).
    chunked: Arc<ChunkedSets>,
    /// The sparse product and the device's matrices by shape (shared by
    /// its workers; `None`: recorded as not fitting).
    abc: Arc<GpuAbc>,
    matrices: Arc<DeviceMatrixSets>,
    /// Page-locked parameter vectors for the MSMs that stream them.
    pins: Arc<HostPins>,
    /// The MSM arena, idle while a partition's vectors are uploaded: room
    /// for a compact witness' temporaries (77 MB at 32 GiB).
    scratch: DeviceMemory,
    /// Precomputed copies of the resident H queries (shared by the device's
    /// workers).
    h_copies: Arc<HCopies>,
    /// The device's urgent proofs in flight (shared by its workers).
    yield_gate: Arc<YieldGate>,
    /// This is the device's urgent-lane worker: it marks the gate while it
    /// proves; the others wait at it before each step they queue.
    urgent: bool,
    /// The most partitions whose MSMs share one streamed pass of the
    /// parameters ([`GpuBackendConfig::max_batch`], within the plan's
    /// [`DevicePlan::max_batch`]); 1: one at a time.
    max_batch: usize,
    /// Page-locked host vectors for batch members' H (4.3 GB each at
    /// 32 GiB), allocated once and reused.
    h_pool: batch::HostVectors,
}

/// Bytes per staging slot (128 MiB, 2^22 scalars): large enough that
/// per-chunk overheads vanish, small enough to pin once per worker.
const STAGING_BYTES: usize = 128 << 20;

impl GpuProver {
    /// Worker `worker` of device `device`, sharing what the device's
    /// workers share, with its own arenas `memory` sized by `plan`, its
    /// kernels on streams of `priority`. The
    /// plan sets the MSM's memory fields (per-pass budget, run length,
    /// chunk, scratch given back after each MSM); the rest of `config.msm`
    /// is kept.
    pub fn new(
        (device, worker): (usize, usize),
        shared: DeviceShared,
        memory: WorkerMemory,
        plan: &DevicePlan,
        config: &GpuBackendConfig,
        priority: StreamPriority,
    ) -> Result<Self, Error> {
        let DeviceShared { ntt, srs, epoch, abc, matrices, pins, chunked, h_copies, yield_gate } = shared;
        let gpu = memory.vectors.gpu().clone();
        // Kernel time per MSM comes from the MSM's stage events.
        let msm_config = GpuMsmConfig {
            stage_timing: true,
            memory_budget: Some(plan.pass_budget),
            max_run: plan.max_run,
            stream_slot_bytes: Some(plan.slot_bytes),
            release_scratch: true,
            urgent_streams: priority == StreamPriority::Urgent,
            ..config.msm.clone()
        };
        let scratch = memory.msm.clone();
        let msm = GpuMsm::with_memory(memory.msm, msm_config)?;
        let stream = gpu.stream_at(priority).map_err(dev)?;
        let stager = Mutex::new(Stager::with_priority(&gpu, STAGING_BYTES, priority).map_err(dev)?);
        let marks = Marks::new(&gpu).map_err(dev)?;
        Ok(Self {
            device,
            worker,
            gpu,
            vectors: memory.vectors,
            ntt,
            msm,
            srs,
            resident: config.resident_params,
            stream,
            stager,
            marks,
            epoch,
            abc_on_device: plan.witness_bytes > 0,
            abc_streamed: plan.abc_streamed,
            repeated_matrices: config.repeated_matrices,
            params_reserve: SHARED_SLACK
                + if plan.abc_streamed && config.repeated_matrices { plan.repeated_bytes } else { 0 },
            chunked,
            abc,
            matrices,
            pins,
            scratch,
            h_copies,
            yield_gate,
            urgent: priority == StreamPriority::Urgent,
            max_batch: if priority == StreamPriority::Urgent { 1 } else { batch_bound(config, plan) },
            h_pool: batch::HostVectors::default(),
        })
    }

    /// An ordinary worker waits here while an urgent proof runs on the
    /// device, so at most the kernels it queued already are ahead of it.
    fn step_aside(&self) {
        if !self.urgent {
            self.yield_gate.wait_clear();
        }
    }

    /// `v` into `d` (zeros after `v`), through the staging slots on the
    /// copy stream.
    fn stage(stager: &mut Stager, d: &mut DeviceBuffer<Scalar>, v: &[Scalar]) -> Result<(), GpuError> {
        stager.upload(d, 0, v)?;
        d.zero_tail_async(v.len(), stager.stream())
    }

    /// `params` on this device (uploaded now when they are not yet: whole
    /// when they fit the device's shared part, else the vectors that do),
    /// or `None`: streamed.
    fn resident_params(&self, params: &Parameters<Bls12>, key: &str) -> Result<Option<Arc<ResidentSrs>>, Error> {
        if !self.resident {
            return Ok(None);
        }
        let src = || SrsSource { h: &params.h, l: &params.l, a: &params.a, b_g1: &params.b_g1, b_g2: &params.b_g2 };
        // The workers' arenas are carved out already: keep room for the
        // NTT tables of other domain sizes and the matrices' repeated form.
        self.srs.get_or_upload(key, self.params_reserve, src).map_err(dev)
    }

    /// Kernel milliseconds of the MSM stages of this worker's last MSM.
    fn msm_ms(&self) -> f32 {
        self.msm.last_stage_times().iter().map(|(_, t)| t).sum()
    }
}

/// On an early return (an error) from a partition's kernel sequence, waits
/// for the whole device before the buffers declared ahead of it go back to
/// the pool: queued copies or kernels may still use them, and the device's
/// other worker could be handed the same range at once. Disarmed on success,
/// where every buffer is freed only after its stream was synchronised.
struct SettleOnError<'a> {
    gpu: &'a Gpu,
    armed: bool,
}

impl Drop for SettleOnError<'_> {
    fn drop(&mut self) {
        if self.armed {
            if let Err(e) = self.gpu.synchronize() {
                log::warn!("porep-c2: device sync after a failed partition: {e}");
            }
        }
    }
}

/// Where an MSM's bases are.
#[derive(Clone, Copy)]
enum Bases<'a, A> {
    Device(&'a DeviceBuffer<A>),
    Pinned(&'a PinnedShared<A>),
    Host(&'a [A]),
}

/// The MSMs of one partition on a GPU worker: scalars, H and masks on the
/// device, bases resident ([`ResidentSrs`]) or on the host (streamed).
struct DeviceMsms<'a> {
    /// Declared before `h`, so on an error path it waits for the device
    /// before `h` goes back to the pool (fields drop in order).
    settle: SettleOnError<'a>,
    prover: &'a GpuProver,
    params: &'a Parameters<Bls12>,
    srs: Option<&'a ResidentSrs>,
    /// Precomputed copies of the resident H, where there are.
    h_copies: Option<&'a PrecomputedBases<G1>>,
    /// The streamed vectors that are page-locked.
    pins: Option<&'a PinnedSet>,
    /// H's coefficients; `None` once the H MSM is done.
    h: Option<DeviceBuffer<Scalar>>,
    /// m - 1: the H MSM's length.
    h_len: usize,
    inputs: DeviceScalars<'a>,
    aux: DeviceScalars<'a>,
    masks: [&'a DeviceDensity; 3],
    /// Kernel time per query, into the partition's [`GpuTimes`].
    times: &'a mut GpuTimes,
}

impl<'a> DeviceMsms<'a> {
    fn scalars(&self, s: Scalars) -> Result<DeviceScalars<'_>, Error> {
        Ok(match s {
            Scalars::H => {
                let h = self.h.as_ref().ok_or_else(|| dev(GpuError::Invalid("H was released".into())))?;
                DeviceScalars::montgomery(h).prefix(self.h_len)
            }
            Scalars::Inputs => self.inputs,
            Scalars::Aux => self.aux,
        })
    }

    fn mask(&self, m: Mask) -> Option<&DeviceDensity> {
        m.select(self.masks)
    }

    /// One MSM over resident bases from `step.first_base` on, or over the
    /// host's (streamed); its kernel time is added to `ms`.
    fn run<C: GpuCurve>(&mut self, bases: Bases<'_, C::Affine>, step: MsmStep) -> Result<(C::Projective, f32), Error> {
        self.prover.step_aside();
        let (scalars, mask) = (self.scalars(step.scalars)?, self.mask(step.mask));
        let msm = &self.prover.msm;
        let mut streamed = 0;
        // Every base the scalars reach crosses PCIe once.
        let mut sent = |len: usize| {
            let used = mask.map_or(scalars.len(), |m| m.count_ones()).min(len.saturating_sub(step.first_base));
            streamed = (used * std::mem::size_of::<C::Affine>()) as u64;
        };
        let p = match bases {
            Bases::Device(b) => msm.msm_device_from::<C>(b, step.first_base, scalars, mask)?,
            Bases::Pinned(p) => {
                sent(p.as_slice().len());
                msm.msm_pinned_bases::<C>(p, step.first_base, scalars, mask)?
            }
            Bases::Host(h) => {
                sent(h.len());
                msm.msm_host_bases::<C>(h.get(step.first_base..).unwrap_or(&[]), scalars, mask)?
            }
        };
        self.times.h2d_bytes += streamed;
        Ok((p, self.prover.msm_ms()))
    }
}

/// The resident copy when there is one, else the page-locked host vector,
/// else the host vector.
fn bases<'a, A>(
    device: Option<&'a DeviceBuffer<A>>,
    pinned: Option<&'a PinnedShared<A>>,
    host: &'a [A],
) -> Bases<'a, A> {
    match (device, pinned) {
        (Some(d), _) => Bases::Device(d),
        (None, Some(p)) => Bases::Pinned(p),
        (None, None) => Bases::Host(host),
    }
}

/// Where a G1 query's bases are: resident, page-locked, else on the host.
fn g1_bases<'a>(
    srs: Option<&'a ResidentSrs>,
    pins: Option<&'a PinnedSet>,
    p: &'a Parameters<Bls12>,
    query: G1Query,
) -> Bases<'a, G1Affine> {
    let pinned = pins.and_then(|x| x.g1(query));
    match query {
        G1Query::H => bases(srs.and_then(|x| x.h.as_ref()), pinned, &p.h),
        G1Query::L => bases(srs.and_then(|x| x.l.as_ref()), pinned, &p.l),
        G1Query::A => bases(srs.and_then(|x| x.a.as_ref()), pinned, &p.a),
        G1Query::BG1 => bases(srs.and_then(|x| x.b_g1.as_ref()), pinned, &p.b_g1),
    }
}

/// Where B_G2's bases are (as [`g1_bases`]).
fn g2_bases<'a>(
    srs: Option<&'a ResidentSrs>,
    pins: Option<&'a PinnedSet>,
    p: &'a Parameters<Bls12>,
) -> Bases<'a, G2Affine> {
    bases(srs.and_then(|x| x.b_g2.as_ref()), pins.and_then(|x| x.g2()), &p.b_g2)
}

impl PartitionMsms for DeviceMsms<'_> {
    fn g1(&mut self, query: G1Query, step: MsmStep) -> Result<G1Projective, Error> {
        if let (G1Query::H, Some(copies), 0) = (query, self.h_copies, step.first_base) {
            if self.prover.msm.plans_precomputed(copies, self.h_len)? {
                let (scalars, mask) = (self.scalars(step.scalars)?, self.mask(step.mask));
                let sum = self.prover.msm.msm_precomputed::<G1>(copies, scalars, mask)?;
                self.times.msm_h_ms += self.prover.msm_ms();
                return Ok(sum);
            }
            self.prover.h_copies.too_big_for_budget(self.prover.msm.config().memory_budget);
        }
        let b = g1_bases(self.srs, self.pins, self.params, query);
        let (sum, ms) = self.run::<G1>(b, step)?;
        let t = &mut *self.times;
        *match query {
            G1Query::H => &mut t.msm_h_ms,
            G1Query::L => &mut t.msm_l_ms,
            G1Query::A => &mut t.msm_a_ms,
            G1Query::BG1 => &mut t.msm_b_g1_ms,
        } += ms;
        Ok(sum)
    }

    fn g2(&mut self, step: MsmStep) -> Result<G2Projective, Error> {
        let b = g2_bases(self.srs, self.pins, self.params);
        let (sum, ms) = self.run::<G2>(b, step)?;
        self.times.msm_b_g2_ms += ms;
        Ok(sum)
    }

    fn release_h(&mut self) {
        // Back to the pool: the H MSM's kernels have finished (msm_* waits).
        self.h = None;
    }
}

/// A partition's vectors as the worker gets them.
enum Input {
    /// a, b, c and the witness from the host.
    Host(Synthesized),
    /// The witness from the host; a, b, c from the shape's matrices on the
    /// device, resident or streamed.
    Witness(Witness, AbcSource),
}

/// Where a, b, c come from on the device.
enum AbcSource {
    /// The shape's matrices resident on the device (whole, or their
    /// repeated blocks kept once); z in the vectors arena where the plan
    /// holds a, b, c on the device, else in the MSM arena while compute_h
    /// runs.
    Resident(Arc<DeviceMatrices>),
    /// The shape's matrices streamed in chunks; z in the MSM arena while
    /// compute_h runs.
    Streamed(Arc<PinnedChunks>),
}

/// The sparse products of one partition, resident or streamed.
enum Products<'a, 'b> {
    Resident(&'a GpuAbc, &'a DeviceMatrices),
    Streamed(&'a mut AbcStream<'b>),
}

impl Products<'_, '_> {
    /// `out = M·z` for matrix `which`, kernels on `stream` (chunks, if
    /// streamed, copied on `copy`).
    fn product(
        &mut self,
        which: usize,
        z: &DeviceBuffer<Scalar>,
        out: &mut DeviceBuffer<Scalar>,
        copy: &Stream,
        stream: &Stream,
    ) -> Result<(), Error> {
        match self {
            Self::Resident(abc, m) => abc.product_device(m, which, z, out, stream)?,
            Self::Streamed(s) => s.product(which, z, out, copy, stream)?,
        }
        Ok(())
    }
}

/// The densities of a partition: its own, or its shape's (shared).
enum Densities {
    Owned([Density; 3]),
    Shape(Arc<ShapeMatrices>),
}

impl Densities {
    fn get(&self) -> [&Density; 3] {
        match self {
            Self::Owned([a, bi, ba]) => [a, bi, ba],
            Self::Shape(m) => [&m.densities.0, &m.densities.1, &m.densities.2],
        }
    }
}

impl GpuProver {
    /// The shape's matrices on this device, uploaded by the first partition
    /// that needs them (after the parameters, which take what the plan
    /// gave them; under a streamed plan the parameter cache leaves the
    /// room planned for the repeated form, [`DevicePlan::repeated_bytes`]): with
    /// [`GpuBackendConfig::repeated_matrices`], kept
    /// once per repeated block where the rows repeat (`RepeatedMatrices`:
    /// a partition's challenge sub-circuits, about 1/18 of the bytes at
    /// 32 GiB), else whole where the plan holds them. `None` when the plan
    /// has a, b, c on the host, or under a streamed plan when the rows do
    /// not repeat, or when the device's memory is taken (then a, b, c come
    /// from streamed chunks, or from the host). Under a streamed plan the
    /// compact form takes what the resident parameters left; no matrix
    /// byte then crosses PCIe per partition.
    fn device_matrices(&self, m: &Arc<ShapeMatrices>) -> Result<Option<Arc<DeviceMatrices>>, Error> {
        if !self.abc_on_device && !self.abc_streamed {
            return Ok(None);
        }
        let mut cache = self.matrices.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, d)) = cache.iter().find(|(id, _)| *id == m.parameter_id) {
            return Ok(d.clone());
        }
        let repeated = if self.repeated_matrices { m.repeated() } else { None };
        let upload = match (repeated, self.abc_on_device) {
            (Some(r), _) => Some(self.abc.upload_repeated(r)),
            (None, true) => Some(self.abc.upload(&m.matrices.view())),
            (None, false) => None,
        };
        let d = match upload {
            Some(Ok(d)) => Some(Arc::new(d)),
            Some(Err(c2_abc::AbcError::Gpu(e))) if e.is_out_of_memory() => {
                log::warn!(
                    "porep-c2: GPU {}: no room for the constraint matrices of {} ({e}); a, b, c {}",
                    self.device,
                    m.parameter_id,
                    if self.abc_streamed { "from streamed chunks" } else { "on the host" }
                );
                None
            }
            Some(Err(e)) => return Err(e.into()),
            None => None,
        };
        cache.push((m.parameter_id.clone(), d.clone()));
        Ok(d)
    }

    /// The shape's matrices in page-locked chunks for streaming, built by
    /// the first partition that needs them in this process (~2 s and
    /// 7.4 GB of host memory at 32 GiB), or `None` when the plan does not
    /// stream a, b, c (then they are computed on the host).
    fn streamed_matrices(&self, m: &Arc<ShapeMatrices>) -> Result<Option<Arc<PinnedChunks>>, Error> {
        if !self.abc_streamed {
            return Ok(None);
        }
        let mut cache = self.chunked.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, c)) = cache.iter().find(|(id, _)| *id == m.parameter_id) {
            return Ok(Some(c.clone()));
        }
        let clock = Instant::now();
        let chunks = Arc::new(ChunkedMatrices::new(&m.matrices.view(), MATRIX_SLOT_BYTES / 4)?);
        let bytes = chunks.bytes();
        let pinned = PinnedChunks::new(&self.gpu, chunks.clone()).unwrap_or_else(|e| {
            log::warn!("porep-c2: page-locking the matrix chunks of {} failed ({e}); staged", m.parameter_id);
            PinnedChunks::unregistered(chunks)
        });
        log::info!(
            "porep-c2: constraint matrices of {} in chunks for streaming: {:.2} GB page-locked in {:.2} s",
            m.parameter_id,
            bytes as f64 / 1e9,
            clock.elapsed().as_secs_f64()
        );
        let pinned = Arc::new(pinned);
        cache.push((m.parameter_id.clone(), pinned.clone()));
        Ok(Some(pinned))
    }
}

impl PartitionProver for GpuProver {
    fn name(&self) -> String {
        format!("cuda:{}/{}", self.device, self.worker)
    }

    fn device(&self) -> Option<usize> {
        Some(self.device)
    }

    fn preload(&self, params: &Parameters<Bls12>, params_key: &str) -> Result<bool, Error> {
        Ok(self.resident_params(params, params_key)?.is_some())
    }

    fn evict(&self, params_key: &str) -> usize {
        self.srs.evict(params_key) + self.h_copies.evict(params_key)
    }

    fn prove(&self, job: PartitionJob<'_>) -> Result<(Proof<Bls12>, ProveTimings), Error> {
        match self.prove_staged(job, None)? {
            Staged::Proved(proof, t) => Ok((proof, t)),
            Staged::Member(_) => Err(dev(GpuError::Invalid("a single partition stopped before its MSMs".into()))),
        }
    }

    fn max_batch(&self) -> usize {
        self.max_batch
    }

    fn prove_batch(&self, jobs: Vec<PartitionJob<'_>>) -> Vec<Result<(Proof<Bls12>, ProveTimings), Error>> {
        self.prove_together(jobs)
    }
}

impl GpuProver {
    /// One partition up to its proof, or, given `h_host` (a batch member,
    /// issue 42), up to H: H's coefficients downloaded into `h_host`, the
    /// witness kept on the host for the batch's MSM passes
    /// ([`batch::Member`]). A member whose a, b, c came from the host (no
    /// compact witness) is proved whole and `h_host` goes back to the pool.
    fn prove_staged(&self, job: PartitionJob<'_>, mut h_host: Option<PinnedBuffer<Scalar>>) -> Result<Staged, Error> {
        let PartitionJob { partition, partition_data, host, params, params_key, r, s: s_blind } = job;
        // The urgent lane's whole proof: the device's other workers queue
        // nothing new meanwhile (their running kernels finish first).
        let _urgent = self.urgent.then(|| self.yield_gate.urgent());
        let mut stager = self
            .stager
            .lock()
            .map_err(|_| Error::Worker { worker: self.name(), message: "poisoned by an earlier panic".into() })?;
        let mut t = ProveTimings::default();
        let mut g = GpuTimes { device: self.device, worker: self.worker, batch: 1, ..Default::default() };

        // Parameters: resident (preloaded, or uploaded by the first
        // partition that needs them on this device; whole or in part),
        // else None and the MSMs stream them.
        let srs = timed(&mut g.params, || self.resident_params(params, params_key))?;
        g.params_resident = srs.as_ref().is_some_and(|x| x.is_complete());
        // The vectors streamed, page-locked once per process where the
        // bound allows (else staged: slower, still correct).
        let streamed = srs
            .as_deref()
            .map_or([true; 5], |x| [x.h.is_none(), x.l.is_none(), x.a.is_none(), x.b_g1.is_none(), x.b_g2.is_none()]);
        let pins = timed(&mut g.params, || self.pins.get(&self.gpu, params, streamed)).unwrap_or_else(|e| {
            log::warn!("porep-c2: GPU {}: page-locking streamed parameters failed ({e}); staging them", self.device);
            None
        });
        g.pinned_param_bytes = pins.as_ref().map_or(0, |p| p.bytes() as u64);
        let input = match partition_data {
            Partition::Witness(w) => match self.device_matrices(&w.matrices)? {
                Some(d) => Input::Witness(w, AbcSource::Resident(d)),
                None => match self.streamed_matrices(&w.matrices)? {
                    Some(c) => Input::Witness(w, AbcSource::Streamed(c)),
                    None => Input::Host(w.into_synthesized()?),
                },
            },
            Partition::Synthesized(s) => Input::Host(s),
        };
        // Copies of the resident H, where configured (built by the set's
        // first partition on this device), after the shape's matrices took
        // their room: the device plan counts the matrices, the copies take
        // what is left.
        let h_copies = match srs.as_deref().and_then(|x| x.h.as_ref()) {
            Some(h) => timed(&mut g.params, || self.h_copies.get(params_key, h))?,
            None => None,
        };
        let (n, n_in, n_aux) = match &input {
            Input::Host(s) => (s.a.len(), s.input_assignment.len(), s.aux_assignment.len()),
            Input::Witness(w, _) => (w.matrices.matrices.constraints(), w.inputs.len(), w.aux.len()),
        };
        let log_m = n.max(1).next_power_of_two().trailing_zeros();
        let m = 1usize << log_m;

        // The partition's buffers from this worker's arenas before any copy
        // is queued: a partition larger than the plan fails here, typed,
        // with nothing in flight. Two domain vectors (a, and b's buffer
        // that takes c), and the witness: in b's buffer once H is done when
        // a, b, c come from the host; in its own buffer z (inputs first)
        // when the device computes a, b, c from resident matrices; from
        // streamed matrices, z and the chunk slots in the idle MSM arena,
        // the witness copied into b's buffer once H is done.
        let st = &self.stream;
        let e = |x: GpuError| dev(x);
        let alloc = |len: usize| self.vectors.alloc::<Scalar>(len).map_err(e);
        let host_abc = matches!(input, Input::Host(_));
        let chunks = match &input {
            Input::Witness(_, AbcSource::Streamed(c)) => Some(c.clone()),
            _ => None,
        };
        // z in the vectors arena where the plan holds it there (a, b, c on
        // the device): the MSMs read the witness from it. Under a streamed
        // plan z takes the idle MSM arena, whether the products read
        // streamed chunks or the resident compact matrices.
        let z_resident = !host_abc && self.abc_on_device;
        let (mut d_a, mut d_b) = (alloc(m)?, alloc(if z_resident { m } else { m.max(n_aux) })?);
        let mut d_w = alloc(if z_resident { n_in + n_aux } else { n_in })?;
        let mut z_streamed =
            if !host_abc && !z_resident { Some(self.scratch.alloc::<Scalar>(n_in + n_aux).map_err(e)?) } else { None };
        let mut abc_stream = match &chunks {
            Some(c) => Some(self.abc.stream_matrices(c, &self.scratch, stager.stream())?),
            None => None,
        };
        // Declared after the buffers, so dropped before them: on an early
        // return the device finishes what is queued on them first (a pool
        // hands a freed range out again at once).
        let mut settle = SettleOnError { gpu: &self.gpu, armed: true };

        // Uploads through the pinned staging slots on the copy stream
        // (pageable copies measured 6.3 vs 55 GB/s), ordered against
        // compute_h on this worker's stream by events. Host vectors are
        // freed as soon as they are staged (~4 GB each at 32 GiB: the OS
        // takes a while, and the kernels run meanwhile).
        let k = &self.marks;
        let mut kept = None;
        self.step_aside();
        let clock = Instant::now();
        k.copy_start.record(stager.stream()).map_err(e)?;
        let densities = match input {
            Input::Host(s) => {
                check_parameters(&s, params)?;
                let Synthesized {
                    a,
                    b,
                    c,
                    input_assignment: inputs,
                    aux_assignment: aux,
                    a_aux_density,
                    b_input_density,
                    b_aux_density,
                } = s;
                Self::stage(&mut stager, &mut d_a, &a).map_err(e)?;
                k.a_up.record(stager.stream()).map_err(e)?;
                Self::stage(&mut stager, &mut d_b, &b).map_err(e)?;
                k.b_up.record(stager.stream()).map_err(e)?;
                drop((a, b));
                st.wait(&k.a_up).map_err(e)?;
                k.ntt_start.record(st).map_err(e)?;
                self.ntt.h_coset_evaluations(&mut d_a, log_m, st)?;
                st.wait(&k.b_up).map_err(e)?;
                self.ntt.h_coset_mul(&mut d_a, &mut d_b, log_m, st)?;
                k.mul_done.record(st).map_err(e)?;
                // c into b's buffer once a·b has read it.
                stager.stream().wait(&k.mul_done).map_err(e)?;
                Self::stage(&mut stager, &mut d_b, &c).map_err(e)?;
                k.c_up.record(stager.stream()).map_err(e)?;
                drop(c);
                st.wait(&k.c_up).map_err(e)?;
                self.ntt.h_coset_finish(&mut d_a, &mut d_b, log_m, st)?;
                k.h_done.record(st).map_err(e)?;
                // The witness into b's buffer once H is done with it; the inputs.
                stager.stream().wait(&k.h_done).map_err(e)?;
                stager.upload(&mut d_b, 0, &aux).map_err(e)?;
                stager.upload(&mut d_w, 0, &inputs).map_err(e)?;
                k.aux_up.record(stager.stream()).map_err(e)?;
                g.h2d_bytes = ((3 * n + n_aux + n_in) * std::mem::size_of::<Scalar>()) as u64;
                Densities::Owned([a_aux_density, b_input_density, b_aux_density])
            }
            Input::Witness(w, source) => {
                let Witness { inputs, aux, matrices: shape } = w;
                let [da, dbi, dba] = [&shape.densities.0, &shape.densities.1, &shape.densities.2];
                check_parameters_for(n, n_in, n_aux, [da, dbi, dba], params)?;
                // z = (inputs, aux) in one buffer: the columns of A, B, C;
                // the aux part sent compact and expanded on the device, after
                // the inputs on the copy stream (temporaries in the idle MSM
                // arena; where even that has no room, sent as full scalars).
                let z = match z_streamed.as_mut() {
                    Some(z) => z,
                    None => &mut d_w,
                };
                stager.upload(z, 0, &inputs).map_err(e)?;
                let sent = match self.abc.expand_witness(&aux, z, n_in, &self.scratch, stager.stream()) {
                    Ok(()) => aux.bytes(),
                    Err(c2_abc::AbcError::Gpu(x)) if x.is_out_of_memory() => {
                        log::warn!(
                            "porep-c2: GPU {}: no room to expand the witness ({x}); sent as scalars",
                            self.name()
                        );
                        stager.upload(z, n_in, &aux.expand()).map_err(e)?;
                        n_aux * std::mem::size_of::<Scalar>()
                    }
                    Err(x) => return Err(x.into()),
                };
                k.aux_up.record(stager.stream()).map_err(e)?;
                // A batch member keeps its witness for the MSM passes (the
                // compact form: 77 MB at 32 GiB).
                if h_host.is_some() {
                    kept = Some((inputs, aux, shape.clone()));
                } else {
                    drop((inputs, aux));
                }
                st.wait(&k.aux_up).map_err(e)?;
                k.ntt_start.record(st).map_err(e)?;
                let (mut products, matrix_bytes) = match (&source, abc_stream.as_mut()) {
                    (AbcSource::Resident(d), _) => (Products::Resident(&self.abc, d), 0),
                    (AbcSource::Streamed(c), Some(s)) => (Products::Streamed(s), c.matrices().bytes()),
                    (AbcSource::Streamed(_), None) => {
                        return Err(dev(GpuError::Invalid("streamed a, b, c without chunk slots".into())))
                    }
                };
                let copy = stager.stream();
                let z = &*z;
                products.product(0, z, &mut d_a, copy, st)?;
                products.product(1, z, &mut d_b, copy, st)?;
                k.a_up.record(st).map_err(e)?;
                self.ntt.h_coset_evaluations(&mut d_a, log_m, st)?;
                self.ntt.h_coset_mul(&mut d_a, &mut d_b, log_m, st)?;
                k.mul_done.record(st).map_err(e)?;
                products.product(2, z, &mut d_b, copy, st)?;
                k.c_up.record(st).map_err(e)?;
                self.ntt.h_coset_finish(&mut d_a, &mut d_b, log_m, st)?;
                k.h_done.record(st).map_err(e)?;
                if let Some(z) = z_streamed.as_ref() {
                    // The witness where the MSMs read it (the MSM arena is
                    // theirs next): aux into b's buffer, the inputs into
                    // their own, device to device (~4 ms at 32 GiB).
                    d_b.copy_range_from_async(0, z, n_in, n_aux, st).map_err(e)?;
                    d_w.copy_range_from_async(0, z, 0, n_in, st).map_err(e)?;
                }
                g.h2d_bytes = (n_in * std::mem::size_of::<Scalar>() + sent + matrix_bytes) as u64;
                Densities::Shape(shape)
            }
        };
        g.stage = clock.elapsed();
        // The partition's host memory is gone: admit the next one now.
        drop(host);
        // The MSMs run on the MSM's own stream: finish H and the uploads.
        k.aux_up.synchronize().map_err(e)?;
        st.synchronize().map_err(e)?;
        // z and the chunk slots leave the MSM arena (their copies and
        // kernels are done: both streams were waited for).
        drop(abc_stream);
        drop(z_streamed);
        t.ntt = clock.elapsed();
        g.upload_ms = k.aux_up.elapsed_ms(&k.copy_start).map_err(e)?;
        g.ntt_ms = k.h_done.elapsed_ms(&k.ntt_start).map_err(e)?;
        if !host_abc {
            g.abc_ms = k.a_up.elapsed_ms(&k.ntt_start).map_err(e)? + k.c_up.elapsed_ms(&k.mul_done).map_err(e)?;
        }
        g.spans_ms
            .push((k.ntt_start.elapsed_ms(&self.epoch).map_err(e)?, k.h_done.elapsed_ms(&self.epoch).map_err(e)?));
        if let (Some(mut h), Some((inputs, aux, shape))) = (h_host.take(), kept) {
            // H to the host for the batch's pass over the H query (the
            // device cannot keep several partitions' H: 4.3 GB each at
            // 32 GiB); page-locked, so at the link's speed.
            let clock = Instant::now();
            d_a.download(0, &mut h.as_mut_slice()[..m - 1], st).map_err(e)?;
            g.d2h_bytes += ((m - 1) * std::mem::size_of::<Scalar>()) as u64;
            g.stage += clock.elapsed();
            settle.armed = false;
            return Ok(Staged::Member(batch::Member {
                partition,
                h,
                h_len: m - 1,
                inputs,
                aux,
                shape,
                r,
                s: s_blind,
                t,
                g,
            }));
        }
        if let Some(h) = h_host {
            self.h_pool.put(h);
        }

        let [a_aux_density, b_input_density, b_aux_density] = densities.get();
        let b_in = b_input_density.count_ones();
        let a_mask = self.msm.upload_density(a_aux_density)?;
        let b_in_mask = self.msm.upload_density(b_input_density)?;
        let b_aux_mask = self.msm.upload_density(b_aux_density)?;
        g.h2d_bytes += [a_aux_density, b_input_density, b_aux_density]
            .iter()
            .map(|d| std::mem::size_of_val(d.as_words()) as u64)
            .sum::<u64>();
        let mut settle_masks = SettleOnError { gpu: &self.gpu, armed: true };

        // The witness's scalars: inputs and aux in their own buffers, or
        // both in z.
        let (inputs, aux) = if !z_resident {
            (DeviceScalars::montgomery(&d_w), DeviceScalars::montgomery(&d_b).prefix(n_aux))
        } else {
            let z = DeviceScalars::montgomery(&d_w);
            (z.prefix(n_in), z.skip(n_in))
        };
        // The MSMs run back to back on the MSM's stream, each waited for by
        // the host; marks on this (idle) stream bracket the phase.
        k.msms_start.record(st).map_err(e)?;
        let mut msms = DeviceMsms {
            settle: SettleOnError { gpu: &self.gpu, armed: true },
            prover: self,
            params,
            srs: srs.as_deref(),
            h_copies: h_copies.as_deref(),
            pins: pins.as_deref(),
            h: Some(d_a),
            h_len: m - 1,
            inputs,
            aux,
            masks: [&a_mask, &b_in_mask, &b_aux_mask],
            times: &mut g,
        };
        let sums = run_msms(&mut msms, n_in, b_in, &mut t)?;
        // Every MSM was waited for: H (if still held) can go back now.
        msms.settle.armed = false;
        drop(msms);
        k.msms_end.record(st).map_err(e)?;
        k.msms_end.synchronize().map_err(e)?;
        g.spans_ms
            .push((k.msms_start.elapsed_ms(&self.epoch).map_err(e)?, k.msms_end.elapsed_ms(&self.epoch).map_err(e)?));
        (settle.armed, settle_masks.armed) = (false, false);
        log::debug!("porep-c2: partition {partition} sums (alone): {}", sums.digest());
        let proof = timed(&mut t.assemble, || assemble(&params.vk, r, s_blind, &sums));
        t.gpu = Some(g);
        Ok(Staged::Proved(proof, t))
    }
}

/// Where [`GpuProver::prove_staged`] stopped.
enum Staged {
    /// The partition's proof.
    Proved(Proof<Bls12>, ProveTimings),
    /// A batch member, H computed, waiting for the batch's MSM passes.
    Member(batch::Member),
}
