//! SnapDeals (empty sector update) on the same engine as C2: the
//! EmptySectorUpdate instance ([`c2_synth::EmptySectorUpdateInstance`])
//! through the same backends, GPU workers, parameter cache and scheduler.

use c2_synth::update_instance;
use filecoin_proofs_api::RegisteredUpdateProof;

use crate::config::ProverConfig;
use crate::error::Error;
use crate::prover::{blinding_pairs, prove_loaded};
use crate::report::ProofReport;

/// Proves a sector update: the contract of filecoin-proofs-api's
/// `generate_empty_sector_update_proof_with_vanilla` (same inputs, the same
/// bytes for the same r and s: 192 per partition, 16 partitions from
/// 512 MiB up), with the stages and randomness chosen by `config`.
///
/// `vanilla_proofs` holds one bincode `PartitionProof` per partition (as
/// `generate_partition_proofs` writes them and Curio sends them), in
/// partition order; the commitments are their raw 32 bytes. The vanilla
/// proofs are checked before any parameters are read (unless
/// `config.check_vanilla_proofs` is off; filecoin-proofs does not check
/// them), and the proof is verified against the verifying key before it
/// is returned (unless `config.verify` is off).
pub fn prove_empty_sector_update(
    registered_proof: RegisteredUpdateProof,
    vanilla_proofs: &[Vec<u8>],
    comm_r_old: &[u8; 32],
    comm_r_new: &[u8; 32],
    comm_d_new: &[u8; 32],
    config: &ProverConfig,
) -> Result<Vec<u8>, Error> {
    prove_empty_sector_update_with_report(registered_proof, vanilla_proofs, comm_r_old, comm_r_new, comm_d_new, config)
        .map(|(proof, _)| proof)
}

/// [`prove_empty_sector_update`], also returning where the time went.
pub fn prove_empty_sector_update_with_report(
    registered_proof: RegisteredUpdateProof,
    vanilla_proofs: &[Vec<u8>],
    comm_r_old: &[u8; 32],
    comm_r_new: &[u8; 32],
    comm_d_new: &[u8; 32],
    config: &ProverConfig,
) -> Result<(Vec<u8>, ProofReport), Error> {
    let instance = update_instance(registered_proof, vanilla_proofs, comm_r_old, comm_r_new, comm_d_new)?;
    let blinding = blinding_pairs(&config.randomness, instance.num_partitions())?;
    prove_loaded(instance.as_ref(), &blinding, config)
}
