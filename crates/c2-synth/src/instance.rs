//! What the Groth16 engine needs from a proof kind: [`ProofInstance`].
//!
//! The engine (the facade's backends, GPU workers, parameter cache, device
//! plan and scheduler) proves any circuit family behind this trait: PoRep's
//! StackedDrg ([`crate::StackedInstance`]), WindowPoSt and WinningPoSt's
//! FallbackPoSt ([`crate::FallbackPoStInstance`]). A new proof kind is one
//! module that implements it: decode and check its vanilla proofs, build its
//! partitions' witnesses (and matrices), give its public inputs.

use std::panic::{catch_unwind, AssertUnwindSafe};

use bellperson::groth16;
use blstrs::{Bls12, Scalar};
use rand_core::RngCore;
use rayon::prelude::*;

use crate::{CompactWitness, ConstraintMatrices, MatrixError, SynthError, Synthesized};

/// How synthesis runs.
#[derive(Clone, Debug)]
pub struct SynthConfig {
    /// Partitions synthesized at the same time. Each 32 GiB partition holds
    /// ~130 M constraints (~20 GB of a/b/c/aux), so this is a memory bound as
    /// much as a CPU one. Default: 2.
    pub max_parallel: usize,
}

impl Default for SynthConfig {
    fn default() -> Self {
        Self { max_parallel: 2 }
    }
}

/// One proof's instance, of any proof kind: everything needed to build and
/// check its partitions' circuits (a PoRep sector's partitions, a
/// WindowPoSt partition, a WinningPoSt proof). Object-safe, so the scheduler
/// and the facade need know neither the proof kind nor the sector's Merkle
/// tree shape.
pub trait ProofInstance: Send + Sync {
    /// Number of partitions (one Groth16 proof each).
    fn num_partitions(&self) -> usize;

    /// Sector size in bytes (for messages and reports).
    fn sector_size(&self) -> u64;

    /// The parameter set's identifier as filecoin-proofs names its cache
    /// files (`v28-<id>.params`), e.g.
    /// `stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-<hash>`.
    fn parameter_id(&self) -> &str;

    /// Verifies the vanilla proofs against the public inputs (cheap, and it
    /// catches tampered or mismatched input before any heavy work).
    fn check_vanilla_proofs(&self) -> Result<(), SynthError>;

    /// Builds partition `k`'s circuit and synthesizes it (the independent
    /// parts of a partition, such as StackedDrg challenges or FallbackPoSt
    /// sectors, concurrently where the instance can: the same result as
    /// [`ProofInstance::synthesize_partition_sequential`], bit for bit).
    fn synthesize_partition(&self, k: usize) -> Result<Synthesized, SynthError>;

    /// The reference path: partition `k`'s circuit synthesized in one pass,
    /// as bellperson's prover does.
    fn synthesize_partition_sequential(&self, k: usize) -> Result<Synthesized, SynthError> {
        self.synthesize_partition(k)
    }

    /// Partition `k`'s witness alone, (inputs, aux), ONE first: the
    /// assignments [`ProofInstance::synthesize_partition`] records, without
    /// evaluating a single constraint (independent parts concurrently and
    /// hashes natively where the instance can).
    fn synthesize_witness(&self, k: usize) -> Result<(Vec<Scalar>, Vec<Scalar>), SynthError> {
        let s = self.synthesize_partition(k)?;
        Ok((s.input_assignment, s.aux_assignment))
    }

    /// Partition `k`'s witness with the aux assignments in compact form
    /// (0/1 as bits, the rest listed): the same values as
    /// [`ProofInstance::synthesize_witness`], ~30x fewer bytes (a 32 GiB
    /// partition's 4.2 GB of aux scalars). Generated compact where the
    /// instance can; otherwise converted.
    fn synthesize_compact_witness(&self, k: usize) -> Result<(Vec<Scalar>, CompactWitness), SynthError> {
        let (inputs, aux) = self.synthesize_witness(k)?;
        Ok((inputs, CompactWitness::from_scalars(&aux)))
    }

    /// The reference for [`ProofInstance::synthesize_witness`]: the same
    /// witness with every gadget of the circuit run as the circuit runs it
    /// (no native hash), on a witness-only constraint system.
    fn synthesize_witness_gadgets(&self, k: usize) -> Result<(Vec<Scalar>, Vec<Scalar>), SynthError> {
        self.synthesize_witness(k)
    }

    /// The circuit shape's constraint matrices, recorded from a blank
    /// circuit (the same for every partition of a shape).
    fn record_matrices(&self) -> Result<ConstraintMatrices, MatrixError> {
        Err(MatrixError::Unsupported(format!("a {} B instance of this kind", self.sector_size())))
    }

    /// The reference for [`ProofInstance::record_matrices`]: the blank
    /// circuit recorded in one pass.
    fn record_matrices_sequential(&self) -> Result<ConstraintMatrices, MatrixError> {
        self.record_matrices()
    }

    /// The matrices cached in `dir` beside the parameters
    /// ([`crate::matrices_path`]), recorded (and written) when missing or
    /// corrupt; `true` when recorded now.
    fn load_or_record_matrices(&self, dir: &std::path::Path) -> Result<(ConstraintMatrices, bool), MatrixError> {
        let path = crate::matrices_path(dir, self.parameter_id());
        match ConstraintMatrices::read(&path) {
            Ok(m) => Ok((m, false)),
            Err(MatrixError::Io { source, .. }) if source.kind() != std::io::ErrorKind::NotFound => {
                Err(MatrixError::Io { path, source })
            }
            Err(e) => {
                if !matches!(e, MatrixError::Io { .. }) {
                    log::warn!("c2-synth: {e}; recording the constraint matrices again");
                }
                let m = self.record_matrices()?;
                m.write(&path)?;
                Ok((m, true))
            }
        }
    }

    /// The public inputs of partition `k`, as a verifier computes them.
    fn public_inputs(&self, k: usize) -> Result<Vec<Scalar>, SynthError>;

    /// Generates random Groth16 parameters for this circuit shape. For tests
    /// and benchmarks only: real provers use the published parameters.
    fn generate_parameters(&self, rng: &mut dyn RngCore) -> Result<groth16::Parameters<Bls12>, SynthError>;

    /// Partitions `partitions` proved by bellperson's own prover
    /// (`create_proof_batch`, the call filecoin-proofs makes) with blinding
    /// `r[i]`, `s[i]` for `partitions[i]`: the reference the engine's bytes
    /// are compared with, and the prover of the peer benchmark (bellperson's
    /// CUDA prover in a build with its `cuda` feature).
    fn bellperson_proofs(
        &self,
        params: &groth16::Parameters<Bls12>,
        partitions: &[usize],
        r: &[Scalar],
        s: &[Scalar],
    ) -> Result<Vec<groth16::Proof<Bls12>>, SynthError>;
}

/// [`ProofInstance::bellperson_proofs`] once the circuits are built: one
/// `create_proof_batch` call, its errors (and panics) typed. Public for
/// instances outside this crate (test and benchmark circuits).
pub fn prove_with_bellperson<C: bellperson::Circuit<Scalar> + Send>(
    circuits: Vec<C>,
    params: &groth16::Parameters<Bls12>,
    r: &[Scalar],
    s: &[Scalar],
) -> Result<Vec<groth16::Proof<Bls12>>, SynthError> {
    if r.len() != circuits.len() || s.len() != circuits.len() {
        return Err(SynthError::Circuit {
            partition: 0,
            message: format!("{} circuits but {} r and {} s", circuits.len(), r.len(), s.len()),
        });
    }
    no_panic(0, || {
        groth16::create_proof_batch(circuits, params, r.to_vec(), s.to_vec())
            .map_err(|source| SynthError::Synthesis { partition: 0, source })
    })
}

/// Runs `f`, turning a panic inside third-party code (storage-proofs on
/// malformed proofs) into a typed error instead of unwinding into the caller.
pub(crate) fn no_panic<T>(partition: usize, f: impl FnOnce() -> Result<T, SynthError>) -> Result<T, SynthError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let message = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into());
        Err(SynthError::Circuit { partition, message: format!("panicked: {message}") })
    })
}

/// Synthesizes the given partitions, at most `config.max_parallel` at a time,
/// returning results in the order of `partitions`.
pub fn synthesize_partitions(
    instance: &dyn ProofInstance,
    partitions: &[usize],
    config: &SynthConfig,
) -> Result<Vec<Synthesized>, SynthError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(config.max_parallel.max(1))
        .thread_name(|i| format!("c2-synth-{i}"))
        .build()
        .map_err(|e| SynthError::Unsupported(format!("thread pool: {e}")))?;
    pool.install(|| partitions.par_iter().map(|&k| instance.synthesize_partition(k)).collect())
}
