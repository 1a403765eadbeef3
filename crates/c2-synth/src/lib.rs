//! Circuit synthesis for Filecoin PoRep C2.
//!
//! Two layers:
//! - [`synthesize`] runs any bellperson [`Circuit`](bellperson::Circuit) through
//!   [`WitnessCs`], our constraint system, and returns an owned [`Synthesized`]:
//!   the A/B/C evaluations per constraint, the input and aux assignments and the
//!   density masks. It is bit-identical to bellperson 0.27's private
//!   `ProvingAssignment`, including the `x · 0 = 0` constraint appended per
//!   public input.
//! - [`ProofInstance`] is one sealed sector's C1 output with its typed context:
//!   it builds partition `k`'s StackedDrg circuit exactly as
//!   `filecoin_proofs::seal_commit_phase2` does (through storage-proofs-porep's
//!   `StackedCompound::circuit`), and gives the public inputs a verifier uses.
//!   [`instance_from_c1`] makes one from the filecoin-proofs-api C1 type that
//!   Lotus and Curio write.
#![deny(missing_docs)]

mod cc_sector;
mod check;
mod cs;
mod instance;
mod matrices;
mod native;
mod porep;
mod post;
mod post_sectors;
mod update;
mod update_circuit;
mod update_sectors;

pub use c2_core::{CompactWitness, Density, Synthesized};
pub use cc_sector::{cc_sector, CcSector, CcSectorConfig};
pub use check::{check_satisfied, first_unsatisfied};
pub use cs::{synthesize, AssignmentCs, CompactCs, WitnessCs};
pub use instance::{prove_with_bellperson, synthesize_partitions, ProofInstance, SynthConfig};
pub use matrices::{matrices_path, ConstraintMatrices, MatrixError, ParameterLengths, SparseMatrix};
pub use porep::{instance_from_c1, StackedInstance};
pub use post::{post_instance, FallbackPoStInstance, PoStInputError, PoStKind};
pub use post_sectors::{post_test_partition, post_test_sectors, PoStTestPartition, PoStTestSector};
pub use update::{update_instance, EmptySectorUpdateInstance, UpdateInputError};
pub use update_sectors::{update_test_sector, UpdateTestSector};

/// Errors of the synthesis stage; each names what was wrong with the input.
#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    /// A commitment or seed in the C1 output is all zeros.
    #[error("C1 output: {0} is all zeros")]
    ZeroCommitment(&'static str),
    /// A commitment is not a valid field element.
    #[error("C1 output: {0} is not a canonical field element")]
    InvalidCommitment(&'static str),
    /// The C1 output holds no vanilla proofs, or a partition holds none.
    #[error("C1 output contains no vanilla proofs (or an empty partition)")]
    NoVanillaProofs,
    /// The vanilla proofs do not match the registered proof type.
    #[error("C1 output: vanilla proofs do not match {registered_proof}: {reason}")]
    VanillaProofShape {
        /// The registered proof named in the C1 output.
        registered_proof: String,
        /// What did not match.
        reason: String,
    },
    /// Partition count differs from the registered proof's.
    #[error("C1 output has {actual} partitions of vanilla proofs; {expected} expected")]
    PartitionCount {
        /// Expected number of partitions.
        expected: usize,
        /// Partitions found.
        actual: usize,
    },
    /// The C1 replica id does not derive from this prover id, sector id,
    /// ticket and comm_d: the proof would never verify for them.
    #[error("C1 replica_id does not match prover id, sector id, ticket and comm_d (wrong sector or prover id?)")]
    ReplicaIdMismatch,
    /// A PoSt request's input is malformed or does not verify.
    #[error("PoSt input: {0}")]
    PoSt(#[from] PoStInputError),
    /// A sector update (SnapDeals) request's input is malformed or does
    /// not verify.
    #[error("sector update input: {0}")]
    Update(#[from] UpdateInputError),
    /// The vanilla proofs do not verify against the C1's commitments.
    #[error("C1 vanilla proofs do not verify against comm_r/comm_d/seed (tampered or corrupt C1)")]
    InvalidVanillaProofs,
    /// The proof type is not supported by this prover.
    #[error("unsupported proof type: {0}")]
    Unsupported(String),
    /// Partition index out of range.
    #[error("partition {k} requested; the instance has {count}")]
    NoSuchPartition {
        /// Requested.
        k: usize,
        /// Available.
        count: usize,
    },
    /// Building a circuit or its public inputs failed in storage-proofs.
    #[error("building circuit for partition {partition}: {message}")]
    Circuit {
        /// Partition index.
        partition: usize,
        /// The underlying message.
        message: String,
    },
    /// A synthesized partition does not satisfy its constraints: the first
    /// constraint `i` with `a_i · b_i ≠ c_i` ([`check_satisfied`]).
    #[error("partition does not satisfy its constraints: constraint {constraint} has a·b ≠ c (of {constraints})")]
    Unsatisfied {
        /// Index of the first failing constraint (input constraints included).
        constraint: usize,
        /// Constraints checked.
        constraints: usize,
    },
    /// The circuit's own synthesis failed (an unsatisfiable witness computation).
    #[error("synthesizing partition {partition}: {source}")]
    Synthesis {
        /// Partition index (0 for a lone circuit).
        partition: usize,
        /// bellperson's error.
        #[source]
        source: bellperson::SynthesisError,
    },
}
