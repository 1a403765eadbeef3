//! `--only field`: both field backends of `cuda-kernels/ff/field.cuh`
//! (ec-gpu-gen, sppark) and the Fr product on the FP64 pipe
//! (`ff/fr_fp64.cuh`) against the CPU on random values and the edges, then
//! their throughput side by side (products of Fr and Fp, and the MSM's bucket
//! step: an inlined mixed addition in G1 and G2), every timed result equal
//! across the backends.

use std::sync::Arc;

use blstrs::{G1Projective, G2Projective, Scalar};
use c2_cuda::{FieldBackend, Gpu, SelftestField};
use c2_testkit::field_check::{self, FpLimbs, GpuFieldCheck, Timed};
use ff::Field;
use group::{Curve, Group};
use rand::SeedableRng;

use crate::{median, Report};

const BACKENDS: [FieldBackend; 2] = [FieldBackend::EcGpuGen, FieldBackend::Sppark];

/// Random values plus the edges at the front.
fn fr_cases(rng: &mut impl rand::RngCore, n: usize) -> Vec<Scalar> {
    let mut v = vec![Scalar::ZERO, Scalar::ONE, -Scalar::ONE, Scalar::from(2u64), -Scalar::from(2u64)];
    v.extend((v.len()..n).map(|_| Scalar::random(&mut *rng)));
    v
}

fn fp_cases(rng: &mut impl rand::RngCore, n: usize) -> Vec<FpLimbs> {
    let mut v = field_check::fp_edges();
    v.extend((v.len()..n).map(|_| field_check::random_fp(rng)));
    v
}

/// Every pairing of the edges with each other and with random values: the
/// `a` side walks the list, the `b` side the list rotated by one edge at a
/// time, so edge x edge pairs occur.
fn pairs<T: Copy>(v: &[T], edges: usize) -> (Vec<T>, Vec<T>) {
    let mut a = Vec::new();
    let mut b = Vec::new();
    for shift in 0..=edges {
        a.extend_from_slice(v);
        b.extend(v.iter().cycle().skip(shift).take(v.len()));
    }
    (a, b)
}

/// The checks, then (unless `skip_bench`) the throughput table.
pub fn run(gpu: Arc<Gpu>, r: &mut Report, skip_bench: bool) -> Result<(), String> {
    let e = |x: c2_cuda::GpuError| x.to_string();
    let check = GpuFieldCheck::new(gpu);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(5),
    );
    println!("field backend built into the kernel module: {}", FieldBackend::BUILT.name());
    // Operations vs the CPU: 5 edges x 5 shifts of 2^14 values.
    let (fa, fb) = pairs(&fr_cases(&mut rng, 1 << 14), 5);
    let fr_want = field_check::fr_reference(&fa, &fb);
    let (pa, pb) = pairs(&fp_cases(&mut rng, 1 << 14), 5);
    let fp_want = field_check::fp_reference(&pa, &pb);
    for backend in BACKENDS {
        let got = check.fr_ops(backend, &fa, &fb).map_err(e)?;
        let bad = got.iter().zip(&fr_want).filter(|(g, w)| g != w).count();
        r.check(
            format!(
                "Fr mul/sqr/add/sub/dbl ({}) vs blstrs, {} pairs incl. 0, 1, r-1, 2, -2: {bad} wrong",
                backend.name(),
                fa.len()
            ),
            bad == 0,
        );
        let got = check.fp_ops(backend, &pa, &pb).map_err(e)?;
        let bad = got.iter().zip(&fp_want).filter(|(g, w)| g != w).count();
        r.check(
            format!(
                "Fp mul/sqr/add/sub/dbl ({}) vs blst, {} pairs incl. 0, 1, p-1, raw 1, p-2: {bad} wrong",
                backend.name(),
                pa.len()
            ),
            bad == 0,
        );
    }

    // The Fr product on the FP64 pipe (ff/fr_fp64.cuh) on the same pairs.
    let got = check.fr_mul_fp64(&fa, &fb).map_err(e)?;
    let bad = got.iter().zip(&fr_want).filter(|(g, w)| **g != w[0]).count();
    r.check(
        format!("Fr product on the FP64 pipe vs blstrs, {} pairs incl. 0, 1, r-1, 2, -2: {bad} wrong", fa.len()),
        bad == 0,
    );

    // Chains: equal across the backends; the first values against the CPU.
    let quick = skip_bench;
    let n = if quick { 1 << 14 } else { 1 << 20 };
    let x = fr_cases(&mut rng, n);
    let y: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    let fr_iters = 512;
    let fr_runs = timed_pair(|b| check.mul_chain(SelftestField::Fr, b, &x, &y, fr_iters)).map_err(e)?;
    let cpu_ok = (0..64).all(|i| {
        let mut v = x[i];
        for _ in 0..fr_iters {
            v *= y[i];
        }
        fr_runs[0].out[i] == v
    });
    r.check(
        format!("Fr product chains (x * y^{fr_iters}, {n} threads): both backends equal, first 64 == blstrs"),
        fr_runs[0].out == fr_runs[1].out && cpu_ok,
    );
    let fp64_run = timed(|| check.fr_mul_chain_fp64(&x, &y, fr_iters)).map_err(e)?;
    r.check(
        format!("Fr product chains on the FP64 pipe ({n} threads) == the backends' chains"),
        fp64_run.out == fr_runs[1].out,
    );
    // Two chains per thread: both integer, or one per pipe. The second chain
    // is y^(iters + 1), checked on the CPU for the first 64 threads.
    let pair_runs = [
        timed(|| check.fr_mul_chain_pair(&x, &y, fr_iters, false)).map_err(e)?,
        timed(|| check.fr_mul_chain_pair(&x, &y, fr_iters, true)).map_err(e)?,
    ];
    let powers_ok = |out: &[Scalar]| (0..64).all(|i| out[n + i] == y[i].pow_vartime([u64::from(fr_iters) + 1]));
    for (run, what) in pair_runs.iter().zip(["both on sppark's integer product", "the second on the FP64 pipe"]) {
        r.check(
            format!(
                "Fr product chain pairs ({what}, {n} threads): first == the backends' chains, second == y^(iters+1)"
            ),
            run.out[..n] == fr_runs[1].out[..] && powers_ok(&run.out),
        );
    }
    // Both pair kernels compute the same values.
    r.check("Fr product chain pairs: integer pair == mixed pair".into(), pair_runs[0].out == pair_runs[1].out);

    let xp = fp_cases(&mut rng, n);
    let yp: Vec<FpLimbs> = (0..n).map(|_| field_check::random_fp(&mut rng)).collect();
    let fp_iters = 256;
    let fp_runs = timed_pair(|b| check.mul_chain(SelftestField::Fp, b, &xp, &yp, fp_iters)).map_err(e)?;
    let cpu_ok = (0..64).all(|i| {
        let mut v = xp[i];
        for _ in 0..fp_iters {
            v = field_check::fp_reference(&[v], &[yp[i]])[0][0];
        }
        fp_runs[0].out[i] == v
    });
    r.check(
        format!("Fp product chains (x * y^{fp_iters}, {n} threads): both backends equal, first 64 == blst"),
        fp_runs[0].out == fp_runs[1].out && cpu_ok,
    );

    // The bucket step: a + iters * b by inlined mixed additions.
    let add_iters = 64u32;
    let (a1, b1) = chain_inputs::<G1Projective>(&mut rng, if quick { 1 << 12 } else { 1 << 20 }, 4096);
    let g1_runs = timed_pair(|b| check.g1_add_chain(b, &a1, &b1, add_iters)).map_err(e)?;
    check_add_chains::<G1Projective>(r, "G1", &a1, &b1, add_iters, &g1_runs);
    let (a2, b2) = chain_inputs::<G2Projective>(&mut rng, if quick { 1 << 10 } else { 1 << 18 }, 1024);
    let g2_runs = timed_pair(|b| check.g2_add_chain(b, &a2, &b2, add_iters)).map_err(e)?;
    check_add_chains::<G2Projective>(r, "G2", &a2, &b2, add_iters, &g2_runs);
    if skip_bench {
        return Ok(());
    }

    r.bench.push(format!(
        "{:<26} | {:>14} {:>10} | {:>14} {:>10} | {:>8}",
        "field backends (median of 5)", "ec-gpu-gen ms", "G op/s", "sppark ms", "G op/s", "ec/sp"
    ));
    let mut row = |what: &str, ops: f64, ms: [f64; 2]| {
        r.bench.push(format!(
            "{:<26} | {:>11.2} ms {:>10.2} | {:>11.2} ms {:>10.2} | {:>7.2}x",
            what,
            ms[0],
            ops / ms[0] / 1e6,
            ms[1],
            ops / ms[1] / 1e6,
            ms[0] / ms[1]
        ));
        println!("{}", r.bench.last().unwrap());
    };
    row("Fr product", (n as f64) * f64::from(fr_iters), ms_of(&fr_runs));
    row("Fp product", (n as f64) * f64::from(fp_iters), ms_of(&fp_runs));
    row("G1 mixed addition (XYZZ)", (a1.len() as f64) * f64::from(add_iters), ms_of(&g1_runs));
    row("G2 mixed addition (XYZZ)", (a2.len() as f64) * f64::from(add_iters), ms_of(&g2_runs));
    let fr_ops = (n as f64) * f64::from(fr_iters);
    r.bench.push(format!(
        "{:<26} | {:>11.2} ms {:>10.2} | vs sppark {:.2}x",
        "Fr product, FP64 pipe",
        fp64_run.ms,
        fr_ops / fp64_run.ms / 1e6,
        fr_runs[1].ms / fp64_run.ms
    ));
    println!("{}", r.bench.last().unwrap());
    for (run, what) in pair_runs.iter().zip(["Fr 2 chains, integer+int", "Fr 2 chains, integer+FP64"]) {
        r.bench.push(format!(
            "{:<26} | {:>11.2} ms {:>10.2} | vs one sppark chain {:.2}x",
            what,
            run.ms,
            2.0 * fr_ops / run.ms / 1e6,
            2.0 * fr_runs[1].ms / run.ms
        ));
        println!("{}", r.bench.last().unwrap());
    }
    Ok(())
}

/// Inputs of the addition chains: `a` = `distinct` random points tiled to
/// `n` (drawing points is slow on the CPU), `b` = `a` rotated by one and
/// doubled, so no pair starts equal.
fn chain_inputs<P: Curve + Group>(
    rng: &mut impl rand::RngCore,
    n: usize,
    distinct: usize,
) -> (Vec<P::AffineRepr>, Vec<P::AffineRepr>) {
    let base: Vec<P> = (0..n.min(distinct)).map(|_| P::random(&mut *rng)).collect();
    let a = base.iter().cycle().take(n).map(|p| p.to_affine()).collect();
    let b = base.iter().cycle().skip(1).take(n).map(|p| p.double().to_affine()).collect();
    (a, b)
}

/// Both backends' `a + iters * b` equal, and the first 64 equal blstrs'.
fn check_add_chains<P: Curve + Group<Scalar = Scalar>>(
    r: &mut Report,
    group: &str,
    a: &[P::AffineRepr],
    b: &[P::AffineRepr],
    iters: u32,
    runs: &[Runs<P::AffineRepr>; 2],
) where
    P::AffineRepr: PartialEq + Into<P> + Copy,
{
    let k = Scalar::from(u64::from(iters));
    let cpu_ok = (0..64.min(a.len())).all(|i| {
        let (pa, pb): (P, P) = (a[i].into(), b[i].into());
        runs[0].out[i] == (pa + pb * k).to_affine()
    });
    r.check(
        format!(
            "{group} mixed-addition chains (a + {iters} b, {} threads): both backends equal, first 64 == blstrs",
            a.len()
        ),
        runs[0].out == runs[1].out && cpu_ok,
    );
}

/// One backend's chain: the output and the median kernel time.
struct Runs<T> {
    out: Vec<T>,
    ms: f64,
}

/// `f` once as a warm-up, then five timed runs (median); the output of the
/// last.
fn timed<T>(mut f: impl FnMut() -> Result<Timed<T>, c2_cuda::GpuError>) -> Result<Runs<T>, c2_cuda::GpuError> {
    f()?;
    let mut ts = Vec::new();
    let mut out = Vec::new();
    for _ in 0..5 {
        let t = f()?;
        ts.push(t.ms);
        out = t.out;
    }
    Ok(Runs { out, ms: median(ts) })
}

/// [`timed`] for each backend.
fn timed_pair<T>(
    mut f: impl FnMut(FieldBackend) -> Result<Timed<T>, c2_cuda::GpuError>,
) -> Result<[Runs<T>; 2], c2_cuda::GpuError> {
    Ok([timed(|| f(BACKENDS[0]))?, timed(|| f(BACKENDS[1]))?])
}

fn ms_of<T>(runs: &[Runs<T>; 2]) -> [f64; 2] {
    [runs[0].ms, runs[1].ms]
}
