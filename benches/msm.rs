//! CPU MSM (blst Pippenger) by log-size, G1 and G2, full-width scalars and
//! the PoRep-like 0/1-heavy mix.
//! `cargo bench --bench msm` (add `-- --quick` for a short run).

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use c2_msm::{CpuMsm, Msm};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ff::Field;
use group::{Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// Distinct bases cheaply: random points are slow to make, so a few are
/// made and the rest are sums of neighbours.
fn bases_g1(n: usize, rng: &mut ChaCha20Rng) -> Vec<G1Affine> {
    let mut p = G1Projective::random(&mut *rng);
    let step = G1Projective::random(&mut *rng);
    let proj: Vec<G1Projective> = (0..n)
        .map(|_| {
            p += step;
            p
        })
        .collect();
    let mut out = vec![G1Affine::default(); n];
    G1Projective::batch_normalize(&proj, &mut out);
    out
}

fn bases_g2(n: usize, rng: &mut ChaCha20Rng) -> Vec<G2Affine> {
    let mut p = G2Projective::random(&mut *rng);
    let step = G2Projective::random(&mut *rng);
    (0..n)
        .map(|_| {
            p += step;
            p.to_affine()
        })
        .collect()
}

/// The measured aux mix of real PoRep circuits (FACTS: ~51% zero, ~47% one,
/// ~2% full-width).
fn porep_mix(n: usize, rng: &mut ChaCha20Rng) -> Vec<Scalar> {
    (0..n)
        .map(|_| match rng.gen_range(0..1000) {
            0..=512 => Scalar::ZERO,
            513..=983 => Scalar::ONE,
            _ => Scalar::random(&mut *rng),
        })
        .collect()
}

fn bench_msm(c: &mut Criterion) {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let mut g = c.benchmark_group("cpu_msm_g1");
    g.sample_size(10);
    for log_n in [10u32, 14, 18] {
        let n = 1usize << log_n;
        let bases = bases_g1(n, &mut rng);
        let full: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        let mix = porep_mix(n, &mut rng);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("full_width", log_n), &log_n, |b, _| {
            b.iter(|| CpuMsm.msm_g1(&bases, &full, None).unwrap())
        });
        g.bench_with_input(BenchmarkId::new("porep_mix", log_n), &log_n, |b, _| {
            b.iter(|| CpuMsm.msm_g1(&bases, &mix, None).unwrap())
        });
    }
    g.finish();

    let mut g = c.benchmark_group("cpu_msm_g2");
    g.sample_size(10);
    for log_n in [10u32, 14] {
        let n = 1usize << log_n;
        let bases = bases_g2(n, &mut rng);
        let full: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("full_width", log_n), &log_n, |b, _| {
            b.iter(|| CpuMsm.msm_g2(&bases, &full, None).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, bench_msm);
criterion_main!(benches);
