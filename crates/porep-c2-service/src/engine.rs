//! What proves a request: the [`Engine`] trait (one small seam, so another
//! proof kind or a node's own prover can sit behind the same service) and
//! [`FilecoinEngine`], every kind the `porep-c2` facades prove (PoRep C2,
//! WindowPoSt partitions, WinningPoSt) on one set of backends and caches.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bellperson::groth16::Parameters;
use blstrs::Bls12;
use filecoin_proofs_api::{PoStType, RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
use porep_c2::{
    prove_empty_sector_update_with_report, prove_porep_c2_with_report, prove_window_post_with_report,
    prove_winning_post_with_report, C1Input, CancelToken, HostLanes, HostPool, PartitionEvent, Progress, ProofReport,
    ProverConfig, SectorId,
};

use crate::request::{
    prover_id_from_actor, registered_post_proof, registered_seal_proof, registered_update_proof, ProofKind,
    ProofRequest,
};

/// Why a request did not give a proof.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The engine does not prove this kind (answered `UNIMPLEMENTED`).
    #[error("{} proofs are not implemented by this service", .0.name())]
    Unimplemented(ProofKind),
    /// The request contradicts itself (e.g. its registered proof is not the
    /// C1 output's).
    #[error("invalid request: {0}")]
    Invalid(String),
    /// The prover refused or failed, with its typed error (bad C1 JSON,
    /// tampered vanilla proofs, missing parameters, a device error that the
    /// retry backend could not absorb, ...).
    #[error(transparent)]
    Prover(#[from] porep_c2::Error),
    /// Cancelled by the client or by a draining shutdown.
    #[error("cancelled")]
    Cancelled,
    /// The engine panicked (a bug): the job fails with the panic's message,
    /// the service keeps serving.
    #[error("the prover panicked: {0}")]
    Panicked(String),
}

/// A finished proof and where its time went.
#[derive(Clone, Debug, Default)]
pub struct ProofOutput {
    /// The proof bytes (PoRep: 192 per partition, verified before returned).
    pub proof: Vec<u8>,
    /// Reading or finding the parameters.
    pub params_load: Duration,
    /// Synthesis, summed over partitions.
    pub synthesis: Duration,
    /// GPU kernel time, summed over partitions (0 on the CPU).
    pub gpu_compute: Duration,
    /// Partitions proved again after a device fault, or on the retry
    /// backend while every worker was fenced.
    pub retries: usize,
    /// Partitions by where they were proved: a device ordinal, or `None`
    /// (the host's stages).
    pub partitions_by_device: Vec<(Option<usize>, usize)>,
    /// Host-to-device bytes (GPU workers).
    pub h2d_bytes: u64,
    /// Kernel busy spans per device ordinal: ms after that device's time
    /// origin (shared by every proof of the process), for the service's
    /// GPU-busy counters.
    pub device_spans: Vec<(usize, Vec<(f32, f32)>)>,
}

impl ProofOutput {
    /// The figures of a facade report.
    pub fn from_report(proof: Vec<u8>, r: &ProofReport) -> Self {
        let gpu: Vec<_> = r.partitions.iter().filter_map(|p| p.steps.gpu.as_ref()).collect();
        Self {
            proof,
            params_load: r.load_params,
            synthesis: r.partitions.iter().map(|p| p.synthesis).sum(),
            gpu_compute: Duration::from_secs_f64(gpu.iter().map(|g| g.kernel_ms() as f64).sum::<f64>() / 1e3),
            retries: r.retries(),
            partitions_by_device: r
                .partitions
                .iter()
                .fold(BTreeMap::<Option<usize>, usize>::new(), |mut by, p| {
                    *by.entry(p.steps.gpu.as_ref().map(|g| g.device)).or_default() += 1;
                    by
                })
                .into_iter()
                .collect(),
            h2d_bytes: gpu.iter().map(|g| g.h2d_bytes).sum(),
            device_spans: gpu
                .iter()
                .fold(BTreeMap::<usize, Vec<(f32, f32)>>::new(), |mut by, g| {
                    by.entry(g.device).or_default().extend_from_slice(&g.spans_ms);
                    by
                })
                .into_iter()
                .collect(),
        }
    }

    /// A facade result (proof bytes and report) as an engine's: cancellation
    /// as [`EngineError::Cancelled`], other errors typed.
    pub fn from_result(result: Result<(Vec<u8>, ProofReport), porep_c2::Error>) -> Result<Self, EngineError> {
        match result {
            Ok((proof, report)) => Ok(Self::from_report(proof, &report)),
            Err(porep_c2::Error::Cancelled) => Err(EngineError::Cancelled),
            Err(e) => Err(e.into()),
        }
    }
}

/// `base` for one request: its priority, its cancel token, and progress
/// events into its placement (what every engine sets per request).
pub fn request_config(
    base: &ProverConfig,
    request: &ProofRequest,
    cancel: &CancelToken,
    placement: &Arc<Placement>,
) -> ProverConfig {
    let mut config = base.clone();
    config.pipeline.priority = request.priority;
    config.pipeline.cancel = Some(cancel.clone());
    config.progress = Some(placement.progress());
    config
}

/// The sector size of a circuit id (`porep-32g`, `wpost-2k`, ...).
pub fn circuit_sector_size(id: &str) -> Option<u64> {
    Circuit::parse(id).map(|c| c.sector_size)
}

/// Where a running job's partitions are proved now: told by the engine as
/// they start and end (`GetStatus` shows each device's job from it).
#[derive(Debug, Default)]
pub struct Placement {
    /// Partition index -> device ordinal (`None`: the host).
    on: Mutex<BTreeMap<usize, Option<usize>>>,
}

impl Placement {
    /// Partition `partition` started on `device`.
    pub fn started(&self, partition: usize, device: Option<usize>) {
        self.on.lock().unwrap_or_else(|p| p.into_inner()).insert(partition, device);
    }

    /// Partition `partition` ended.
    pub fn done(&self, partition: usize) {
        self.on.lock().unwrap_or_else(|p| p.into_inner()).remove(&partition);
    }

    /// The devices working for the job now.
    pub fn devices(&self) -> BTreeSet<usize> {
        self.on.lock().unwrap_or_else(|p| p.into_inner()).values().filter_map(|d| *d).collect()
    }

    /// A facade progress callback that keeps this placement current.
    pub fn progress(self: &Arc<Self>) -> Progress {
        let me = self.clone();
        Progress::events(move |e| match e {
            PartitionEvent::Started { partition, device } => me.started(partition, device),
            PartitionEvent::Done { partition } => me.done(partition),
        })
    }
}

/// A parameter set the engine holds (for `GetStatus` and `EvictSRS`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedSet {
    /// The circuit id (`porep-32g`, ...).
    pub circuit_id: String,
    /// Host bytes of the set.
    pub bytes: u64,
    /// On the devices as well as in host memory.
    pub on_device: bool,
}

/// Proves requests. Called from the service's runner threads (blocking is
/// expected; several calls may run at once).
pub trait Engine: Send + Sync + 'static {
    /// Whether this engine proves `kind` (others are answered
    /// `UNIMPLEMENTED` before anything is queued).
    fn supports(&self, kind: ProofKind) -> bool;

    /// Proves `request`, checking `cancel` where it can stop early and
    /// telling `placement` where its partitions run.
    fn prove(
        &self,
        request: &ProofRequest,
        cancel: &CancelToken,
        placement: &Arc<Placement>,
    ) -> Result<ProofOutput, EngineError>;

    /// Loads the parameter set of `circuit_id` (e.g. `porep-32g`) and keeps
    /// it ready; `Ok(true)` when it was loaded already.
    fn preload(&self, circuit_id: &str) -> Result<bool, EngineError>;

    /// Drops the set of `circuit_id`; the bytes freed (0: it was not held).
    fn evict(&self, circuit_id: &str) -> Result<u64, EngineError>;

    /// The sets held now.
    fn loaded(&self) -> Vec<LoadedSet>;

    /// The engine's workers and whether each takes partitions now (false:
    /// fenced after a device fault); empty when it has none.
    fn worker_health(&self) -> Vec<(String, bool)> {
        Vec::new()
    }

    /// The device ordinals the engine proves on (what `GetStatus` and the
    /// metrics sample); empty on the CPU.
    fn devices(&self) -> Vec<usize> {
        Vec::new()
    }
}

/// The sector sizes of circuit ids, by their suffix (`-2k` .. `-64g`).
pub const SECTOR_SIZES: [(&str, u64); 5] =
    [("2k", 2048), ("8m", 8 << 20), ("512m", 512 << 20), ("32g", 32 << 30), ("64g", 64 << 30)];

/// A circuit as `PreloadSRS` / `EvictSRS` and the configuration name it:
/// Curio's daemon's ids (`porep-32g`, `wpost-32g`, `winning-32g`; its
/// `srs_manager.rs`) for every registered sector size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Circuit {
    /// The proof kind (PoRep, WindowPoSt or WinningPoSt).
    pub kind: ProofKind,
    /// Sector size in bytes (one of [`SECTOR_SIZES`]).
    pub sector_size: u64,
}

impl Circuit {
    /// The id's prefix of a kind this service proves.
    fn prefix(kind: ProofKind) -> Option<&'static str> {
        match kind {
            ProofKind::PorepSealCommit => Some("porep"),
            ProofKind::WindowPostPartition => Some("wpost"),
            ProofKind::WinningPost => Some("winning"),
            ProofKind::SnapDealsUpdate => Some("snap"),
        }
    }

    /// The circuit of an id (`None`: not one of [`Circuit::all`]).
    pub fn parse(id: &str) -> Option<Self> {
        Self::all().into_iter().find(|c| c.id() == id)
    }

    /// Every circuit this service proves: PoRep, WindowPoSt, WinningPoSt,
    /// SnapDeals, each smallest first.
    pub fn all() -> Vec<Self> {
        [ProofKind::PorepSealCommit, ProofKind::WindowPostPartition, ProofKind::WinningPost, ProofKind::SnapDealsUpdate]
            .into_iter()
            .flat_map(|kind| SECTOR_SIZES.iter().map(move |&(_, sector_size)| Self { kind, sector_size }))
            .collect()
    }

    /// What device memory is planned for to prove this circuit's partitions.
    pub fn partition_shape(self) -> Option<porep_c2::plan::PartitionShape> {
        use porep_c2::plan::{PartitionShape, ProofFamily};
        let family = match self.kind {
            ProofKind::WindowPostPartition => ProofFamily::WindowPost,
            ProofKind::WinningPost => ProofFamily::WinningPost,
            ProofKind::SnapDealsUpdate => ProofFamily::EmptySectorUpdate,
            _ => ProofFamily::Porep,
        };
        PartitionShape::for_proof(family, self.sector_size)
    }

    /// The id (`porep-32g`).
    pub fn id(self) -> String {
        let prefix = Self::prefix(self.kind).unwrap_or("?");
        let size = SECTOR_SIZES.iter().find(|(_, b)| *b == self.sector_size).map_or("?", |(s, _)| s);
        format!("{prefix}-{size}")
    }

    /// The parameter set's id (filecoin-proofs' cache file stem). PoRep:
    /// the V1_1 circuit's, which serves every V1_1 and later registered
    /// proof of the size; WindowPoSt: V1 and V1_2 share one set (the
    /// parameters' identifier names sector size, challenge and sector
    /// counts only).
    pub fn parameter_id(self) -> Result<String, EngineError> {
        let size = self.sector_size;
        let found = match self.kind {
            ProofKind::PorepSealCommit => (5..10)
                .filter_map(registered_seal_proof)
                .find(|rp| u64::from(rp.sector_size()) == size)
                .map(|rp| (format!("{rp:?}"), rp.circuit_identifier())),
            ProofKind::WindowPostPartition | ProofKind::WinningPost => {
                let numbers = if self.kind == ProofKind::WinningPost { 0..5 } else { 10..15 };
                numbers
                    .filter_map(registered_post_proof)
                    .find(|rp| u64::from(rp.sector_size()) == size)
                    .map(|rp| (format!("{rp:?}"), rp.circuit_identifier()))
            }
            ProofKind::SnapDealsUpdate => (0..5)
                .filter_map(registered_update_proof)
                .find(|rp| u64::from(rp.sector_size()) == size)
                .map(|rp| (format!("{rp:?}"), rp.circuit_identifier())),
        };
        let (name, id) =
            found.ok_or_else(|| EngineError::Invalid(format!("no registered proof for circuit {}", self.id())))?;
        id.map_err(|e| EngineError::Invalid(format!("{name}: {e}")))
    }
}

/// Every proof kind the `porep-c2` facades prove, on one configuration:
/// PoRep C2 (`prove_porep_c2`: the C1 JSON or Curio's envelope parsed and
/// checked), WindowPoSt partitions and WinningPoSt (`prove_window_post`,
/// `prove_winning_post`: the bincode vanilla proofs decoded and checked).
/// The prover id is derived from the miner's actor id; parameter sets are
/// read once per process (the config's shared `ParamsCache`) and kept on
/// the devices; the backends, GPU workers and their scheduler are shared,
/// so a PoSt's partition is taken ahead of queued C2 partitions by its
/// priority; every proof is verified before it is returned.
pub struct FilecoinEngine {
    config: ProverConfig,
    /// Sets preloaded, kept alive here so the cache does not drop them.
    held: Mutex<Vec<HeldSet>>,
    /// Where each request's host work runs, by its priority (`None`: as
    /// `config.pipeline.host_pool` says).
    lanes: Option<HostLanes>,
}

/// A preloaded parameter set.
struct HeldSet {
    circuit_id: String,
    parameter_id: String,
    bytes: u64,
    params: Arc<Parameters<Bls12>>,
    /// Resident on at least one device (else host memory only: the CPU, or
    /// a set too large for the devices' pools).
    on_device: bool,
}

impl FilecoinEngine {
    /// An engine proving with `config` (its backend, parameter source and
    /// caches; `pipeline.priority` and `pipeline.cancel` are set per request).
    pub fn new(config: ProverConfig) -> Self {
        Self { config, held: Mutex::new(Vec::new()), lanes: None }
    }

    /// This engine with each request's host work (vanilla check, synthesis,
    /// verification) on `lanes`: urgent requests (WindowPoSt, WinningPoSt)
    /// on threads ahead of the C2 proofs' (`[jobs] background_nice`).
    pub fn with_host_lanes(self, lanes: HostLanes) -> Self {
        Self { lanes: Some(lanes), ..self }
    }

    /// The host pool a request of `priority` runs its host work on (`None`:
    /// no lanes, the configuration's pool or rayon's global one).
    pub fn host_pool(&self, priority: i32) -> Option<&Arc<HostPool>> {
        self.lanes.as_ref().map(|l| l.for_priority(priority))
    }

    /// The prover's configuration.
    pub fn config(&self) -> &ProverConfig {
        &self.config
    }
}

impl Engine for FilecoinEngine {
    fn supports(&self, kind: ProofKind) -> bool {
        Circuit::prefix(kind).is_some()
    }

    fn prove(
        &self,
        request: &ProofRequest,
        cancel: &CancelToken,
        placement: &Arc<Placement>,
    ) -> Result<ProofOutput, EngineError> {
        let mut config = request_config(&self.config, request, cancel, placement);
        if let Some(pool) = self.host_pool(request.priority) {
            config.pipeline.host_pool = Some(pool.clone());
        }
        let prover_id = prover_id_from_actor(request.miner_id);
        let vanilla = &request.vanilla_proofs;
        let result = match request.kind {
            ProofKind::PorepSealCommit => {
                // Raw C1 JSON or Curio's envelope; the envelope's sector
                // number and size must be the request's and the C1 output's.
                let input = C1Input::parse(&request.vanilla_proof)?;
                let size = (request.sector_size != 0).then_some(request.sector_size);
                input.check_sector(Some(request.sector_number), size)?;
                let c1 = input.c1;
                check_registered_proof(request.registered_proof, c1.registered_proof)?;
                let sector_id = SectorId::from(request.sector_number);
                prove_porep_c2_with_report(&c1, prover_id, sector_id, &config).map(|(out, report)| (out.proof, report))
            }
            ProofKind::WindowPostPartition => {
                let (rp, randomness) = post_request(request, PoStType::Window)?;
                let partition = request.partition_index as usize;
                prove_window_post_with_report(rp, &randomness, prover_id, vanilla, partition, &config)
            }
            ProofKind::WinningPost => {
                let (rp, randomness) = post_request(request, PoStType::Winning)?;
                prove_winning_post_with_report(rp, &randomness, prover_id, vanilla, &config)
            }
            ProofKind::SnapDealsUpdate => {
                let (rp, [old, new, d]) = update_request(request)?;
                prove_empty_sector_update_with_report(rp, vanilla, &old, &new, &d, &config)
            }
        };
        ProofOutput::from_result(result)
    }

    fn preload(&self, circuit_id: &str) -> Result<bool, EngineError> {
        let circuit = Circuit::parse(circuit_id)
            .ok_or_else(|| EngineError::Invalid(format!("unknown circuit id {circuit_id:?} ({})", known_circuits())))?;
        let parameter_id = circuit.parameter_id()?;
        // The list is locked only to look and to add: a load takes minutes
        // at 32 GiB, and `GetStatus` reads the list meanwhile. Two preloads
        // of one set at once share the parameter cache's one read.
        if self.held.lock().unwrap_or_else(|p| p.into_inner()).iter().any(|h| h.circuit_id == circuit_id) {
            return Ok(true);
        }
        let t = Instant::now();
        let params =
            self.config.params_cache.load(&self.config.params, &parameter_id).map_err(porep_c2::Error::from)?;
        let on_device = self.config.backend.preload(&parameter_id, &params)?;
        log::info!(
            "porep-c2-service: {circuit_id} loaded in {:.1} s ({} on the devices)",
            t.elapsed().as_secs_f64(),
            if on_device > 0 { "resident" } else { "not resident" }
        );
        let bytes = porep_c2::parameter_bytes(&params) as u64;
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if held.iter().any(|h| h.circuit_id == circuit_id) {
            return Ok(true);
        }
        held.push(HeldSet {
            circuit_id: circuit_id.to_string(),
            parameter_id,
            bytes,
            params,
            on_device: on_device > 0,
        });
        Ok(false)
    }

    fn evict(&self, circuit_id: &str) -> Result<u64, EngineError> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let Some(i) = held.iter().position(|h| h.circuit_id == circuit_id) else {
            return Ok(0);
        };
        let HeldSet { parameter_id, bytes, params, .. } = held.remove(i);
        let device = self.config.backend.evict(&parameter_id, &params);
        drop(params);
        let host = self.config.params_cache.evict(&self.config.params, &parameter_id);
        log::info!(
            "porep-c2-service: {circuit_id} evicted ({:.2} GB of host memory, {:.2} GB on the devices)",
            host as f64 / 1e9,
            device as f64 / 1e9
        );
        Ok(bytes)
    }

    fn loaded(&self) -> Vec<LoadedSet> {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.iter()
            .map(|h| LoadedSet { circuit_id: h.circuit_id.clone(), bytes: h.bytes, on_device: h.on_device })
            .collect()
    }

    fn worker_health(&self) -> Vec<(String, bool)> {
        self.config.backend.worker_health()
    }

    fn devices(&self) -> Vec<usize> {
        self.config.backend.devices()
    }
}

/// The circuit ids, for messages: `porep-2k .. porep-64g, wpost-2k .. ...`.
pub fn known_circuits() -> String {
    let all = Circuit::all();
    let ranges =
        all.chunks(SECTOR_SIZES.len()).filter_map(|of| Some(format!("{} .. {}", of.first()?.id(), of.last()?.id())));
    ranges.collect::<Vec<_>>().join(", ")
}

/// A PoSt request's registered proof and randomness, checked against what
/// the request says of itself: the number is a registered PoSt proof of
/// the request's type (`typ`) and sector size, the randomness 32 bytes.
/// (The vanilla proofs, and the randomness as a field element, are the
/// facade's to check: typed errors before any parameters are read.)
pub fn post_request(request: &ProofRequest, typ: PoStType) -> Result<(RegisteredPoStProof, [u8; 32]), EngineError> {
    let number = request.registered_proof;
    let rp = registered_post_proof(number)
        .ok_or_else(|| EngineError::Invalid(format!("registered_proof {number} is not a registered PoSt proof")))?;
    if rp.typ() != typ {
        let kind = request.kind.name();
        return Err(EngineError::Invalid(format!("registered_proof {number} ({rp:?}) is not a {kind} proof type")));
    }
    let size = u64::from(rp.sector_size());
    if request.sector_size != 0 && request.sector_size != size {
        return Err(EngineError::Invalid(format!(
            "registered_proof {number} ({rp:?}) is for {size} byte sectors, the request's sector_size is {}",
            request.sector_size
        )));
    }
    let randomness = <[u8; 32]>::try_from(request.randomness.as_slice()).map_err(|_| {
        EngineError::Invalid(format!("randomness is {} bytes; PoSt takes 32", request.randomness.len()))
    })?;
    Ok((rp, randomness))
}

/// A SnapDeals request's registered update proof and commitments
/// (`comm_r_old`, `comm_r_new`, `comm_d_new`), checked against what the
/// request says of itself: the number is a registered update proof of the
/// request's sector size, each commitment 32 bytes. (The vanilla proofs,
/// and the commitments as field elements, are the facade's to check.)
pub fn update_request(request: &ProofRequest) -> Result<(RegisteredUpdateProof, [[u8; 32]; 3]), EngineError> {
    let number = request.registered_proof;
    let rp = registered_update_proof(number)
        .ok_or_else(|| EngineError::Invalid(format!("registered_proof {number} is not a registered update proof")))?;
    let size = u64::from(rp.sector_size());
    if request.sector_size != 0 && request.sector_size != size {
        return Err(EngineError::Invalid(format!(
            "registered_proof {number} ({rp:?}) is for {size} byte sectors, the request's sector_size is {}",
            request.sector_size
        )));
    }
    let commitment = |bytes: &[u8], name: &str| {
        <[u8; 32]>::try_from(bytes)
            .map_err(|_| EngineError::Invalid(format!("{name} is {} bytes; a commitment is 32", bytes.len())))
    };
    Ok((
        rp,
        [
            commitment(&request.comm_r_old, "comm_r_old")?,
            commitment(&request.comm_r_new, "comm_r_new")?,
            commitment(&request.comm_d_new, "comm_d_new")?,
        ],
    ))
}

/// Curio's daemon proves the C1 output's own registered proof whatever
/// number the request carries (Curio's supraseal batch path writes a fixed
/// `StackedDrg32GiBV1_1` into the C1 output while the request has the
/// sector's number). So do we, with two checks: a number that is no
/// registered seal proof, or one of another sector size, is refused (the
/// request is not for this C1 output); a number that differs only in
/// version or feature (V1 vs V1_1, synthetic PoRep) is logged and the
/// proof's own verification decides.
pub fn check_registered_proof(number: u64, c1: RegisteredSealProof) -> Result<(), EngineError> {
    let rp = registered_seal_proof(number)
        .ok_or_else(|| EngineError::Invalid(format!("registered_proof {number} is not a registered seal proof")))?;
    if rp.sector_size() != c1.sector_size() {
        return Err(EngineError::Invalid(format!(
            "registered_proof {number} ({rp:?}) is for {} byte sectors, the C1 output ({c1:?}) for {}",
            u64::from(rp.sector_size()),
            u64::from(c1.sector_size())
        )));
    }
    if rp != c1 {
        log::info!("porep-c2-service: registered_proof {number} ({rp:?}), C1 output {c1:?}: proving the C1 output's");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_proofs_of_another_size_are_refused_versions_pass() {
        use RegisteredSealProof::*;
        check_registered_proof(8, StackedDrg32GiBV1_1).unwrap();
        // Curio's supraseal path: the sector is synthetic (13), the C1 says V1_1.
        check_registered_proof(13, StackedDrg32GiBV1_1).unwrap();
        check_registered_proof(3, StackedDrg32GiBV1_1).unwrap();
        let e = check_registered_proof(5, StackedDrg32GiBV1_1).unwrap_err().to_string();
        assert!(e.contains("registered_proof 5") && e.contains("2048 byte"), "{e}");
        assert!(check_registered_proof(99, StackedDrg2KiBV1_1).unwrap_err().to_string().contains("99"));
    }

    #[test]
    fn circuit_ids_are_curios_for_every_size() {
        let all = Circuit::all();
        assert_eq!(all.len(), 20);
        for c in &all {
            assert_eq!(Circuit::parse(&c.id()), Some(*c));
        }
        let ids: Vec<_> = all.iter().map(|c| c.id()).collect();
        for curio in
            ["porep-32g", "porep-64g", "wpost-32g", "winning-32g", "snap-32g", "snap-64g", "porep-2k", "snap-2k"]
        {
            assert!(ids.iter().any(|id| id == curio), "{curio}");
        }
        assert_eq!(Circuit::parse("snap-1t"), None);
        assert_eq!(circuit_sector_size("wpost-2k"), Some(2048));
        assert_eq!(
            known_circuits(),
            "porep-2k .. porep-64g, wpost-2k .. wpost-64g, winning-2k .. winning-64g, snap-2k .. snap-64g"
        );
    }

    #[test]
    fn circuits_name_filecoin_proofs_parameter_sets() {
        use RegisteredPoStProof::*;
        let id = |s: &str| Circuit::parse(s).unwrap().parameter_id().unwrap();
        assert_eq!(id("porep-2k"), RegisteredSealProof::StackedDrg2KiBV1_1.circuit_identifier().unwrap());
        assert_eq!(id("winning-2k"), StackedDrgWinning2KiBV1.circuit_identifier().unwrap());
        // Window V1 and V1_2 share their parameters.
        assert_eq!(id("wpost-32g"), StackedDrgWindow32GiBV1_2.circuit_identifier().unwrap());
        assert_eq!(id("wpost-32g"), StackedDrgWindow32GiBV1.circuit_identifier().unwrap());
        assert_ne!(id("wpost-32g"), id("winning-32g"));
        assert_eq!(id("snap-32g"), RegisteredUpdateProof::StackedDrg32GiBV1.circuit_identifier().unwrap());
    }

    #[test]
    fn post_requests_are_checked_against_themselves() {
        let request = |kind, registered_proof, sector_size, randomness: usize| ProofRequest {
            kind,
            registered_proof,
            sector_size,
            randomness: vec![1; randomness],
            ..Default::default()
        };
        let (window, winning) = (ProofKind::WindowPostPartition, ProofKind::WinningPost);
        let (rp, _) = post_request(&request(window, 13, 32 << 30, 32), PoStType::Window).unwrap();
        assert_eq!(rp, RegisteredPoStProof::StackedDrgWindow32GiBV1_2);
        let (rp, _) = post_request(&request(winning, 3, 0, 32), PoStType::Winning).unwrap();
        assert_eq!(rp, RegisteredPoStProof::StackedDrgWinning32GiBV1);
        let err = |r: ProofRequest, typ| post_request(&r, typ).unwrap_err().to_string();
        assert!(err(request(window, 3, 0, 32), PoStType::Window).contains("not a window-post proof type"));
        assert!(err(request(winning, 8, 0, 32), PoStType::Winning).contains("not a winning-post proof type"));
        assert!(err(request(window, 15, 0, 32), PoStType::Window).contains("15 is not a registered PoSt proof"));
        assert!(err(request(window, 10, 4096, 32), PoStType::Window).contains("sector_size is 4096"));
        assert!(err(request(window, 10, 2048, 0), PoStType::Window).contains("randomness is 0 bytes"));
    }

    #[test]
    fn placement_follows_partition_events() {
        let placement = Arc::new(Placement::default());
        let progress = placement.progress();
        let send = |e| progress.event(e);
        send(PartitionEvent::Started { partition: 0, device: Some(1) });
        send(PartitionEvent::Started { partition: 1, device: None });
        send(PartitionEvent::Started { partition: 2, device: Some(0) });
        assert_eq!(placement.devices(), BTreeSet::from([0, 1]));
        send(PartitionEvent::Done { partition: 0 });
        send(PartitionEvent::Done { partition: 1 });
        assert_eq!(placement.devices(), BTreeSet::from([0]));
        send(PartitionEvent::Done { partition: 2 });
        assert!(placement.devices().is_empty());
    }
}
