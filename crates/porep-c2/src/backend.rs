//! Where partitions are proved: host-level stages on the pipeline's one
//! consumer, or whole-partition workers (two per GPU) with one consumer
//! each; and the priority gates proofs sharing a worker take turns at.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bellperson::groth16::{Parameters, Proof};
use blstrs::{Bls12, Scalar};
use c2_core::{CompactWitness, Synthesized};
use c2_msm::Msm;
use c2_ntt::Ntt;
use c2_sched::{HostPermit, PriorityGate};

use crate::error::Error;
use crate::groth16::HostStages;
pub use crate::lobby::WorkerLobby;
use crate::lobby::{Proved, Taken};
use crate::params::params_key;
use crate::plan::PartitionShape;
use crate::report::ProveTimings;

/// What synthesis hands a prover for one partition.
pub enum Partition {
    /// a, b, c evaluated on the host (the circuit path, or any path whose
    /// prover cannot compute them).
    Synthesized(Synthesized),
    /// The witness only: a, b, c = A·z, B·z, C·z are left to the prover (a
    /// GPU worker computes them on its device from matrices kept there; any
    /// other prover on the host: [`Partition::into_synthesized`]). The aux
    /// part compact (0/1 values as bits): 77 MB per 32 GiB partition
    /// instead of 16.7 GB of a, b, c and witness.
    Witness(Witness),
}

/// A partition's witness and its shape's constraint matrices.
pub struct Witness {
    /// Public inputs, ONE first.
    pub inputs: Vec<Scalar>,
    /// Aux assignment, compact (expanded on the device by a GPU worker, on
    /// the host by [`Witness::into_synthesized`]).
    pub aux: CompactWitness,
    /// The shape's matrices and densities.
    pub matrices: Arc<crate::config::ShapeMatrices>,
}

impl Witness {
    /// a, b, c on the host (rayon), with the structural densities.
    pub fn into_synthesized(self) -> Result<Synthesized, Error> {
        let aux = self.aux.expand();
        let (a, b, c) = c2_abc::evaluate(&self.matrices.matrices.view(), &self.inputs, &aux)?;
        let (a_aux_density, b_input_density, b_aux_density) = self.matrices.densities.clone();
        Ok(Synthesized {
            a,
            b,
            c,
            input_assignment: self.inputs,
            aux_assignment: aux,
            a_aux_density,
            b_input_density,
            b_aux_density,
        })
    }
}

impl Partition {
    /// (constraints, aux variables), for reports.
    pub fn shape(&self) -> (usize, usize) {
        match self {
            Self::Synthesized(s) => (s.num_constraints(), s.num_aux()),
            Self::Witness(w) => (w.matrices.matrices.constraints(), w.aux.len()),
        }
    }

    /// Host bytes the partition holds: a, b, c and the witness as scalars
    /// (the circuit path: 16.7 GB per 32 GiB partition), or the inputs and
    /// the compact aux (77 MB). The shape's matrices are shared, not counted.
    pub fn host_bytes(&self) -> usize {
        const SCALAR: usize = std::mem::size_of::<Scalar>();
        match self {
            Self::Synthesized(s) => {
                let scalars = 3 * s.num_constraints() + s.num_inputs() + s.num_aux();
                let densities = [&s.a_aux_density, &s.b_input_density, &s.b_aux_density].map(|d| d.len().div_ceil(8));
                scalars * SCALAR + densities.iter().sum::<usize>()
            }
            Self::Witness(w) => w.inputs.len() * SCALAR + w.aux.bytes(),
        }
    }

    /// The synthesized record, a, b, c computed on the host when this is a
    /// witness.
    pub fn into_synthesized(self) -> Result<Synthesized, Error> {
        match self {
            Self::Synthesized(s) => Ok(s),
            Self::Witness(w) => w.into_synthesized(),
        }
    }
}

/// Host bytes to admit a compact-witness partition of this shape on before
/// it exists: the aux bits plus one aux value in 16 listed in full (index
/// and scalar, 36 bytes), and the inputs as scalars. Real circuits list
/// 1.3 % (32 GiB) to 3.3 % (512 MiB) of their aux values in full, so this
/// is 2-5x what a partition holds once synthesized (32 GiB: 312 MB against
/// 77 MB); the slack covers the challenge parts that exist while they are
/// joined. The pipeline settles each permit to the real size.
pub fn compact_witness_estimate(inputs: usize, aux: usize) -> usize {
    const SCALAR: usize = std::mem::size_of::<Scalar>();
    aux.div_ceil(64) * 8 + aux.div_ceil(16) * (SCALAR + 4) + inputs * SCALAR
}

/// One partition handed to a [`PartitionProver`].
pub struct PartitionJob<'a> {
    /// Partition index (for logs and reports).
    pub partition: usize,
    /// The synthesized partition, or its witness.
    pub partition_data: Partition,
    /// The partition's share of the host-memory budget (`None` without
    /// one): drop it once `partition_data`'s vectors are freed (a GPU worker
    /// does so as soon as they are on the device) so the next partition is
    /// admitted sooner; dropping it at the end is always correct.
    pub host: Option<HostPermit>,
    /// The parameter set.
    pub params: &'a Parameters<Bls12>,
    /// Names `params` for caches that outlive a call (a device's resident
    /// sets): [`params_key`].
    pub params_key: &'a str,
    /// Blinding factor `r`.
    pub r: Scalar,
    /// Blinding factor `s`.
    pub s: Scalar,
}

/// Proves one synthesized partition end to end with its own resources
/// (e.g. one GPU worker: the whole device-level path, parameters resident).
/// A [`Backend::Workers`] runs one pipeline consumer per worker.
pub trait PartitionProver: Send + Sync {
    /// For logs and reports.
    fn name(&self) -> String;

    /// The device ordinal this worker proves on (`None`: the host), for
    /// [`crate::PartitionEvent`]s.
    fn device(&self) -> Option<usize> {
        None
    }

    /// The proof of `job.partition_data` with blinding `job.r`, `job.s`.
    fn prove(&self, job: PartitionJob<'_>) -> Result<(Proof<Bls12>, ProveTimings), Error>;

    /// The most partitions [`PartitionProver::prove_batch`] proves
    /// together (1: one at a time, the default).
    fn max_batch(&self) -> usize {
        1
    }

    /// The proofs of several partitions of one parameter set, proved
    /// together: a GPU worker that streams its parameters runs every
    /// partition's MSMs against each streamed chunk while it is on the
    /// device (issue 42). One result per job, in order; the bytes equal
    /// [`PartitionProver::prove`]'s for each job. Default: one by one.
    fn prove_batch(&self, jobs: Vec<PartitionJob<'_>>) -> Vec<Result<(Proof<Bls12>, ProveTimings), Error>> {
        jobs.into_iter().map(|job| self.prove(job)).collect()
    }

    /// Makes `params` ready for later [`PartitionProver::prove`] calls with
    /// the same `params_key` (a GPU worker uploads them to its device once,
    /// off any proof's clock). Returns whether they are resident now;
    /// workers without a cache answer `false`.
    fn preload(&self, params: &Parameters<Bls12>, params_key: &str) -> Result<bool, Error> {
        let _ = (params, params_key);
        Ok(false)
    }

    /// Drops the set `params_key` from this worker's device cache (a
    /// partition still proving with it keeps its copy until it ends);
    /// returns the device bytes released (0: not resident, or released
    /// through another worker of the same device).
    fn evict(&self, params_key: &str) -> usize {
        let _ = params_key;
        0
    }
}

/// Whole-partition workers and the turns proofs take at them.
#[derive(Clone, Default)]
pub struct Workers {
    /// The provers (e.g. two per GPU), one pipeline consumer each.
    pub provers: Vec<Arc<dyn PartitionProver>>,
    /// Workers kept for urgent proofs (one per GPU: a small arena, streams
    /// of the device's greatest priority), beside `provers`; they take no
    /// consumer of their own.
    pub urgent: UrgentWorkers,
    /// Turns at each worker for the proofs sharing them, by
    /// `PipelineConfig::priority` (shared by clones).
    pub gates: WorkerGates,
    /// Workers taken out of service after a device fault (shared by
    /// clones): their consumers hand partitions to the healthy ones.
    pub fences: WorkerFences,
    /// Batches waiting for a worker's turn, which another proof's turn
    /// there may take into its own batch (shared by clones).
    pub lobby: WorkerLobby,
}

impl Workers {
    /// `provers` with the default gates and fences, and no urgent lane.
    pub fn new(provers: Vec<Arc<dyn PartitionProver>>) -> Self {
        Self {
            provers,
            urgent: UrgentWorkers::default(),
            gates: WorkerGates::default(),
            fences: WorkerFences::default(),
            lobby: WorkerLobby::default(),
        }
    }

    /// These workers with `urgent` beside them.
    pub fn with_urgent(self, urgent: UrgentWorkers) -> Self {
        Self { urgent, ..self }
    }

    /// The urgent worker for `job` of a proof of `priority` arriving at
    /// `consumer`: one on the consumer's device (else the first) whose
    /// device is healthy, when the priority is urgent and the partition
    /// fits the lane's plan; `None` sends it to the ordinary workers.
    fn urgent_for(&self, consumer: usize, job: &PartitionJob<'_>, priority: i32) -> Option<usize> {
        let lane = self.urgent.lane.as_ref()?;
        if priority < lane.min_priority || !lane.fits(job) {
            return None;
        }
        let healthy = |u: &usize| self.device_is_healthy(self.urgent.provers[*u].device());
        let own = self.provers.get(consumer).and_then(|p| p.device());
        let mut all = 0..self.urgent.provers.len();
        all.clone().filter(healthy).find(|&u| self.urgent.provers[u].device() == own).or_else(|| all.find(healthy))
    }

    /// Whether the ordinary workers on `device` take partitions now (a
    /// device fault fences all of them, and so its urgent worker too).
    fn device_is_healthy(&self, device: Option<usize>) -> bool {
        (0..self.provers.len()).filter(|&w| self.provers[w].device() == device).all(|w| self.fences.is_healthy(w))
    }

    /// Proves `job` on urgent worker `u` after its gate gives a turn; a
    /// device fault fences its device's ordinary workers.
    fn prove_urgent(
        &self,
        u: usize,
        job: PartitionJob<'_>,
        priority: i32,
        cancel: Option<&c2_sched::CancelToken>,
        started: &dyn Fn(Option<usize>),
    ) -> Result<(Proof<Bls12>, ProveTimings), Error> {
        let prover = &self.urgent.provers[u];
        let gate = self.urgent.gates.gate(u);
        let _turn = gate.enter(priority, cancel).map_err(admission_error)?;
        started(prover.device());
        let out = prove_catching(prover, job);
        let device = prover.device();
        if let Some(w) = (0..self.provers.len()).find(|&w| self.provers[w].device() == device) {
            self.fence_if_faulted(w, &out);
        }
        out
    }

    /// Proves `job` on the first healthy worker from `consumer` on (its own
    /// unless fenced), after that worker's gate gives this proof a turn. A
    /// device fault fences the failed worker's device (every worker on it:
    /// a CUDA context that faulted is lost for all of them) before the
    /// error is returned; running out of device memory fences nothing (it
    /// passes).
    fn prove(
        &self,
        consumer: usize,
        job: PartitionJob<'_>,
        priority: i32,
        cancel: Option<&c2_sched::CancelToken>,
        started: &dyn Fn(Option<usize>),
    ) -> Result<(Proof<Bls12>, ProveTimings), Error> {
        if let Some(u) = self.urgent_for(consumer, &job, priority) {
            return self.prove_urgent(u, job, priority, cancel, started);
        }
        // A worker fenced while this partition waited at its gate is left
        // for the next healthy one.
        loop {
            let Some(w) = self.fences.pick(consumer, self.provers.len()) else {
                return Err(Error::NoHealthyWorker { workers: self.provers.len() });
            };
            let gate = self.gates.gate(w);
            let _turn = gate.enter(priority, cancel).map_err(admission_error)?;
            if !self.fences.is_healthy(w) {
                continue;
            }
            started(self.provers[w].device());
            let out = prove_catching(&self.provers[w], job);
            self.fence_if_faulted(w, &out);
            return out;
        }
    }

    /// [`Workers::prove`] for several jobs of one proof: a worker's turn
    /// for as many of them as it proves together
    /// ([`PartitionProver::max_batch`]), one [`PartitionProver::prove_batch`]
    /// call each turn. While a batch waits for its turn, its partitions
    /// sit in the worker's lobby ([`WorkerLobby`]): the turn of another
    /// proof in flight may take some into its own batch (same parameter
    /// set, within the bound) and hand back their results; this proof's
    /// turn then proves the rest, and takes others' in turn. Urgent jobs go
    /// one by one (the lane proves singly).
    fn prove_batch(
        &self,
        consumer: usize,
        jobs: Vec<PartitionJob<'_>>,
        priority: i32,
        cancel: Option<&c2_sched::CancelToken>,
        started: &dyn Fn(usize, Option<usize>),
    ) -> Vec<Result<(Proof<Bls12>, ProveTimings), Error>> {
        let mut out: Vec<Option<Proved>> = jobs.iter().map(|_| None).collect();
        let urgent = jobs.iter().any(|job| self.urgent_for(consumer, job, priority).is_some());
        // Jobs not yet proved, with their places in `out`.
        let mut pending: std::collections::VecDeque<(usize, PartitionJob<'_>)> = jobs.into_iter().enumerate().collect();
        while !pending.is_empty() {
            let Some(w) = self.fences.pick(consumer, self.provers.len()) else {
                for (i, _) in pending.drain(..) {
                    out[i] = Some(Err(Error::NoHealthyWorker { workers: self.provers.len() }));
                }
                break;
            };
            let bound = if urgent { 1 } else { self.provers[w].max_batch().max(1) };
            if bound == 1 {
                let Some((i, job)) = pending.pop_front() else { break };
                let k = job.partition;
                out[i] = Some(self.prove(consumer, job, priority, cancel, &|device| started(k, device)));
                continue;
            }
            let (places, mine): (Vec<usize>, Vec<PartitionJob<'_>>) = pending.drain(..bound.min(pending.len())).unzip();
            let partitions: Vec<usize> = mine.iter().map(|j| j.partition).collect();
            let (key, params) = (mine[0].params_key, mine[0].params);
            let deposit = self.lobby.deposit(w, mine);
            let gate = self.gates.gate(w);
            // A turn, or none once other turns took and proved every job
            // (then this proof need not wait for the turns ahead of it).
            let turn = gate.enter_unless(priority, cancel, &|| deposit.settled());
            // What no other proof's turn took meanwhile, at its place;
            // the results of what one took.
            let back = deposit.withdraw();
            for (j, job) in back.iter().enumerate() {
                if job.is_none() {
                    let (result, device) = deposit.result(j);
                    started(partitions[j], device);
                    out[places[j]] = Some(result);
                }
            }
            let back: Vec<(usize, PartitionJob<'_>)> =
                places.into_iter().zip(back).filter_map(|(i, job)| Some((i, job?))).collect();
            if back.is_empty() {
                continue;
            }
            let _turn = match turn {
                Ok(Some(turn)) => turn,
                // Settled, yet a job came back: not proved, so back in line.
                Ok(None) => {
                    for job in back.into_iter().rev() {
                        pending.push_front(job);
                    }
                    continue;
                }
                Err(e) => {
                    let e = admission_error(e);
                    for (i, _) in back.into_iter().chain(pending.drain(..)) {
                        out[i] = Some(Err(e.for_another_partition()));
                    }
                    break;
                }
            };
            if !self.fences.is_healthy(w) {
                for job in back.into_iter().rev() {
                    pending.push_front(job);
                }
                continue;
            }
            // Other proofs' partitions waiting here join this pass.
            let mut taken = self.lobby.take(w, key, params, bound - back.len());
            let (places, mut batch): (Vec<usize>, Vec<PartitionJob<'_>>) = back.into_iter().unzip();
            let device = self.provers[w].device();
            for job in &batch {
                started(job.partition, device);
            }
            batch.extend(taken.iter_mut().filter_map(Taken::job));
            let mut results = prove_batch_catching(&self.provers[w], batch).into_iter();
            let mut next = || results.next().unwrap_or_else(|| Err(Error::Pipeline("a batch lost a result".into())));
            for i in places {
                let r = next();
                self.fence_if_faulted(w, &r);
                out[i] = Some(r);
            }
            for t in taken {
                let r = next();
                self.fence_if_faulted(w, &r);
                t.finish(r, device);
            }
        }
        out.into_iter()
            .map(|r| r.unwrap_or_else(|| Err(Error::Pipeline("a partition was not proved".into()))))
            .collect()
    }

    /// Fences worker `w`'s device when `out` is a device fault (running out
    /// of device memory is not one).
    fn fence_if_faulted<T>(&self, w: usize, out: &Result<T, Error>) {
        if let Err(e) = out {
            if e.is_backend_failure() && !e.is_device_out_of_memory() {
                self.fence_after(w, e);
            }
        }
    }

    /// Fences worker `w` and every worker on its device after `error`.
    fn fence_after(&self, w: usize, error: &Error) {
        let device = self.provers[w].device();
        let same = |p: &Arc<dyn PartitionProver>| device.is_some() && p.device() == device;
        let fenced: Vec<usize> = (0..self.provers.len()).filter(|&i| i == w || same(&self.provers[i])).collect();
        let names: Vec<String> = fenced.iter().map(|&i| self.provers[i].name()).collect();
        if self.fences.cool_down.is_zero() {
            log::warn!("porep-c2: {} faulted: {error}; no cool-down, they take the next partition", names.join(", "));
        } else if self.fences.fence(&fenced) {
            log::warn!(
                "porep-c2: {} out of service for {:?} after: {error}; their partitions go to {}",
                names.join(", "),
                self.fences.cool_down,
                if self.fences.healthy(self.provers.len()) > 0 {
                    "the healthy workers"
                } else {
                    "the retry backend (or fail, without one)"
                },
            );
        }
    }
}

/// A gate's refusal as the prover's error.
fn admission_error(e: c2_sched::AdmissionError) -> Error {
    match e {
        c2_sched::AdmissionError::Cancelled => Error::Cancelled,
        other => Error::Pipeline(other.to_string()),
    }
}

/// `prover.prove(job)`, a panic inside it (a bug, or a driver wrapper that
/// panics) returned as a worker error: a device fault like any other, so
/// the worker is fenced and the partition retried, and the message says
/// so, instead of the panic tearing down the proof (and the consumer
/// thread) with no retry.
fn prove_catching(
    prover: &Arc<dyn PartitionProver>,
    job: PartitionJob<'_>,
) -> Result<(Proof<Bls12>, ProveTimings), Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| prover.prove(job))).unwrap_or_else(|payload| {
        Err(Error::Worker { worker: prover.name(), message: format!("panicked: {}", panic_message(&*payload)) })
    })
}

/// [`prove_catching`] for a batch: a panic fails every job of it.
fn prove_batch_catching(
    prover: &Arc<dyn PartitionProver>,
    jobs: Vec<PartitionJob<'_>>,
) -> Vec<Result<(Proof<Bls12>, ProveTimings), Error>> {
    let n = jobs.len();
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| prover.prove_batch(jobs))).unwrap_or_else(|payload| {
        let message = format!("panicked in a batch of {n}: {}", panic_message(&*payload));
        (0..n).map(|_| Err(Error::Worker { worker: prover.name(), message: message.clone() })).collect()
    })
}

/// Which proofs the urgent workers take: the lowest priority, and the
/// largest partition their arenas were planned for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UrgentLane {
    /// The lowest `PipelineConfig::priority` the lane takes. Default 4: the
    /// service passes Curio's priorities through, and 4 is CRITICAL
    /// (WinningPoSt, which must land within its block's epoch).
    pub min_priority: i32,
    /// The largest partition the lane proves (default
    /// [`PartitionShape::winning_post`]): a larger one goes to the ordinary
    /// workers whatever its priority.
    pub shape: PartitionShape,
}

impl Default for UrgentLane {
    fn default() -> Self {
        Self { min_priority: 4, shape: PartitionShape::winning_post() }
    }
}

impl UrgentLane {
    /// Whether `job`'s partition and parameters fit the lane's plan: its
    /// domain, witness and public inputs no larger than the shape's.
    pub fn fits(&self, job: &PartitionJob<'_>) -> bool {
        let (constraints, aux) = job.partition_data.shape();
        constraints.max(1).next_power_of_two() <= self.shape.domain()
            && aux <= self.shape.aux
            && job.params.vk.ic.len() <= self.shape.inputs
    }
}

/// The urgent lane's workers ([`Workers::urgent`]); none by default.
#[derive(Clone, Default)]
pub struct UrgentWorkers {
    /// One per device (the GPU backend's, when `GpuBackendConfig::urgent_lane` is set).
    pub provers: Vec<Arc<dyn PartitionProver>>,
    /// What they take; `None`: nothing (no lane).
    pub lane: Option<UrgentLane>,
    /// Turns at each urgent worker (two urgent proofs at once take turns).
    pub gates: WorkerGates,
}

impl UrgentWorkers {
    /// `provers` taking what `lane` says.
    pub fn new(provers: Vec<Arc<dyn PartitionProver>>, lane: UrgentLane) -> Self {
        Self { provers, lane: Some(lane), gates: WorkerGates::default() }
    }
}

/// The text of a panic's payload (`panic!` with a literal or a format).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Which workers of a [`Workers`] backend are out of service, and until
/// when (shared by clones). A fenced worker takes no partition until its
/// cool-down ends; it then gets the next one, and a fault fences it again.
/// A partition that failed goes to a healthy worker of the same backend
/// (another device) or, with none left, to `ProverConfig::retry_backend`.
#[derive(Clone)]
pub struct WorkerFences {
    until: Arc<Mutex<Vec<Option<Instant>>>>,
    cool_down: Duration,
}

/// How long a worker stays fenced after a device fault: long enough that a
/// device which faults at every partition costs one failed attempt per 5
/// minutes (one H200 proves ~19 real 32 GiB sectors in that time, 16.1 s
/// each: BENCHMARKS.md, session 25), short enough that a transient fault
/// does not keep a GPU idle for long.
const FENCE_COOL_DOWN: Duration = Duration::from_secs(300);

impl Default for WorkerFences {
    fn default() -> Self {
        Self::with_cool_down(FENCE_COOL_DOWN)
    }
}

impl WorkerFences {
    /// Fences that keep a faulted worker out for `cool_down` (default 5
    /// minutes). Zero: never fenced, so a failed partition is proved again
    /// on the same device first (transient faults), then on the retry
    /// backend.
    pub fn with_cool_down(cool_down: Duration) -> Self {
        Self { until: Arc::default(), cool_down }
    }

    /// Fences `workers` for the cool-down from now; false when all of them
    /// were fenced already (so a device's fault is logged once).
    fn fence(&self, workers: &[usize]) -> bool {
        let now = Instant::now();
        let mut until = self.until.lock().unwrap_or_else(|p| p.into_inner());
        let mut new = false;
        for &w in workers {
            if until.len() <= w {
                until.resize(w + 1, None);
            }
            new |= until[w].is_none_or(|t| t <= now);
            until[w] = Some(now + self.cool_down);
        }
        new
    }

    /// Whether worker `w` takes partitions now.
    pub fn is_healthy(&self, w: usize) -> bool {
        let until = self.until.lock().unwrap_or_else(|p| p.into_inner());
        until.get(w).copied().flatten().is_none_or(|t| t <= Instant::now())
    }

    /// How many of `workers` workers take partitions now.
    pub fn healthy(&self, workers: usize) -> usize {
        (0..workers).filter(|&w| self.is_healthy(w)).count()
    }

    /// The first healthy worker of `workers` from `consumer`'s own on.
    fn pick(&self, consumer: usize, workers: usize) -> Option<usize> {
        (0..workers).map(|i| (consumer + i) % workers).find(|&w| self.is_healthy(w))
    }
}

impl std::fmt::Debug for WorkerFences {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WorkerFences(cool_down: {:?})", self.cool_down)
    }
}

/// How partitions are proved. `Default` is the CPU's host-level stages.
#[derive(Clone)]
pub enum Backend {
    /// Host-level stages (slices in, results out) on the pipeline's one
    /// consumer: the CPU oracle, or any [`Ntt`] / [`Msm`] pair.
    Stages(HostStages),
    /// Whole-partition workers (the GPU path: two per device).
    Workers(Workers),
}

impl Default for Backend {
    fn default() -> Self {
        Self::Stages(HostStages::cpu())
    }
}

impl Backend {
    /// The CPU for every stage (the oracle; no device is probed).
    pub fn cpu() -> Self {
        Self::default()
    }

    /// Host-level stages only: H by `ntt`, the MSMs by `msm`.
    pub fn staged(ntt: Arc<dyn Ntt>, msm: Arc<dyn Msm>) -> Self {
        Self::Stages(HostStages { ntt, msm })
    }

    /// Whole-partition workers with the default gates.
    pub fn workers(provers: Vec<Arc<dyn PartitionProver>>) -> Self {
        Self::Workers(Workers::new(provers))
    }

    /// How many pipeline consumers prove partitions: one per worker, or one
    /// for the host-level stages.
    pub fn consumers(&self) -> usize {
        match self {
            Self::Stages(_) => 1,
            Self::Workers(w) => w.provers.len().max(1),
        }
    }

    /// Proves `job` on consumer `consumer`'s resources: the host-level
    /// stages, or worker `consumer` (modulo the workers; the next healthy
    /// one when it is fenced) after its gate gives this proof a turn
    /// (`priority`; `cancel` ends the wait).
    /// `started` is told the device (`None`: the host) once the partition
    /// has its turn.
    pub(crate) fn prove(
        &self,
        consumer: usize,
        job: PartitionJob<'_>,
        priority: i32,
        cancel: Option<&c2_sched::CancelToken>,
        started: &dyn Fn(Option<usize>),
    ) -> Result<(Proof<Bls12>, ProveTimings), Error> {
        match self {
            // The host-level stages hold the vectors to the end: so does the permit.
            Self::Stages(stages) => {
                started(None);
                let PartitionJob { partition_data, host, params, r, s, .. } = job;
                let out = crate::groth16::prove_synthesized(partition_data.into_synthesized()?, params, r, s, stages);
                drop(host);
                out
            }
            Self::Workers(workers) if !workers.provers.is_empty() => {
                workers.prove(consumer, job, priority, cancel, started)
            }
            Self::Workers(_) => {
                Err(Error::Worker { worker: "none".into(), message: "a backend with no workers".into() })
            }
        }
    }

    /// The most partitions one consumer hands its worker at once
    /// ([`PartitionProver::max_batch`]; 1 on the host-level stages).
    pub fn max_batch(&self) -> usize {
        match self {
            Self::Stages(_) => 1,
            Self::Workers(w) => w.provers.iter().map(|p| p.max_batch()).max().unwrap_or(1).max(1),
        }
    }

    /// [`Backend::prove`] for several jobs at once (a batch the pipeline
    /// handed consumer `consumer`): the workers prove them together where
    /// they can ([`PartitionProver::prove_batch`]); one result per job, in
    /// order. `started` is told each job's partition and device.
    pub(crate) fn prove_batch(
        &self,
        consumer: usize,
        jobs: Vec<PartitionJob<'_>>,
        priority: i32,
        cancel: Option<&c2_sched::CancelToken>,
        started: &dyn Fn(usize, Option<usize>),
    ) -> Vec<Result<(Proof<Bls12>, ProveTimings), Error>> {
        match self {
            // A single job too: other proofs' may join it.
            Self::Workers(workers) if !workers.provers.is_empty() && self.max_batch() > 1 => {
                workers.prove_batch(consumer, jobs, priority, cancel, started)
            }
            _ => jobs
                .into_iter()
                .map(|job| {
                    let k = job.partition;
                    self.prove(consumer, job, priority, cancel, &|device| started(k, device))
                })
                .collect(),
        }
    }

    /// This backend with `fences` (e.g. another cool-down) in place of its
    /// workers' default ones; the host-level stages as they are.
    pub fn with_fences(self, fences: WorkerFences) -> Self {
        match self {
            Self::Workers(w) => Self::Workers(Workers { fences, ..w }),
            stages => stages,
        }
    }

    /// How many workers take partitions now (0 on the host-level stages):
    /// where a failed partition can be proved again on this backend.
    pub fn healthy_workers(&self) -> usize {
        match self {
            Self::Stages(_) => 0,
            Self::Workers(w) => w.fences.healthy(w.provers.len()),
        }
    }

    /// True for workers that are all fenced now (a backend of workers
    /// with none healthy); false for the host-level stages.
    pub fn is_fenced_out(&self) -> bool {
        matches!(self, Self::Workers(w) if w.fences.healthy(w.provers.len()) == 0)
    }

    /// Each worker's name and whether it takes partitions now (false: out
    /// of service after a device fault, [`WorkerFences`]), for status pages
    /// and metrics; empty on the host-level stages.
    pub fn worker_health(&self) -> Vec<(String, bool)> {
        let Self::Workers(w) = self else { return Vec::new() };
        w.provers.iter().enumerate().map(|(i, p)| (p.name(), w.fences.is_healthy(i))).collect()
    }

    /// The device ordinals of the workers (sorted, once each); empty on
    /// the host-level stages.
    pub fn devices(&self) -> Vec<usize> {
        let Self::Workers(w) = self else { return Vec::new() };
        let set: std::collections::BTreeSet<usize> = w.provers.iter().filter_map(|p| p.device()).collect();
        set.into_iter().collect()
    }

    /// The names of the workers out of service now after a device fault.
    pub fn fenced_workers(&self) -> Vec<String> {
        self.worker_health().into_iter().filter(|(_, healthy)| !healthy).map(|(name, _)| name).collect()
    }

    /// Drops `params` (the set for `parameter_id`) from every device; the
    /// device bytes released. The host copy is the caller's (see
    /// [`crate::ParamsCache::evict`]).
    pub fn evict(&self, parameter_id: &str, params: &Parameters<Bls12>) -> usize {
        let Self::Workers(workers) = self else { return 0 };
        let key = params_key(parameter_id, params);
        workers.provers.iter().map(|w| w.evict(&key)).sum()
    }

    /// Uploads `params` (the set for `parameter_id`, as
    /// [`c2_synth::ProofInstance::parameter_id`] names it) to every worker's
    /// device now, all devices at once, so the first proof does not wait
    /// for ~47 GB (32 GiB) to cross PCIe. A node calls it once at start-up
    /// for each sector size it proves. Returns how many workers have them
    /// resident (0 on the CPU, or when they do not fit and will stream).
    pub fn preload(&self, parameter_id: &str, params: &Parameters<Bls12>) -> Result<usize, Error> {
        let Self::Workers(workers) = self else { return Ok(0) };
        let key = params_key(parameter_id, params);
        let results: Vec<Result<bool, Error>> = std::thread::scope(|s| {
            let handles: Vec<_> = workers.provers.iter().map(|w| (w, s.spawn(|| w.preload(params, &key)))).collect();
            handles
                .into_iter()
                .map(|(w, h)| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::Worker { worker: w.name(), message: "panicked in preload".into() })
                    })
                })
                .collect()
        });
        results.into_iter().try_fold(0, |n, r| Ok(n + usize::from(r?)))
    }
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stages(s) => write!(f, "Backend {{ ntt: {}, msm: {} }}", s.ntt.name(), s.msm.name()),
            Self::Workers(w) => {
                let names: Vec<String> = w.provers.iter().map(|p| p.name()).collect();
                write!(f, "Backend {{ workers: [{}] }}", names.join(", "))
            }
        }
    }
}

/// One [`PriorityGate`] per worker, shared by every proof using a backend
/// (and by its clones): when proofs in flight compete for a worker, the
/// higher priority proves first, equal priorities in arrival order.
#[derive(Clone)]
pub struct WorkerGates {
    gates: Arc<Mutex<Vec<Arc<PriorityGate>>>>,
    grace: Duration,
}

impl Default for WorkerGates {
    fn default() -> Self {
        Self::with_grace(WORKER_GRACE)
    }
}

/// How long a worker, free after a higher-priority partition, waits for
/// that proof's next partition before taking a lower-priority one: the
/// consumer brings it within microseconds when it is ready; 10 ms is <1 %
/// of a large partition's proving time.
const WORKER_GRACE: Duration = Duration::from_millis(10);

impl WorkerGates {
    /// Gates whose lower priorities defer `grace` to the priority of the
    /// turn that just ended ([`PriorityGate::new`]); the default is 10 ms.
    pub fn with_grace(grace: Duration) -> Self {
        Self { gates: Arc::default(), grace }
    }

    /// Worker `w`'s gate (made on first use).
    pub fn gate(&self, w: usize) -> Arc<PriorityGate> {
        let mut gates = self.gates.lock().unwrap_or_else(|p| p.into_inner());
        while gates.len() <= w {
            gates.push(Arc::new(PriorityGate::new(self.grace)));
        }
        gates[w].clone()
    }
}

impl std::fmt::Debug for WorkerGates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WorkerGates(..)")
    }
}
