//! What a proof is made with: parameters, randomness, backends, pipeline,
//! retries, progress. The environment is read here only, by
//! [`ProverConfig::from_env`].

use std::sync::Arc;

use blstrs::Scalar;
use c2_sched::PipelineConfig;

use crate::backend::Backend;
use crate::params::ParamsSource;
use crate::params_cache::ParamsCache;

/// Where the blinding factors `r`, `s` come from.
#[derive(Clone, Debug, Default)]
pub enum Randomness {
    /// The operating system's RNG (the default, as in filecoin-proofs).
    #[default]
    Os,
    /// A ChaCha20 stream from this seed: reproducible proofs for tests and
    /// audits. Never use a fixed seed in production: equal `r`, `s` across
    /// proofs leak the witness.
    Seed([u8; 32]),
    /// Exactly these `(r, s)`, one pair per partition.
    Explicit(Vec<(Scalar, Scalar)>),
}

/// How partitions are synthesized. Every path gives the same record (and
/// so the same proof bytes); they differ in speed and memory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum SynthesisPath {
    /// [`SynthesisPath::Matrices`] (kept in memory) for sectors of several
    /// partitions or shapes whose matrices this config already holds,
    /// [`SynthesisPath::Circuit`] otherwise. Recording pays for itself
    /// within one proof of several partitions (32 GiB on the H200 host's 16
    /// cores: recorded in 25 s, then 9.0 s per partition instead of 25.3 s),
    /// not for one lone partition (2 KiB: 2.3 s to record, 0.4 s saved).
    #[default]
    Auto,
    /// [`SynthesisPath::Matrices`] kept in memory for every shape that can
    /// be recorded, one-partition sectors included ([`SynthesisPath::Circuit`]
    /// for shapes that cannot): for long-lived processes (`porep-c2 serve`,
    /// `porep-c2 bench`) that prove many sectors of a size, where the
    /// recording is paid once and every proof after takes the witness path
    /// (real 8 MiB on the H200 host, 16 in flight: 0.41 s/proof on the
    /// circuit path, 0.08 s/proof on the witness path).
    Recorded,
    /// The constraint system evaluates a, b, c as it goes, a partition's
    /// challenges concurrently (`ProofInstance::synthesize_partition`).
    Circuit,
    /// One sequential pass, as bellperson's prover does: the reference.
    Sequential,
    /// Only the witness is synthesized (challenges concurrently), then
    /// a, b, c = A·z, B·z, C·z from the shape's constraint matrices,
    /// recorded once per process and shape, and cached on disk in
    /// `cache_dir` when given (beside the parameters: a corrupt file is
    /// recorded again).
    Matrices {
        /// Where the matrices are cached between processes.
        cache_dir: Option<std::path::PathBuf>,
    },
}

/// One circuit shape's constraint matrices with the MSM densities they
/// imply (computed once: a scan of every entry, 722 M at 32 GiB).
#[derive(Debug)]
pub struct ShapeMatrices {
    /// The parameter set's id the shape belongs to (one per shape).
    pub parameter_id: String,
    /// A, B, C.
    pub matrices: c2_synth::ConstraintMatrices,
    /// A's aux, B's input and B's aux densities.
    pub densities: (c2_core::Density, c2_core::Density, c2_core::Density),
    /// The matrices with their repeated blocks kept once, found on first
    /// use (a GPU worker that keeps them resident; `None`: no repeat).
    repeated: std::sync::OnceLock<Option<Arc<c2_abc::RepeatedMatrices>>>,
}

impl ShapeMatrices {
    /// `matrices` of `parameter_id`'s shape with their densities.
    pub fn new(parameter_id: &str, matrices: c2_synth::ConstraintMatrices) -> Self {
        let densities = matrices.densities();
        Self { parameter_id: parameter_id.to_string(), matrices, densities, repeated: std::sync::OnceLock::new() }
    }

    /// The compact form of the matrices (`c2_abc::find_repeat`: a
    /// partition's challenge blocks kept once, about 1/18 of the bytes at
    /// 32 GiB), found by the first caller, or `None` when no rows repeat.
    pub fn repeated(&self) -> Option<&Arc<c2_abc::RepeatedMatrices>> {
        self.repeated
            .get_or_init(|| {
                let t = std::time::Instant::now();
                let found = c2_abc::RepeatedMatrices::find(&self.matrices.view()).map(Arc::new);
                match &found {
                    Some(r) => log::info!(
                        "porep-c2: constraint matrices of {}: {} blocks of {} rows repeat; {:.3} GB kept of {:.2} GB (found in {:.2?})",
                        self.parameter_id,
                        r.repeat.blocks,
                        r.repeat.block_rows,
                        r.bytes() as f64 / 1e9,
                        self.matrices.bytes() as f64 / 1e9,
                        t.elapsed()
                    ),
                    None => log::info!("porep-c2: constraint matrices of {}: no repeated rows", self.parameter_id),
                }
                found
            })
            .as_ref()
    }
}

/// Constraint matrices recorded in this process, by parameter id (shared by
/// clones of a [`ProverConfig`]).
#[derive(Debug, Default)]
pub struct MatrixStore {
    sets: std::sync::Mutex<Vec<(String, Arc<ShapeMatrices>)>>,
}

impl MatrixStore {
    /// Whether this store holds the matrices of `parameter_id`'s shape.
    pub fn holds(&self, parameter_id: &str) -> bool {
        self.sets.lock().unwrap_or_else(|p| p.into_inner()).iter().any(|(id, _)| id == parameter_id)
    }

    /// The matrices of `instance`'s shape: from this store, else from
    /// `cache_dir`, else recorded now (and written there).
    pub fn get(
        &self,
        instance: &dyn c2_synth::ProofInstance,
        cache_dir: Option<&std::path::Path>,
    ) -> Result<Arc<ShapeMatrices>, c2_synth::MatrixError> {
        // Held while recording: two proofs of one shape record it once.
        let mut sets = self.sets.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, m)) = sets.iter().find(|(id, _)| id == instance.parameter_id()) {
            return Ok(m.clone());
        }
        let m = match cache_dir {
            Some(dir) => instance.load_or_record_matrices(dir)?.0,
            None => instance.record_matrices()?,
        };
        let m = Arc::new(ShapeMatrices::new(instance.parameter_id(), m));
        sets.push((instance.parameter_id().to_string(), m.clone()));
        Ok(m)
    }
}

/// Everything `prove_porep_c2` needs besides the C1 output.
#[derive(Clone, Debug)]
pub struct ProverConfig {
    /// Where the Groth16 parameters are. Default: filecoin-proofs' default
    /// folder; [`ProverConfig::from_env`] honours `FIL_PROOFS_PARAMETER_CACHE`.
    pub params: ParamsSource,
    /// Loaded parameter sets, shared by every proof made with this config or
    /// a clone of it: a file is read once, not once per proof (bounded:
    /// [`ParamsCache::new`]; default 64 GiB of sets nobody holds).
    pub params_cache: Arc<ParamsCache>,
    /// Blinding randomness. Default: the OS RNG.
    pub randomness: Randomness,
    /// Verify the proof before returning it (filecoin-proofs always does).
    /// Default: true. A proof that fails is never returned.
    pub verify: bool,
    /// Verify the C1 vanilla proofs before synthesis, so a tampered or
    /// mismatched C1 is reported before minutes of work. Default: true.
    pub check_vanilla_proofs: bool,
    /// Synthesis workers and queue depth in front of the prover. With a
    /// `host_budget`, each partition is admitted on an estimate of its host
    /// bytes (`item_bytes` when non-zero; else twice the largest partition
    /// seen in the run, or before any, the shape's
    /// [`crate::compact_witness_estimate`]) and its permit is settled to what
    /// the synthesized partition really holds
    /// ([`Partition::host_bytes`](crate::Partition::host_bytes)), so the
    /// budget's `settled_peak` is the host memory of the partitions in flight.
    pub pipeline: PipelineConfig,
    /// How partitions are synthesized (default: [`SynthesisPath::Auto`]).
    pub synthesis: SynthesisPath,
    /// Constraint matrices recorded by this config and its clones
    /// ([`SynthesisPath::Matrices`]).
    pub matrices: Arc<MatrixStore>,
    /// NTT and MSM implementations. Default: CPU ([`ProverConfig::from_env`]
    /// picks [`Backend::auto`]).
    pub backend: Backend,
    /// Where a partition goes when `backend` fails with a device error
    /// ([`crate::Error::is_backend_failure`]): it is synthesized again and proved
    /// there, so a GPU fault costs time, not the proof. Default: the CPU.
    /// `None`: the error is returned.
    pub retry_backend: Option<Backend>,
    /// Told each partition's index as soon as its proof is done (from a
    /// prover thread), e.g. for a progress bar. Default: none.
    pub progress: Option<Progress>,
}

/// What happened to one partition, for [`ProverConfig::progress`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionEvent {
    /// Partition `partition` got its turn on `device` (`None`: the host's
    /// stages) after synthesis and admission: its kernels start now.
    Started {
        /// The partition's index.
        partition: usize,
        /// The device ordinal, or `None` on the host.
        device: Option<usize>,
    },
    /// Partition `partition`'s proof is done (on its retry backend when the
    /// first one failed).
    Done {
        /// The partition's index.
        partition: usize,
    },
}

/// A per-partition progress callback for [`ProverConfig::progress`].
#[derive(Clone)]
pub struct Progress(Arc<dyn Fn(PartitionEvent) + Send + Sync>);

impl Progress {
    /// Calls `f(k)` when partition `k`'s proof is done.
    pub fn new(f: impl Fn(usize) + Send + Sync + 'static) -> Self {
        Self::events(move |e| {
            if let PartitionEvent::Done { partition } = e {
                f(partition)
            }
        })
    }

    /// Calls `f` with every [`PartitionEvent`] (e.g. a service showing which
    /// job each device works on).
    pub fn events(f: impl Fn(PartitionEvent) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// Delivers `e` to the callback (the facade does, per partition; a
    /// wrapper forwarding to another `Progress` may too).
    pub fn event(&self, e: PartitionEvent) {
        (self.0)(e)
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress(..)")
    }
}

impl Default for ProverConfig {
    fn default() -> Self {
        Self {
            params: ParamsSource::default(),
            params_cache: Arc::new(ParamsCache::default()),
            randomness: Randomness::Os,
            verify: true,
            check_vanilla_proofs: true,
            pipeline: PipelineConfig::default(),
            synthesis: SynthesisPath::default(),
            matrices: Arc::new(MatrixStore::default()),
            backend: Backend::default(),
            retry_backend: Some(Backend::cpu()),
            progress: None,
        }
    }
}

impl ProverConfig {
    /// The defaults, with the parameter folder taken from the environment as
    /// filecoin-proofs does (the only environment read in this crate) and the
    /// fastest backend available ([`Backend::auto`]).
    pub fn from_env() -> Self {
        Self { params: ParamsSource::from_env(), backend: Backend::auto(), ..Self::default() }
    }
}
