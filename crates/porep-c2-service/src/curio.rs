//! Requests as Curio builds them (`lib/ffi/cuzk_funcs.go`: its PoRep,
//! SnapDeals, WindowPoSt and WinningPoSt requests), field for field, for the tests,
//! the device benchmarks and load tools: what a node really sends, not a
//! dialect of our own.

use crate::proto::{self, ProofKind as WireKind};

/// A PoRep C2 request: id `fmt.Sprintf("porep-%d-%d", miner, number)` (fixed
/// per sector; Curio's retries reuse it), NORMAL, `vanilla_proof` = the C1
/// output in Curio's envelope ([`porep_c2::C1Envelope::wrap`]),
/// `registered_proof` = the `abi.RegisteredSealProof` number.
pub fn porep(
    miner: u64,
    sector_number: u64,
    registered_proof: u64,
    sector_size: u64,
    wrapped_c1: Vec<u8>,
) -> proto::SubmitProofRequest {
    proto::SubmitProofRequest {
        request_id: format!("porep-{miner}-{sector_number}"),
        proof_kind: WireKind::PorepSealCommit as i32,
        sector_size,
        registered_proof,
        priority: proto::Priority::Normal as i32,
        vanilla_proof: wrapped_c1,
        sector_number,
        miner_id: miner,
        ..Default::default()
    }
}

/// A WindowPoSt partition: Go's `fmt.Sprintf("wdpost-%d-%d-%d", minerID,
/// partitionIdx, randomness[:8])` prints the byte slice as `[1 2 3 ...]`;
/// HIGH; one bincode `FallbackPoStSectorProof` per sector; the
/// `abi.RegisteredPoStProof` number.
pub fn window_post(
    miner: u64,
    registered_proof: u64,
    sector_size: u64,
    randomness: &[u8],
    vanilla_proofs: Vec<Vec<u8>>,
    partition: u32,
) -> proto::SubmitProofRequest {
    let first8: Vec<String> = randomness.iter().take(8).map(u8::to_string).collect();
    proto::SubmitProofRequest {
        request_id: format!("wdpost-{miner}-{partition}-[{}]", first8.join(" ")),
        proof_kind: WireKind::WindowPostPartition as i32,
        sector_size,
        registered_proof,
        priority: proto::Priority::High as i32,
        vanilla_proofs,
        miner_id: miner,
        randomness: randomness.to_vec(),
        partition_index: partition,
        ..Default::default()
    }
}

/// A WinningPoSt: id `fmt.Sprintf("winpost-%d-%x", minerID, randomness[:8])`,
/// CRITICAL (it must land within the block's epoch).
pub fn winning_post(
    miner: u64,
    registered_proof: u64,
    sector_size: u64,
    randomness: &[u8],
    vanilla_proofs: Vec<Vec<u8>>,
) -> proto::SubmitProofRequest {
    let first8: String = randomness.iter().take(8).map(|b| format!("{b:02x}")).collect();
    proto::SubmitProofRequest {
        request_id: format!("winpost-{miner}-{first8}"),
        proof_kind: WireKind::WinningPost as i32,
        sector_size,
        registered_proof,
        priority: proto::Priority::Critical as i32,
        vanilla_proofs,
        miner_id: miner,
        randomness: randomness.to_vec(),
        ..Default::default()
    }
}

/// A SnapDeals update proof (`UpdateProveTask` through the cuzk client):
/// id `fmt.Sprintf("snap-%d-%d", miner, number)`, NORMAL, one bincode
/// `PartitionProof` per partition in `vanilla_proofs`, the commitments as
/// raw 32 bytes (from the CIDs), the `abi.RegisteredUpdateProof` number.
#[allow(clippy::too_many_arguments)]
pub fn snap_update(
    miner: u64,
    sector_number: u64,
    registered_proof: u64,
    sector_size: u64,
    vanilla_proofs: Vec<Vec<u8>>,
    comm_r_old: &[u8; 32],
    comm_r_new: &[u8; 32],
    comm_d_new: &[u8; 32],
) -> proto::SubmitProofRequest {
    proto::SubmitProofRequest {
        request_id: format!("snap-{miner}-{sector_number}"),
        proof_kind: WireKind::SnapDealsUpdate as i32,
        sector_size,
        registered_proof,
        priority: proto::Priority::Normal as i32,
        vanilla_proofs,
        sector_number,
        miner_id: miner,
        comm_r_old: comm_r_old.to_vec(),
        comm_r_new: comm_r_new.to_vec(),
        comm_d_new: comm_d_new.to_vec(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ids Go's formatting gives for these values.
    #[test]
    fn request_ids_are_gos() {
        let r: Vec<u8> = (1..=32).collect();
        assert_eq!(porep(1000, 7, 8, 32 << 30, vec![]).request_id, "porep-1000-7");
        assert_eq!(window_post(1000, 13, 32 << 30, &r, vec![], 2).request_id, "wdpost-1000-2-[1 2 3 4 5 6 7 8]");
        assert_eq!(winning_post(1000, 3, 32 << 30, &r, vec![]).request_id, "winpost-1000-0102030405060708");
        assert_eq!(snap_update(1000, 7, 3, 32 << 30, vec![], &[0; 32], &[0; 32], &[0; 32]).request_id, "snap-1000-7");
    }
}
