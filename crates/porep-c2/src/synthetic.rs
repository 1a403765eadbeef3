//! Synthetic partitions of a real circuit's shape, for timing the prover at
//! scales whose parameters cannot be made here (a 32 GiB sector's ~47 GB).
//!
//! The shape is the 32 GiB StackedDrg partition's (FACTS.md): 130,278,869
//! constraints, 130,169,893 aux variables, 328 public inputs, 99.7 % of aux
//! variables in A and 25.4 % in B. Aux values follow the measured mix (about
//! half zeros, half ones, a few percent full-width: see BENCHMARKS.md);
//! a, b, c are random. Parameters are random points (a pool of distinct
//! points, tiled), so **the proofs do not verify**: this is for timing only,
//! and [`SyntheticPorep::parameter_id`] says so. [`SyntheticShape::scaled`]
//! divides every size for smaller cards.

use std::sync::Arc;

use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use c2_msm::Density;
use c2_synth::{PorepInstance, SynthError, Synthesized};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// Sizes and densities of one partition.
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

impl SyntheticShape {
    /// The 32 GiB StackedDrg partition (FACTS.md); aux values 50 % zero,
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
}

/// Deterministic per-index hash (splitmix64): masks and value classes.
fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn mask(n: usize, per_mille: u64, salt: u64) -> Density {
    Density::from_bools((0..n as u64).map(|i| mix64(i ^ salt.rotate_left(40)) % 1000 < per_mille))
}

/// `n` full-width pseudo-random scalars from `seed`, on all cores: per chunk
/// of 2^14 an arithmetic progression with a random start and step (one
/// field addition per value; drawing each value from ChaCha made a 32 GiB
/// partition take 15-18 s to generate on 16 cores, starving the GPU).
fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    const CHUNK: usize = 1 << 14;
    let mut v = vec![Scalar::ZERO; n];
    v.par_chunks_mut(CHUNK).enumerate().for_each(|(i, c)| {
        let mut rng = ChaCha8Rng::seed_from_u64(mix64(seed ^ (i as u64).rotate_left(24)));
        let (mut x, step) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        for y in c.iter_mut() {
            *y = x;
            x += step;
        }
    });
    v
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

/// `partitions` synthetic partitions of one shape (same densities, different
/// values per partition), as a [`PorepInstance`].
pub struct SyntheticPorep {
    shape: SyntheticShape,
    partitions: usize,
    id: String,
    a_aux: Density,
    b_input: Density,
    b_aux: Density,
}

impl SyntheticPorep {
    /// The instance; densities are fixed per shape (as a real circuit's are).
    pub fn new(shape: SyntheticShape, partitions: usize) -> Self {
        let a_aux = mask(shape.aux, shape.a_density_permille, 1);
        let b_aux = mask(shape.aux, shape.b_density_permille, 2);
        let b_input = mask(shape.inputs, 500, 3);
        let id = format!(
            "synthetic-timing-only-{}c-{}aux (random parameters: proofs do not verify)",
            shape.constraints, shape.aux
        );
        Self { shape, partitions, id, a_aux, b_input, b_aux }
    }

    /// The shape.
    pub fn shape(&self) -> &SyntheticShape {
        &self.shape
    }

    /// Random parameters of the right lengths: distinct points from pools
    /// of 2^20 (G1) and 2^18 (G2), tiled (MSM time does not depend on the
    /// points being distinct), and a random verifying key.
    pub fn parameters(&self, seed: u64) -> Parameters<Bls12> {
        let s = &self.shape;
        let g1 = random_points::<G1Projective>((1 << 20).min(s.domain()), seed);
        let g2 = random_points::<G2Projective>((1 << 18).min(s.domain()), seed ^ 1);
        let (na, nb) = (s.inputs + self.a_aux.count_ones(), self.b_input.count_ones() + self.b_aux.count_ones());
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 2);
        let mut g1r = || G1Projective::random(&mut rng).to_affine();
        let (alpha_g1, beta_g1, delta_g1) = (g1r(), g1r(), g1r());
        let ic: Vec<G1Affine> = (0..s.inputs).map(|_| g1r()).collect();
        let mut g2r = || G2Projective::random(&mut rng).to_affine();
        let (beta_g2, gamma_g2, delta_g2) = (g2r(), g2r(), g2r());
        let vk = VerifyingKey::<Bls12> {
            alpha_g1,
            beta_g1,
            beta_g2,
            gamma_g2,
            delta_g1,
            delta_g2,
            ic,
        };
        Parameters {
            vk,
            h: Arc::new(tiled(&g1, s.domain() - 1)),
            l: Arc::new(tiled(&g1, s.aux)),
            a: Arc::new(tiled(&g1, na)),
            b_g1: Arc::new(tiled(&g1, nb)),
            b_g2: Arc::new(tiled::<G2Affine>(&g2, nb)),
        }
    }
}

impl PorepInstance for SyntheticPorep {
    fn num_partitions(&self) -> usize {
        self.partitions
    }

    fn sector_size(&self) -> u64 {
        0
    }

    fn parameter_id(&self) -> &str {
        &self.id
    }

    fn check_vanilla_proofs(&self) -> Result<(), SynthError> {
        Ok(())
    }

    fn synthesize_partition(&self, k: usize) -> Result<Synthesized, SynthError> {
        if k >= self.partitions {
            return Err(SynthError::NoSuchPartition { k, count: self.partitions });
        }
        let s = &self.shape;
        let seed = mix64(k as u64 + 1);
        let (zero, one) = (s.zero_percent, s.zero_percent + s.one_percent);
        let mut aux = random_scalars(s.aux, seed ^ 4);
        aux.par_iter_mut().enumerate().for_each(|(i, x)| match mix64(i as u64 ^ seed) % 100 {
            p if p < zero => *x = Scalar::ZERO,
            p if p < one => *x = Scalar::ONE,
            _ => {}
        });
        let mut inputs = random_scalars(s.inputs, seed ^ 5);
        inputs[0] = Scalar::ONE;
        Ok(Synthesized {
            a: random_scalars(s.constraints, seed ^ 1),
            b: random_scalars(s.constraints, seed ^ 2),
            c: random_scalars(s.constraints, seed ^ 3),
            input_assignment: inputs,
            aux_assignment: aux,
            a_aux_density: self.a_aux.clone(),
            b_input_density: self.b_input.clone(),
            b_aux_density: self.b_aux.clone(),
        })
    }

    fn public_inputs(&self, k: usize) -> Result<Vec<Scalar>, SynthError> {
        Ok(self.synthesize_partition(k)?.input_assignment[1..].to_vec())
    }

    fn generate_parameters(&self, _rng: &mut dyn rand::RngCore) -> Result<Parameters<Bls12>, SynthError> {
        Ok(self.parameters(7))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scaled_shape_has_the_densities_and_mix_asked_for() {
        let shape = SyntheticShape::porep_32gib().scaled(4096);
        assert_eq!(shape.constraints, 130_278_869 / 4096);
        let inst = SyntheticPorep::new(shape.clone(), 2);
        let p = inst.synthesize_partition(1).unwrap();
        assert_eq!((p.a.len(), p.aux_assignment.len(), p.input_assignment.len()), (shape.constraints, shape.aux, 328));
        let pct = |n: usize| 100.0 * n as f64 / shape.aux as f64;
        let zeros = p.aux_assignment.iter().filter(|x| bool::from(x.is_zero())).count();
        let ones = p.aux_assignment.iter().filter(|&&x| x == Scalar::ONE).count();
        assert!((pct(zeros) - 50.0).abs() < 2.0 && (pct(ones) - 46.0).abs() < 2.0, "{zeros} {ones}");
        assert!((pct(p.a_aux_density.count_ones()) - 99.7).abs() < 0.5);
        assert!((pct(p.b_aux_density.count_ones()) - 25.4).abs() < 2.0);
        // Parameters fit the circuit (the prover's own check), and partitions differ.
        let params = inst.parameters(1);
        crate::check_parameters(&p, &params).unwrap();
        assert_ne!(inst.synthesize_partition(0).unwrap().aux_assignment, p.aux_assignment);
        assert!(matches!(inst.synthesize_partition(2), Err(SynthError::NoSuchPartition { .. })));
    }
}
