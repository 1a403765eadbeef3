//! Valid PoSt test sectors of any registered size without sealing: the
//! vanilla proofs (bincode `FallbackPoStSectorProof`, what a node sends) a
//! real sector would give for the same commitments, built from the leaves
//! the challenges open, as [`crate::cc_sector`] builds a C1 output.
//!
//! Per sector, the challenged leaves are filecoin-proofs-api's own
//! (`generate_fallback_sector_challenges`, so V1 and V1_2 draw as the node
//! draws); each opened leaf is a pseudo-random replica value; tree R is
//! sparse (nodes on opened paths hashed from their children, every other
//! node a pseudo-random value of its position), comm_c is pseudo-random,
//! and comm_r = Poseidon(comm_c, comm_r_last). storage-proofs-post's vanilla
//! verifier accepts them and the circuits they build are satisfied at every
//! sector size: a WindowPoSt partition of 2349 32 GiB sectors without 75 TB
//! of sealed data.

use std::collections::BTreeMap;

use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::{
    FallbackPoStSectorProof, SectorShape2KiB, SectorShape32GiB, SectorShape512MiB, SectorShape64GiB, SectorShape8MiB,
    SECTOR_SIZE_2_KIB, SECTOR_SIZE_32_GIB, SECTOR_SIZE_512_MIB, SECTOR_SIZE_64_GIB, SECTOR_SIZE_8_MIB,
};
use filecoin_proofs_api::{RegisteredPoStProof, SectorId};
use rayon::prelude::*;
use storage_proofs_core::merkle::{MerkleProof, MerkleTreeTrait};
use storage_proofs_core::util::NODE_SIZE;
use storage_proofs_post::fallback::{self, SectorProof};

use crate::cc_sector::{prf, tree_arities, SparseTree};
use crate::{post_instance, PoStKind, ProofInstance, SynthError};

type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;
type TreeFunction<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Function;

/// One PoSt test sector: what a node holds of it publicly and what it sends.
#[derive(Clone, Debug)]
pub struct PoStTestSector {
    /// The sector's number.
    pub sector_id: u64,
    /// Its replica commitment (what `PublicReplicaInfo` takes).
    pub comm_r: [u8; 32],
    /// Its vanilla proof for the randomness, as filecoin-proofs-api's
    /// `generate_single_vanilla_proof` writes it (bincode).
    pub vanilla_proof: Vec<u8>,
}

/// One PoSt test partition: a request's fields as a node would send them.
#[derive(Clone, Debug)]
pub struct PoStTestPartition {
    /// The registered proof.
    pub registered_proof: RegisteredPoStProof,
    /// WindowPoSt partition 0 or WinningPoSt.
    pub kind: PoStKind,
    /// The chain randomness.
    pub randomness: [u8; 32],
    /// The prover id.
    pub prover_id: [u8; 32],
    /// One bincode `FallbackPoStSectorProof` per sector.
    pub vanilla_proofs: Vec<Vec<u8>>,
}

impl PoStTestPartition {
    /// The instance, decoded from the vanilla proofs as a request's is.
    pub fn instance(&self) -> Result<Box<dyn ProofInstance>, SynthError> {
        post_instance(self.registered_proof, self.kind, &self.randomness, &self.prover_id, &self.vanilla_proofs)
    }
}

/// The test partition of `registered_proof` that the device runner's
/// `--only post` and `peer-prove --post` both prove, so their bytes compare:
/// a WindowPoSt partition of the proof type's full sector count (2349 at
/// 32 GiB) or the one WinningPoSt sector, sectors 10,000 and up,
/// randomness `0x5a..` (top bits cleared), prover id `0x11..`, seed 7.
pub fn post_test_partition(registered_proof: RegisteredPoStProof) -> Result<PoStTestPartition, SynthError> {
    let winning = registered_proof.typ() == filecoin_proofs_api::PoStType::Winning;
    let (kind, sectors) = if winning {
        (PoStKind::Winning, 1)
    } else {
        (PoStKind::Window { partition_index: 0 }, registered_proof.sector_count())
    };
    let mut randomness = [0x5au8; 32];
    randomness[31] &= 0x3f;
    let prover_id = [0x11u8; 32];
    let ids: Vec<u64> = (0..sectors as u64).map(|i| 10_000 + i).collect();
    let made = post_test_sectors(registered_proof, &randomness, &prover_id, &ids, 7)?;
    let vanilla_proofs = made.into_iter().map(|s| s.vanilla_proof).collect();
    Ok(PoStTestPartition { registered_proof, kind, randomness, prover_id, vanilla_proofs })
}

/// Valid test sectors `sector_ids` of `registered_proof`'s size, with their
/// vanilla proofs for `randomness` and `prover_id` (sectors made
/// concurrently; `seed` decides every value that is not a hash). For a
/// WinningPoSt pass the one challenged sector.
pub fn post_test_sectors(
    registered_proof: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: &[u8; 32],
    sector_ids: &[u64],
    seed: u64,
) -> Result<Vec<PoStTestSector>, SynthError> {
    let unsupported = |e: anyhow::Error| SynthError::Unsupported(e.to_string());
    let ids: Vec<SectorId> = sector_ids.iter().map(|&i| SectorId::from(i)).collect();
    let challenges =
        filecoin_proofs_api::post::generate_fallback_sector_challenges(registered_proof, randomness, &ids, *prover_id)
            .map_err(unsupported)?;
    let size = u64::from(registered_proof.sector_size());
    let nodes = (size / NODE_SIZE as u64) as usize;
    match size {
        SECTOR_SIZE_2_KIB => sectors::<SectorShape2KiB>(&challenges, sector_ids, nodes, seed),
        SECTOR_SIZE_8_MIB => sectors::<SectorShape8MiB>(&challenges, sector_ids, nodes, seed),
        SECTOR_SIZE_512_MIB => sectors::<SectorShape512MiB>(&challenges, sector_ids, nodes, seed),
        SECTOR_SIZE_32_GIB => sectors::<SectorShape32GiB>(&challenges, sector_ids, nodes, seed),
        SECTOR_SIZE_64_GIB => sectors::<SectorShape64GiB>(&challenges, sector_ids, nodes, seed),
        other => Err(SynthError::Unsupported(format!("sector size {other}"))),
    }
}

fn sectors<Tree: 'static + MerkleTreeTrait>(
    challenges: &BTreeMap<SectorId, Vec<u64>>,
    sector_ids: &[u64],
    nodes: usize,
    seed: u64,
) -> Result<Vec<PoStTestSector>, SynthError> {
    let arities = tree_arities::<Tree>(nodes);
    sector_ids
        .par_iter()
        .map(|&id| {
            let leaves = challenges
                .get(&SectorId::from(id))
                .ok_or_else(|| SynthError::Unsupported(format!("no challenges for sector {id}")))?;
            // A seed per sector, so no two sectors share a tree.
            let sector_seed = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ id;
            let opened: BTreeMap<usize, TreeDomain<Tree>> =
                leaves.iter().map(|&l| (l as usize, prf(sector_seed, 4, l, 0))).collect();
            let tree = SparseTree::new::<TreeFunction<Tree>>(arities.clone(), &opened, sector_seed, 6);
            let comm_r_last = tree.root();
            let comm_c: TreeDomain<Tree> = prf(sector_seed, 5, 0, 0);
            let comm_r = <TreeFunction<Tree> as HashFunction<_>>::hash2(&comm_c, &comm_r_last);
            let inclusion_proofs = leaves
                .iter()
                .map(|&l| MerkleProof::from_parts(opened[&(l as usize)], comm_r_last, tree.path(l as usize)))
                .collect();
            let proof = FallbackPoStSectorProof::<Tree> {
                sector_id: SectorId::from(id),
                comm_r,
                vanilla_proof: fallback::Proof { sectors: vec![SectorProof { inclusion_proofs, comm_c, comm_r_last }] },
            };
            let vanilla_proof =
                bincode::serialize(&proof).map_err(|e| SynthError::Unsupported(format!("bincode: {e}")))?;
            let comm_r: [u8; 32] =
                AsRef::<[u8]>::as_ref(&comm_r).try_into().map_err(|_| SynthError::Unsupported("comm_r".into()))?;
            Ok(PoStTestSector { sector_id: id, comm_r, vanilla_proof })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{post_instance, PoStKind};

    fn randomness(byte: u8) -> [u8; 32] {
        let mut r = [byte; 32];
        r[31] &= 0x3f;
        r
    }

    /// At every registered size, test sectors pass storage-proofs-post's
    /// vanilla verifier and the comm_r split (the instance checks both),
    /// for WindowPoSt (V1_2 and V1) and WinningPoSt.
    #[test]
    fn post_test_sectors_verify_at_every_size() {
        use RegisteredPoStProof::*;
        let prover_id = [7u8; 32];
        let cases = [
            (StackedDrgWindow2KiBV1_2, 2usize),
            (StackedDrgWindow2KiBV1, 2),
            (StackedDrgWindow8MiBV1_2, 2),
            (StackedDrgWindow512MiBV1_2, 2),
            (StackedDrgWindow32GiBV1_2, 3),
            (StackedDrgWindow64GiBV1_2, 2),
            (StackedDrgWinning2KiBV1, 1),
            (StackedDrgWinning32GiBV1, 1),
        ];
        for (rp, n) in cases {
            let r = randomness(9);
            let ids: Vec<u64> = (0..n as u64).map(|i| 100 + i).collect();
            let sectors = post_test_sectors(rp, &r, &prover_id, &ids, 3).unwrap();
            let vanilla: Vec<Vec<u8>> = sectors.iter().map(|s| s.vanilla_proof.clone()).collect();
            let kind = if n == 1 && format!("{rp:?}").contains("Winning") {
                PoStKind::Winning
            } else {
                PoStKind::Window { partition_index: 0 }
            };
            let instance = post_instance(rp, kind, &r, &prover_id, &vanilla).unwrap();
            instance.check_vanilla_proofs().unwrap_or_else(|e| panic!("{rp:?}: {e}"));
            // Bound to the randomness they were made for.
            let other = post_instance(rp, kind, &randomness(10), &prover_id, &vanilla).unwrap();
            assert!(other.check_vanilla_proofs().is_err(), "{rp:?}: other randomness");
        }
    }

    /// The native witness (every Poseidon hash on values, sectors
    /// concurrently) is the gadgets' witness, vector for vector, in full
    /// and compact form, and the circuit is satisfied (a·b = c), for
    /// WindowPoSt (V1_2 and V1, a padded partition) and WinningPoSt.
    #[test]
    fn native_post_witness_is_the_gadgets() {
        use RegisteredPoStProof::*;
        let prover_id = [3u8; 32];
        for (rp, n) in [
            (StackedDrgWindow2KiBV1_2, 2usize),
            (StackedDrgWindow2KiBV1, 1),
            (StackedDrgWindow8MiBV1_2, 1),
            (StackedDrgWindow512MiBV1_2, 2),
            (StackedDrgWinning2KiBV1, 1),
            (StackedDrgWinning8MiBV1, 1),
        ] {
            let r = randomness(21);
            let ids: Vec<u64> = (0..n as u64).map(|i| 7 + i).collect();
            let vanilla: Vec<Vec<u8>> =
                post_test_sectors(rp, &r, &prover_id, &ids, 4).unwrap().into_iter().map(|s| s.vanilla_proof).collect();
            let kind = if format!("{rp:?}").contains("Winning") {
                PoStKind::Winning
            } else {
                PoStKind::Window { partition_index: 0 }
            };
            let instance = post_instance(rp, kind, &r, &prover_id, &vanilla).unwrap();
            let native = instance.synthesize_witness(0).unwrap();
            let gadgets = instance.synthesize_witness_gadgets(0).unwrap();
            assert_eq!(native.0, gadgets.0, "{rp:?}: inputs");
            assert!(native.1 == gadgets.1, "{rp:?}: aux ({} vs {})", native.1.len(), gadgets.1.len());
            let (inputs, compact) = instance.synthesize_compact_witness(0).unwrap();
            assert_eq!(inputs, gadgets.0, "{rp:?}: compact inputs");
            assert!(compact.expand() == gadgets.1, "{rp:?}: compact aux");
            let full = instance.synthesize_partition(0).unwrap();
            assert!(full.aux_assignment == gadgets.1, "{rp:?}: the record's aux");
            crate::check_satisfied(&full).unwrap_or_else(|e| panic!("{rp:?}: {e}"));
        }
    }

    /// The PoSt matrices, recorded as storage-proofs-post synthesizes for
    /// bellperson's prover (groups of sectors concurrently, appended), are
    /// the blank circuit's recorded one sector after the other, and A·z,
    /// B·z, C·z over them is what synthesis evaluates.
    #[test]
    fn post_matrices_by_sector_groups_are_one_pass() {
        use RegisteredPoStProof::*;
        let prover_id = [5u8; 32];
        for (rp, kind) in [
            (StackedDrgWindow2KiBV1_2, PoStKind::Window { partition_index: 0 }),
            (StackedDrgWindow8MiBV1_2, PoStKind::Window { partition_index: 0 }),
            (StackedDrgWinning2KiBV1, PoStKind::Winning),
        ] {
            let r = randomness(33);
            let n = if kind == PoStKind::Winning { 1 } else { rp.sector_count() as u64 };
            let ids: Vec<u64> = (0..n).map(|i| 40 + i).collect();
            let vanilla: Vec<Vec<u8>> =
                post_test_sectors(rp, &r, &prover_id, &ids, 6).unwrap().into_iter().map(|s| s.vanilla_proof).collect();
            let instance = post_instance(rp, kind, &r, &prover_id, &vanilla).unwrap();
            let grouped = instance.record_matrices().unwrap();
            let one_pass = instance.record_matrices_sequential().unwrap();
            assert!(grouped == one_pass, "{rp:?}: grouped == one pass");
            let full = instance.synthesize_partition(0).unwrap();
            let (a, b, c) = c2_abc::evaluate(&grouped.view(), &full.input_assignment, &full.aux_assignment).unwrap();
            assert!(a == full.a && b == full.b && c == full.c, "{rp:?}: A·z, B·z, C·z == synthesis");
        }
    }

    /// A full 32 GiB WindowPoSt partition: 2349 test sectors, 23,490
    /// challenged leaves, through the vanilla verifier.
    #[test]
    #[ignore = "a full-size partition: ~20 s on two cores (POST_FULL_MATRICES=1: also its matrices by sector groups and a·b = c; POST_FULL_WITNESS=1: its witness natively and through the gadgets, ~3 min, 8 GB); cargo test --release -p c2-synth -- --ignored full_size"]
    fn a_full_size_window_post_partition_verifies() {
        let rp = RegisteredPoStProof::StackedDrgWindow32GiBV1_2;
        let (r, prover_id) = (randomness(5), [9u8; 32]);
        let ids: Vec<u64> = (0..rp.sector_count() as u64).map(|i| 1_000 + i).collect();
        let t = std::time::Instant::now();
        let sectors = post_test_sectors(rp, &r, &prover_id, &ids, 1).unwrap();
        let made = t.elapsed();
        let vanilla: Vec<Vec<u8>> = sectors.into_iter().map(|s| s.vanilla_proof).collect();
        let bytes: usize = vanilla.iter().map(Vec::len).sum();
        let t = std::time::Instant::now();
        let kind = PoStKind::Window { partition_index: 0 };
        let instance = post_instance(rp, kind, &r, &prover_id, &vanilla).unwrap();
        instance.check_vanilla_proofs().unwrap();
        eprintln!(
            "{} sectors made in {made:.1?} ({:.1} MB of vanilla proofs), decoded and verified in {:.1?}",
            vanilla.len(),
            bytes as f64 / 1e6,
            t.elapsed()
        );
        if std::env::var_os("POST_FULL_MATRICES").is_some() {
            // The matrices by sector groups (storage-proofs-post's
            // extensible path), and a·b = c over them with the native
            // witness.
            let t = std::time::Instant::now();
            let m = instance.record_matrices().unwrap();
            eprintln!(
                "matrices by sector groups in {:.1?}: {} constraints, {} inputs, {} aux, A+B+C {} entries",
                t.elapsed(),
                m.constraints(),
                m.inputs,
                m.aux,
                m.a.entries() + m.b.entries() + m.c.entries()
            );
            let t = std::time::Instant::now();
            let (inputs, aux) = instance.synthesize_witness(0).unwrap();
            let bad = crate::matrices::first_unsatisfied_in_chunks(&m, &inputs, &aux);
            eprintln!("native witness and A·z, B·z, C·z in {:.1?}", t.elapsed());
            assert_eq!(bad, None, "a·b = c at full size");
        }
        if std::env::var_os("POST_FULL_WITNESS").is_some() {
            // The witness at full size, native and through the gadgets
            // (minutes and ~8 GB on two cores; timings, not a target).
            let t = std::time::Instant::now();
            let (inputs, compact) = instance.synthesize_compact_witness(0).unwrap();
            eprintln!("native compact witness: {} inputs, {} aux in {:.1?}", inputs.len(), compact.len(), t.elapsed());
            drop(compact);
            let t = std::time::Instant::now();
            let native = instance.synthesize_witness(0).unwrap();
            eprintln!("native witness in {:.1?}", t.elapsed());
            let t = std::time::Instant::now();
            let gadgets = instance.synthesize_witness_gadgets(0).unwrap();
            eprintln!("gadgets' witness in {:.1?}", t.elapsed());
            assert!(native == gadgets, "native == gadgets at full size");
        }
    }
}
