//! Filecoin PoRep commit phase 2 (C2): turns a sealed sector's C1 output into
//! the Groth16 proof bytes that `filecoin_proofs::seal_commit_phase2` returns.
//!
//! ```no_run
//! use porep_c2::{prove_porep_c2, ProverConfig};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let c1 = porep_c2::read_c1_json(std::path::Path::new("c1.json"))?;
//! let prover_id = [0u8; 32];
//! let config = ProverConfig::from_env(); // parameters from FIL_PROOFS_PARAMETER_CACHE
//! let out = prove_porep_c2(&c1, prover_id, 1.into(), &config)?;
//! assert_eq!(out.proof.len(), 192 * 10); // a 32 GiB sector: 10 partitions
//! # Ok(()) }
//! ```
//!
//! The stages are separate crates behind small traits: [`c2_synth`]
//! (circuits), [`c2_ntt::Ntt`] (H), [`c2_msm::Msm`] (MSMs) and [`c2_sched`]
//! (the pipeline). [`Backend`] picks the NTT and MSM implementations, or
//! whole-partition workers ([`PartitionProver`]; with the `cuda` feature,
//! `gpu::GpuProver`: the device-level GPU path, parameters resident).
#![deny(missing_docs)]

pub mod demo;
#[cfg(feature = "cuda")]
pub mod gpu;
mod groth16;
mod params;
mod prover;
pub mod synthetic;

pub use c2_msm::{Density, Msm};
pub use c2_ntt::Ntt;
pub use c2_sched::{AdmissionError, CancelToken, HostBudget, HostPermit, PipelineConfig};
pub use c2_synth::{instance_from_c1, PorepInstance, Synthesized};
pub use filecoin_proofs_api::seal::{SealCommitPhase1Output, SealCommitPhase2Output};
pub use filecoin_proofs_api::{ProverId, SectorId};
pub use groth16::{
    check_parameters, device_busy_ms, prove_synthesized, Backend, GpuTimes, PartitionProver, ProveTimings, WorkerGates,
};
pub use params::{
    params_path, read_parameters, read_verifying_key, verifying_key_path, write_parameters,
    ParamsError, ParamsSource, DEFAULT_PARAMETER_CACHE, PARAMETER_CACHE_ENV,
};
pub use prover::{
    blinding_pairs,
    prove_instance, prove_porep_c2, prove_porep_c2_with_report, prove_porep_c2_with_rng,
    PartitionReport, ProofReport,
};

use std::path::Path;
use std::sync::Arc;

use blstrs::Scalar;

/// Size of one partition's proof: A (G1, 48) || B (G2, 96) || C (G1, 48).
pub const SINGLE_PARTITION_PROOF_LEN: usize = 192;

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

/// Everything `prove_porep_c2` needs besides the C1 output.
#[derive(Clone, Debug)]
pub struct ProverConfig {
    /// Where the Groth16 parameters are. Default: filecoin-proofs' default
    /// folder; [`ProverConfig::from_env`] honours `FIL_PROOFS_PARAMETER_CACHE`.
    pub params: ParamsSource,
    /// Blinding randomness. Default: the OS RNG.
    pub randomness: Randomness,
    /// Verify the proof before returning it (filecoin-proofs always does).
    /// Default: true. A proof that fails is never returned.
    pub verify: bool,
    /// Verify the C1 vanilla proofs before synthesis, so a tampered or
    /// mismatched C1 is reported before minutes of work. Default: true.
    pub check_vanilla_proofs: bool,
    /// Synthesis workers and queue depth in front of the prover.
    pub pipeline: PipelineConfig,
    /// NTT and MSM implementations. Default: CPU ([`ProverConfig::from_env`]
    /// picks [`Backend::auto`]).
    pub backend: Backend,
    /// Where a partition goes when `backend` fails with a device error
    /// ([`Error::is_backend_failure`]): it is synthesized again and proved
    /// there, so a GPU fault costs time, not the proof. Default: the CPU.
    /// `None`: the error is returned.
    pub retry_backend: Option<Backend>,
    /// Told each partition's index as soon as its proof is done (from a
    /// prover thread), e.g. for a progress bar. Default: none.
    pub progress: Option<Progress>,
}

/// A per-partition progress callback for [`ProverConfig::progress`].
#[derive(Clone)]
pub struct Progress(Arc<dyn Fn(usize) + Send + Sync>);

impl Progress {
    /// Calls `f(k)` when partition `k`'s proof is done.
    pub fn new(f: impl Fn(usize) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    pub(crate) fn partition_done(&self, k: usize) {
        (self.0)(k)
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
            randomness: Randomness::Os,
            verify: true,
            check_vanilla_proofs: true,
            pipeline: PipelineConfig::default(),
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

/// Everything that can go wrong, by stage.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The C1 output could not be read or parsed.
    #[error("C1 output {source_name}: {message}")]
    InvalidC1 {
        /// File name or "input".
        source_name: String,
        /// The parser's message.
        message: String,
    },
    /// Circuit construction or synthesis failed, or the C1 is inconsistent.
    #[error(transparent)]
    Synthesis(#[from] c2_synth::SynthError),
    /// Parameters could not be read.
    #[error(transparent)]
    Params(#[from] ParamsError),
    /// Parameters do not belong to this circuit.
    #[error("Groth16 parameters do not fit the circuit: {query} expects {expected}, parameters have {actual} (parameters for another sector size or proof type?)")]
    ParamsMismatch {
        /// Which query.
        query: &'static str,
        /// What the circuit needs.
        expected: usize,
        /// What the parameters hold.
        actual: usize,
    },
    /// The NTT stage failed.
    #[error(transparent)]
    Ntt(#[from] c2_ntt::NttError),
    /// The MSM stage failed.
    #[error(transparent)]
    Msm(#[from] c2_msm::MsmError),
    /// A device failed outside the NTT and MSM stages (memory, copies,
    /// parameter residency).
    #[error("device: {0}")]
    Device(String),
    /// Explicit randomness has the wrong number of pairs.
    #[error("{given} (r, s) pairs given for {partitions} partitions")]
    Randomness {
        /// Pairs given.
        given: usize,
        /// Partitions.
        partitions: usize,
    },
    /// The finished proof does not verify (it is not returned).
    #[error("proof of partition(s) {partitions:?} failed verification; no proof returned")]
    VerificationFailed {
        /// Failing partitions.
        partitions: Vec<usize>,
    },
    /// The verifier itself failed.
    #[error("verifier error: {0}")]
    Verifier(String),
    /// A pipeline worker panicked.
    #[error("pipeline: {0}")]
    Pipeline(String),
    /// The proof was cancelled (`ProverConfig::pipeline.cancel`).
    #[error("proof cancelled")]
    Cancelled,
    /// A partition can never fit the host memory budget
    /// (`ProverConfig::pipeline.host_budget` / `item_bytes`).
    #[error(transparent)]
    HostMemory(#[from] c2_sched::AdmissionError),
}

impl Error {
    /// True for failures of a stage backend itself (a GPU error, an
    /// injected fault), as opposed to bad input: the partition can be
    /// retried on another backend.
    pub fn is_backend_failure(&self) -> bool {
        matches!(
            self,
            Error::Ntt(c2_ntt::NttError::Backend { .. })
                | Error::Msm(c2_msm::MsmError::Backend { .. })
                | Error::Device(_)
        )
    }
}

/// Parses a C1 output from filecoin-proofs-api's JSON (what Lotus and Curio
/// write).
pub fn parse_c1_json(bytes: &[u8]) -> Result<SealCommitPhase1Output, Error> {
    serde_json::from_slice(bytes)
        .map_err(|e| Error::InvalidC1 { source_name: "input".into(), message: e.to_string() })
}

/// Reads and parses a C1 JSON file.
pub fn read_c1_json(path: &Path) -> Result<SealCommitPhase1Output, Error> {
    let bytes = std::fs::read(path).map_err(|e| Error::InvalidC1 {
        source_name: path.display().to_string(),
        message: e.to_string(),
    })?;
    serde_json::from_slice(&bytes).map_err(|e| Error::InvalidC1 {
        source_name: path.display().to_string(),
        message: e.to_string(),
    })
}
