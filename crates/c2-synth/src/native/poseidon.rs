//! Poseidon witnesses on field elements: neptune 11's legacy circuit
//! (`neptune::circuit::poseidon_hash`, what filecoin-hashers'
//! `PoseidonFunction::hash_multi_leaf_circuit` / `hash2_circuit` /
//! `hash_leaf_circuit` call for the column hashes and the tree C / tree R
//! paths) replayed on values, allocating what the gadget allocates in the
//! order it allocates it:
//!
//! - the state starts as the domain tag (a constant) and the preimage (the
//!   caller's allocated numbers);
//! - an S-box on an element that is a linear combination first allocates it
//!   ("S-box input"), then `l^2`, `l^4` and `l^4 * l + key` (first round:
//!   `(l + pre)^2`, `l^4`, `l^4 * (l + pre) + post`; the tag's S-box is a
//!   constant); every other step (round keys, the dense and sparse MDS
//!   products) only forms linear combinations;
//! - the result (state element 1, a linear combination) is allocated last.
//!
//! So a full round costs 4 allocations per element (3 in the first round,
//! where the preimage is allocated already, and none for the tag), a
//! partial round 4. Checked against the gadget, assignment for assignment,
//! by the tests below and by the stacked circuit's native-vs-gadgets tests.

use blstrs::Scalar;
use ff::Field;
use filecoin_hashers::PoseidonArity;

use super::BitSink;

/// One state element: its value, and whether the gadget holds it as an
/// allocated variable (else as a linear combination, allocated when an
/// S-box or the result needs it).
#[derive(Clone, Copy)]
struct Elt {
    value: Scalar,
    allocated: bool,
}

impl Elt {
    fn lc(value: Scalar) -> Self {
        Self { value, allocated: false }
    }
}

/// `neptune::circuit::poseidon_hash::<_, Fr, A>(cs, preimage, A::PARAMETERS())`
/// on values: pushes every assignment the gadget makes into `sink` but the
/// last, and returns the hash: the gadget's last assignment ("hash result"),
/// which the caller allocates so that it has the variable. `preimage` holds
/// `A` values (the caller's allocated numbers, already in the witness).
pub(crate) fn hash<A: 'static + PoseidonArity>(sink: &mut impl BitSink, preimage: &[Scalar]) -> Scalar {
    let c = A::PARAMETERS();
    let width = c.width();
    debug_assert_eq!(preimage.len() + 1, width, "a preimage of the arity's length");
    let mut state: Vec<Elt> = Vec::with_capacity(width);
    state.push(Elt::lc(c.domain_tag));
    state.extend(preimage.iter().map(|&value| Elt { value, allocated: true }));

    let keys = &c.compressed_round_constants;
    let mut offset = 0;
    let mut round = 0;
    let half = c.half_full_rounds;
    // The MDS product after round `round`: dense M, the pre-sparse matrix
    // after the last initial full round, sparse ones through the partial
    // rounds (neptune's `product_mds`).
    let product = |state: &mut Vec<Elt>, round: &mut usize| {
        let dense = |state: &mut Vec<Elt>, m: &[Vec<Scalar>]| {
            let next: Vec<Elt> = (0..width)
                .map(|j| Elt::lc(state.iter().enumerate().fold(Scalar::ZERO, |acc, (i, e)| acc + e.value * m[i][j])))
                .collect();
            *state = next;
        };
        if *round == half - 1 {
            dense(state, &c.pre_sparse_matrix);
        } else if *round > half - 1 && *round < half + c.partial_rounds {
            let sparse = &c.sparse_matrixes[*round - half];
            let first = state[0].value;
            let head = state.iter().zip(&sparse.w_hat).fold(Scalar::ZERO, |acc, (e, w)| acc + e.value * w);
            for (e, v) in state[1..].iter_mut().zip(&sparse.v_rest) {
                *e = Elt::lc(e.value + first * v);
            }
            state[0] = Elt::lc(head);
        } else {
            dense(state, &c.mds_matrices.m);
        }
        *round += 1;
    };
    // `quintic_s_box`: the input allocated if it is a combination, then
    // l^2, l^4, l^5 + key.
    let s_box = |sink: &mut dyn FnMut(Scalar), e: Elt, post: Option<Scalar>| -> Elt {
        if !e.allocated {
            sink(e.value);
        }
        let l2 = e.value.square();
        sink(l2);
        let l4 = l2.square();
        sink(l4);
        let l5 = l4 * e.value + post.unwrap_or(Scalar::ZERO);
        sink(l5);
        Elt { value: l5, allocated: true }
    };
    let mut push = |v: Scalar| sink.push_value(v);

    // First full round: pre- and post-keys; the tag's S-box is a constant.
    let (pre, post) = (&keys[offset..offset + width], &keys[offset + width..offset + 2 * width]);
    offset += 2 * width;
    for (i, e) in state.iter_mut().enumerate() {
        let x = e.value + pre[i];
        if i == 0 {
            *e = Elt::lc(x.square().square() * x + post[i]);
            continue;
        }
        if !e.allocated {
            push(e.value);
        }
        let l2 = x.square();
        push(l2);
        let l4 = l2.square();
        push(l4);
        let l5 = l4 * x + post[i];
        push(l5);
        *e = Elt { value: l5, allocated: true };
    }
    product(&mut state, &mut round);
    // The other initial full rounds, post-keys only.
    for _ in 1..c.full_rounds / 2 {
        for (i, e) in state.iter_mut().enumerate() {
            *e = s_box(&mut push, *e, Some(keys[offset + i]));
        }
        offset += width;
        product(&mut state, &mut round);
    }
    for _ in 0..c.partial_rounds {
        state[0] = s_box(&mut push, state[0], Some(keys[offset]));
        offset += 1;
        product(&mut state, &mut round);
    }
    for _ in 0..c.full_rounds / 2 - 1 {
        for (i, e) in state.iter_mut().enumerate() {
            *e = s_box(&mut push, *e, Some(keys[offset + i]));
        }
        offset += width;
        product(&mut state, &mut round);
    }
    // Terminal full round: no keys.
    for e in state.iter_mut() {
        *e = s_box(&mut push, *e, None);
    }
    product(&mut state, &mut round);
    // "hash result": element 1, a combination after the MDS product, is
    // allocated by the caller.
    debug_assert!(!state[1].allocated);
    state[1].value
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cs::AssignmentCs;
    use bellperson::gadgets::num::AllocatedNum;
    use bellperson::ConstraintSystem;
    use filecoin_hashers::poseidon::PoseidonFunction;
    use filecoin_hashers::HashFunction;
    use generic_array::typenum::{U11, U2, U4, U8};
    use rand::SeedableRng;

    /// The gadget's aux assignment for `preimage` (allocated first) next to
    /// ours for the same values.
    fn both<A: 'static + PoseidonArity>(preimage: &[Scalar]) -> (Vec<Scalar>, Vec<Scalar>, Scalar, Scalar) {
        let mut cs = AssignmentCs::new();
        let nums: Vec<AllocatedNum<Scalar>> = preimage
            .iter()
            .enumerate()
            .map(|(i, &v)| AllocatedNum::alloc(cs.namespace(|| format!("leaf {i}")), || Ok(v)).unwrap())
            .collect();
        let out = PoseidonFunction::hash_multi_leaf_circuit::<A, _>(cs.namespace(|| "hash"), &nums, 0).unwrap();
        let gadget = cs.aux;
        let mut ours = preimage.to_vec();
        let value = hash::<A>(&mut ours, preimage);
        ours.push(value);
        (gadget, ours, out.get_value().unwrap(), value)
    }

    fn check<A: 'static + PoseidonArity>(name: &str) {
        let n = A::to_usize();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(n as u64);
        let cases: Vec<(&str, Vec<Scalar>)> = vec![
            ("random", (0..n).map(|_| Scalar::random(&mut rng)).collect()),
            ("zeros", vec![Scalar::ZERO; n]),
            ("ones", vec![Scalar::ONE; n]),
            ("r-1", vec![-Scalar::ONE; n]),
        ];
        for (case, preimage) in cases {
            let (gadget, ours, out, value) = both::<A>(&preimage);
            assert_eq!(ours.len(), gadget.len(), "{name} {case}: assignment count");
            if let Some(i) = gadget.iter().zip(&ours).position(|(a, b)| a != b) {
                panic!("{name} {case}: first difference at aux {i} of {}", gadget.len());
            }
            assert_eq!(value, out, "{name} {case}: hash value");
        }
    }

    #[test]
    fn native_poseidon_assigns_what_the_legacy_gadget_assigns() {
        check::<U2>("arity 2 (tree tops, 2-layer columns)");
        check::<U4>("arity 4");
        check::<U8>("arity 8 (tree C / tree R nodes)");
        check::<U11>("arity 11 (32 GiB columns)");
    }
}
