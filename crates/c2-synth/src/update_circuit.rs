//! The EmptySectorUpdate circuit in two steps, so a partition's challenges
//! synthesize concurrently: [`prefix`] (the public inputs, phi, comm_c and
//! the two TreeR roots, the partition's apex tree and its path to comm_d,
//! every challenge's bits) and [`challenge`] (one challenge's rho, its new
//! label and its three inclusion paths). Run one after the other on one
//! constraint system, they allocate and enforce exactly what
//! storage-proofs-update 19.1's `EmptySectorUpdateCircuit::synthesize` does
//! (same variables, same rows, same order; tested against it on the
//! recorded matrices and the witness at 2 KiB and 8 MiB), written here
//! because its gadgets (`apex_por`, `gen_challenge_bits`, ...) are private
//! to that crate.
//!
//! Why: one 32 GiB partition is ~82 M constraints, ~6 M of them the
//! prefix (127 SHA-256 hashes of the apex tree) and ~0.9 M each of its 86
//! challenges (19 SHA-256 levels of TreeD, two Poseidon paths). On one
//! thread the circuit takes minutes per partition; with the challenges on
//! every core, the prefix sets the floor.
//!
//! A challenge only reads variables of the prefix, never of another
//! challenge: each is synthesized on its own constraint system that
//! continues the prefix's numbering ([`crate::matrices`] joins recorded
//! parts by moving each part's own variables after the previous part's;
//! witness-only systems just append values).

use bellperson::gadgets::boolean::{field_into_allocated_bits_le, AllocatedBit, Boolean};
use bellperson::gadgets::multipack::pack_bits;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::{ConstraintSystem, LinearCombination, SynthesisError};
use blstrs::Scalar;
use ff::{Field, PrimeField, PrimeFieldBits};
use filecoin_hashers::poseidon::PoseidonFunction;
use filecoin_hashers::sha256::Sha256Function;
use filecoin_hashers::{HashFunction, Hasher};
use generic_array::typenum::{U2, U4, U8};
use neptune::circuit::poseidon_hash;
use storage_proofs_core::gadgets::insertion::{insert, select};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_update::circuit::ChallengeProof;
use storage_proofs_update::constants::{hs, TreeRHasher, POSEIDON_CONSTANTS_GEN_RANDOMNESS};
use storage_proofs_update::EmptySectorUpdateCircuit;

use crate::native::{self, Assignments};

/// How the circuit's Merkle hashes are synthesized: [`Gadgets`] runs
/// filecoin-hashers' gadgets (any system: matrices, the reference
/// witness), [`Native`] computes the same assignments on values
/// (witness-only systems; SHA-256 is ~95 % of a 32 GiB partition's
/// constraints).
pub(crate) trait Hashes<CS: ConstraintSystem<Scalar>> {
    /// `Sha256Function::hash_multi_leaf_circuit` (and `hash2_circuit`,
    /// the same for two leaves).
    fn sha256(cs: &mut CS, leaves: &[AllocatedNum<Scalar>]) -> Result<AllocatedNum<Scalar>, SynthesisError>;
    /// `PoseidonFunction::hash_multi_leaf_circuit` of arity `leaves.len()`.
    fn poseidon(cs: &mut CS, leaves: &[AllocatedNum<Scalar>]) -> Result<AllocatedNum<Scalar>, SynthesisError>;
}

/// filecoin-hashers' gadgets.
pub(crate) struct Gadgets;

impl<CS: ConstraintSystem<Scalar>> Hashes<CS> for Gadgets {
    fn sha256(cs: &mut CS, leaves: &[AllocatedNum<Scalar>]) -> Result<AllocatedNum<Scalar>, SynthesisError> {
        Sha256Function::hash_multi_leaf_circuit::<U2, _>(cs, leaves, 0)
    }

    fn poseidon(cs: &mut CS, leaves: &[AllocatedNum<Scalar>]) -> Result<AllocatedNum<Scalar>, SynthesisError> {
        match leaves.len() {
            2 => PoseidonFunction::hash_multi_leaf_circuit::<U2, _>(cs, leaves, 0),
            4 => PoseidonFunction::hash_multi_leaf_circuit::<U4, _>(cs, leaves, 0),
            8 => PoseidonFunction::hash_multi_leaf_circuit::<U8, _>(cs, leaves, 0),
            _ => Err(malformed()),
        }
    }
}

/// The hashes on values ([`native::sha256`], [`native::poseidon`]), the
/// result allocated last as the gadgets allocate it.
pub(crate) struct Native;

impl<W: Assignments> Hashes<W> for Native {
    fn sha256(cs: &mut W, leaves: &[AllocatedNum<Scalar>]) -> Result<AllocatedNum<Scalar>, SynthesisError> {
        native::stacked::sha256_of_nums(cs, leaves)
    }

    fn poseidon(cs: &mut W, leaves: &[AllocatedNum<Scalar>]) -> Result<AllocatedNum<Scalar>, SynthesisError> {
        let values = leaves.iter().map(|n| missing(n.get_value())).collect::<Result<Vec<_>, _>>()?;
        let hash = match leaves.len() {
            2 => native::poseidon::hash::<U2>(cs, &values),
            4 => native::poseidon::hash::<U4>(cs, &values),
            8 => native::poseidon::hash::<U8>(cs, &values),
            _ => return Err(malformed()),
        };
        AllocatedNum::alloc(cs, || Ok(hash))
    }
}

/// What a challenge reads of the prefix.
pub(crate) struct Prefix {
    /// `H(comm_d_new || comm_r_old)`.
    phi: AllocatedNum<Scalar>,
    /// The partition index, little-endian.
    partition_bits: Vec<AllocatedBit>,
    /// One-hot choice of `h` among `hs`.
    h_select_bits: Vec<AllocatedBit>,
    /// Each challenge's random bits (the partition's bits come after them).
    challenge_bits: Vec<Vec<AllocatedBit>>,
    root_r_old: AllocatedNum<Scalar>,
    root_r_new: AllocatedNum<Scalar>,
    apex_leafs: Vec<AllocatedNum<Scalar>>,
    /// `hs(sector_nodes)`.
    hs: Vec<usize>,
    /// Bits of a challenge: log2(sector nodes).
    challenge_bit_len: usize,
    partition_bit_len: usize,
    apex_leaf_bit_len: usize,
}

impl Prefix {
    /// Challenges the prefix generated bits for.
    pub(crate) fn challenges(&self) -> usize {
        self.challenge_bits.len()
    }
}

fn missing<T>(v: Option<T>) -> Result<T, SynthesisError> {
    v.ok_or(SynthesisError::AssignmentMissing)
}

/// An input the circuit would reject by assertion (a partition index past
/// the count, `h_select` not one-hot, inconsistent lengths).
fn malformed() -> SynthesisError {
    SynthesisError::Unsatisfiable
}

fn alloc<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    name: impl FnOnce() -> String,
    value: Option<Scalar>,
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    AllocatedNum::alloc(cs.namespace(name), || missing(value))
}

/// Everything `EmptySectorUpdateCircuit::synthesize` does before its loop
/// over the challenges, in its order.
pub(crate) fn prefix<H, TreeR, CS>(
    cs: &mut CS,
    circuit: &EmptySectorUpdateCircuit<TreeR>,
) -> Result<Prefix, SynthesisError>
where
    H: Hashes<CS>,
    TreeR: MerkleTreeTrait<Hasher = TreeRHasher>,
    CS: ConstraintSystem<Scalar>,
{
    let p = &circuit.pub_params;
    let (inputs, private) = (&circuit.pub_inputs, &circuit.priv_inputs);
    let hs = hs(p.sector_nodes).to_vec();
    let proofs = &private.challenge_proofs;
    let first = proofs.first().ok_or_else(malformed)?;
    let path_start = p.challenge_bit_len.checked_sub(p.partition_bit_len).ok_or_else(malformed)?;
    let partition_path = first.path_d_new.get(path_start..).ok_or_else(malformed)?;
    if let Some(packed) = inputs.k_and_h_select {
        let bits: Vec<bool> = packed.to_le_bits().into_iter().collect();
        let k = bits[..p.partition_bit_len].iter().rev().fold(0usize, |k, &b| (k << 1) | b as usize);
        let one_hot = bits[p.partition_bit_len..p.partition_bit_len + hs.len()].iter().filter(|b| **b).count() == 1;
        let rest_clear = bits[p.partition_bit_len + hs.len()..].iter().all(|b| !*b);
        if k >= p.partition_count || !one_hot || !rest_clear {
            return Err(malformed());
        }
    }
    if private.apex_leafs.len() != p.apex_leaf_count
        || partition_path.len() != p.partition_bit_len
        || partition_path.iter().any(|s| s.len() != 1)
        || proofs.len() != p.challenge_count
        || proofs.iter().any(|c| c.path_d_new.get(path_start..) != Some(partition_path))
    {
        return Err(malformed());
    }

    // k and h_select, one public input, and its bits.
    let k_and_h_select = alloc(cs, || "k_and_h_select".into(), inputs.k_and_h_select)?;
    k_and_h_select.inputize(cs.namespace(|| "k_and_h_select (public input)"))?;
    let bit_len = p.partition_bit_len + hs.len();
    let values: Vec<Option<bool>> = match k_and_h_select.get_value() {
        Some(v) => v.to_le_bits().into_iter().take(bit_len).map(Some).collect(),
        None => vec![None; bit_len],
    };
    let bits = values
        .into_iter()
        .enumerate()
        .map(|(i, b)| AllocatedBit::alloc(cs.namespace(|| format!("k_and_h_select_bit_{i}")), b))
        .collect::<Result<Vec<_>, _>>()?;
    bind_bits(cs, &bits, &k_and_h_select);
    let partition_bits = bits[..p.partition_bit_len].to_vec();
    let h_select_bits = bits[p.partition_bit_len..].to_vec();
    let partition = pack_bits(
        cs.namespace(|| "pack partition bits"),
        &partition_bits.iter().cloned().map(Boolean::from).collect::<Vec<_>>(),
    )?;

    let comm_r_old = alloc(cs, || "comm_r_old".into(), inputs.comm_r_old)?;
    comm_r_old.inputize(cs.namespace(|| "comm_r_old_input"))?;
    let comm_d_new = alloc(cs, || "comm_d_new".into(), inputs.comm_d_new)?;
    comm_d_new.inputize(cs.namespace(|| "comm_d_new_input"))?;
    let comm_r_new = alloc(cs, || "comm_r_new".into(), inputs.comm_r_new)?;
    comm_r_new.inputize(cs.namespace(|| "comm_r_new_input"))?;
    let phi = poseidon_hash(
        cs.namespace(|| "phi"),
        vec![comm_d_new.clone(), comm_r_old.clone()],
        &*POSEIDON_CONSTANTS_GEN_RANDOMNESS,
    )?;

    let comm_c = alloc(cs, || "comm_c".into(), private.comm_c)?;
    let root_r_old = alloc(cs, || "root_r_old".into(), private.root_r_old)?;
    let root_r_new = alloc(cs, || "root_r_new".into(), private.root_r_new)?;
    let apex_leafs = private
        .apex_leafs
        .iter()
        .enumerate()
        .map(|(i, leaf)| alloc(cs, || format!("apex_leaf_{i}"), *leaf))
        .collect::<Result<Vec<_>, _>>()?;
    let partition_path = partition_path
        .iter()
        .enumerate()
        .map(|(i, s)| Ok(vec![alloc(cs, || format!("partition_path_sibling_{i}"), s[0])?]))
        .collect::<Result<Vec<_>, SynthesisError>>()?;

    // comm_r = H(comm_c || root_r), old and new.
    for (name, root, comm_r) in [("old", &root_r_old, &comm_r_old), ("new", &root_r_new, &comm_r_new)] {
        let calc = <TreeRHasher as Hasher>::Function::hash2_circuit(
            cs.namespace(|| format!("comm_r_{name}_calc")),
            &comm_c,
            root,
        )?;
        cs.enforce(
            || format!("enforce comm_r_{name}_calc == comm_r_{name}"),
            |lc| lc + calc.get_variable(),
            |lc| lc + CS::one(),
            |lc| lc + comm_r.get_variable(),
        );
    }

    apex_por::<H, _>(cs, apex_leafs.clone(), &partition_bits, partition_path, comm_d_new)?;
    let challenge_bits = gen_challenge_bits(
        &mut cs.namespace(|| "gen_challenge_bits"),
        &comm_r_new,
        &partition,
        p.challenge_count,
        p.challenge_bit_len - p.partition_bit_len,
    )?;
    Ok(Prefix {
        phi,
        partition_bits,
        h_select_bits,
        challenge_bits,
        root_r_old,
        root_r_new,
        apex_leafs,
        hs,
        challenge_bit_len: p.challenge_bit_len,
        partition_bit_len: p.partition_bit_len,
        apex_leaf_bit_len: p.apex_leaf_bit_len,
    })
}

/// Challenge `c`'s iteration of the circuit's loop: rho, the new label,
/// the TreeROld and TreeRNew paths, the TreeDNew path up to the apex leaf
/// it selects.
pub(crate) fn challenge<H, TreeR, CS>(
    cs: &mut CS,
    prefix: &Prefix,
    c: usize,
    proof: &ChallengeProof<TreeR>,
) -> Result<(), SynthesisError>
where
    H: Hashes<CS>,
    TreeR: MerkleTreeTrait<Hasher = TreeRHasher>,
    CS: ConstraintSystem<Scalar>,
{
    let random_bits = prefix.challenge_bits.get(c).ok_or_else(malformed)?;
    let c_bits: Vec<AllocatedBit> = random_bits.iter().chain(&prefix.partition_bits).cloned().collect();
    let c_high = challenge_high_bits(
        &mut cs.namespace(|| format!("get_challenge_high_bits (c_index={c})")),
        &c_bits,
        &prefix.h_select_bits,
        &prefix.hs,
    )?;
    let rho = poseidon_hash(
        cs.namespace(|| format!("rho (c_index={c})")),
        vec![prefix.phi.clone(), c_high],
        &*POSEIDON_CONSTANTS_GEN_RANDOMNESS,
    )?;
    let leaf_r_old = alloc(cs, || format!("leaf_r_old (c_index={c})"), proof.leaf_r_old)?;
    let leaf_d_new = alloc(cs, || format!("leaf_d_new (c_index={c})"), proof.leaf_d_new)?;
    let leaf_r_new =
        label_r_new(&mut cs.namespace(|| format!("leaf_r_new (c_index={c})")), &leaf_r_old, &leaf_d_new, &rho)?;
    if let (Some(calc), Some(given)) = (leaf_r_new.get_value(), proof.leaf_r_new) {
        if calc != given {
            return Err(SynthesisError::Unsatisfiable);
        }
    }

    let siblings = |cs: &mut CS, tree: &str, path: &[Vec<Option<Scalar>>]| {
        path.iter()
            .enumerate()
            .map(|(row, s)| {
                s.iter()
                    .enumerate()
                    .map(|(i, v)| {
                        alloc(cs, || format!("{tree} sibling (c_index={c}, tree_row={row}, sibling_index={i})"), *v)
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .collect::<Result<Vec<_>, SynthesisError>>()
    };
    let path_r_old = siblings(cs, "path_r_old", &proof.path_r_old)?;
    por(cs, &c_bits, leaf_r_old, path_r_old, &prefix.root_r_old, H::poseidon)?;
    let path_r_new = siblings(cs, "path_r_new", &proof.path_r_new)?;
    por(cs, &c_bits, leaf_r_new, path_r_new, &prefix.root_r_new, H::poseidon)?;

    let to_apex = prefix.challenge_bit_len - prefix.partition_bit_len - prefix.apex_leaf_bit_len;
    let apex_leaf_bits: Vec<Boolean> =
        c_bits[to_apex..to_apex + prefix.apex_leaf_bit_len].iter().cloned().map(Boolean::from).collect();
    let apex_leaf =
        select(cs.namespace(|| format!("select_apex_leaf (c_index={c})")), &prefix.apex_leafs, &apex_leaf_bits)?;
    let path_to_apex = proof
        .path_d_new
        .iter()
        .take(to_apex)
        .enumerate()
        .map(|(row, s)| {
            let v = *s.first().ok_or_else(malformed)?;
            Ok(vec![alloc(cs, || format!("path_to_apex_leaf sibling (c_index={c}, tree_row={row})"), v)?])
        })
        .collect::<Result<Vec<_>, SynthesisError>>()?;
    por(cs, &c_bits[..to_apex], leaf_d_new, path_to_apex, &apex_leaf, H::sha256)
}

/// One Merkle level's hash of its (inserted) children.
type HashFn<CS> = fn(&mut CS, &[AllocatedNum<Scalar>]) -> Result<AllocatedNum<Scalar>, SynthesisError>;

/// storage-proofs-core's `por_no_challenge_input`: per level, as many of
/// `bits` as the level's arity takes, `insert`, the level's hash; the
/// root computed from the leaf equal to `root` (a constraint). Every bit
/// is used.
fn por<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    bits: &[AllocatedBit],
    leaf: AllocatedNum<Scalar>,
    path: Vec<Vec<AllocatedNum<Scalar>>>,
    root: &AllocatedNum<Scalar>,
    hash: HashFn<CS>,
) -> Result<(), SynthesisError> {
    let mut cur = leaf;
    let mut bits = bits.iter().cloned().map(Boolean::from);
    for siblings in path {
        let arity = siblings.len() + 1;
        if !arity.is_power_of_two() || arity < 2 {
            return Err(malformed());
        }
        let index: Vec<Boolean> = bits.by_ref().take(arity.trailing_zeros() as usize).collect();
        if index.len() != arity.trailing_zeros() as usize {
            return Err(malformed());
        }
        let preimage = insert(cs, &cur, &index, &siblings)?;
        cur = hash(cs, &preimage)?;
    }
    if bits.next().is_some() {
        return Err(malformed());
    }
    cs.enforce(
        || "calculated root == provided root",
        |lc| lc + cur.get_variable(),
        |lc| lc + CS::one(),
        |lc| lc + root.get_variable(),
    );
    Ok(())
}

/// The partition's apex tree from its leafs (SHA-256), and the partition
/// path from its root to comm_d.
fn apex_por<H: Hashes<CS>, CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    apex_leafs: Vec<AllocatedNum<Scalar>>,
    partition_bits: &[AllocatedBit],
    partition_path: Vec<Vec<AllocatedNum<Scalar>>>,
    comm_d: AllocatedNum<Scalar>,
) -> Result<(), SynthesisError> {
    let height = apex_leafs.len().trailing_zeros() as usize;
    let mut row = apex_leafs;
    for _ in 0..height {
        row = row.chunks(2).map(|pair| H::sha256(cs, pair)).collect::<Result<Vec<_>, _>>()?;
    }
    let root = row.into_iter().next().ok_or_else(malformed)?;
    por(cs, partition_bits, root, partition_path, &comm_d, H::sha256)
}

/// `num` as `Scalar::NUM_BITS` allocated bits, little-endian, bound to it.
fn num_to_bits<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    num: &AllocatedNum<Scalar>,
) -> Result<Vec<AllocatedBit>, SynthesisError> {
    let bits = field_into_allocated_bits_le(&mut *cs, num.get_value())?;
    bind_bits(cs, &bits, num);
    Ok(bits)
}

/// `(Σ 2^i · bits_i) · 1 = num`: the bits, little-endian, are `num`'s.
fn bind_bits<CS: ConstraintSystem<Scalar>>(cs: &mut CS, bits: &[AllocatedBit], num: &AllocatedNum<Scalar>) {
    let mut lc = LinearCombination::<Scalar>::zero();
    let mut pow2 = Scalar::ONE;
    for bit in bits {
        lc = lc + (pow2, bit.get_variable());
        pow2 = pow2.double();
    }
    cs.enforce(|| "binary decomp", |_| lc, |lc| lc + CS::one(), |lc| lc + num.get_variable());
}

/// Each challenge's random bits: `digest_j = H(comm_r_new || k · digests + j)`
/// cut into `bits_per_challenge`-bit pieces, `Scalar::CAPACITY /
/// bits_per_challenge` per digest.
fn gen_challenge_bits<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    comm_r_new: &AllocatedNum<Scalar>,
    partition: &AllocatedNum<Scalar>,
    challenges: usize,
    bits_per_challenge: usize,
) -> Result<Vec<Vec<AllocatedBit>>, SynthesisError> {
    let per_digest = Scalar::CAPACITY as usize / bits_per_challenge;
    let digests = challenges.div_ceil(per_digest) as u64;
    let mut out = Vec::with_capacity(challenges);
    for j in 0..digests {
        let index = AllocatedNum::alloc(cs.namespace(|| format!("digest_index_{j}")), || {
            Ok(missing(partition.get_value())? * Scalar::from(digests) + Scalar::from(j))
        })?;
        cs.enforce(
            || format!("digest_index_{j} == k * digests_per_partition + {j}"),
            |lc| lc + (Scalar::from(digests), partition.get_variable()) + (Scalar::from(j), CS::one()),
            |lc| lc + CS::one(),
            |lc| lc + index.get_variable(),
        );
        let digest = poseidon_hash(
            cs.namespace(|| format!("digest_{j}")),
            vec![comm_r_new.clone(), index],
            &*POSEIDON_CONSTANTS_GEN_RANDOMNESS,
        )?;
        let bits = num_to_bits(&mut cs.namespace(|| format!("digest_{j}_bits")), &digest)?;
        let take = if j == digests - 1 { challenges - out.len() } else { per_digest };
        out.extend(bits.chunks(bits_per_challenge).take(take).map(<[AllocatedBit]>::to_vec));
    }
    Ok(out)
}

/// The `h` high bits of a challenge, `h` chosen by the one-hot
/// `h_select_bits` among `hs`: `sum_i high_i(c) · h_select_i`.
fn challenge_high_bits<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    c_bits: &[AllocatedBit],
    h_select_bits: &[AllocatedBit],
    hs: &[usize],
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    let c_bits: Vec<Boolean> = c_bits.iter().cloned().map(Boolean::from).collect();
    let len = c_bits.len();
    let scaled = hs
        .iter()
        .zip(h_select_bits)
        .enumerate()
        .map(|(k, (&h, select_bit))| {
            let high = pack_bits(cs.namespace(|| format!("c_high (h={h}, k={k})")), &c_bits[len - h..])?;
            let value = AllocatedNum::alloc(cs.namespace(|| format!("c_high_or_zero (h={h}, k={k})")), || {
                if missing(select_bit.get_value())? {
                    missing(high.get_value())
                } else {
                    Ok(Scalar::ZERO)
                }
            })?;
            cs.enforce(
                || format!("c_high_or_zero == c_high * h_select_bit (h={h}, k={k})"),
                |lc| lc + high.get_variable(),
                |lc| lc + select_bit.get_variable(),
                |lc| lc + value.get_variable(),
            );
            Ok(value)
        })
        .collect::<Result<Vec<_>, SynthesisError>>()?;
    let selected = AllocatedNum::alloc(cs.namespace(|| "c_high_selected"), || {
        scaled.iter().try_fold(Scalar::ZERO, |sum, v| Ok(sum + missing(v.get_value())?))
    })?;
    cs.enforce(
        || "c_high_selected == dot(c_highs, h_select_bits)",
        |lc| scaled.iter().fold(lc, |lc, v| lc + v.get_variable()),
        |lc| lc + CS::one(),
        |lc| lc + selected.get_variable(),
    );
    Ok(selected)
}

/// `label_r_new = label_r_old + label_d_new · rho`.
fn label_r_new<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    label_r_old: &AllocatedNum<Scalar>,
    label_d_new: &AllocatedNum<Scalar>,
    rho: &AllocatedNum<Scalar>,
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    let d_rho = label_d_new.mul(cs.namespace(|| "label_d_new * rho"), rho)?;
    let new = AllocatedNum::alloc(cs.namespace(|| "label_r_new"), || {
        Ok(missing(label_r_old.get_value())? + missing(d_rho.get_value())?)
    })?;
    cs.enforce(
        || "label_r_new == label_r_old + label_d_new * rho",
        |lc| lc + label_r_old.get_variable() + d_rho.get_variable(),
        |lc| lc + CS::one(),
        |lc| lc + new.get_variable(),
    );
    Ok(new)
}
