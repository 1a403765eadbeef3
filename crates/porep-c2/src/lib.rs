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
//! (the pipeline). A [`Backend`] is either host-level stages
//! ([`HostStages`]) or whole-partition workers ([`PartitionProver`]; with
//! the `cuda` feature, `gpu::GpuProver`: the device-level GPU path,
//! parameters resident).
//!
//! Modules, each importing only those listed before it: `params` (files,
//! keys) → `params_cache` (each file read once per process) → [`plan`] (device working sets, pure) → `error` → `report`
//! (timings) → `groth16` (the math: shape check,
//! the one MSM sequence, assembly) → `backend` (stages or workers, gates,
//! fences) → `drill` (a device made to fail, on purpose) →
//! `gpu` (the GPU workers and their factory) → `select` ([`Backend::auto`])
//! → `config` → `c1`, `prover` (the flow).
#![deny(missing_docs)]

mod backend;
mod c1;
mod config;
mod drill;
mod error;
#[cfg(feature = "cuda")]
pub mod gpu;
mod groth16;
mod lobby;
mod params;
mod params_cache;
pub mod params_check;
#[cfg(feature = "cuda")]
pub mod pins;
pub mod plan;
mod post;
mod prover;
mod report;
mod select;
mod update;

pub use backend::{
    compact_witness_estimate, panic_message, Backend, Partition, PartitionJob, PartitionProver, UrgentLane,
    UrgentWorkers, Witness, WorkerFences, WorkerGates, WorkerLobby, Workers,
};
pub use c1::{parse_c1_json, read_c1_json, C1Envelope, C1Input};
pub use c2_core::{CompactWitness, Density, Synthesized};
pub use c2_cuda::{DriverError, GpuError, NoGpu, OutOfBudget};
pub use c2_msm::Msm;
pub use c2_ntt::Ntt;
pub use c2_sched::{
    AdmissionError, CancelToken, HostBudget, HostLanes, HostPermit, HostPool, HostPoolError, PipelineConfig,
};
pub use c2_synth::{
    instance_from_c1, post_instance, update_instance, EmptySectorUpdateInstance, FallbackPoStInstance, PoStInputError,
    PoStKind, ProofInstance, UpdateInputError,
};
pub use config::{MatrixStore, PartitionEvent, Progress, ProverConfig, Randomness, ShapeMatrices, SynthesisPath};
pub use drill::{DrillCounts, FaultDrill};
pub use error::Error;
pub use filecoin_proofs_api::seal::{SealCommitPhase1Output, SealCommitPhase2Output};
pub use filecoin_proofs_api::{ProverId, SectorId};
pub use filecoin_proofs_api::{RegisteredPoStProof, RegisteredUpdateProof};
pub use groth16::{check_parameters, prove_synthesized, HostStages};
pub use params::{
    params_key, params_path, read_parameters, read_verifying_key, verifying_key_path, write_parameters,
    write_verifying_key, ParamsError, ParamsSource, DEFAULT_PARAMETER_CACHE, PARAMETER_CACHE_ENV,
};
pub use params_cache::{parameter_bytes, FileIdentity, ParamsCache};
pub use post::{prove_window_post, prove_window_post_with_report, prove_winning_post, prove_winning_post_with_report};
pub use prover::{
    blinding_pairs, prove_instance, prove_porep_c2, prove_porep_c2_with_report, prove_porep_c2_with_rng,
    verify_porep_c2, SINGLE_PARTITION_PROOF_LEN,
};
pub use report::{device_busy_ms, GpuTimes, PartitionReport, ProofReport, ProveTimings};
pub use update::{prove_empty_sector_update, prove_empty_sector_update_with_report};
