//! CPU NTT and compute_h by log-size.
//! `cargo bench --bench ntt` (add `-- --quick` for a short run).

use blstrs::Scalar;
use c2_ntt::{CpuNtt, Domain, Ntt};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ff::Field;
use rand::SeedableRng;

fn random(n: usize) -> Vec<Scalar> {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(n as u64);
    (0..n).map(|_| Scalar::random(&mut rng)).collect()
}

fn bench_ntt(c: &mut Criterion) {
    let mut g = c.benchmark_group("cpu_ntt");
    g.sample_size(10);
    for log_n in [12u32, 16, 20] {
        let d = Domain::new(log_n).unwrap();
        let mut v = random(d.size());
        g.throughput(Throughput::Elements(d.size() as u64));
        g.bench_with_input(BenchmarkId::new("fft", log_n), &log_n, |b, _| b.iter(|| d.fft(&mut v)));
        g.bench_with_input(BenchmarkId::new("coset_fft", log_n), &log_n, |b, _| b.iter(|| d.coset_fft(&mut v)));
    }
    g.finish();

    let mut g = c.benchmark_group("cpu_compute_h");
    g.sample_size(10);
    for log_n in [12u32, 16, 20] {
        let n = 1usize << log_n;
        let (a, b, cc) = (random(n), random(n), random(n));
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::from_parameter(log_n), &log_n, |bch, _| {
            bch.iter(|| CpuNtt.compute_h(a.clone(), b.clone(), cc.clone()).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, bench_ntt);
criterion_main!(benches);
