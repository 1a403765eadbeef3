//! The StackedDrg circuit's witness as storage-proofs-porep 19.1 allocates
//! it (`StackedCircuit::synthesize` and its per-challenge
//! `Proof::synthesize`), with the SHA-256 parts (the labels and the comm_d
//! path: 90 % of a challenge's witness time through the gadgets) and every
//! Poseidon hash (the columns, arity 2 or 11; the tree C / tree R paths,
//! arity 8 and the sub/top arities) computed natively. Every other step
//! (bit decompositions, `insert`, packing, encoding) calls the very gadget
//! the circuit calls; the differential tests compare the whole aux and input
//! vectors with the gadget path's.
//!
//! A challenge reads nothing of the prefix but the values its handles carry,
//! and a witness-only constraint system never looks a variable up, so each
//! challenge is generated into its own empty [`AssignmentCs`] and the parts
//! are appended to the prefix in challenge order.

use std::marker::PhantomData;

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::multipack;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::gadgets::uint32::UInt32;
use bellperson::{ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;
use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::DefaultPieceHasher;
use generic_array::typenum::{U11, U2, U4, U8};
use storage_proofs_core::gadgets::{
    encode::encode, insertion::insert, por::PoRCircuit, uint64::UInt64, variables::Root,
};
use storage_proofs_core::merkle::{DiskStore, MerkleProofTrait, MerkleTreeTrait, MerkleTreeWrapper};
use storage_proofs_core::util::reverse_bit_numbering;
use storage_proofs_porep::stacked::{self, StackedCircuit};

use super::poseidon;
use super::sha256::{packed_digest, sha256};
use super::Assignments;
use crate::AssignmentCs;

type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;
/// The circuit's Merkle path of a tree of `Tree`'s shape.
type TreeAuthPath<Tree> = storage_proofs_core::gadgets::por::AuthPath<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;
type TreeProof<Tree> = storage_proofs_core::merkle::MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;
type VanillaProof<Tree> = stacked::Proof<Tree, DefaultPieceHasher>;

/// The circuit's prefix (replica id and its bits, the commitments,
/// comm_r = H(comm_c, comm_r_last)) with the handles the challenges use.
pub(crate) struct Prefix {
    /// ONE and the prefix's assignments.
    pub(crate) cs: AssignmentCs,
    replica_id_bits: Vec<Boolean>,
    comm_c: AllocatedNum<Scalar>,
    comm_r_last: AllocatedNum<Scalar>,
}

impl Prefix {
    /// `StackedCircuit::synthesize` up to the challenges, from the values
    /// the circuit holds (each domain element as its field element).
    pub(crate) fn synthesize<Tree: MerkleTreeTrait>(
        replica_id: Scalar,
        comm_d: Scalar,
        comm_r: Scalar,
        comm_r_last: Scalar,
        comm_c: Scalar,
    ) -> Result<Self, SynthesisError> {
        let mut cs = AssignmentCs::new();
        cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        let replica_id_num = AllocatedNum::alloc(&mut cs, || Ok(replica_id))?;
        replica_id_num.inputize(&mut cs)?;
        let replica_id_bits = reverse_bit_numbering(replica_id_num.to_bits_le(&mut cs)?);
        // comm_d: only its input; tree D's root is compared, never allocated again.
        AllocatedNum::alloc(&mut cs, || Ok(comm_d))?.inputize(&mut cs)?;
        let comm_r = AllocatedNum::alloc(&mut cs, || Ok(comm_r))?;
        comm_r.inputize(&mut cs)?;
        let comm_r_last = AllocatedNum::alloc(&mut cs, || Ok(comm_r_last))?;
        let comm_c = AllocatedNum::alloc(&mut cs, || Ok(comm_c))?;
        // comm_r = H(comm_c || comm_r_last); the equality allocates nothing.
        <Tree::Hasher as Hasher>::Function::hash2_circuit(&mut cs, &comm_c, &comm_r_last)?;
        Ok(Self { cs, replica_id_bits, comm_c, comm_r_last })
    }
}

/// The type of `StackedCircuit::synthesize`'s challenge proofs, which
/// storage-proofs-porep does not export (its fields are public; the type's
/// module is private): read off the function's signature.
type Synthesize<A, B, C, D, E, F, P> = fn(A, B, C, D, E, F, Vec<P>) -> Result<(), SynthesisError>;

fn proof_type<A, B, C, D, E, F, P>(_: Synthesize<A, B, C, D, E, F, P>) -> PhantomData<P> {
    PhantomData
}

fn convert<V, P: From<V>>(v: V, _: PhantomData<P>) -> P {
    P::from(v)
}

/// Partition `k`'s challenge `proof` (`Proof::synthesize`) behind `prefix`:
/// its assignments alone, appended to `cs` (which holds nothing of the
/// prefix: inputs and aux go after the prefix's and the earlier
/// challenges').
pub(crate) fn challenge<Tree: 'static + MerkleTreeTrait, W: Assignments>(
    cs: &mut W,
    prefix: &Prefix,
    proof: &VanillaProof<Tree>,
    num_layers: usize,
) -> Result<(), SynthesisError> {
    let circuit_proof =
        convert(proof.clone(), proof_type(StackedCircuit::<Tree, DefaultPieceHasher>::synthesize::<&mut AssignmentCs>));
    let data_leaf = AllocatedNum::alloc(&mut *cs, || circuit_proof.data_leaf.ok_or(SynthesisError::AssignmentMissing))?;
    comm_d_inclusion(cs, &proof.comm_d_proofs.as_options(), &data_leaf)?;

    let vanilla_columns = &proof.replica_column_proofs;
    let mut columns = Vec::new();
    for (parent, vanilla) in circuit_proof.drg_parents_proofs.into_iter().zip(&vanilla_columns.drg_parents) {
        let (column, path) = parent.alloc(&mut *cs)?;
        let rows: Vec<_> = (1..=num_layers).map(|layer| column.get_value(layer).clone()).collect();
        let hash = column_hash(cs, &rows)?;
        inclusion::<Tree, W>(cs, path, || column_path::<Tree>(vanilla), &prefix.comm_c, &hash)?;
        columns.push(column);
    }
    let drg_parents = columns.len();
    for (parent, vanilla) in circuit_proof.exp_parents_proofs.into_iter().zip(&vanilla_columns.exp_parents) {
        let (column, path) = parent.alloc(&mut *cs)?;
        let rows: Vec<_> = (1..=num_layers).map(|layer| column.get_value(layer).clone()).collect();
        let hash = column_hash(cs, &rows)?;
        inclusion::<Tree, W>(cs, path, || column_path::<Tree>(vanilla), &prefix.comm_c, &hash)?;
        columns.push(column);
    }
    if columns.len() != vanilla_columns.drg_parents.len() + vanilla_columns.exp_parents.len() {
        return Err(SynthesisError::Unsatisfiable);
    }
    let (drg, exp) = columns.split_at(drg_parents);

    let challenge = UInt64::alloc(&mut *cs, circuit_proof.challenge)?;
    challenge.pack_into_input(&mut *cs)?;

    let mut labels = Vec::with_capacity(num_layers);
    for layer in 1..=num_layers {
        let mut parents = Vec::new();
        for column in drg {
            parents.push(reverse_bit_numbering(column.get_value(layer).to_bits_le(&mut *cs)?));
        }
        // Layer 1 has no expander parents; they store no first-layer value.
        if layer > 1 {
            for column in exp {
                parents.push(reverse_bit_numbering(column.get_value(layer - 1).to_bits_le(&mut *cs)?));
            }
        }
        // The 37 parents of the labeling hash, repeated as storage-proofs
        // repeats them.
        let mut expanded = parents.clone();
        if layer > 1 {
            expanded.extend_from_slice(&parents);
            expanded.extend_from_slice(&parents[..9]);
        } else {
            for _ in 0..5 {
                expanded.extend_from_slice(&parents);
            }
            expanded.push(parents[0].clone());
        }
        labels.push(create_label(cs, &prefix.replica_id_bits, &expanded, layer as u32, &challenge)?);
    }

    let key = labels.last().ok_or(SynthesisError::Unsatisfiable)?;
    let encoded = encode(&mut *cs, key, &data_leaf)?;
    let comm_r_last_path = || Ok(proof.comm_r_last_proof.as_options());
    inclusion::<Tree, W>(cs, circuit_proof.comm_r_last_path, comm_r_last_path, &prefix.comm_r_last, &encoded)?;

    let own_column = column_hash(cs, &labels)?;
    let comm_c_path = || column_path::<Tree>(&vanilla_columns.c_x);
    inclusion::<Tree, W>(cs, circuit_proof.comm_c_path, comm_c_path, &prefix.comm_c, &own_column)?;
    Ok(())
}

/// A column's hash: storage-proofs-porep's `hash_single_column` (parents'
/// columns) and `PoseidonFunction::hash_multi_leaf_circuit` (the challenged
/// node's labels), both neptune's legacy Poseidon gadget of arity 2 or 11,
/// replayed natively ([`poseidon::hash`]); the result allocated last, as the
/// gadget allocates it.
fn column_hash<W: Assignments>(
    cs: &mut W,
    rows: &[AllocatedNum<Scalar>],
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    let values =
        rows.iter().map(|r| r.get_value().ok_or(SynthesisError::AssignmentMissing)).collect::<Result<Vec<_>, _>>()?;
    let hash = match values.len() {
        2 => poseidon::hash::<U2>(cs, &values),
        11 => poseidon::hash::<U11>(cs, &values),
        _ => return Err(SynthesisError::Unsatisfiable),
    };
    AllocatedNum::alloc(&mut *cs, || Ok(hash))
}

/// A Merkle path as `AuthPath::from(proof.as_options())` reads it: per
/// level, the siblings and the node's index among its parent's children.
pub(crate) type PathOptions = Vec<(Vec<Option<Scalar>>, Option<usize>)>;

/// The path of `leaf` to `root` in a tree of `Tree`'s shape: natively for
/// Poseidon trees (tree C and tree R always are; [`poseidon_inclusion`],
/// from the vanilla proof's path), through the gadget otherwise.
fn inclusion<Tree: 'static + MerkleTreeTrait, W: Assignments>(
    cs: &mut W,
    path: TreeAuthPath<Tree>,
    vanilla_path: impl FnOnce() -> Result<PathOptions, SynthesisError>,
    root: &AllocatedNum<Scalar>,
    leaf: &AllocatedNum<Scalar>,
) -> Result<(), SynthesisError> {
    if <Tree::Hasher as Hasher>::name() == PoseidonHasher::name() {
        poseidon_inclusion(cs, &vanilla_path()?, leaf)
    } else {
        enforce_inclusion::<Tree, W>(cs, path, root, leaf)
    }
}

/// `PoRCircuit::synthesize` (private, root given) for a Poseidon tree, on
/// values: per level the index bits and the siblings allocated, the real
/// `insert` gadget, then the node's hash replayed natively
/// ([`poseidon::hash`], arity 2, 4 or 8 from the level's sibling count) and
/// allocated; the index bits packed into inputs. The root comparison is a
/// constraint and allocates nothing.
pub(crate) fn poseidon_inclusion<W: Assignments>(
    cs: &mut W,
    path: &PathOptions,
    leaf: &AllocatedNum<Scalar>,
) -> Result<(), SynthesisError> {
    let mut cur = leaf.clone();
    let mut path_bits = Vec::new();
    for (siblings, index) in path {
        let arity = siblings.len() + 1;
        if !arity.is_power_of_two() || arity < 2 {
            return Err(SynthesisError::Unsatisfiable);
        }
        let first_bit = path_bits.len();
        for i in 0..arity.trailing_zeros() {
            let bit = AllocatedBit::alloc(&mut *cs, index.map(|x| (x >> i) & 1 == 1))?;
            path_bits.push(Boolean::from(bit));
        }
        let inserted = insert_siblings(cs, &cur, &path_bits[first_bit..], siblings)?;
        let values = inserted
            .iter()
            .map(|n| n.get_value().ok_or(SynthesisError::AssignmentMissing))
            .collect::<Result<Vec<_>, _>>()?;
        let hash = match arity {
            2 => poseidon::hash::<U2>(cs, &values),
            4 => poseidon::hash::<U4>(cs, &values),
            8 => poseidon::hash::<U8>(cs, &values),
            _ => return Err(SynthesisError::Unsatisfiable),
        };
        cur = AllocatedNum::alloc(&mut *cs, || Ok(hash))?;
    }
    multipack::pack_into_inputs(&mut *cs, &path_bits)
}

/// One level of `PoRCircuit`'s path after its index bits: the siblings
/// allocated, then the `insert` gadget's picks (the node at `bits` among
/// them), which the level's hash reads.
fn insert_siblings<W: Assignments>(
    cs: &mut W,
    cur: &AllocatedNum<Scalar>,
    bits: &[Boolean],
    siblings: &[Option<Scalar>],
) -> Result<Vec<AllocatedNum<Scalar>>, SynthesisError> {
    let siblings = siblings
        .iter()
        .map(|s| AllocatedNum::alloc(&mut *cs, || s.ok_or(SynthesisError::AssignmentMissing)))
        .collect::<Result<Vec<_>, _>>()?;
    insert(cs, cur, bits, &siblings)
}

/// The Merkle path of a vanilla column proof. storage-proofs-porep keeps
/// `ColumnProof::inclusion_proof` crate-private and has no getter; the proof
/// is `Serialize` and its path type `Deserialize`, so the field is read back
/// through serde (15 small proofs per challenge).
fn column_path<Tree: MerkleTreeTrait>(column_proof: &impl serde::Serialize) -> Result<PathOptions, SynthesisError> {
    #[derive(serde::Deserialize)]
    struct Fields<P> {
        inclusion_proof: P,
    }
    let value = serde_json::to_value(column_proof).map_err(|_| SynthesisError::AssignmentMissing)?;
    let fields: Fields<TreeProof<Tree>> =
        serde_json::from_value(value).map_err(|_| SynthesisError::AssignmentMissing)?;
    Ok(fields.inclusion_proof.as_options())
}

/// storage-proofs-porep's `enforce_inclusion`: the path of `leaf` to `root`
/// in a tree of `Tree`'s shape, through `PoRCircuit` (Poseidon: the gadget).
fn enforce_inclusion<Tree: 'static + MerkleTreeTrait, W: Assignments>(
    cs: &mut W,
    path: TreeAuthPath<Tree>,
    root: &AllocatedNum<Scalar>,
    leaf: &AllocatedNum<Scalar>,
) -> Result<(), SynthesisError> {
    type Wrapper<T> = MerkleTreeWrapper<
        <T as MerkleTreeTrait>::Hasher,
        DiskStore<TreeDomain<T>>,
        <T as MerkleTreeTrait>::Arity,
        <T as MerkleTreeTrait>::SubTreeArity,
        <T as MerkleTreeTrait>::TopTreeArity,
    >;
    PoRCircuit::<Wrapper<Tree>>::synthesize(
        cs,
        Root::from_allocated::<W>(leaf.clone()),
        path,
        Root::from_allocated::<W>(root.clone()),
        true,
    )
}

/// The comm_d inclusion (`PoRCircuit` over tree D, binary SHA-256) with
/// native hashes: per level the index bit, the sibling, the two picks of
/// `insert_2`, then `Sha256Function::hash_multi_leaf_circuit`; the index
/// bits packed into inputs at the end. The root is the prefix's comm_d, so
/// nothing is allocated for it.
fn comm_d_inclusion<W: Assignments>(
    cs: &mut W,
    path: &[(Vec<Option<Scalar>>, Option<usize>)],
    leaf: &AllocatedNum<Scalar>,
) -> Result<(), SynthesisError> {
    let mut cur = leaf.clone();
    let mut index_bits = Vec::with_capacity(path.len());
    for (siblings, index) in path {
        let bit = Boolean::from(AllocatedBit::alloc(&mut *cs, index.map(|i| i & 1 == 1))?);
        index_bits.push(bit.clone());
        if siblings.len() != 1 {
            return Err(SynthesisError::Unsatisfiable);
        }
        let inserted = insert_siblings(cs, &cur, &[bit], siblings)?;
        cur = sha256_of_nums(cs, &inserted)?;
    }
    multipack::pack_into_inputs(&mut *cs, &index_bits)
}

/// `Sha256Function::hash_multi_leaf_circuit`: each number's 255 bits
/// (allocated by the gadget), padded to 256, every byte's bits reversed;
/// the digest natively, packed into one number.
pub(crate) fn sha256_of_nums<W: Assignments>(
    cs: &mut W,
    leaves: &[AllocatedNum<Scalar>],
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    let mut bits = Vec::with_capacity(256 * leaves.len());
    for leaf in leaves {
        let mut padded = leaf.to_bits_le(&mut *cs)?;
        while !padded.len().is_multiple_of(8) {
            padded.push(Boolean::Constant(false));
        }
        bits.extend(padded.chunks_exact(8).flat_map(|byte| byte.iter().rev()).cloned());
    }
    let digest = sha256(&bits, cs)?;
    AllocatedNum::alloc(cs, || Ok(packed_digest(digest)))
}

/// `create_label_circuit`: SHA-256 of replica id (padded to 32 bytes) ||
/// layer (4 bytes) || node (8 bytes) || zeros to 64 bytes || the 37 parents
/// (each padded to 32 bytes), packed into one number; the hash natively.
fn create_label<W: Assignments>(
    cs: &mut W,
    replica_id: &[Boolean],
    parents: &[Vec<Boolean>],
    layer: u32,
    node: &UInt64,
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    let mut preimage = Vec::with_capacity(39 * 256);
    preimage.extend_from_slice(replica_id);
    preimage.resize(256.max(preimage.len()), Boolean::constant(false));
    preimage.extend(UInt32::constant(layer).into_bits_be());
    preimage.extend(node.to_bits_be());
    preimage.resize(512.max(preimage.len()), Boolean::constant(false));
    for parent in parents {
        preimage.extend_from_slice(parent);
        while !preimage.len().is_multiple_of(256) {
            preimage.push(Boolean::constant(false));
        }
    }
    if replica_id.len() > 256 || preimage.len() != (2 + parents.len()) * 256 {
        return Err(SynthesisError::Unsatisfiable);
    }
    let digest = sha256(&preimage, cs)?;
    AllocatedNum::alloc(cs, || Ok(packed_digest(digest)))
}
