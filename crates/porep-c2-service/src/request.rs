//! A proof request as the service's engines see it: the wire message's
//! fields, decoded and checked once, independent of protobuf.

use filecoin_proofs_api::RegisteredSealProof;

use crate::proto;

/// What kind of proof is asked for (the wire's `ProofKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProofKind {
    /// Commit phase 2 of a sector's PoRep (C2): implemented.
    PorepSealCommit,
    /// SnapDeals' update proof.
    SnapDealsUpdate,
    /// One partition of a WindowPoSt.
    WindowPostPartition,
    /// A WinningPoSt.
    WinningPost,
}

impl ProofKind {
    /// The kind of a wire value (`None`: unspecified or unknown).
    pub fn from_wire(kind: i32) -> Option<Self> {
        Some(match proto::ProofKind::try_from(kind).ok()? {
            proto::ProofKind::PorepSealCommit => Self::PorepSealCommit,
            proto::ProofKind::SnapDealsUpdate => Self::SnapDealsUpdate,
            proto::ProofKind::WindowPostPartition => Self::WindowPostPartition,
            proto::ProofKind::WinningPost => Self::WinningPost,
            proto::ProofKind::Unspecified => return None,
        })
    }

    /// The wire's name (`QueueStatus::proof_kind`, metrics labels).
    pub fn name(self) -> &'static str {
        match self {
            Self::PorepSealCommit => "POREP_SEAL_COMMIT",
            Self::SnapDealsUpdate => "SNAP_DEALS_UPDATE",
            Self::WindowPostPartition => "WINDOW_POST_PARTITION",
            Self::WinningPost => "WINNING_POST",
        }
    }
}

/// One proof request, decoded from `SubmitProofRequest`.
#[derive(Clone, Debug)]
pub struct ProofRequest {
    /// The caller's idempotency key (may be empty: no deduplication).
    pub request_id: String,
    /// What to prove.
    pub kind: ProofKind,
    /// Sector size in bytes (0: not given).
    pub sector_size: u64,
    /// The registered proof as Lotus numbers it (0 is a valid value:
    /// `StackedDrg2KiBV1`).
    pub registered_proof: u64,
    /// Scheduling priority: 1 (LOW) .. 4 (CRITICAL); unspecified is NORMAL.
    pub priority: i32,
    /// PoRep: the C1 output as filecoin-proofs-api JSON.
    pub vanilla_proof: Vec<u8>,
    /// The sector's number.
    pub sector_number: u64,
    /// The miner's actor id (the prover id is derived from it).
    pub miner_id: u64,
}

/// NORMAL on the wire: what an unspecified priority means.
pub const NORMAL_PRIORITY: i32 = proto::Priority::Normal as i32;

impl ProofRequest {
    /// Decodes a wire request; `Err` names what is wrong (an unspecified or
    /// unknown proof kind, an unknown priority).
    pub fn from_wire(r: proto::SubmitProofRequest) -> Result<Self, String> {
        let kind = ProofKind::from_wire(r.proof_kind)
            .ok_or_else(|| format!("proof_kind {} is not a proof kind of cuzk.v1", r.proof_kind))?;
        let priority = match proto::Priority::try_from(r.priority) {
            Ok(proto::Priority::Unspecified) => NORMAL_PRIORITY,
            Ok(p) => p as i32,
            Err(_) => return Err(format!("priority {} is not a priority of cuzk.v1", r.priority)),
        };
        Ok(Self {
            request_id: r.request_id,
            kind,
            sector_size: r.sector_size,
            registered_proof: r.registered_proof,
            priority,
            vanilla_proof: r.vanilla_proof,
            sector_number: r.sector_number,
            miner_id: r.miner_id,
        })
    }
}

/// A miner's prover id from its actor id, as filecoin-ffi derives it: the
/// id as an unsigned LEB128 varint, zero-padded to 32 bytes (the payload of
/// an `f0`/`t0` address).
pub fn prover_id_from_actor(actor_id: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let (mut v, mut i) = (actor_id, 0);
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[i] = byte;
            return out;
        }
        out[i] = byte | 0x80;
        i += 1;
    }
}

/// The registered seal proof of Lotus' numbering (`abi.RegisteredSealProof`:
/// 0-4 V1, 5-9 V1_1, 10-14 V1_1 with synthetic PoRep, 15-19 non-interactive
/// PoRep, each 2 KiB, 8 MiB, 512 MiB, 32 GiB, 64 GiB), in filecoin-proofs-api's
/// declaration order.
pub fn registered_seal_proof(number: u64) -> Option<RegisteredSealProof> {
    use RegisteredSealProof::*;
    const ALL: [RegisteredSealProof; 20] = [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
        StackedDrg2KiBV1_1,
        StackedDrg8MiBV1_1,
        StackedDrg512MiBV1_1,
        StackedDrg32GiBV1_1,
        StackedDrg64GiBV1_1,
        StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
        StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
    ];
    ALL.get(usize::try_from(number).ok()?).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prover_ids_are_leb128_actor_ids() {
        // f01000 -> e8 07; f0 -> 00; f0127 -> 7f; f0128 -> 80 01; u64::MAX
        // takes ten bytes.
        assert_eq!(&prover_id_from_actor(1000)[..3], &[0xe8, 0x07, 0]);
        assert_eq!(prover_id_from_actor(0), [0u8; 32]);
        assert_eq!(&prover_id_from_actor(127)[..2], &[0x7f, 0]);
        assert_eq!(&prover_id_from_actor(128)[..3], &[0x80, 0x01, 0]);
        let max = prover_id_from_actor(u64::MAX);
        assert_eq!(&max[..10], &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        assert!(max[10..].iter().all(|&b| b == 0));
    }

    #[test]
    fn registered_proofs_follow_lotus_numbering() {
        assert_eq!(registered_seal_proof(3), Some(RegisteredSealProof::StackedDrg32GiBV1));
        assert_eq!(registered_seal_proof(8), Some(RegisteredSealProof::StackedDrg32GiBV1_1));
        assert_eq!(registered_seal_proof(5), Some(RegisteredSealProof::StackedDrg2KiBV1_1));
        assert_eq!(registered_seal_proof(20), None);
        // The sizes cycle every five numbers.
        for n in 0..20u64 {
            let size = u64::from(registered_seal_proof(n).unwrap().sector_size());
            assert_eq!(size, [2048, 8 << 20, 512 << 20, 32 << 30, 64 << 30][(n % 5) as usize], "{n}");
        }
    }

    #[test]
    fn wire_requests_decode_and_bad_kinds_are_named() {
        let mut r = proto::SubmitProofRequest { proof_kind: 1, priority: 0, ..Default::default() };
        let d = ProofRequest::from_wire(r.clone()).unwrap();
        assert_eq!((d.kind, d.priority), (ProofKind::PorepSealCommit, NORMAL_PRIORITY));
        r.priority = 4;
        assert_eq!(ProofRequest::from_wire(r.clone()).unwrap().priority, 4);
        r.priority = 9;
        assert!(ProofRequest::from_wire(r.clone()).unwrap_err().contains("priority 9"));
        r.priority = 1;
        r.proof_kind = 0;
        assert!(ProofRequest::from_wire(r.clone()).unwrap_err().contains("proof_kind 0"));
        r.proof_kind = 77;
        assert!(ProofRequest::from_wire(r).is_err());
    }
}
