//! Groth16 test parameters from a circuit's recorded constraint matrices:
//! the same bytes as bellperson's `generate_parameters` for the same toxic
//! waste, several times faster. TEST KIT ONLY: the toxic waste comes from a
//! seed, so anyone holding the seed can forge proofs against these
//! parameters; production provers use the published ones.
//!
//! bellperson synthesizes the blank circuit into per-variable lists,
//! evaluates the QAP at τ through an inverse FFT of τ's powers, and
//! multiplies its generators by each scalar with a wNAF table: ~255
//! doublings and ~50 additions per point. Here the QAP comes from the
//! matrices the prover records anyway ([`ConstraintMatrices`]), the
//! Lagrange basis at τ in closed form (one batch inversion), and each point
//! is a fixed-base comb: 32 table additions for an 8-bit window (tables of
//! 32 × 255 points per generator). Group arithmetic is exact, so every
//! point is bellperson's, and [`draw`] takes the toxic waste from the RNG
//! in `generate_random_parameters`' order, so a seed gives bellperson's
//! file byte for byte (tested on real circuits).
//!
//! Measured on the 2 KiB SnapDeals circuit (1,705,044 constraints, two
//! cores): bellperson 777 s (a build running beside it), this module: see
//! BENCHMARKS.md.

use std::sync::Arc;

use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use c2_synth::ConstraintMatrices;
use ff::{Field, PrimeField};
use group::prime::{PrimeCurve, PrimeCurveAffine};
use group::{Curve, Group};
use rand::RngCore;
use rayon::prelude::*;

/// The secrets of a Groth16 set-up. Whoever knows them can prove anything:
/// tests only.
#[derive(Clone, Debug)]
pub struct ToxicWaste {
    /// The G1 generator the queries are multiples of.
    pub g1: G1Projective,
    /// The G2 generator.
    pub g2: G2Projective,
    /// α.
    pub alpha: Scalar,
    /// β.
    pub beta: Scalar,
    /// γ.
    pub gamma: Scalar,
    /// δ.
    pub delta: Scalar,
    /// τ, the evaluation point.
    pub tau: Scalar,
}

/// Draws the toxic waste as bellperson's `generate_random_parameters` does
/// (g1, g2, α, β, γ, δ, τ in that order), so the same RNG state gives the
/// same parameters.
pub fn draw(rng: &mut dyn RngCore) -> ToxicWaste {
    ToxicWaste {
        g1: G1Projective::random(&mut *rng),
        g2: G2Projective::random(&mut *rng),
        alpha: Scalar::random(&mut *rng),
        beta: Scalar::random(&mut *rng),
        gamma: Scalar::random(&mut *rng),
        delta: Scalar::random(&mut *rng),
        tau: Scalar::random(&mut *rng),
    }
}

/// Why a set-up failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SetupError {
    /// γ or δ is zero, or τ is a root of unity of the domain (probability
    /// ~2^-228 for random waste).
    #[error("degenerate toxic waste: {0}")]
    Degenerate(&'static str),
    /// An aux variable in no constraint: its L point would be the identity
    /// (bellperson's `UnconstrainedVariable`).
    #[error("aux variable {0} is unconstrained")]
    UnconstrainedVariable(usize),
    /// More constraints than the field's two-adicity allows.
    #[error("{0} constraints exceed the largest evaluation domain")]
    TooLarge(usize),
}

/// Bits per comb window: 32 windows cover a 255-bit scalar.
const WINDOW: usize = 8;
const WINDOWS: usize = 256 / WINDOW;
const DIGITS: usize = (1 << WINDOW) - 1;

/// `d · 2^(8w) · base` for every window `w` and digit `d` in 1..=255,
/// affine (one batch normalisation), for fixed-base multiplication.
struct Comb<P: PrimeCurve> {
    table: Vec<P::Affine>,
}

impl<P> Comb<P>
where
    P: PrimeCurve + Send + Sync,
    P::Affine: Send + Sync,
{
    fn new(base: P) -> Self {
        let mut projective = Vec::with_capacity(WINDOWS * DIGITS);
        let mut window_base = base;
        for _ in 0..WINDOWS {
            let mut acc = window_base;
            for _ in 0..DIGITS {
                projective.push(acc);
                acc += window_base;
            }
            // acc = 256 · window_base: the next window's base.
            window_base = acc;
        }
        let mut table = vec![P::Affine::identity(); projective.len()];
        P::batch_normalize(&projective, &mut table);
        Self { table }
    }

    /// `scalar · base`.
    fn mul(&self, scalar: &Scalar) -> P {
        let mut acc = P::identity();
        for (w, &digit) in scalar.to_bytes_le().iter().enumerate() {
            if digit != 0 {
                acc += self.table[w * DIGITS + usize::from(digit) - 1];
            }
        }
        acc
    }

    /// `s · base` for every scalar, affine (zero scalars give the identity);
    /// `done(k)` after each chunk of `k` points.
    fn mul_all(&self, scalars: &[Scalar], done: &(dyn Fn(u64) + Sync)) -> Vec<P::Affine> {
        const CHUNK: usize = 1 << 12;
        let mut out = vec![P::Affine::identity(); scalars.len()];
        out.par_chunks_mut(CHUNK).zip(scalars.par_chunks(CHUNK)).for_each(|(out, scalars)| {
            let points: Vec<P> = scalars.iter().map(|s| self.mul(s)).collect();
            P::batch_normalize(&points, out);
            done(scalars.len() as u64);
        });
        out
    }
}

/// What [`generate_parameters_with`] reports as it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetupStep {
    /// A query's points begin: its name and point count.
    Query(&'static str, u64),
    /// `n` more points of the current query are done.
    Points(u64),
}

/// Points per query of `m`'s parameters: (name, points, whether in G2).
/// A and B count their non-zero evaluations, which the structure decides
/// (the columns A and B use), as bellperson's filter does.
fn query_sizes(m: &ConstraintMatrices) -> [(&'static str, u64, bool); 5] {
    let used = |x: &c2_synth::SparseMatrix| {
        let mut seen = vec![false; m.inputs + m.aux];
        x.cols.iter().for_each(|&c| seen[c as usize] = true);
        seen.iter().filter(|s| **s).count() as u64
    };
    let h = m.constraints().max(1).next_power_of_two() as u64 - 1;
    let (a, b) = (used(&m.a), used(&m.b));
    [
        ("h", h, false),
        ("ic and l", (m.inputs + m.aux) as u64, false),
        ("a", a, false),
        ("b_g1", b, false),
        ("b_g2", b, true),
    ]
}

/// How long [`generate_parameters`] will take for `m` on `threads` threads,
/// from a calibration of this machine's fixed-base multiplications (a few
/// hundred of each kind, timed on one thread; ~0.1 s): the points of every
/// query at the measured rates. The work is those multiplications; the QAP
/// evaluation and the tables add a few percent.
pub fn estimate(m: &ConstraintMatrices, threads: usize) -> std::time::Duration {
    fn rate<P>(base: P, n: u32) -> f64
    where
        P: PrimeCurve + Send + Sync,
        P::Affine: Send + Sync,
    {
        let comb = Comb::new(base);
        let scalars: Vec<Scalar> = (1..=u64::from(n)).map(|i| -Scalar::from(i * 0x9e37_79b9)).collect();
        let t = std::time::Instant::now();
        let points: Vec<P> = scalars.iter().map(|s| comb.mul(s)).collect();
        std::hint::black_box(points);
        t.elapsed().as_secs_f64() / f64::from(n)
    }
    let (g1, g2) = (rate(G1Projective::generator(), 512), rate(G2Projective::generator(), 128));
    let serial: f64 = query_sizes(m).iter().map(|&(_, n, in_g2)| n as f64 * if in_g2 { g2 } else { g1 }).sum();
    std::time::Duration::from_secs_f64(serial / threads.max(1) as f64)
}

/// The evaluation domain's size and generator as bellperson's
/// `EvaluationDomain` picks them: the smallest power of two holding every
/// constraint, ω of that order from the field's 2-adic root of unity.
fn domain(constraints: usize) -> Result<(usize, Scalar), SetupError> {
    let m = constraints.max(1).next_power_of_two();
    let exp = m.trailing_zeros();
    if exp > Scalar::S {
        return Err(SetupError::TooLarge(constraints));
    }
    let mut omega = Scalar::ROOT_OF_UNITY;
    for _ in exp..Scalar::S {
        omega = omega.square();
    }
    Ok((m, omega))
}

/// The Lagrange basis of the domain at τ: `L_j(τ) = ω^j (τ^m − 1) / (m (τ − ω^j))`,
/// the values bellperson's inverse FFT of τ's powers gives.
fn lagrange_at(tau: Scalar, m: usize, omega: Scalar) -> Result<Vec<Scalar>, SetupError> {
    let z = tau.pow_vartime([m as u64]) - Scalar::ONE;
    let m_inv = Option::<Scalar>::from(Scalar::from(m as u64).invert()).ok_or(SetupError::Degenerate("domain"))?;
    let mut omega_j = Vec::with_capacity(m);
    let mut w = Scalar::ONE;
    for _ in 0..m {
        omega_j.push(w);
        w *= omega;
    }
    let mut denominators: Vec<Scalar> = omega_j.par_iter().map(|w| tau - w).collect();
    if denominators.iter().any(|d| bool::from(d.is_zero())) {
        return Err(SetupError::Degenerate("τ is a root of unity of the domain"));
    }
    batch_invert(&mut denominators);
    let factor = z * m_inv;
    Ok(denominators.par_iter().zip(omega_j.par_iter()).map(|(inv, w)| *w * inv * factor).collect())
}

/// Inverts every element in place (Montgomery's trick, in parallel chunks);
/// none may be zero.
fn batch_invert(v: &mut [Scalar]) {
    v.par_chunks_mut(1 << 14).for_each(|chunk| {
        let mut prefix = Vec::with_capacity(chunk.len());
        let mut acc = Scalar::ONE;
        for x in chunk.iter() {
            prefix.push(acc);
            acc *= x;
        }
        let mut inv = acc.invert().unwrap();
        for (x, before) in chunk.iter_mut().zip(prefix).rev() {
            let next = inv * *x;
            *x = inv * before;
            inv = next;
        }
    });
}

/// `Σ_j M[j][v] · L_j` for every column v of `m` (A, B or C): each
/// variable's QAP polynomial at τ.
fn evaluate(matrix: &c2_synth::SparseMatrix, coeffs: &[Scalar], lagrange: &[Scalar], vars: usize) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; vars];
    for (row, l) in lagrange.iter().enumerate().take(matrix.rows()) {
        let (start, end) = (matrix.row_starts[row] as usize, matrix.row_starts[row + 1] as usize);
        for e in start..end {
            out[matrix.cols[e] as usize] += coeffs[matrix.coeffs[e] as usize] * l;
        }
    }
    out
}

/// Groth16 parameters for the circuit whose matrices are `m` (bellperson's
/// input constraints included, as [`ConstraintMatrices::record`] appends
/// them), with these secrets: bellperson's `generate_parameters`, point for
/// point.
pub fn generate_parameters(m: &ConstraintMatrices, waste: &ToxicWaste) -> Result<Parameters<Bls12>, SetupError> {
    generate_parameters_with(m, waste, &|_| {})
}

/// [`generate_parameters`], telling `progress` each query as it begins and
/// its points as they are done (from the worker threads).
pub fn generate_parameters_with(
    m: &ConstraintMatrices,
    waste: &ToxicWaste,
    progress: &(dyn Fn(SetupStep) + Sync),
) -> Result<Parameters<Bls12>, SetupError> {
    let done = |n| progress(SetupStep::Points(n));
    let sizes = query_sizes(m);
    let ToxicWaste { g1, g2, alpha, beta, gamma, delta, tau } = *waste;
    let gamma_inv = Option::<Scalar>::from(gamma.invert()).ok_or(SetupError::Degenerate("γ = 0"))?;
    let delta_inv = Option::<Scalar>::from(delta.invert()).ok_or(SetupError::Degenerate("δ = 0"))?;
    let (size, omega) = domain(m.constraints())?;
    let lagrange = lagrange_at(tau, size, omega)?;
    let vars = m.inputs + m.aux;
    let (at, (bt, ct)) = rayon::join(
        || evaluate(&m.a, &m.coeffs, &lagrange, vars),
        || rayon::join(|| evaluate(&m.b, &m.coeffs, &lagrange, vars), || evaluate(&m.c, &m.coeffs, &lagrange, vars)),
    );
    drop(lagrange);
    let (comb1, comb2) = rayon::join(|| Comb::new(g1), || Comb::new(g2));

    // H: τ^i · t(τ) / δ for i < size − 1, t(τ) = τ^size − 1.
    let coeff = (tau.pow_vartime([size as u64]) - Scalar::ONE) * delta_inv;
    let mut h_scalars = Vec::with_capacity(size - 1);
    let mut power = coeff;
    for _ in 0..size - 1 {
        h_scalars.push(power);
        power *= tau;
    }
    progress(SetupStep::Query(sizes[0].0, sizes[0].1));
    let h = comb1.mul_all(&h_scalars, &done);
    drop(h_scalars);

    // IC (inputs, over γ) and L (aux, over δ): (β·a + α·b + c) / γ or δ.
    let ext: Vec<Scalar> = (0..vars)
        .into_par_iter()
        .map(|v| (beta * at[v] + alpha * bt[v] + ct[v]) * if v < m.inputs { gamma_inv } else { delta_inv })
        .collect();
    if let Some(v) = ext[m.inputs..].iter().position(|e| bool::from(e.is_zero())) {
        return Err(SetupError::UnconstrainedVariable(v));
    }
    progress(SetupStep::Query(sizes[1].0, sizes[1].1));
    let mut ic = comb1.mul_all(&ext, &done);
    let l = ic.split_off(m.inputs);
    drop(ext);

    // A and B: the points of non-zero evaluations only (bellperson filters
    // the identity out of these queries).
    let nonzero = |v: &[Scalar]| v.iter().copied().filter(|s| !bool::from(s.is_zero())).collect::<Vec<_>>();
    let (a_scalars, b_scalars) = (nonzero(&at), nonzero(&bt));
    progress(SetupStep::Query(sizes[2].0, a_scalars.len() as u64));
    let a = comb1.mul_all(&a_scalars, &done);
    progress(SetupStep::Query(sizes[3].0, b_scalars.len() as u64));
    let b_g1 = comb1.mul_all(&b_scalars, &done);
    progress(SetupStep::Query(sizes[4].0, b_scalars.len() as u64));
    let b_g2 = comb2.mul_all(&b_scalars, &done);

    let (g1a, g2a): (G1Affine, G2Affine) = (g1.to_affine(), g2.to_affine());
    let vk = VerifyingKey::<Bls12> {
        alpha_g1: (g1a.to_curve() * alpha).to_affine(),
        beta_g1: (g1a.to_curve() * beta).to_affine(),
        beta_g2: (g2a.to_curve() * beta).to_affine(),
        gamma_g2: (g2a.to_curve() * gamma).to_affine(),
        delta_g1: (g1a.to_curve() * delta).to_affine(),
        delta_g2: (g2a.to_curve() * delta).to_affine(),
        ic,
    };
    Ok(Parameters { vk, h: Arc::new(h), l: Arc::new(l), a: Arc::new(a), b_g1: Arc::new(b_g1), b_g2: Arc::new(b_g2) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::groth16::generate_random_parameters;
    use bellperson::{Circuit, ConstraintSystem, SynthesisError};
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    /// x^rounds = y with a public y, a few repeated and zero-coefficient
    /// terms, an input in B and a variable only in C: the corners of the
    /// QAP evaluation.
    #[derive(Clone)]
    struct Corners {
        x: Option<Scalar>,
        rounds: usize,
    }

    impl Circuit<Scalar> for Corners {
        fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let mut value = self.x;
            let x = cs.alloc(|| "x", || self.x.ok_or(SynthesisError::AssignmentMissing))?;
            let mut cur = x;
            for i in 0..self.rounds {
                let next_value = value.map(|v| v * v);
                let next = cs.alloc(|| format!("r{i}"), || next_value.ok_or(SynthesisError::AssignmentMissing))?;
                // cur·cur = next, with cur repeated and a zero term in A.
                cs.enforce(|| format!("c{i}"), |lc| lc + cur + (Scalar::ZERO, x), |lc| lc + cur, |lc| lc + next);
                cur = next;
                value = next_value;
            }
            let y = cs.alloc_input(|| "y", || value.ok_or(SynthesisError::AssignmentMissing))?;
            // y in B: input density; (x − x)·y = 0: a cancelled A row.
            cs.enforce(|| "y", |lc| lc + (Scalar::ONE, x) - (Scalar::ONE, x), |lc| lc + y, |lc| lc);
            cs.enforce(|| "out", |lc| lc + cur, |lc| lc + CS::one(), |lc| lc + y);
            Ok(())
        }
    }

    fn bytes(p: &Parameters<Bls12>) -> Vec<u8> {
        let mut out = Vec::new();
        p.write(&mut out).unwrap();
        out
    }

    #[test]
    fn parameters_are_bellpersons_byte_for_byte() {
        for (rounds, seed) in [(1, 1u64), (6, 2), (37, 3), (200, 4)] {
            let blank = Corners { x: None, rounds };
            let theirs =
                generate_random_parameters::<Bls12, _, _>(blank.clone(), &mut ChaCha20Rng::seed_from_u64(seed))
                    .unwrap();
            let m = ConstraintMatrices::record(blank).unwrap();
            let ours = generate_parameters(&m, &draw(&mut ChaCha20Rng::seed_from_u64(seed))).unwrap();
            assert_eq!(bytes(&ours), bytes(&theirs), "{rounds} rounds");
        }
    }

    /// The progress reports name every query in order with its point
    /// count, the points reported add up to it, the points are the
    /// parameters' own, and the estimate is a positive time.
    #[test]
    fn progress_counts_every_point_of_every_query() {
        let m = ConstraintMatrices::record(Corners { x: None, rounds: 9000 }).unwrap();
        let steps = std::sync::Mutex::new(Vec::new());
        let params = generate_parameters_with(&m, &draw(&mut ChaCha20Rng::seed_from_u64(5)), &|step| {
            steps.lock().unwrap().push(step);
        })
        .unwrap();
        let mut queries: Vec<(&str, u64, u64)> = Vec::new();
        for step in steps.into_inner().unwrap() {
            match step {
                SetupStep::Query(name, points) => queries.push((name, points, 0)),
                SetupStep::Points(n) => queries.last_mut().expect("points after a query").2 += n,
            }
        }
        let lens = |v: usize| v as u64;
        let expected = [
            ("h", lens(params.h.len())),
            ("ic and l", lens(params.vk.ic.len() + params.l.len())),
            ("a", lens(params.a.len())),
            ("b_g1", lens(params.b_g1.len())),
            ("b_g2", lens(params.b_g2.len())),
        ];
        assert_eq!(queries.len(), expected.len(), "{queries:?}");
        for ((name, announced, done), (want_name, want)) in queries.iter().zip(expected) {
            assert_eq!((*name, *announced, *done), (want_name, want, want));
        }
        assert_eq!(query_sizes(&m).map(|(_, n, _)| n), expected.map(|(_, n)| n), "the estimate's counts");
        assert!(estimate(&m, 2) > std::time::Duration::ZERO);
    }

    /// A real circuit: the 2 KiB WindowPoSt partition (test sectors from
    /// sparse trees, no sealing), bellperson's generator on its blank
    /// circuit against ours on its recorded matrices, same seed.
    #[test]
    fn real_circuit_parameters_are_bellpersons_byte_for_byte() {
        use filecoin_proofs_api::RegisteredPoStProof;
        let rp = RegisteredPoStProof::StackedDrgWindow2KiBV1_2;
        let mut randomness = [3u8; 32];
        randomness[31] &= 0x3f;
        let prover_id = [1u8; 32];
        let sectors = c2_synth::post_test_sectors(rp, &randomness, &prover_id, &[1, 2], 9).unwrap();
        let vanilla: Vec<Vec<u8>> = sectors.into_iter().map(|s| s.vanilla_proof).collect();
        let kind = c2_synth::PoStKind::Window { partition_index: 0 };
        let instance = c2_synth::post_instance(rp, kind, &randomness, &prover_id, &vanilla).unwrap();
        let t = std::time::Instant::now();
        let theirs = instance.generate_parameters(&mut ChaCha20Rng::seed_from_u64(11)).unwrap();
        let bellperson_s = t.elapsed();
        let t = std::time::Instant::now();
        let m = instance.record_matrices().unwrap();
        let ours = generate_parameters(&m, &draw(&mut ChaCha20Rng::seed_from_u64(11))).unwrap();
        eprintln!("WindowPoSt 2 KiB parameters: bellperson {bellperson_s:.1?}, from the matrices {:.1?}", t.elapsed());
        assert_eq!(bytes(&ours), bytes(&theirs));
    }

    #[test]
    fn degenerate_and_unconstrained_set_ups_are_refused() {
        let m = ConstraintMatrices::record(Corners { x: None, rounds: 3 }).unwrap();
        let mut w = draw(&mut ChaCha20Rng::seed_from_u64(5));
        w.delta = Scalar::ZERO;
        assert!(matches!(generate_parameters(&m, &w), Err(SetupError::Degenerate("δ = 0"))));
        let mut w = draw(&mut ChaCha20Rng::seed_from_u64(5));
        w.tau = Scalar::ONE;
        assert!(matches!(generate_parameters(&m, &w), Err(SetupError::Degenerate(_))));
        struct Loose;
        impl Circuit<Scalar> for Loose {
            fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
                let a = cs.alloc(|| "a", || Ok(Scalar::ONE))?;
                cs.alloc(|| "loose", || Ok(Scalar::ONE))?;
                cs.enforce(|| "a", |lc| lc + a, |lc| lc + a, |lc| lc + a);
                Ok(())
            }
        }
        let m = ConstraintMatrices::record(Loose).unwrap();
        let w = draw(&mut ChaCha20Rng::seed_from_u64(6));
        assert!(matches!(generate_parameters(&m, &w), Err(SetupError::UnconstrainedVariable(1))));
    }
}
