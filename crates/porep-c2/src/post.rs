//! WindowPoSt and WinningPoSt on the same engine as C2: the FallbackPoSt
//! instance ([`c2_synth::FallbackPoStInstance`]) through the same backends,
//! GPU workers, parameter cache and scheduler as a PoRep partition.

use c2_synth::{post_instance, PoStKind, ProofInstance};
use filecoin_proofs_api::{ProverId, RegisteredPoStProof};

use crate::config::ProverConfig;
use crate::error::Error;
use crate::prover::{blinding_pairs, prove_loaded};
use crate::report::ProofReport;

/// Proves one WindowPoSt partition: the contract of filecoin-proofs-api's
/// `generate_single_window_post_with_vanilla` (same inputs, the same 192
/// bytes for the same r and s), with the stages and randomness chosen by
/// `config`.
///
/// `vanilla_proofs` holds one bincode `FallbackPoStSectorProof` per sector
/// of the partition (as `generate_single_vanilla_proof` writes them and
/// Curio sends them), at most the proof type's sector count (2349 at
/// 32 GiB); fewer are padded with the last one, as filecoin-proofs pads.
/// The vanilla proofs are checked before any parameters are read (unless
/// `config.check_vanilla_proofs` is off), and the proof is verified against
/// the verifying key before it is returned (unless `config.verify` is off).
pub fn prove_window_post(
    registered_proof: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: ProverId,
    vanilla_proofs: &[Vec<u8>],
    partition_index: usize,
    config: &ProverConfig,
) -> Result<Vec<u8>, Error> {
    prove_window_post_with_report(registered_proof, randomness, prover_id, vanilla_proofs, partition_index, config)
        .map(|(proof, _)| proof)
}

/// [`prove_window_post`], also returning where the time went.
pub fn prove_window_post_with_report(
    registered_proof: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: ProverId,
    vanilla_proofs: &[Vec<u8>],
    partition_index: usize,
    config: &ProverConfig,
) -> Result<(Vec<u8>, ProofReport), Error> {
    let kind = PoStKind::Window { partition_index };
    let instance = post_instance(registered_proof, kind, randomness, &prover_id, vanilla_proofs)?;
    prove_post(instance.as_ref(), config)
}

/// Proves a WinningPoSt: the contract of filecoin-proofs-api's
/// `generate_winning_post_with_vanilla` (its one proof's bytes, 192, the
/// same for the same r and s). `vanilla_proofs` holds the one challenged
/// sector's bincode `FallbackPoStSectorProof` (66 challenged leaves). Checks
/// and verification as [`prove_window_post`].
pub fn prove_winning_post(
    registered_proof: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: ProverId,
    vanilla_proofs: &[Vec<u8>],
    config: &ProverConfig,
) -> Result<Vec<u8>, Error> {
    prove_winning_post_with_report(registered_proof, randomness, prover_id, vanilla_proofs, config)
        .map(|(proof, _)| proof)
}

/// [`prove_winning_post`], also returning where the time went.
pub fn prove_winning_post_with_report(
    registered_proof: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: ProverId,
    vanilla_proofs: &[Vec<u8>],
    config: &ProverConfig,
) -> Result<(Vec<u8>, ProofReport), Error> {
    let instance = post_instance(registered_proof, PoStKind::Winning, randomness, &prover_id, vanilla_proofs)?;
    prove_post(instance.as_ref(), config)
}

fn prove_post(instance: &dyn ProofInstance, config: &ProverConfig) -> Result<(Vec<u8>, ProofReport), Error> {
    let blinding = blinding_pairs(&config.randomness, instance.num_partitions())?;
    prove_loaded(instance, &blinding, config)
}
