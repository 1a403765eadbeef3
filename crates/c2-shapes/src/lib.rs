//! Synthetic circuit shapes for timing Groth16 provers at scales whose real
//! parameters cannot be made here (a 32 GiB sector's ~47 GB).
//!
//! - [`SyntheticShape`]: the sizes, densities and witness mix of one
//!   partition (the 32 GiB StackedDrg partition's, ARCHITECTURE.md, "Facts we rely on"), scalable.
//! - [`ShapedCircuit`]: a bellperson [`Circuit`] of that shape, so provers
//!   that synthesize circuits themselves (bellperson's CUDA prover,
//!   SupraSeal C2 through bellperson) and ours prove **the same work**; with
//!   the same parameters and `r`, `s` every correct prover gives the same
//!   bytes.
//! - [`random_parameters`]: random points of the right lengths. Proofs from
//!   them do not verify: timing only.
//!
//! Which aux variables occur in A and B, and which are 0, 1 or full-width,
//! is a pure function of the index ([`SyntheticShape::in_a`] etc.), so every
//! user of a shape sees the same densities.

use std::sync::Arc;

use bellperson::groth16::{Parameters, VerifyingKey};
use bellperson::{Circuit, ConstraintSystem, SynthesisError, Variable};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// Sizes, densities and witness mix of one partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntheticShape {
    /// Constraints (input constraints included).
    pub constraints: usize,
    /// Aux variables.
    pub aux: usize,
    /// Public inputs, ONE included.
    pub inputs: usize,
    /// Aux variables in A, per mille.
    pub a_density_permille: u64,
    /// Aux variables in B, per mille.
    pub b_density_permille: u64,
    /// Aux values equal to zero, percent.
    pub zero_percent: u64,
    /// Aux values equal to one, percent (the rest are full-width).
    pub one_percent: u64,
}

/// What an aux value is: the prover's cost depends only on this.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueClass {
    /// 0.
    Zero,
    /// 1.
    One,
    /// A full-width field element.
    Full,
}

impl SyntheticShape {
    /// The 32 GiB StackedDrg partition (ARCHITECTURE.md, "Facts we rely on"): 130,278,869 constraints,
    /// 130,169,893 aux, 328 inputs, A 99.7 %, B 25.4 %; aux values 50 % zero,
    /// 46 % one, 4 % full-width (the 512 MiB measurement, rounded toward
    /// more full-width values since the share grows with tree depth).
    pub fn porep_32gib() -> Self {
        Self {
            constraints: 130_278_869,
            aux: 130_169_893,
            inputs: 328,
            a_density_permille: 997,
            b_density_permille: 254,
            zero_percent: 50,
            one_percent: 46,
        }
    }

    /// Every size divided by `divisor` (1, 2, 4, 8: the domain halves each
    /// time), inputs kept.
    pub fn scaled(&self, divisor: usize) -> Self {
        let d = divisor.max(1);
        Self { constraints: self.constraints / d, aux: self.aux / d, ..self.clone() }
    }

    /// NTT domain size (a power of two).
    pub fn domain(&self) -> usize {
        self.constraints.max(2).next_power_of_two()
    }

    /// Host bytes of one synthesized partition (a, b, c, aux, inputs).
    pub fn host_bytes(&self) -> usize {
        (3 * self.constraints + self.aux + self.inputs) * std::mem::size_of::<Scalar>()
    }

    /// Whether aux variable `i` occurs in A.
    pub fn in_a(&self, i: usize) -> bool {
        per_mille(i, 1) < self.a_density_permille
    }

    /// Whether aux variable `i` occurs in B.
    pub fn in_b(&self, i: usize) -> bool {
        per_mille(i, 2) < self.b_density_permille
    }

    /// Whether input `i` occurs in B: ONE always (constraints use it), the
    /// others half of the time.
    pub fn input_in_b(&self, i: usize) -> bool {
        i == 0 || per_mille(i, 3) < 500
    }

    /// The class of aux value `i` in the partition drawn with `seed`.
    pub fn value_class(&self, i: usize, seed: u64) -> ValueClass {
        match mix64(i as u64 ^ seed) % 100 {
            p if p < self.zero_percent => ValueClass::Zero,
            p if p < self.zero_percent + self.one_percent => ValueClass::One,
            _ => ValueClass::Full,
        }
    }

    /// (A parameter length, B parameter length): inputs plus aux in A; inputs
    /// in B plus aux in B (what the Groth16 parameters hold).
    pub fn parameter_lengths(&self) -> (usize, usize) {
        let a = (0..self.aux).into_par_iter().filter(|&i| self.in_a(i)).count();
        let b = (0..self.aux).into_par_iter().filter(|&i| self.in_b(i)).count();
        let b_in = (0..self.inputs).filter(|&i| self.input_in_b(i)).count();
        (self.inputs + a, b_in + b)
    }
}

/// splitmix64: a cheap, well-mixed hash of the index.
pub fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn per_mille(i: usize, salt: u64) -> u64 {
    mix64(i as u64 ^ salt.rotate_left(40)) % 1000
}

/// `n` distinct random points (no infinity): a random start and step per
/// chunk, walked and normalised in batches (on all cores).
pub fn random_points<P>(n: usize, seed: u64) -> Vec<P::AffineRepr>
where
    P: Group + Curve + Send + Sync,
    P::AffineRepr: PrimeCurveAffine + Send + Sync,
{
    const CHUNK: usize = 1 << 12;
    let mut out = vec![P::AffineRepr::identity(); n];
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(k, c)| {
        let mut rng = ChaCha8Rng::seed_from_u64(mix64(seed ^ ((k as u64) << 24)));
        let (mut p, q) = (P::random(&mut rng), P::random(&mut rng));
        let walk: Vec<P> = (0..c.len())
            .map(|_| {
                let cur = p;
                p += q;
                cur
            })
            .collect();
        P::batch_normalize(&walk, c);
    });
    out
}

fn tiled<A: Copy + Send + Sync>(pool: &[A], n: usize) -> Vec<A> {
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        v.extend_from_slice(&pool[..(n - v.len()).min(pool.len())]);
    }
    v
}

/// Random Groth16 parameters for `shape` (deterministic in `seed`): distinct
/// points from pools of 2^20 (G1) and 2^18 (G2), tiled (MSM time does not
/// depend on the points being distinct), and a random verifying key.
pub fn random_parameters(shape: &SyntheticShape, seed: u64) -> Parameters<Bls12> {
    let (na, nb) = shape.parameter_lengths();
    random_parameters_with_lengths(shape.domain(), shape.inputs, shape.aux, na, nb, seed)
}

/// Random parameters of given lengths (as [`random_parameters`]): H of
/// `domain - 1` points, L of `aux`, A of `a`, B (G1 and G2) of `b`, `inputs`
/// IC points. For timing a real circuit whose parameters do not exist here
/// (a 32 GiB test sector): the lengths come from its densities.
pub fn random_parameters_with_lengths(
    domain: usize,
    inputs: usize,
    aux: usize,
    na: usize,
    nb: usize,
    seed: u64,
) -> Parameters<Bls12> {
    let g1 = random_points::<G1Projective>((1 << 20).min(domain), seed);
    let g2 = random_points::<G2Projective>((1 << 18).min(domain), seed ^ 1);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 2);
    let mut g1r = || G1Projective::random(&mut rng).to_affine();
    let (alpha_g1, beta_g1, delta_g1) = (g1r(), g1r(), g1r());
    let ic: Vec<G1Affine> = (0..inputs).map(|_| g1r()).collect();
    let mut g2r = || G2Projective::random(&mut rng).to_affine();
    let (beta_g2, gamma_g2, delta_g2) = (g2r(), g2r(), g2r());
    let vk = VerifyingKey::<Bls12> { alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2, ic };
    Parameters {
        vk,
        h: Arc::new(tiled(&g1, domain - 1)),
        l: Arc::new(tiled(&g1, aux)),
        a: Arc::new(tiled(&g1, na)),
        b_g1: Arc::new(tiled(&g1, nb)),
        b_g2: Arc::new(tiled::<G2Affine>(&g2, nb)),
    }
}

/// A circuit of `shape`: `inputs - 1` public inputs (the prover adds ONE),
/// `aux` variables valued by [`SyntheticShape::value_class`], and
/// `constraints - inputs` constraints (the prover adds one per input).
/// Constraint `j` uses the aux variables `v` with `v mod body = j` (`body =
/// constraints - inputs`; one at the real shapes): A holds those with
/// `in_a(v)`; B those with `in_b(v)` and, in the first constraints, input
/// `j + 1` when `input_in_b(j + 1)`, else ONE; `C = x_{j+1}`. Not satisfied
/// (nothing checks that): timing only.
#[derive(Clone, Debug)]
pub struct ShapedCircuit {
    /// The shape.
    pub shape: SyntheticShape,
    /// Draws the values (one seed per partition).
    pub seed: u64,
}

impl ShapedCircuit {
    /// Full-width values walk `start + i * step` (one addition each).
    fn walk(&self) -> (Scalar, Scalar) {
        let mut rng = ChaCha8Rng::seed_from_u64(mix64(self.seed ^ 0x5eed));
        (Scalar::random(&mut rng), Scalar::random(&mut rng))
    }
}

impl Circuit<Scalar> for ShapedCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let s = &self.shape;
        if s.aux == 0 || s.constraints <= s.inputs {
            return Err(SynthesisError::Unsatisfiable);
        }
        let (mut x, step) = self.walk();
        let mut inputs = Vec::with_capacity(s.inputs.saturating_sub(1));
        for i in 1..s.inputs {
            x += step;
            inputs.push(cs.alloc_input(|| format!("input {i}"), || Ok(x))?);
        }
        let mut aux: Vec<Variable> = Vec::with_capacity(s.aux);
        for i in 0..s.aux {
            x += step;
            let value = match s.value_class(i, self.seed) {
                ValueClass::Zero => Scalar::ZERO,
                ValueClass::One => Scalar::ONE,
                ValueClass::Full => x,
            };
            aux.push(cs.alloc(|| "aux", || Ok(value))?);
        }
        let body = s.constraints - s.inputs;
        for j in 0..body {
            // Aux v occurs in constraint v mod body: one each at the real
            // shapes (more constraints than aux), a few each when scaled far
            // down, so the densities are the masks at every scale.
            let vars = || (j..s.aux).step_by(body).map(|v| (v, aux[v]));
            let next = aux[(j + 1) % s.aux];
            // The first constraints also carry the inputs that occur in B.
            let b_input = inputs.get(j).filter(|_| s.input_in_b(j + 1)).copied();
            cs.enforce(
                || "c",
                |lc| vars().filter(|&(v, _)| s.in_a(v)).fold(lc, |lc, (_, x)| lc + x),
                |lc| {
                    let mut lc = vars().filter(|&(v, _)| s.in_b(v)).fold(lc, |lc, (_, x)| lc + x);
                    if let Some(input) = b_input {
                        lc = lc + input;
                    }
                    if lc.is_empty() {
                        lc = lc + CS::one();
                    }
                    lc
                },
                |lc| lc + next,
            );
        }
        Ok(())
    }
}

/// The median of timing samples (the upper one for an even count; NaN for
/// none): the figure the benchmarks report.
pub fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples.get(samples.len() / 2).copied().unwrap_or(f64::NAN)
}
