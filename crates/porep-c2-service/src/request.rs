//! A proof request as the service's engines see it: the wire message's
//! fields, decoded and checked once, independent of protobuf.

use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

use crate::proto;

/// What kind of proof is asked for (the wire's `ProofKind`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ProofKind {
    /// Commit phase 2 of a sector's PoRep (C2): implemented.
    #[default]
    PorepSealCommit,
    /// SnapDeals' update proof.
    SnapDealsUpdate,
    /// One partition of a WindowPoSt.
    WindowPostPartition,
    /// A WinningPoSt.
    WinningPost,
}

impl ProofKind {
    /// Every kind, in the wire's order.
    pub const ALL: [ProofKind; 4] =
        [Self::PorepSealCommit, Self::SnapDealsUpdate, Self::WindowPostPartition, Self::WinningPost];

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

    /// The queue's name, as Curio's daemon reports it
    /// (`QueueStatus::proof_kind`, `GPUStatus::current_proof_kind`, metrics
    /// labels): `porep-c2`, `snap-update`, `window-post`, `winning-post`.
    pub fn name(self) -> &'static str {
        match self {
            Self::PorepSealCommit => "porep-c2",
            Self::SnapDealsUpdate => "snap-update",
            Self::WindowPostPartition => "window-post",
            Self::WinningPost => "winning-post",
        }
    }

    /// The priority a request of this kind gets when it leaves it
    /// unspecified, as Curio's daemon applies it: WinningPoSt CRITICAL (it
    /// must finish within its epoch), WindowPoSt HIGH, PoRep and SnapDeals
    /// NORMAL. (Curio's client always sets these same values.)
    pub fn default_priority(self) -> i32 {
        match self {
            Self::WinningPost => proto::Priority::Critical as i32,
            Self::WindowPostPartition => proto::Priority::High as i32,
            Self::PorepSealCommit | Self::SnapDealsUpdate => proto::Priority::Normal as i32,
        }
    }
}

/// One proof request, decoded from `SubmitProofRequest`. The comments say
/// what Curio puts in each field (`lib/ffi/cuzk_funcs.go`).
#[derive(Clone, Debug, Default)]
pub struct ProofRequest {
    /// The caller's idempotency key (may be empty: no deduplication).
    /// Curio: `porep-<miner>-<sector>`, `snap-<miner>-<sector>`,
    /// `wdpost-<miner>-<partition>-<randomness>`, `winpost-<miner>-<randomness>`;
    /// fixed per sector, so a retry of a failed task sends the same id.
    pub request_id: String,
    /// What to prove.
    pub kind: ProofKind,
    /// Sector size in bytes (0: not given). Curio: always set.
    pub sector_size: u64,
    /// The registered proof as Lotus numbers it (0 is a valid value:
    /// `StackedDrg2KiBV1`). Curio: `abi.RegisteredSealProof` (PoRep),
    /// `abi.RegisteredUpdateProof` (SnapDeals), `abi.RegisteredPoStProof`
    /// (PoSt).
    pub registered_proof: u64,
    /// Scheduling priority: 1 (LOW) .. 4 (CRITICAL); unspecified is the
    /// kind's default ([`ProofKind::default_priority`]). Curio: NORMAL for
    /// PoRep and SnapDeals, HIGH for WindowPoSt, CRITICAL for WinningPoSt.
    pub priority: i32,
    /// PoRep: the C1 output, raw filecoin-proofs-api JSON or (what Curio
    /// sends) the envelope `{"SectorNum", "Phase1Out" (base64), "SectorSize"}`.
    pub vanilla_proof: Vec<u8>,
    /// PoSt: one bincode `FallbackPoStSectorProof` per sector; SnapDeals:
    /// one bincode partition proof per partition (field 11).
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// The sector's number (PoRep, SnapDeals).
    pub sector_number: u64,
    /// The miner's actor id (the prover id is derived from it).
    pub miner_id: u64,
    /// PoSt: the 32-byte challenge randomness.
    pub randomness: Vec<u8>,
    /// WindowPoSt: the partition's index.
    pub partition_index: u32,
    /// SnapDeals: the old replica's commitment, raw 32 bytes (field 30).
    pub comm_r_old: Vec<u8>,
    /// SnapDeals: the new replica's commitment, raw 32 bytes (field 31).
    pub comm_r_new: Vec<u8>,
    /// SnapDeals: the new data's commitment, raw 32 bytes (field 32).
    pub comm_d_new: Vec<u8>,
}

/// NORMAL on the wire.
pub const NORMAL_PRIORITY: i32 = proto::Priority::Normal as i32;

/// What a job keeps of its request after the body (the vanilla proofs) is
/// dropped: enough for status, logs and request-id deduplication.
#[derive(Clone, Debug)]
pub struct RequestInfo {
    /// The caller's idempotency key.
    pub request_id: String,
    /// What is proved.
    pub kind: ProofKind,
    /// Its priority.
    pub priority: i32,
    /// The sector's number.
    pub sector_number: u64,
    /// The miner's actor id.
    pub miner_id: u64,
    /// SHA-256 of everything that decides the proof ([`ProofRequest::digest`]).
    pub digest: [u8; 32],
    /// Bytes of the request's body (vanilla proofs).
    pub body_bytes: usize,
}

impl ProofRequest {
    /// Decodes a wire request; `Err` names what is wrong (an unspecified or
    /// unknown proof kind, an unknown priority).
    pub fn from_wire(r: proto::SubmitProofRequest) -> Result<Self, String> {
        let kind = ProofKind::from_wire(r.proof_kind)
            .ok_or_else(|| format!("proof_kind {} is not a proof kind of cuzk.v1", r.proof_kind))?;
        let priority = match proto::Priority::try_from(r.priority) {
            Ok(proto::Priority::Unspecified) => kind.default_priority(),
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
            vanilla_proofs: r.vanilla_proofs,
            sector_number: r.sector_number,
            miner_id: r.miner_id,
            randomness: r.randomness,
            partition_index: r.partition_index,
            comm_r_old: r.comm_r_old,
            comm_r_new: r.comm_r_new,
            comm_d_new: r.comm_d_new,
        })
    }

    /// SHA-256 of every field that decides the proof: the kind, sizes and
    /// numbers, the vanilla proofs, randomness and commitments (each
    /// length-prefixed). Not the request id or the priority: a retry of the
    /// same proof at another priority is the same proof.
    pub fn digest(&self) -> [u8; 32] {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        let mut bytes = |b: &[u8]| {
            h.update((b.len() as u64).to_le_bytes());
            h.update(b);
        };
        bytes(self.kind.name().as_bytes());
        for n in [self.sector_size, self.registered_proof, self.sector_number, self.miner_id] {
            bytes(&n.to_le_bytes());
        }
        bytes(&self.partition_index.to_le_bytes());
        bytes(&self.vanilla_proof);
        bytes(&(self.vanilla_proofs.len() as u64).to_le_bytes());
        for v in &self.vanilla_proofs {
            bytes(v);
        }
        for b in [&self.randomness, &self.comm_r_old, &self.comm_r_new, &self.comm_d_new] {
            bytes(b);
        }
        h.finalize().into()
    }

    /// Bytes of the body: the vanilla proofs.
    pub fn body_bytes(&self) -> usize {
        self.vanilla_proof.len() + self.vanilla_proofs.iter().map(Vec::len).sum::<usize>()
    }

    /// What a job keeps of this request.
    pub fn info(&self) -> RequestInfo {
        RequestInfo {
            request_id: self.request_id.clone(),
            kind: self.kind,
            priority: self.priority,
            sector_number: self.sector_number,
            miner_id: self.miner_id,
            digest: self.digest(),
            body_bytes: self.body_bytes(),
        }
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

/// A registered update proof (SnapDeals) from its `abi.RegisteredUpdateProof`
/// number: 0-4 for 2 KiB .. 64 GiB (filecoin-ffi's order).
pub fn registered_update_proof(number: u64) -> Option<RegisteredUpdateProof> {
    use RegisteredUpdateProof::*;
    const ALL: [RegisteredUpdateProof; 5] =
        [StackedDrg2KiBV1, StackedDrg8MiBV1, StackedDrg512MiBV1, StackedDrg32GiBV1, StackedDrg64GiBV1];
    ALL.get(usize::try_from(number).ok()?).copied()
}

/// The registered PoSt proof of Lotus' numbering (`abi.RegisteredPoStProof`:
/// 0-4 WinningPoSt V1, 5-9 WindowPoSt V1, 10-14 WindowPoSt V1_1, each 2 KiB,
/// 8 MiB, 512 MiB, 32 GiB, 64 GiB). filecoin-proofs-api declares the same
/// fifteen in the same order and calls Lotus' Window V1_1 `V1_2` (the
/// grinding fix: each sector's challenges drawn from the challenge number
/// alone), which is what Curio sends today.
pub fn registered_post_proof(number: u64) -> Option<RegisteredPoStProof> {
    use RegisteredPoStProof::*;
    const ALL: [RegisteredPoStProof; 15] = [
        StackedDrgWinning2KiBV1,
        StackedDrgWinning8MiBV1,
        StackedDrgWinning512MiBV1,
        StackedDrgWinning32GiBV1,
        StackedDrgWinning64GiBV1,
        StackedDrgWindow2KiBV1,
        StackedDrgWindow8MiBV1,
        StackedDrgWindow512MiBV1,
        StackedDrgWindow32GiBV1,
        StackedDrgWindow64GiBV1,
        StackedDrgWindow2KiBV1_2,
        StackedDrgWindow8MiBV1_2,
        StackedDrgWindow512MiBV1_2,
        StackedDrgWindow32GiBV1_2,
        StackedDrgWindow64GiBV1_2,
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
    fn registered_post_proofs_follow_lotus_numbering() {
        use filecoin_proofs_api::PoStType;
        assert_eq!(registered_post_proof(3), Some(RegisteredPoStProof::StackedDrgWinning32GiBV1));
        assert_eq!(registered_post_proof(8), Some(RegisteredPoStProof::StackedDrgWindow32GiBV1));
        assert_eq!(registered_post_proof(13), Some(RegisteredPoStProof::StackedDrgWindow32GiBV1_2));
        assert_eq!(registered_post_proof(15), None);
        for n in 0..15u64 {
            let rp = registered_post_proof(n).unwrap();
            let size = u64::from(rp.sector_size());
            assert_eq!(size, [2048, 8 << 20, 512 << 20, 32 << 30, 64 << 30][(n % 5) as usize], "{n}");
            assert_eq!(rp.typ() == PoStType::Winning, n < 5, "{n}");
        }
    }

    #[test]
    fn queue_names_are_curios() {
        let names: Vec<_> = ProofKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names, ["porep-c2", "snap-update", "window-post", "winning-post"]);
    }

    /// The digest covers what decides the proof, not the id or priority.
    #[test]
    fn digests_tell_requests_apart() {
        let base = ProofRequest {
            request_id: "porep-1000-7".into(),
            vanilla_proof: b"c1".to_vec(),
            sector_number: 7,
            miner_id: 1000,
            ..Default::default()
        };
        let d = base.digest();
        let same = ProofRequest { request_id: "other".into(), priority: 4, ..base.clone() };
        assert_eq!(same.digest(), d);
        let changes: [fn(&mut ProofRequest); 8] = [
            |r| r.vanilla_proof.push(0),
            |r| r.sector_number += 1,
            |r| r.miner_id += 1,
            |r| r.registered_proof += 1,
            |r| r.kind = ProofKind::WinningPost,
            |r| r.vanilla_proofs.push(Vec::new()),
            |r| r.randomness = vec![1; 32],
            |r| r.comm_d_new = vec![1; 32],
        ];
        for (i, change) in changes.iter().enumerate() {
            let mut r = base.clone();
            change(&mut r);
            assert_ne!(r.digest(), d, "change {i}");
        }
        // Length prefixes: moving a byte between fields changes the digest.
        let a = ProofRequest { vanilla_proofs: vec![b"ab".to_vec(), b"c".to_vec()], ..base.clone() };
        let b = ProofRequest { vanilla_proofs: vec![b"a".to_vec(), b"bc".to_vec()], ..base };
        assert_ne!(a.digest(), b.digest());
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
        // Unspecified: the kind's default, as Curio's daemon applies it.
        for (kind, default) in [(2, 2), (3, 3), (4, 4)] {
            let q = proto::SubmitProofRequest { proof_kind: kind, priority: 0, ..Default::default() };
            assert_eq!(ProofRequest::from_wire(q).unwrap().priority, default, "kind {kind}");
        }
        r.priority = 1;
        r.proof_kind = 0;
        assert!(ProofRequest::from_wire(r.clone()).unwrap_err().contains("proof_kind 0"));
        r.proof_kind = 77;
        assert!(ProofRequest::from_wire(r).is_err());
    }
}
