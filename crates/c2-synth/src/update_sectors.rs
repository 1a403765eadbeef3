//! Valid SnapDeals test updates of any registered size without a sector:
//! the partition vanilla proofs (bincode `PartitionProof`, what a node
//! sends) and commitments of an update that storage-proofs-update's
//! verifier accepts, in seconds at 32 GiB.
//!
//! The challenges come from comm_r_new, which hashes every new label, and
//! the new labels depend on the challenged positions' rho; a sparse tree
//! (as [`crate::cc_sector`] uses) would be circular here. So every tree is
//! built from values that are known at every position: the old replica's
//! labels all equal (`v`), the new data all equal (`d`, so TreeDNew's nodes
//! are equal per level), and the new labels `v + d·rho(phi, high bits)`
//! constant over each block of `2^(bits − h)` leaves (rho takes the `h`
//! high bits of a node's index: 1,024 blocks at 32 GiB). A node inside one
//! block is that block's uniform value at its level; a node spanning
//! blocks is hashed from its children (1,023 of them at most per tree). The
//! values are unlike a real replica's (repeated), the proofs' structure is
//! a real update's: every path, root and encoding check of the verifier and
//! the circuit holds.

use std::collections::HashMap;

use blstrs::Scalar;
use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::{
    SectorShape2KiB, SectorShape32GiB, SectorShape512MiB, SectorShape64GiB, SectorShape8MiB, SectorUpdateConfig,
    SECTOR_SIZE_2_KIB, SECTOR_SIZE_32_GIB, SECTOR_SIZE_512_MIB, SECTOR_SIZE_64_GIB, SECTOR_SIZE_8_MIB,
};
use filecoin_proofs_api::RegisteredUpdateProof;
use merkletree::hash::Algorithm;
use rayon::prelude::*;
use storage_proofs_core::merkle::{MerkleProof, MerkleTreeTrait};
use storage_proofs_update::constants::{TreeDDomain, TreeDHasher, TreeRDomain, TreeRHasher};
use storage_proofs_update::{phi, rho, ChallengeProof, Challenges, PartitionProof, PublicParams};

use crate::cc_sector::{prf, tree_arities, tree_path};
use crate::SynthError;

type TreeRFunction = <TreeRHasher as Hasher>::Function;
type TreeDFunction = <TreeDHasher as Hasher>::Function;

/// A test update: what Curio sends for it.
#[derive(Clone, Debug)]
pub struct UpdateTestSector {
    /// The update proof type.
    pub registered_proof: RegisteredUpdateProof,
    /// The sector key's comm_r.
    pub comm_r_old: [u8; 32],
    /// The updated replica's comm_r.
    pub comm_r_new: [u8; 32],
    /// The new data's comm_d.
    pub comm_d_new: [u8; 32],
    /// One bincode `PartitionProof` per partition, in partition order.
    pub vanilla_proofs: Vec<Vec<u8>>,
}

/// A tree whose leaves are constant over aligned blocks of `block` leaves:
/// node values by level, computed from the block values alone.
struct BlockTree<D: Copy> {
    arities: Vec<usize>,
    /// `span[l]`: leaves under a node of level `l`.
    span: Vec<usize>,
    block: usize,
    /// `uniform[l][b]`: a level-`l` node inside block `b`.
    uniform: Vec<Vec<D>>,
    /// Nodes spanning several blocks, by (level, index).
    spanning: HashMap<(usize, usize), D>,
}

impl<D: Copy + Send + Sync> BlockTree<D> {
    /// `leaf_of_block[b]` is every leaf of block `b`; `hash(children,
    /// level)` a node from its children at `level` (the tree's algorithm).
    fn new(arities: Vec<usize>, block: usize, leaf_of_block: Vec<D>, hash: impl Fn(&[D], usize) -> D + Sync) -> Self {
        let mut span = vec![1usize];
        for a in &arities {
            span.push(span.last().copied().unwrap_or(1) * a);
        }
        let mut uniform = vec![leaf_of_block];
        for (level, &arity) in arities.iter().enumerate() {
            let below = &uniform[level];
            let next: Vec<D> = below.par_iter().map(|v| hash(&vec![*v; arity], level)).collect();
            uniform.push(next);
        }
        let mut t = Self { arities, span, block, uniform, spanning: HashMap::new() };
        // Nodes spanning blocks, bottom up (their children are known below).
        for level in 1..=t.arities.len() {
            if t.span[level] <= t.block {
                continue;
            }
            let nodes = t.span[t.arities.len()] / t.span[level];
            let arity = t.arities[level - 1];
            let values: Vec<((usize, usize), D)> = (0..nodes)
                .into_par_iter()
                .map(|i| {
                    let children: Vec<D> = (0..arity).map(|j| t.value(level - 1, i * arity + j)).collect();
                    ((level, i), hash(&children, level - 1))
                })
                .collect();
            t.spanning.extend(values);
        }
        t
    }

    fn value(&self, level: usize, index: usize) -> D {
        if self.span[level] <= self.block {
            self.uniform[level][index * self.span[level] / self.block]
        } else {
            self.spanning[&(level, index)]
        }
    }

    fn root(&self) -> D {
        self.value(self.arities.len(), 0)
    }

    /// The opening of `leaf`: (siblings, position) per level.
    fn path(&self, leaf: usize) -> Vec<(Vec<D>, usize)> {
        tree_path(&self.arities, leaf, |level, index| self.value(level, index))
    }
}

/// A valid test update of `registered_proof`'s size (`seed` decides the
/// old labels, the new data and comm_c).
pub fn update_test_sector(registered_proof: RegisteredUpdateProof, seed: u64) -> Result<UpdateTestSector, SynthError> {
    let config = SectorUpdateConfig::from_porep_config(&registered_proof.as_v1_config());
    match u64::from(config.sector_size) {
        SECTOR_SIZE_2_KIB => made::<SectorShape2KiB>(registered_proof, &config, seed),
        SECTOR_SIZE_8_MIB => made::<SectorShape8MiB>(registered_proof, &config, seed),
        SECTOR_SIZE_512_MIB => made::<SectorShape512MiB>(registered_proof, &config, seed),
        SECTOR_SIZE_32_GIB => made::<SectorShape32GiB>(registered_proof, &config, seed),
        SECTOR_SIZE_64_GIB => made::<SectorShape64GiB>(registered_proof, &config, seed),
        other => Err(SynthError::Unsupported(format!("sector size {other}"))),
    }
}

fn bytes32<D: AsRef<[u8]>>(d: &D) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}

fn made<TreeR: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    registered_proof: RegisteredUpdateProof,
    config: &SectorUpdateConfig,
    seed: u64,
) -> Result<UpdateTestSector, SynthError> {
    let params = PublicParams::from_sector_size(u64::from(config.sector_size));
    let nodes = params.sector_nodes;
    let bits = params.challenge_bit_len;
    let h = config.h;
    let block = 1usize << (bits - h);
    let blocks = 1usize << h;
    let r_arities = tree_arities::<TreeR>(nodes);
    let d_arities = vec![2usize; bits];
    let r_hash = |children: &[TreeRDomain], level: usize| TreeRFunction::default().multi_node(children, level);
    let d_hash = |children: &[TreeDDomain], level: usize| TreeDFunction::default().multi_node(children, level);

    // Old labels v everywhere; new data d everywhere (one block each).
    let v: TreeRDomain = prf(seed, 20, 0, 0);
    let d: TreeDDomain = prf(seed, 21, 0, 0);
    let comm_c: TreeRDomain = prf(seed, 22, 0, 0);
    let tree_old = BlockTree::new(r_arities.clone(), nodes, vec![v], r_hash);
    let tree_d = BlockTree::new(d_arities, nodes, vec![d], d_hash);
    let comm_r_old = TreeRFunction::hash2(&comm_c, &tree_old.root());
    let comm_d_new = tree_d.root();
    // New labels: v + d·rho(phi, block).
    let phi = phi(&comm_d_new, &comm_r_old);
    let (v_fr, d_fr): (Scalar, Scalar) = (v.into(), d.into());
    let new_labels: Vec<TreeRDomain> =
        (0..blocks as u32).into_par_iter().map(|b| TreeRDomain::from(v_fr + d_fr * rho(&phi, b))).collect();
    let tree_new = BlockTree::new(r_arities, block, new_labels.clone(), r_hash);
    let comm_r_new = TreeRFunction::hash2(&comm_c, &tree_new.root());

    // Each partition's apex leaves: TreeDNew's nodes at the apex height.
    let apex_height = bits - params.partition_bit_len - params.apex_leaf_bit_len;
    let apex_leafs = vec![tree_d.value(apex_height, 0); params.apex_leaf_count];
    let unsupported = |e: String| SynthError::Unsupported(e);
    let vanilla_proofs = (0..params.partition_count)
        .into_par_iter()
        .map(|k| {
            let challenge_proofs = Challenges::new(nodes, comm_r_new, k)
                .map(|c| {
                    let c = c as usize;
                    ChallengeProof::<TreeR> {
                        proof_r_old: MerkleProof::from_parts(v, tree_old.root(), tree_old.path(c)),
                        proof_d_new: MerkleProof::from_parts(d, comm_d_new, tree_d.path(c)),
                        proof_r_new: MerkleProof::from_parts(new_labels[c / block], tree_new.root(), tree_new.path(c)),
                    }
                })
                .collect();
            let proof = PartitionProof::<TreeR> { comm_c, apex_leafs: apex_leafs.clone(), challenge_proofs };
            bincode::serialize(&proof).map_err(|e| unsupported(format!("bincode: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(UpdateTestSector {
        registered_proof,
        comm_r_old: bytes32(&comm_r_old),
        comm_r_new: bytes32(&comm_r_new),
        comm_d_new: bytes32(&comm_d_new),
        vanilla_proofs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::update_instance;

    /// At every registered size the test update passes storage-proofs-
    /// update's verifier on every partition (the instance's check), and not
    /// with another update's commitments.
    #[test]
    fn update_test_sectors_verify_at_every_size() {
        use RegisteredUpdateProof::*;
        for rp in [StackedDrg2KiBV1, StackedDrg8MiBV1, StackedDrg512MiBV1, StackedDrg32GiBV1, StackedDrg64GiBV1] {
            let t = std::time::Instant::now();
            let u = update_test_sector(rp, 5).unwrap();
            let instance = update_instance(rp, &u.vanilla_proofs, &u.comm_r_old, &u.comm_r_new, &u.comm_d_new).unwrap();
            instance.check_vanilla_proofs().unwrap_or_else(|e| panic!("{rp:?}: {e}"));
            eprintln!("{rp:?}: {} partitions made and verified in {:.1?}", u.vanilla_proofs.len(), t.elapsed());
            let swapped = update_instance(rp, &u.vanilla_proofs, &u.comm_r_new, &u.comm_r_old, &u.comm_d_new).unwrap();
            assert!(swapped.check_vanilla_proofs().is_err(), "{rp:?}: swapped commitments");
        }
    }

    /// The circuit split into its prefix and challenges, synthesized
    /// concurrently (`update_circuit`), is storage-proofs-update's circuit:
    /// the witness (hashes native, full and compact) is the gadgets'
    /// one-pass witness, the matrices (gadgets) joined
    /// from the parts are the blank circuit's recorded in one pass, and
    /// A·z, B·z, C·z over them is what synthesis evaluates.
    fn split_update_circuit_is_storage_proofs(rp: RegisteredUpdateProof, partitions: &[usize]) {
        let u = update_test_sector(rp, 8).unwrap();
        let instance = update_instance(rp, &u.vanilla_proofs, &u.comm_r_old, &u.comm_r_new, &u.comm_d_new).unwrap();
        let t = std::time::Instant::now();
        let split = instance.record_matrices().unwrap();
        let t_split = t.elapsed();
        let t = std::time::Instant::now();
        let one_pass = instance.record_matrices_sequential().unwrap();
        eprintln!("{rp:?}: matrices by parts {t_split:.2?}, one pass {:.2?}", t.elapsed());
        assert_eq!(
            (split.inputs, split.aux, split.constraints()),
            (one_pass.inputs, one_pass.aux, one_pass.constraints())
        );
        assert!(split == one_pass, "{rp:?}: split matrices == one pass");
        for &k in partitions {
            let t = std::time::Instant::now();
            let (inputs, aux) = instance.synthesize_witness(k).unwrap();
            let t_native = t.elapsed();
            let t = std::time::Instant::now();
            let gadgets = instance.synthesize_witness_gadgets(k).unwrap();
            eprintln!("{rp:?} partition {k}: witness native, challenges concurrently {t_native:.2?}; gadgets, one pass {:.2?}", t.elapsed());
            assert!(inputs == gadgets.0 && aux == gadgets.1, "{rp:?} partition {k}: native split witness == one pass");
            let (compact_inputs, compact) = instance.synthesize_compact_witness(k).unwrap();
            assert!(compact_inputs == inputs && compact.expand() == aux, "{rp:?} partition {k}: compact witness");
            let full = instance.synthesize_partition(k).unwrap();
            let (a, b, c) = c2_abc::evaluate(&split.view(), &inputs, &aux).unwrap();
            assert!(a == full.a && b == full.b && c == full.c, "{rp:?} partition {k}: A·z, B·z, C·z == synthesis");
        }
    }

    #[test]
    fn split_update_circuit_is_storage_proofs_at_2kib() {
        split_update_circuit_is_storage_proofs(RegisteredUpdateProof::StackedDrg2KiBV1, &[0]);
    }

    #[test]
    #[ignore = "8 MiB: ~10 M constraints per partition, a few minutes on two cores; cargo test --release -p c2-synth -- --ignored split_update"]
    fn split_update_circuit_is_storage_proofs_at_8mib() {
        split_update_circuit_is_storage_proofs(RegisteredUpdateProof::StackedDrg8MiBV1, &[0, 3]);
    }

    /// A full-size (32 GiB) update partition on the split circuit: the
    /// matrices recorded (prefix, then the 86 challenges concurrently),
    /// partition 0's and 15's native witnesses, and a·b = c over A·z, B·z,
    /// C·z. With `UPDATE_FULL_ONE_PASS=1` also storage-proofs' one pass
    /// (matrices and partition 0's gadget witness) compared with them.
    #[test]
    #[ignore = "a full-size update partition: ~82 M constraints, minutes and ~12 GB on two cores; cargo test --release -p c2-synth -- --ignored full_size_update --nocapture"]
    fn a_full_size_update_partition_is_satisfied() {
        let rp = RegisteredUpdateProof::StackedDrg32GiBV1;
        let t = std::time::Instant::now();
        let u = update_test_sector(rp, 8).unwrap();
        let instance = update_instance(rp, &u.vanilla_proofs, &u.comm_r_old, &u.comm_r_new, &u.comm_d_new).unwrap();
        instance.check_vanilla_proofs().unwrap();
        eprintln!("32 GiB test update: {} partitions made and verified in {:.1?}", u.vanilla_proofs.len(), t.elapsed());
        let t = std::time::Instant::now();
        let m = instance.record_matrices().unwrap();
        let entries = m.a.entries() + m.b.entries() + m.c.entries();
        eprintln!(
            "matrices by parts in {:.1?}: {} constraints, {} inputs, {} aux, A+B+C {entries} entries, {} coefficients; parameter lengths {:?}",
            t.elapsed(),
            m.constraints(),
            m.inputs,
            m.aux,
            m.coeffs.len(),
            m.parameter_lengths()
        );
        for k in [0, 15] {
            let t = std::time::Instant::now();
            let (inputs, aux) = instance.synthesize_witness(k).unwrap();
            let t_witness = t.elapsed();
            let t = std::time::Instant::now();
            let bad = crate::matrices::first_unsatisfied_in_chunks(&m, &inputs, &aux);
            eprintln!("partition {k}: native witness in {t_witness:.1?}, A·z, B·z, C·z in {:.1?}", t.elapsed());
            assert_eq!(bad, None, "partition {k}: a·b = c");
            if k == 0 && std::env::var_os("UPDATE_FULL_ONE_PASS").is_some() {
                let t = std::time::Instant::now();
                let gadgets = instance.synthesize_witness_gadgets(0).unwrap();
                eprintln!("partition 0: gadgets' witness, one pass, in {:.1?}", t.elapsed());
                assert!(gadgets.0 == inputs && gadgets.1 == aux, "native split witness == one pass at full size");
            }
        }
        if std::env::var_os("UPDATE_FULL_ONE_PASS").is_some() {
            let t = std::time::Instant::now();
            let one_pass = instance.record_matrices_sequential().unwrap();
            eprintln!("matrices in one pass in {:.1?}", t.elapsed());
            assert!(one_pass == m, "split matrices == one pass at full size");
        }
    }

    /// The circuit the 2 KiB test update builds is satisfied.
    #[test]
    fn a_test_update_circuit_is_satisfied() {
        let rp = RegisteredUpdateProof::StackedDrg2KiBV1;
        let u = update_test_sector(rp, 6).unwrap();
        let instance = update_instance(rp, &u.vanilla_proofs, &u.comm_r_old, &u.comm_r_new, &u.comm_d_new).unwrap();
        crate::check_satisfied(&instance.synthesize_partition(0).unwrap()).unwrap();
    }
}
