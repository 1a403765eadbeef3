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
//! The host does the QAP evaluation ([`query_scalars`]); the points, nearly
//! all of the work, come from a [`FixedBase`]: the host's combs
//! ([`CpuCombs`]) or, with feature `cuda`, a GPU's (`gpu::GpuCombs`, for
//! full-size circuits: a 32 GiB PoRep partition has ~460 M points).
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

#[cfg(feature = "cuda")]
#[path = "setup_gpu.rs"]
pub mod gpu;

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
    /// The device that multiplies the points failed.
    #[error("set-up on the GPU: {0}")]
    Gpu(#[from] c2_cuda::GpuError),
}

/// Bits per comb window: 32 windows cover a 255-bit scalar.
const WINDOW: usize = 8;
const WINDOWS: usize = 256 / WINDOW;
const DIGITS: usize = (1 << WINDOW) - 1;

/// `d · 2^(8w) · base` for every window `w` and digit `d` in 1..=255,
/// affine (one batch normalisation), for fixed-base multiplication.
pub(crate) struct Comb<P: PrimeCurve> {
    /// Window-major: `table[w * 255 + d - 1]` (the GPU kernel's layout too).
    pub(crate) table: Vec<P::Affine>,
}

impl<P> Comb<P>
where
    P: PrimeCurve + Send + Sync,
    P::Affine: Send + Sync,
{
    pub(crate) fn new(base: P) -> Self {
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

/// Fixed-base multiplication by the set-up's two generators: nearly all of
/// a Groth16 set-up's work (one point per query entry, ~47 GB of them for a
/// 32 GiB PoRep partition). [`CpuCombs`] runs on the host's threads,
/// `gpu::GpuCombs` (feature `cuda`) on a device; both give the same exact
/// points.
pub trait FixedBase: Sync {
    /// `s · g1` for every scalar, affine (zero gives the identity);
    /// `done(k)` as each `k` more points are finished.
    fn g1(&self, scalars: &[Scalar], done: &(dyn Fn(u64) + Sync)) -> Result<Vec<G1Affine>, SetupError>;
    /// `s · g2`, as [`FixedBase::g1`].
    fn g2(&self, scalars: &[Scalar], done: &(dyn Fn(u64) + Sync)) -> Result<Vec<G2Affine>, SetupError>;
}

/// `s` as four little-endian u64 limbs in canonical (not Montgomery) form:
/// what the GPU comb kernels read, byte `8k + j` of the scalar being the
/// digit of window `8k + j` as in the host's comb (`to_bytes_le`).
pub fn canonical_limbs(s: &Scalar) -> [u64; 4] {
    let bytes = s.to_bytes_le();
    let mut limbs = [0u64; 4];
    for (limb, b) in limbs.iter_mut().zip(bytes.chunks_exact(8)) {
        *limb = u64::from_le_bytes(b.try_into().expect("8 bytes"));
    }
    limbs
}

/// [`FixedBase`] on the host: a comb per generator, on rayon's threads.
pub struct CpuCombs {
    g1: Comb<G1Projective>,
    g2: Comb<G2Projective>,
}

impl CpuCombs {
    /// The tables of `g1` and `g2` (a few milliseconds).
    pub fn new(g1: G1Projective, g2: G2Projective) -> Self {
        let (g1, g2) = rayon::join(|| Comb::new(g1), || Comb::new(g2));
        Self { g1, g2 }
    }
}

impl FixedBase for CpuCombs {
    fn g1(&self, scalars: &[Scalar], done: &(dyn Fn(u64) + Sync)) -> Result<Vec<G1Affine>, SetupError> {
        Ok(self.g1.mul_all(scalars, done))
    }
    fn g2(&self, scalars: &[Scalar], done: &(dyn Fn(u64) + Sync)) -> Result<Vec<G2Affine>, SetupError> {
        Ok(self.g2.mul_all(scalars, done))
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

/// `start · ratio^i` for i < n, in parallel chunks (each chunk starts from
/// its own power): τ's powers for H and ω's for the Lagrange basis, 2^27
/// of each at 32 GiB, ~2 s on one thread.
fn geometric(start: Scalar, ratio: Scalar, n: usize) -> Vec<Scalar> {
    const CHUNK: usize = 1 << 16;
    let mut out = vec![Scalar::ZERO; n];
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(k, chunk)| {
        let mut x = start * ratio.pow_vartime([(k * CHUNK) as u64]);
        for v in chunk {
            *v = x;
            x *= ratio;
        }
    });
    out
}

/// The Lagrange basis of the domain at τ: `L_j(τ) = ω^j (τ^m − 1) / (m (τ − ω^j))`,
/// the values bellperson's inverse FFT of τ's powers gives.
fn lagrange_at(tau: Scalar, m: usize, omega: Scalar) -> Result<Vec<Scalar>, SetupError> {
    let z = tau.pow_vartime([m as u64]) - Scalar::ONE;
    let m_inv = Option::<Scalar>::from(Scalar::from(m as u64).invert()).ok_or(SetupError::Degenerate("domain"))?;
    let omega_j = geometric(Scalar::ONE, omega, m);
    let mut denominators: Vec<Scalar> = omega_j.par_iter().map(|w| tau - w).collect();
    if denominators.par_iter().any(|d| bool::from(d.is_zero())) {
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
/// variable's QAP polynomial at τ. Each task owns a range of columns and
/// scans every entry, adding only its own, so no two threads write one
/// element: the scans (a 4-byte column index per entry) are cheap beside the
/// products and the cache misses on `out`, which one thread alone would pay
/// for all 722 M entries of a 32 GiB PoRep partition.
fn evaluate(matrix: &c2_synth::SparseMatrix, coeffs: &[Scalar], lagrange: &[Scalar], vars: usize) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; vars];
    let span = vars.div_ceil(2 * rayon::current_num_threads()).max(1);
    out.par_chunks_mut(span).enumerate().for_each(|(k, out)| {
        let lo = k * span;
        for (row, l) in lagrange.iter().enumerate().take(matrix.rows()) {
            let (start, end) = (matrix.row_starts[row] as usize, matrix.row_starts[row + 1] as usize);
            for e in start..end {
                if let Some(o) = (matrix.cols[e] as usize).checked_sub(lo).and_then(|c| out.get_mut(c)) {
                    *o += coeffs[matrix.coeffs[e] as usize] * l;
                }
            }
        }
    });
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
    generate_parameters_by(m, waste, |g1, g2| Ok(CpuCombs::new(g1, g2)), progress)
}

/// [`generate_parameters_with`] with the points multiplied by the
/// [`FixedBase`] that `bases` makes for the waste's two generators (the
/// host's combs, or a GPU's); the QAP evaluation stays on the host's threads.
pub fn generate_parameters_by<F: FixedBase>(
    m: &ConstraintMatrices,
    waste: &ToxicWaste,
    bases: impl FnOnce(G1Projective, G2Projective) -> Result<F, SetupError>,
    progress: &(dyn Fn(SetupStep) + Sync),
) -> Result<Parameters<Bls12>, SetupError> {
    let scalars = query_scalars(m, waste)?;
    multiply(&scalars, waste, &bases(waste.g1, waste.g2)?, progress)
}

/// What a set-up multiplies its generators by, per query: the host's share
/// of the work (the QAP at τ from the matrices), kept apart from the points
/// so a device run can check a sample of its points against the host's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryScalars {
    /// H: `τ^i · t(τ) / δ` for i < domain − 1, `t(τ) = τ^domain − 1`.
    pub h: Vec<Scalar>,
    /// IC then L, per variable: `(β·A(τ) + α·B(τ) + C(τ))` over γ for the
    /// inputs, over δ for the aux variables.
    pub ic_l: Vec<Scalar>,
    /// How many of [`QueryScalars::ic_l`] are inputs (IC).
    pub inputs: usize,
    /// A's non-zero evaluations in variable order (bellperson filters the
    /// identity out of the A and B queries).
    pub a: Vec<Scalar>,
    /// B's non-zero evaluations in variable order (the B queries in G1 and
    /// in G2).
    pub b: Vec<Scalar>,
}

/// The [`QueryScalars`] of the circuit whose matrices are `m`, for these
/// secrets: the Lagrange basis at τ, each variable's A, B and C polynomials
/// at τ from the matrices, then the queries' scalars.
pub fn query_scalars(m: &ConstraintMatrices, waste: &ToxicWaste) -> Result<QueryScalars, SetupError> {
    let ToxicWaste { alpha, beta, gamma, delta, tau, .. } = *waste;
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
    let coeff = (tau.pow_vartime([size as u64]) - Scalar::ONE) * delta_inv;
    let h = geometric(coeff, tau, size - 1);
    let ic_l: Vec<Scalar> = (0..vars)
        .into_par_iter()
        .map(|v| (beta * at[v] + alpha * bt[v] + ct[v]) * if v < m.inputs { gamma_inv } else { delta_inv })
        .collect();
    if let Some(v) = ic_l[m.inputs..].iter().position(|e| bool::from(e.is_zero())) {
        return Err(SetupError::UnconstrainedVariable(v));
    }
    let nonzero = |v: &[Scalar]| v.par_iter().copied().filter(|s| !bool::from(s.is_zero())).collect::<Vec<_>>();
    let (a, b) = (nonzero(&at), nonzero(&bt));
    Ok(QueryScalars { h, ic_l, inputs: m.inputs, a, b })
}

/// The parameters of `q` for `waste`: every query's points by `bases`
/// (which must be of the waste's generators), then the verifying key.
/// `progress` hears each query as it begins and its points as they are done.
pub fn multiply<F: FixedBase>(
    q: &QueryScalars,
    waste: &ToxicWaste,
    bases: &F,
    progress: &(dyn Fn(SetupStep) + Sync),
) -> Result<Parameters<Bls12>, SetupError> {
    let done = |n| progress(SetupStep::Points(n));
    let g1_query = |name, scalars: &[Scalar]| {
        progress(SetupStep::Query(name, scalars.len() as u64));
        bases.g1(scalars, &done)
    };
    let h = g1_query("h", &q.h)?;
    // One query for the progress reports, two multiplications: splitting one
    // result vector (`split_off`) copied L's points, 12.5 GB at 32 GiB, and
    // held "ic and l" at 9.5 M points/s against H's 22.7 on an H100.
    progress(SetupStep::Query("ic and l", q.ic_l.len() as u64));
    let (ic_scalars, l_scalars) = q.ic_l.split_at(q.inputs.min(q.ic_l.len()));
    let ic = bases.g1(ic_scalars, &done)?;
    let l = bases.g1(l_scalars, &done)?;
    let a = g1_query("a", &q.a)?;
    let b_g1 = g1_query("b_g1", &q.b)?;
    progress(SetupStep::Query("b_g2", q.b.len() as u64));
    let b_g2 = bases.g2(&q.b, &done)?;

    let ToxicWaste { g1, g2, alpha, beta, gamma, delta, .. } = *waste;
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

    /// The GPU kernel's loop (`comb_mul` in cuda-kernels/c2_selftest.cu)
    /// modelled on the host: digits read from the canonical limbs, byte by
    /// byte, against the host comb and a plain scalar multiplication, for
    /// 0, 1, 2, r − 1, a scalar with every byte 0xff below r, and random
    /// ones.
    #[test]
    fn the_kernels_digit_order_gives_the_scalar_multiple() {
        fn by_limbs(comb: &Comb<G1Projective>, limbs: [u64; 4]) -> G1Projective {
            let mut acc = G1Projective::identity();
            for (k, word) in limbs.iter().enumerate() {
                for byte in 0..8 {
                    let digit = ((word >> (8 * byte)) & 0xff) as usize;
                    if digit != 0 {
                        acc += comb.table[(8 * k + byte) * DIGITS + digit - 1];
                    }
                }
            }
            acc
        }
        let g = G1Projective::random(&mut ChaCha20Rng::seed_from_u64(8));
        let comb = Comb::new(g);
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        let mut scalars = vec![Scalar::ZERO, Scalar::ONE, Scalar::from(2u64), -Scalar::ONE];
        let mut high = [0xffu8; 32];
        high[31] = 0x0f;
        scalars.push(Scalar::from_bytes_le(&high).unwrap());
        scalars.extend((0..8).map(|_| Scalar::random(&mut rng)));
        assert_eq!(
            canonical_limbs(&-Scalar::ONE),
            [0xffff_ffff_0000_0000, 0x53bd_a402_fffe_5bfe, 0x3339_d808_09a1_d805, 0x73ed_a753_299d_7d48]
        );
        for s in scalars {
            let want = g * s;
            assert_eq!(by_limbs(&comb, canonical_limbs(&s)), want, "{s:?}");
            assert_eq!(comb.mul(&s), want, "{s:?}");
        }
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
