//! Groth16 proving math for one synthesized partition: the shape check of
//! the parameters, the one sequence of MSMs (H, L, A, B_G1, B_G2, with the
//! input and aux parts of A and B), blinding with `r`, `s` and assembly in
//! bellperson's grouping.
//!
//! The MSM sequence is written once, generic over where its bases and
//! scalars live ([`PartitionMsms`]): host slices through a [`Msm`] stage
//! ([`prove_synthesized`]), or a device with the parameters resident or
//! streamed (the GPU worker, `crate::gpu`). Since the group arithmetic is
//! exact, every correct implementation gives the same points, hence the same
//! 192 bytes.

use std::sync::Arc;

use bellperson::groth16::{Parameters, Proof, VerifyingKey};
use blstrs::{Bls12, G1Projective, G2Projective, Scalar};
use c2_core::{Density, Synthesized};
use c2_msm::{CpuMsm, Msm};
use c2_ntt::{CpuNtt, Ntt};
use group::{prime::PrimeCurveAffine, Curve};

use crate::error::Error;
use crate::report::{timed, ProveTimings};

/// The host-level stages of a prover: H by `ntt`, the MSMs by `msm`, each
/// over host vectors. `Default` is the CPU (the oracle).
#[derive(Clone)]
pub struct HostStages {
    /// Computes H.
    pub ntt: Arc<dyn Ntt>,
    /// Computes the MSMs.
    pub msm: Arc<dyn Msm>,
}

impl HostStages {
    /// The CPU for both stages.
    pub fn cpu() -> Self {
        Self { ntt: Arc::new(CpuNtt), msm: Arc::new(CpuMsm) }
    }
}

impl Default for HostStages {
    fn default() -> Self {
        Self::cpu()
    }
}

impl std::fmt::Debug for HostStages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HostStages {{ ntt: {}, msm: {} }}", self.ntt.name(), self.msm.name())
    }
}

/// The unblinded sums of one proof (the five MSMs; A and B include the
/// input parts).
pub(crate) struct Sums {
    pub h: G1Projective,
    pub l: G1Projective,
    pub a: G1Projective,
    pub b_g1: G1Projective,
    pub b_g2: G2Projective,
}

/// The G1 parameter query an MSM runs over (B_G2 is the one G2 query).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum G1Query {
    H,
    L,
    A,
    BG1,
}

/// The scalars an MSM reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scalars {
    /// H's coefficients (m - 1 of them).
    H,
    /// The public inputs (ONE first).
    Inputs,
    /// The aux assignment.
    Aux,
}

/// The density mask that selects the scalars.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mask {
    /// Every scalar.
    All,
    /// Aux variables in A.
    AAux,
    /// Inputs in B.
    BInputs,
    /// Aux variables in B.
    BAux,
}

impl Mask {
    /// The mask among `[A aux, B inputs, B aux]` (`None`: every scalar), so
    /// each place that holds the three masks maps them the same way.
    pub(crate) fn select<T>(self, masks: [T; 3]) -> Option<T> {
        let [a_aux, b_inputs, b_aux] = masks;
        match self {
            Mask::All => None,
            Mask::AAux => Some(a_aux),
            Mask::BInputs => Some(b_inputs),
            Mask::BAux => Some(b_aux),
        }
    }
}

/// One MSM of the sequence over a query's bases from `first_base` on,
/// against `scalars` selected by `mask` (the k-th selected scalar meets base
/// `first_base + k`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MsmStep {
    pub first_base: usize,
    pub scalars: Scalars,
    pub mask: Mask,
}

/// Where one partition's MSMs run: the implementation knows where the bases
/// (host or device), scalars and masks are; [`run_msms`] says which MSMs.
pub(crate) trait PartitionMsms {
    /// An MSM in G1 over `query`'s bases.
    fn g1(&mut self, query: G1Query, step: MsmStep) -> Result<G1Projective, Error>;
    /// An MSM in G2 over B_G2's bases.
    fn g2(&mut self, step: MsmStep) -> Result<G2Projective, Error>;
    /// Called once the H MSM is done: H's scalars may be freed.
    fn release_h(&mut self) {}
}

/// The one MSM sequence of a Groth16 proof, in bellperson's order, timed
/// per query into `t`. `n_in` inputs, `b_in` of them in B: the aux parts
/// of A and B start after the input parts' bases.
pub(crate) fn run_msms(
    m: &mut impl PartitionMsms,
    n_in: usize,
    b_in: usize,
    t: &mut ProveTimings,
) -> Result<Sums, Error> {
    use {G1Query as Q, Mask as M, Scalars as S};
    let step = |first_base, scalars, mask| MsmStep { first_base, scalars, mask };
    let h = timed(&mut t.msm_h, || m.g1(Q::H, step(0, S::H, M::All)))?;
    m.release_h();
    let l = timed(&mut t.msm_l, || m.g1(Q::L, step(0, S::Aux, M::All)))?;
    let a = timed(&mut t.msm_a, || -> Result<_, Error> {
        let inputs = m.g1(Q::A, step(0, S::Inputs, M::All))?;
        Ok(inputs + m.g1(Q::A, step(n_in, S::Aux, M::AAux))?)
    })?;
    let b_g1 = timed(&mut t.msm_b_g1, || -> Result<_, Error> {
        let inputs = m.g1(Q::BG1, step(0, S::Inputs, M::BInputs))?;
        Ok(inputs + m.g1(Q::BG1, step(b_in, S::Aux, M::BAux))?)
    })?;
    let b_g2 = timed(&mut t.msm_b_g2, || -> Result<_, Error> {
        let inputs = m.g2(step(0, S::Inputs, M::BInputs))?;
        Ok(inputs + m.g2(step(b_in, S::Aux, M::BAux))?)
    })?;
    Ok(Sums { h, l, a, b_g1, b_g2 })
}

#[cfg(feature = "cuda")]
impl Sums {
    /// The first 6 bytes of each sum's compressed form, for a debug log
    /// that compares two paths' sums query by query (a batch member's
    /// against the same partition proved alone).
    pub(crate) fn digest(&self) -> String {
        let short = |b: &[u8]| b[..6].iter().map(|x| format!("{x:02x}")).collect::<String>();
        format!(
            "H {} L {} A {} B1 {} B2 {}",
            short(&self.h.to_affine().to_compressed()),
            short(&self.l.to_affine().to_compressed()),
            short(&self.a.to_affine().to_compressed()),
            short(&self.b_g1.to_affine().to_compressed()),
            short(&self.b_g2.to_affine().to_compressed())
        )
    }
}

/// Blinds with `r`, `s` and assembles, in bellperson's grouping.
pub(crate) fn assemble(vk: &VerifyingKey<Bls12>, r: Scalar, s_blind: Scalar, sums: &Sums) -> Proof<Bls12> {
    // A = alpha + sum a_i(tau) z_i + r delta
    let g_a = vk.delta_g1 * r + vk.alpha_g1 + sums.a;
    // B = beta + sum b_i(tau) z_i + s delta (in G2)
    let g_b = vk.delta_g2 * s_blind + vk.beta_g2 + sums.b_g2;
    // C = s A' + r B'_G1 + rs delta + s alpha + r beta + H + L, where A'
    // and B' are the unblinded sums; this is bellperson's grouping.
    let g_c = sums.a * s_blind
        + sums.b_g1 * r
        + vk.delta_g1 * (r * s_blind)
        + vk.alpha_g1 * s_blind
        + vk.beta_g1 * r
        + sums.h
        + sums.l;
    Proof { a: g_a.to_affine(), b: g_b.to_affine(), c: g_c.to_affine() }
}

/// Checks that `params` fit the synthesized circuit, query by query. A
/// mismatch means parameters for another circuit (another sector size or
/// proof version): a typed error instead of a proof that cannot verify.
pub fn check_parameters(s: &Synthesized, params: &Parameters<Bls12>) -> Result<(), Error> {
    let densities = [&s.a_aux_density, &s.b_input_density, &s.b_aux_density];
    check_parameters_for(s.num_constraints(), s.num_inputs(), s.num_aux(), densities, params)
}

/// [`check_parameters`] from a partition's sizes and its densities (A's
/// aux, B's inputs, B's aux): for a witness whose a, b, c are not computed
/// yet.
pub fn check_parameters_for(
    constraints: usize,
    inputs: usize,
    aux: usize,
    [a_aux, b_input, b_aux]: [&Density; 3],
    params: &Parameters<Bls12>,
) -> Result<(), Error> {
    let m = constraints.max(1).next_power_of_two();
    let b_dense = b_input.count_ones() + b_aux.count_ones();
    let checks = [
        ("vk.ic (public inputs)", inputs, params.vk.ic.len()),
        ("h (domain size - 1)", m - 1, params.h.len()),
        ("l (aux variables)", aux, params.l.len()),
        ("a (inputs + A-dense aux)", inputs + a_aux.count_ones(), params.a.len()),
        ("b_g1 (B-dense inputs + aux)", b_dense, params.b_g1.len()),
        ("b_g2 (B-dense inputs + aux)", b_dense, params.b_g2.len()),
    ];
    for (query, expected, actual) in checks {
        if expected != actual {
            return Err(Error::ParamsMismatch { query, expected, actual });
        }
    }
    if bool::from(params.vk.delta_g1.is_identity() | params.vk.delta_g2.is_identity()) {
        // bellperson refuses these too: a subverted CRS.
        return Err(Error::ParamsMismatch { query: "vk.delta (identity)", expected: 1, actual: 0 });
    }
    Ok(())
}

/// The MSMs of one partition over host vectors, through a host-level stage.
struct HostMsms<'a> {
    msm: &'a dyn Msm,
    params: &'a Parameters<Bls12>,
    h: Vec<Scalar>,
    inputs: &'a [Scalar],
    aux: &'a [Scalar],
    masks: [&'a Density; 3],
}

impl HostMsms<'_> {
    fn scalars(&self, s: Scalars) -> &[Scalar] {
        match s {
            Scalars::H => &self.h,
            Scalars::Inputs => self.inputs,
            Scalars::Aux => self.aux,
        }
    }

    fn mask(&self, m: Mask) -> Option<&Density> {
        m.select(self.masks)
    }
}

impl PartitionMsms for HostMsms<'_> {
    fn g1(&mut self, query: G1Query, step: MsmStep) -> Result<G1Projective, Error> {
        let p = self.params;
        let bases = match query {
            G1Query::H => &p.h,
            G1Query::L => &p.l,
            G1Query::A => &p.a,
            G1Query::BG1 => &p.b_g1,
        };
        let bases = bases.get(step.first_base..).unwrap_or(&[]);
        Ok(self.msm.msm_g1(bases, self.scalars(step.scalars), self.mask(step.mask))?)
    }

    fn g2(&mut self, step: MsmStep) -> Result<G2Projective, Error> {
        let bases = self.params.b_g2.get(step.first_base..).unwrap_or(&[]);
        Ok(self.msm.msm_g2(bases, self.scalars(step.scalars), self.mask(step.mask))?)
    }

    fn release_h(&mut self) {
        self.h = Vec::new();
    }
}

/// Proves one synthesized circuit with blinding factors `r`, `s` on host-level
/// stages.
///
/// Bit-identical to bellperson 0.27's `create_proof_batch_priority` for the
/// same circuit, parameters, `r` and `s` (the group arithmetic is exact, so
/// any correct NTT and MSM give the same points).
pub fn prove_synthesized(
    s: Synthesized,
    params: &Parameters<Bls12>,
    r: Scalar,
    s_blind: Scalar,
    stages: &HostStages,
) -> Result<(Proof<Bls12>, ProveTimings), Error> {
    check_parameters(&s, params)?;
    let mut t = ProveTimings::default();
    let Synthesized {
        a,
        b,
        c,
        input_assignment: inputs,
        aux_assignment: aux,
        a_aux_density,
        b_input_density,
        b_aux_density,
    } = s;
    let h = timed(&mut t.ntt, || stages.ntt.compute_h(a, b, c))?;
    let (n_in, b_in) = (inputs.len(), b_input_density.count_ones());
    let mut msms = HostMsms {
        msm: stages.msm.as_ref(),
        params,
        h,
        inputs: &inputs,
        aux: &aux,
        masks: [&a_aux_density, &b_input_density, &b_aux_density],
    };
    let sums = run_msms(&mut msms, n_in, b_in, &mut t)?;
    let proof = timed(&mut t.assemble, || assemble(&params.vk, r, s_blind, &sums));
    Ok((proof, t))
}
