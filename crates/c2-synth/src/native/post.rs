//! The FallbackPoSt circuit's witness (WindowPoSt and WinningPoSt) as
//! storage-proofs-post 19.1 allocates it (`Sector::synthesize`), every
//! Poseidon hash computed natively: per circuit sector, comm_r_last, comm_c
//! and comm_r allocated (comm_r also as an input), comm_r = H(comm_c,
//! comm_r_last) (arity 2) replayed, then per challenged leaf the leaf and
//! its tree R path ([`super::stacked::poseidon_inclusion`], the very
//! routine the PoRep witness uses for tree R). The circuit's sectors are
//! independent (storage-proofs synthesizes groups of them on separate
//! constraint systems and appends them), so each sector is generated into
//! its own part and the parts are appended in order; the differential
//! tests compare the whole input and aux vectors with the gadget path's.

use bellperson::gadgets::num::AllocatedNum;
use bellperson::SynthesisError;
use blstrs::Scalar;
use generic_array::typenum::U2;

use super::poseidon;
use super::stacked::{poseidon_inclusion, PathOptions};
use super::Assignments;

/// What one circuit sector is made of, as field elements: the public
/// sector's comm_r, the sector proof's comm_c and comm_r_last, and per
/// challenge the leaf and its path (`SectorProof::leafs` / `as_options`).
pub(crate) struct SectorWitness<'a> {
    pub comm_r: Scalar,
    pub comm_c: Scalar,
    pub comm_r_last: Scalar,
    pub leafs: &'a [Scalar],
    pub paths: &'a [PathOptions],
}

/// `Sector::synthesize` on values, appended to `cs` (a part: no ONE).
pub(crate) fn sector<W: Assignments>(cs: &mut W, s: &SectorWitness<'_>) -> Result<(), SynthesisError> {
    if s.leafs.len() != s.paths.len() {
        return Err(SynthesisError::Unsatisfiable);
    }
    AllocatedNum::alloc(&mut *cs, || Ok(s.comm_r_last))?;
    AllocatedNum::alloc(&mut *cs, || Ok(s.comm_c))?;
    let comm_r = AllocatedNum::alloc(&mut *cs, || Ok(s.comm_r))?;
    comm_r.inputize(&mut *cs)?;
    // hash2_circuit(comm_c, comm_r_last); the equality with comm_r
    // allocates nothing.
    let hash = poseidon::hash::<U2>(cs, &[s.comm_c, s.comm_r_last]);
    AllocatedNum::alloc(&mut *cs, || Ok(hash))?;
    for (&leaf, path) in s.leafs.iter().zip(s.paths) {
        let leaf = AllocatedNum::alloc(&mut *cs, || Ok(leaf))?;
        // The root is comm_r_last, allocated above: compared, never
        // allocated again.
        poseidon_inclusion(cs, path, &leaf)?;
    }
    Ok(())
}
