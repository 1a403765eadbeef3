//! The service's configuration file (TOML). Every field has a default, so
//! an empty file (or none) gives a working service on the default unix
//! socket; `porep-c2.sample.toml` beside this crate documents every key
//! (a test holds it equal to the defaults), and `porep-c2 serve
//! --print-config` prints the configuration in effect.

use std::path::{Path, PathBuf};

use porep_c2::plan::PartitionShape;

use crate::engine::{circuit_sector_size, known_circuits, Circuit};
use porep_c2::{Backend, HostBudget, ParamsSource, ProverConfig};
use serde::{Deserialize, Serialize};

/// Where the service listens: the socket Curio's documentation and its own
/// daemon's examples use (`[Cuzk] Address = "unix:///run/curio/cuzk.sock"`).
pub const DEFAULT_LISTEN: &str = "unix:///run/curio/cuzk.sock";

/// The whole file.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ServiceConfig {
    /// The gRPC listener.
    pub server: ServerSection,
    /// The proving backend.
    pub prover: ProverSection,
    /// Queues.
    pub jobs: JobsSection,
}

/// `[server]`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ServerSection {
    /// `unix:///path/to.sock` (the default, `unix:///run/porep-c2/cuzk.sock`)
    /// or `host:port` for TCP. TCP on anything but loopback exposes the
    /// prover to the network: put it behind your own access control.
    pub listen: String,
    /// Largest gRPC message in either direction, bytes (Curio's client
    /// allows 256 MiB; a 32 GiB C1 output is ~50-100 MB).
    pub max_message_bytes: usize,
    /// A unix socket's permission bits, octal (default `"0660"`: the
    /// daemon's user and group connect, nobody else).
    pub socket_mode: String,
    /// A unix socket's group, a name or a number; empty: the daemon's own
    /// group. A daemon run as root for a Curio run as user `curio` sets
    /// `socket_group = "curio"` (or a group both belong to).
    pub socket_group: String,
}

impl Default for ServerSection {
    fn default() -> Self {
        Self {
            listen: DEFAULT_LISTEN.into(),
            max_message_bytes: crate::client::MAX_MESSAGE_BYTES,
            socket_mode: format!("{:04o}", crate::server::DEFAULT_SOCKET_MODE),
            socket_group: String::new(),
        }
    }
}

impl ServerSection {
    /// The server's options (listen address, message limit, socket access).
    pub fn serve_options(&self) -> Result<crate::server::ServeOptions, ConfigError> {
        let listen = crate::server::Listen::parse(&self.listen).map_err(ConfigError::Invalid)?;
        let socket_mode = u32::from_str_radix(self.socket_mode.trim_start_matches("0o"), 8)
            .ok()
            .filter(|m| *m <= 0o777)
            .ok_or_else(|| {
                ConfigError::Invalid(format!(
                    "server.socket_mode = {:?}: octal permission bits, e.g. \"0660\"",
                    self.socket_mode
                ))
            })?;
        Ok(crate::server::ServeOptions {
            listen,
            max_message_bytes: self.max_message_bytes,
            socket_mode,
            socket_group: Some(self.socket_group.clone()).filter(|g| !g.is_empty()),
        })
    }
}

/// `[prover]`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ProverSection {
    /// Folder of the Groth16 parameter files (filecoin-proofs' names).
    /// Empty: `FIL_PROOFS_PARAMETER_CACHE`, else filecoin-proofs' default
    /// folder.
    pub params_dir: PathBuf,
    /// `auto` (the GPUs when a device answers, else the CPU), `gpu` (fail
    /// when none does) or `cpu`.
    pub backend: String,
    /// Device ordinals to use; empty: every device (`CUDA_VISIBLE_DEVICES`
    /// still applies, as the driver reads it).
    pub devices: Vec<usize>,
    /// GPU workers per device (each proves whole partitions; two overlap
    /// one partition's uploads with another's kernels).
    pub workers_per_device: usize,
    /// Device memory the service may take per device, GiB; 0 (the default):
    /// what the workers and the resident sets of `circuits` need plus a
    /// margin (`porep_c2::plan::sized_budget`; two workers: 11.7 GiB for
    /// 2 KiB + 8 MiB, 129.9 GiB for 32 GiB), never more than the driver's
    /// free memory minus 2 GiB. A larger number than the card has takes all
    /// free memory. A node whose PoSt runs in another process on the same
    /// GPU sets this below the card's memory minus that process' needs
    /// (PoSt sent to this service shares its workers and memory).
    pub vram_cap_gib: usize,
    /// The circuit ids this prover proves (`porep-2k` .. `porep-64g`,
    /// `wpost-2k` .. `wpost-64g`, `winning-2k` .. `winning-64g`): the
    /// workers are planned for the largest and device memory is sized for
    /// all of them resident. Empty: the `preload` list, or `porep-32g` when
    /// that is empty too.
    pub circuits: Vec<String>,
    /// Host memory for synthesized partitions of all proofs in flight,
    /// GiB; 0: unbounded.
    pub host_budget_gib: usize,
    /// Synthesis threads per proof, ahead of the provers.
    pub synthesis_workers: usize,
    /// Parameter sets loaded and put on the devices at start, by circuit id
    /// (`porep-32g`, `wpost-32g`, `winning-32g`, ...: Curio's names, with
    /// the suffixes `2k`, `8m`, `512m`, `32g`, `64g`).
    pub preload: Vec<String>,
    /// Verify every proof before returning it (filecoin-proofs does; turn
    /// off only for benchmarks).
    pub verify: bool,
    /// Precomputed copies of the H query per device,
    /// `"<window bits>x<copies>"` (`porep_c2::gpu::GpuBackendConfig::h_copies`);
    /// empty: none. Counted in the sized device memory. They pay in a
    /// long-lived service: built once per parameter set and device (~19 s
    /// for 32 GiB at `20x4`), ~0.1 s saved per 32 GiB partition.
    pub h_copies: String,
    /// Seconds a device stays out of service after a device fault
    /// (`porep_c2::WorkerFences`): its partitions go to the other devices,
    /// or the CPU when none is left; then it gets the next partition again.
    /// 0: never fenced (every partition tries the device first).
    pub fence_secs: u64,
    /// Prove a partition on the CPU when no GPU can (a device fault with
    /// every device fenced, out of device memory). Default true: no proof is
    /// lost, but a 32 GiB partition takes minutes there; false fails the
    /// proof at once, and Curio retries the task (on this or another host).
    pub retry_on_cpu: bool,
    /// One more GPU worker per device for WinningPoSt (priority CRITICAL):
    /// ~1.5 GB of device memory planned for its circuit, streams
    /// of the device's greatest priority, so a WinningPoSt starts at once
    /// beside the C2 partitions in flight instead of waiting for a worker
    /// (`porep_c2::gpu::GpuBackendConfig::urgent_lane`). Counted in the
    /// sized device memory. Where a card is too small for it (16 GiB with
    /// 32 GiB C2), WinningPoSt takes the C2 workers' next turn, and those
    /// batch at most `porep_c2::gpu::URGENT_TURN_BATCH` partitions per
    /// pass of the parameters so the turn stays short; false there lets
    /// them batch fully (a prover that takes no WinningPoSt). Default true.
    pub urgent_lane: bool,
}

impl Default for ProverSection {
    fn default() -> Self {
        Self {
            params_dir: PathBuf::new(),
            backend: "auto".into(),
            devices: Vec::new(),
            workers_per_device: 2,
            vram_cap_gib: 0,
            circuits: Vec::new(),
            host_budget_gib: 0,
            synthesis_workers: 2,
            preload: Vec::new(),
            verify: true,
            h_copies: String::new(),
            fence_secs: 300,
            retry_on_cpu: true,
            urgent_lane: true,
        }
    }
}

impl ProverSection {
    /// The facade's configuration for this section: parameters (the
    /// folder, else `FIL_PROOFS_PARAMETER_CACHE` as filecoin-proofs reads
    /// it), the backend (`Err` for `gpu` when no device can be used),
    /// pipeline and host budget, verification.
    pub fn prover_config(&self) -> Result<ProverConfig, porep_c2::Error> {
        let mut c = ProverConfig { params: ParamsSource::from_env(), ..ProverConfig::default() };
        if !self.params_dir.as_os_str().is_empty() {
            c.params = ParamsSource::CacheDir(self.params_dir.clone());
        }
        c.backend = self.backend()?;
        c.verify = self.verify;
        // A long-lived process (serve, bench): a shape's matrices are
        // recorded once and every proof, one-partition sectors included,
        // takes the witness path.
        c.synthesis = porep_c2::SynthesisPath::Recorded;
        if !self.retry_on_cpu {
            c.retry_backend = None;
        }
        c.pipeline.synthesis_workers = self.synthesis_workers.max(1);
        if self.host_budget_gib > 0 {
            c.pipeline.host_budget = Some(HostBudget::new(self.host_budget_gib << 30));
        }
        Ok(c)
    }

    /// `h_copies` as (window bits, copies); `None` when empty, an error
    /// naming the key when malformed.
    pub fn h_copies(&self) -> Result<Option<(u32, u32)>, ConfigError> {
        let v = self.h_copies.trim();
        if v.is_empty() {
            return Ok(None);
        }
        let parsed = v.split_once('x').and_then(|(c, k)| Some((c.parse::<u32>().ok()?, k.parse::<u32>().ok()?)));
        match parsed {
            Some((c, k)) if c2_msm::plan::copies_problem(c, k).is_none() => Ok(Some((c, k))),
            _ => Err(ConfigError::Invalid(format!(
                "prover.h_copies = {v:?}: \"<window bits>x<copies>\", bits 2..=24, copies 1..=255/bits+1 (e.g. \"20x4\"), or empty"
            ))),
        }
    }

    /// The partition shapes device memory is planned for: `circuits`, else
    /// `preload`, else the 32 GiB PoRep circuit; each kind's own shape
    /// ([`porep_c2::plan::PartitionShape::for_proof`]: a WindowPoSt
    /// partition at 32 GiB has 79x C2's public inputs and 2.8x its B bases).
    pub fn planned_shapes(&self) -> Vec<PartitionShape> {
        let ids = if !self.circuits.is_empty() { &self.circuits } else { &self.preload };
        let shapes: Vec<PartitionShape> =
            ids.iter().filter_map(|id| Circuit::parse(id)).filter_map(|c| c.partition_shape()).collect();
        if shapes.is_empty() {
            PartitionShape::for_sector_size(32 << 30).into_iter().collect()
        } else {
            shapes
        }
    }

    /// The shape the workers' arenas are planned for: a partition of any
    /// kind at any planned sector size (Curio sends every kind of the
    /// sizes it seals to the one daemon, so the workers are planned for
    /// WindowPoSt, WinningPoSt and SnapDeals partitions of those sizes too,
    /// not only for the circuits named).
    pub fn worker_shape(&self) -> Option<PartitionShape> {
        let ids = if !self.circuits.is_empty() { &self.circuits } else { &self.preload };
        let mut sizes: Vec<u64> = ids.iter().filter_map(|id| circuit_sector_size(id)).collect();
        if sizes.is_empty() {
            sizes.push(32 << 30);
        }
        sizes
            .into_iter()
            .flat_map(|size| Circuit::all().into_iter().filter(move |c| c.sector_size == size))
            .filter_map(|c| c.partition_shape())
            .reduce(|a, b| a.covering(&b))
    }

    /// Device memory per device, bytes: `vram_cap_gib`, or when 0 what the
    /// workers and the planned sets need ([`porep_c2::plan::sized_budget`]).
    /// The pool takes at most the driver's free memory minus its margin
    /// either way.
    pub fn vram_cap_bytes(&self) -> usize {
        if self.vram_cap_gib > 0 {
            return self.vram_cap_gib << 30;
        }
        let shapes = self.planned_shapes();
        // The H copies of one set at a time (an earlier set's go back
        // before the next set's are built): room for the largest.
        let copies = self.h_copies().ok().flatten().map_or(0, |(_, k)| k as usize);
        let h_copies = shapes.iter().map(|s| s.parameter_bytes()[0] * copies).max().unwrap_or(0);
        let lane = if self.urgent_lane { porep_c2::plan::lane_bytes(&PartitionShape::winning_post()) } else { 0 };
        match self.worker_shape() {
            Some(w) => porep_c2::plan::sized_budget(self.workers_per_device.max(1), &w, &shapes) + h_copies + lane,
            None => 0,
        }
    }

    /// The backend `backend` names: `cpu`; `gpu` (every configured device,
    /// else an error); `auto` (`gpu`, else the CPU after one warning).
    pub fn backend(&self) -> Result<Backend, porep_c2::Error> {
        if self.backend == "cpu" {
            return Ok(Backend::cpu());
        }
        #[cfg(feature = "cuda")]
        {
            let mut g = porep_c2::gpu::GpuBackendConfig {
                devices: self.devices.clone(),
                workers_per_device: self.workers_per_device.max(1),
                ..Default::default()
            };
            if let Some(w) = self.worker_shape() {
                g.plan_for = w;
            }
            // `ServiceConfig::check` refuses a malformed value before this.
            g.h_copies = self.h_copies().unwrap_or_else(|e| {
                log::warn!("porep-c2: {e}; no H copies");
                None
            });
            g.vram.cap = Some(self.vram_cap_bytes()).filter(|&b| b > 0);
            if !self.urgent_lane {
                g.urgent_lane = None;
            }
            let fences = porep_c2::WorkerFences::with_cool_down(std::time::Duration::from_secs(self.fence_secs));
            match porep_c2::gpu::gpu_backend(&g) {
                Ok(b) => Ok(b.with_fences(fences)),
                Err(e) if self.backend == "auto" => {
                    log::warn!("porep-c2: {e}; proving on the CPU");
                    Ok(Backend::cpu())
                }
                Err(e) => Err(e),
            }
        }
        #[cfg(not(feature = "cuda"))]
        {
            let e = porep_c2::Error::gpu("backend", porep_c2::GpuError::NotCompiled);
            if self.backend == "gpu" {
                return Err(e);
            }
            log::warn!("porep-c2: {e}; proving on the CPU");
            Ok(Backend::cpu())
        }
    }
}

/// `[jobs]`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct JobsSection {
    /// Proofs proved at once (their partitions share the GPU workers).
    pub concurrent_proofs: usize,
    /// Proofs of priority HIGH or CRITICAL (WindowPoSt, WinningPoSt)
    /// proved at once beside `concurrent_proofs`: a PoSt never waits for a
    /// C2 proof to end, and its partitions take the GPU workers first.
    pub urgent_proofs: usize,
    /// Nice value (1-19) of the host threads that work for proofs below
    /// HIGH (C2): the host work of urgent proofs (vanilla check, synthesis,
    /// verification of a WindowPoSt or WinningPoSt) runs on threads at the
    /// daemon's own priority, so while both have work the kernel gives the
    /// urgent threads ~90 % of the cores (at 10); with no PoSt in flight C2
    /// has every core. 0: one shared pool, no host priority.
    pub background_nice: i32,
    /// Proofs queued or running at most; beyond, submits are refused
    /// (`RESOURCE_EXHAUSTED`). Match Curio's `[Cuzk] MaxPending`.
    pub max_pending: usize,
    /// Finished jobs remembered for `AwaitProof` and request-id
    /// deduplication.
    pub keep_finished: usize,
    /// Bytes of finished jobs' records at most (their proofs and messages;
    /// request bodies are never kept).
    pub keep_finished_bytes: usize,
}

impl Default for JobsSection {
    fn default() -> Self {
        let d = crate::jobs::JobsConfig::default();
        Self {
            concurrent_proofs: d.concurrent_proofs,
            urgent_proofs: d.urgent_proofs,
            background_nice: DEFAULT_BACKGROUND_NICE,
            max_pending: d.max_pending,
            keep_finished: d.keep_finished,
            keep_finished_bytes: d.keep_finished_bytes,
        }
    }
}

/// Errors reading the configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("reading {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a valid configuration (unknown keys included).
    #[error("{path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: toml::de::Error,
    },
    /// A value is out of range.
    #[error("{0}")]
    Invalid(String),
}

/// `[jobs] background_nice` unless set: CFS weights 1024 (nice 0) against
/// 110 (nice 10) give urgent host threads ~90 % of contended cores.
pub const DEFAULT_BACKGROUND_NICE: i32 = 10;

impl JobsSection {
    /// The host pools for `background_nice` (`None` at 0: rayon's one global
    /// pool for every proof), each one thread per core.
    pub fn host_lanes(&self) -> Result<Option<porep_c2::HostLanes>, ConfigError> {
        if self.background_nice == 0 {
            return Ok(None);
        }
        porep_c2::HostLanes::new(0, self.background_nice, crate::jobs::URGENT_PRIORITY)
            .map(Some)
            .map_err(|e| ConfigError::Invalid(format!("jobs.background_nice = {}: {e}", self.background_nice)))
    }

    /// The job table's settings.
    pub fn jobs_config(&self) -> crate::jobs::JobsConfig {
        crate::jobs::JobsConfig {
            concurrent_proofs: self.concurrent_proofs,
            urgent_proofs: self.urgent_proofs,
            max_pending: self.max_pending,
            keep_finished: self.keep_finished,
            keep_finished_bytes: self.keep_finished_bytes,
        }
    }
}

impl ServiceConfig {
    /// The file at `path`, checked.
    pub fn read(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io { path: path.into(), source })?;
        let c: Self = toml::from_str(&text).map_err(|source| ConfigError::Parse { path: path.into(), source })?;
        c.check()?;
        Ok(c)
    }

    /// Checks the values no type can.
    pub fn check(&self) -> Result<(), ConfigError> {
        let bad = |w: String| Err(ConfigError::Invalid(w));
        if !matches!(self.prover.backend.as_str(), "auto" | "gpu" | "cpu") {
            return bad(format!("prover.backend = {:?}: auto, gpu or cpu", self.prover.backend));
        }
        if !(0..=19).contains(&self.jobs.background_nice) {
            return bad(format!("jobs.background_nice = {}: 0 (off) to 19", self.jobs.background_nice));
        }
        if self.jobs.concurrent_proofs == 0 || self.jobs.max_pending == 0 {
            return bad("jobs.concurrent_proofs and jobs.max_pending must be at least 1".into());
        }
        for (key, ids) in [("preload", &self.prover.preload), ("circuits", &self.prover.circuits)] {
            for id in ids {
                if circuit_sector_size(id).is_none() {
                    return bad(format!("prover.{key}: unknown circuit id {id:?} ({})", known_circuits()));
                }
            }
        }
        self.prover.h_copies()?;
        self.server.serve_options().map(|_| ())
    }

    /// The configuration as TOML (the sample file).
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Device memory is sized for the circuits served: a 2 KiB + 8 MiB
    /// node takes a few GB, a 32 GiB one most of an H200; a cap wins.
    #[test]
    fn device_memory_is_sized_for_the_circuits_served() {
        let gib = |b: usize| b as f64 / (1u64 << 30) as f64;
        let small = ProverSection { preload: vec!["porep-2k".into(), "porep-8m".into()], ..Default::default() };
        // Planned for every kind at 8 MiB: the PoRep partition, with
        // WinningPoSt's public inputs.
        let porep_8m = PartitionShape::for_sector_size(8 << 20).unwrap();
        let winning_8m = PartitionShape::for_proof(porep_c2::plan::ProofFamily::WinningPost, 8 << 20).unwrap();
        assert_eq!(small.worker_shape(), Some(porep_8m.covering(&winning_8m)));
        assert!(winning_8m.inputs > porep_8m.inputs);
        // At 32 GiB the workers hold a WindowPoSt partition too.
        let window_32g = PartitionShape::window_post_32g();
        assert_eq!(
            ProverSection::default().worker_shape().unwrap().covering(&window_32g),
            ProverSection::default().worker_shape().unwrap()
        );
        // Two workers' arenas and the sets, and the urgent lane's 1.5 GB.
        let small_gib = gib(small.vram_cap_bytes());
        assert!((2.0..14.0).contains(&small_gib), "{small_gib}");
        // Nothing named: planned for 32 GiB.
        let default_gib = gib(ProverSection::default().vram_cap_bytes());
        assert!((60.0..139.0).contains(&default_gib), "{default_gib}");
        eprintln!("sized device memory: 2 KiB + 8 MiB {small_gib:.1} GiB, 32 GiB {default_gib:.1} GiB (two workers)");
        // `circuits` wins over `preload`; an explicit cap over both.
        let big = ProverSection { circuits: vec!["porep-32g".into()], ..small.clone() };
        assert_eq!(gib(big.vram_cap_bytes()), default_gib);
        assert_eq!(ProverSection { vram_cap_gib: 16, ..big.clone() }.vram_cap_bytes(), 16 << 30);
        // The urgent lane's worker is counted: under 2 GiB.
        let lane = big.vram_cap_bytes() - ProverSection { urgent_lane: false, ..big }.vram_cap_bytes();
        assert_eq!(lane, porep_c2::plan::lane_bytes(&PartitionShape::winning_post()));
        assert!(lane > 0 && lane < 2 << 30, "{lane}");
        let bad = ServiceConfig {
            prover: ProverSection { circuits: vec!["porep-1t".into()], ..Default::default() },
            ..Default::default()
        };
        assert!(bad.check().is_err());
    }

    /// H copies: parsed, checked, and counted in the sized device memory
    /// (32 GiB at 20x4: four copies of the 12.9 GB H query on top).
    #[test]
    fn h_copies_are_parsed_checked_and_counted() {
        let d = ProverSection::default();
        assert_eq!(d.h_copies().unwrap(), None);
        let with = ProverSection { h_copies: "20x4".into(), ..Default::default() };
        assert_eq!(with.h_copies().unwrap(), Some((20, 4)));
        let h = PartitionShape::for_sector_size(32 << 30).unwrap().parameter_bytes()[0];
        assert_eq!(with.vram_cap_bytes(), d.vram_cap_bytes() + 4 * h);
        assert!((12.0e9..13.0e9).contains(&(h as f64)), "{h}");
        // An explicit cap still wins.
        assert_eq!(ProverSection { vram_cap_gib: 40, ..with }.vram_cap_bytes(), 40 << 30);
        for bad in ["20", "x4", "20x0", "25x2", "20x14", "1x2", "twentyx4", "20x4x1"] {
            let c = ServiceConfig {
                prover: ProverSection { h_copies: bad.into(), ..Default::default() },
                ..Default::default()
            };
            let e = c.check().expect_err(bad).to_string();
            assert!(e.contains("prover.h_copies"), "{bad}: {e}");
        }
    }

    /// The documented sample file is the defaults, key for key.
    #[test]
    fn the_sample_file_holds_the_defaults() {
        let sample: ServiceConfig = toml::from_str(include_str!("../porep-c2.sample.toml")).unwrap();
        assert_eq!(sample, ServiceConfig::default());
    }

    #[test]
    fn defaults_round_trip_and_bad_values_are_refused() {
        let d = ServiceConfig::default();
        assert_eq!(toml::from_str::<ServiceConfig>(&d.to_toml()).unwrap(), d);
        assert_eq!(toml::from_str::<ServiceConfig>("").unwrap(), d);
        d.check().unwrap();
        let c: ServiceConfig =
            toml::from_str("[server]\nlisten = \"127.0.0.1:9820\"\n[prover]\nvram_cap_gib = 16\n").unwrap();
        assert_eq!((c.server.listen.as_str(), c.prover.vram_cap_gib), ("127.0.0.1:9820", 16));
        c.check().unwrap();
        assert!(toml::from_str::<ServiceConfig>("[prover]\nvram_gib = 16\n").is_err(), "unknown key");
        let mut c = d.clone();
        c.prover.backend = "tpu".into();
        assert!(c.check().is_err());
        let mut c = d.clone();
        c.prover.preload = vec!["porep-1t".into()];
        assert!(c.check().is_err());
        let mut c = d.clone();
        c.server.listen = "unix://".into();
        assert!(c.check().is_err());
        for bad in ["0999", "rw", "01777"] {
            let mut c = d.clone();
            c.server.socket_mode = bad.into();
            assert!(c.check().unwrap_err().to_string().contains("socket_mode"), "{bad}");
        }
        let o = d.server.serve_options().unwrap();
        assert_eq!((o.socket_mode, o.socket_group), (0o660, None));
        for bad in [-1, 20] {
            let mut c = d.clone();
            c.jobs.background_nice = bad;
            assert!(c.check().unwrap_err().to_string().contains("background_nice"), "{bad}");
        }
    }

    /// The host lanes the service starts with: PoSt (HIGH, CRITICAL) on
    /// threads at our priority, C2 (NORMAL, LOW) on nice-10 threads; the
    /// engine hands each request the pool of its priority. 0 turns them off.
    #[test]
    fn urgent_requests_get_the_urgent_host_pool() {
        use crate::proto::Priority;
        let jobs = JobsSection::default();
        let lanes = jobs.host_lanes().unwrap().expect("lanes by default");
        assert_eq!((lanes.urgent.nice(), lanes.background.nice()), (0, DEFAULT_BACKGROUND_NICE));
        let engine = crate::FilecoinEngine::new(porep_c2::ProverConfig::default()).with_host_lanes(lanes.clone());
        for (p, urgent) in
            [(Priority::Critical, true), (Priority::High, true), (Priority::Normal, false), (Priority::Low, false)]
        {
            let pool = engine.host_pool(p as i32).unwrap();
            let want = if urgent { &lanes.urgent } else { &lanes.background };
            assert!(std::sync::Arc::ptr_eq(pool, want), "{p:?}");
        }
        let off = JobsSection { background_nice: 0, ..JobsSection::default() };
        assert!(off.host_lanes().unwrap().is_none());
        assert!(crate::FilecoinEngine::new(porep_c2::ProverConfig::default()).host_pool(3).is_none());
    }
}
