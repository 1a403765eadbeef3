//! The device runner: every GPU differential test and benchmark in one
//! binary, for one call on a GPU host. Prints a short table last.
//!
//! ```text
//! eval "$(scripts/cuda-toolchain.sh)"
//! cargo build --release -p c2-device-runner
//! ./target/release/c2-device-runner [--quick] [--skip-bench] [--only ntt|msm|facade|partition]
//!     [--sizes 20,24,26,27] [--msm-g1 20,24,26,27] [--msm-g2 20,24,25] [--msm-porep 26]
//!     [--msm-sweep 14,16,18]   (extra window widths timed at each size)
//!     [--msm-copies 20x2,20x3] (precomputed copies of the bases, (width, copies), timed at each size)
//!     [--ntt-peer-max 26]      (ec-gpu-gen's FFT and h path timed up to this size only)
//!     [--skip-ntt-checks]      (the NTT bench without the NTT differential suite, e.g. under ncu)
//!     [--skip-checks]          (benches only: no curve, MSM or NTT differential suite)
//!     [--only partition --partition-scale 1|2|4|8 --partitions K --proofs J --workers 1,2 --gpus 1,2
//!         --accumulate-blocks 0,3,4 --h-copies none,20x4
//!         --vram-caps 0,40,24,16]
//!         (32 GiB-shaped synthetic partitions through the library's GPU workers, the device pool
//!         capped at each size in GiB, 0 = uncapped; bytes equal across every run)
//!     [--only abc --abc-sectors 2k,8m,32g]  (a, b, c from constraint matrices: GPU == CPU on random
//!         and real CC-sector matrices; record, witness, upload and kernel times)
//!     [--only real --real-sector 32g --real-partitions 2 [--real-proofs 5 --real-concurrency 2,3]
//!      [--real-vram-caps 24,16 [--real-cap-partitions 10] [--real-cap-variants repeated,batched]
//!       [--real-cap-proofs 5 --real-cap-workers 1,2]]
//!      [--bellperson]]
//!         (a real CC test sector, Groth16 test parameters for its circuit generated on the GPU: the
//!         first partitions by the witness-only path vs the circuit path, same bytes; one whole-sector
//!         proof verified by the facade and by filecoin-proofs' verify_seal; then whole-sector proofs,
//!         c2-bench style, bellperson on partition 0 (same bytes), the capped suite; with
//!         --real-cap-proofs, whole proofs at each cap and worker count with batched passes; all verified)
//!     [--bellperson]  (`--only real`, `post`, `update`: partition 0 by bellperson too, same parameters,
//!         r, s; bytes compared; its CUDA prover in a runner built with `--features bellperson-cuda`)
//!     [--only affine --msm-g1 24,26 --msm-g2 24,25]  (batched-affine bucket sums vs XYZZ)
//!     [--only peers --peer-scale 4 --peer-partitions 1 --peer-reps 2 --peer-seed 7 --peer-dir DIR
//!      --peer-vram-cap 16]
//!         (the shaped circuit through our GPU workers, the pool optionally capped in GiB; bytes and
//!         times vs peer-prove's files in DIR)
//!     [--only field]  (both field backends, ec-gpu-gen and sppark: vs blstrs/blst, then products
//!         and bucket additions per second side by side)
//!     [--only daemon --daemon-winning 8 --daemon-c2 4 --daemon-urgent-lane 1,0]  (the service in this
//!         process, Curio's requests: registered 2 KiB WindowPoSt / WinningPoSt / SnapDeals verified;
//!         WinningPoSt 32 GiB latency alone and under a 32 GiB C2 load, the GPU's urgent lane on (1)
//!         and off (0); parameters generated on the GPU: every proof verified)
//!     [--only update --update-sizes 2k,32g --update-proofs 2]  (SnapDeals test updates at full size:
//!         vanilla verifier, a·b = c, witness path == circuit path bytes, end-to-end time; parameters
//!         generated on the GPU: every proof verified)
//!     [--only setup --setup-sizes 2k,32g --setup-full-check 2k --setup-samples 256]  (Groth16 test
//!         parameters made on the GPU from a CC test sector partition's matrices, timed per query; every
//!         point == the host combs' up to the full-check size, a sample per query above it)
//!     [--only post --post-sizes 2k,32g --post-kinds window,winning --post-proofs 3]  (WindowPoSt / WinningPoSt test sectors at
//!         full size: vanilla verifier, native witness == gadgets', a·b = c, witness path == circuit
//!         path's bytes, end-to-end time; parameters generated on the GPU: every proof verified)
//!     [--only registered --registered 2k,8m --vram-cap-gib 12]  (registered proof types: GPU proof
//!         == CPU proof, verify_seal accepts it; the pool optionally capped)
//! ```
//! Exit status 0 only when every differential check passed; with no GPU it
//! says so and exits 2 (a skip, never a silent pass).

use std::sync::Arc;
use std::time::Instant;

use blstrs::Scalar;
use c2_cuda::{Gpu, GpuError};
use c2_ntt::{CpuNtt, Domain, GpuNtt, Ntt, NttKind};
use ff::{Field, PrimeField};
use filecoin_proofs_api::RegisteredSealProof;
use rand::SeedableRng;
use rayon::prelude::*;

mod abc;
mod daemon;
mod facade;
mod field;
mod msm;
mod partition;
mod peers;
mod post;
mod real;
mod registered;
mod setup;
mod update;

struct Report {
    checks: Vec<(String, bool)>,
    bench: Vec<String>,
}

impl Report {
    fn check(&mut self, name: String, ok: bool) {
        println!("{} {name}", if ok { "PASS" } else { "FAIL" });
        self.checks.push((name, ok));
    }
}

/// Fresh random scalars every run (seeded from the clock), in parallel.
fn random_vec(n: usize, salt: u64) -> Vec<Scalar> {
    let base =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
            ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    const CHUNK: usize = 1 << 14;
    let mut v = vec![Scalar::ZERO; n];
    v.par_chunks_mut(CHUNK).enumerate().for_each(|(i, c)| {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(base ^ (i as u64) << 20);
        for x in c {
            *x = Scalar::random(&mut rng);
        }
    });
    v
}

fn cpu_ntt(d: &Domain, v: &mut [Scalar], kind: NttKind) {
    match kind {
        NttKind::Forward => d.fft(v),
        NttKind::Inverse => d.ifft(v),
        NttKind::CosetForward => d.coset_fft(v),
        NttKind::CosetInverse => d.icoset_fft(v),
    }
}

const KINDS: [NttKind; 4] = [NttKind::Forward, NttKind::Inverse, NttKind::CosetForward, NttKind::CosetInverse];

fn differential(gpu: &GpuNtt, r: &mut Report, quick: bool) -> Result<(), String> {
    let minus_one = -Scalar::ONE;
    // Quick still reaches 2^20, where a transform takes three passes (10 + 9
    // + 1 stages), the shape of 2^27's.
    let sizes: Vec<u32> = if quick { (1..=16).chain([20]).collect() } else { (1..=22).collect() };
    for log_n in sizes {
        let d = Domain::new(log_n).map_err(|e| e.to_string())?;
        for kind in KINDS {
            let cases: Vec<(&str, Vec<Scalar>)> = vec![
                ("random", random_vec(d.size(), log_n as u64)),
                ("zero", vec![Scalar::ZERO; d.size()]),
                ("r-1", vec![minus_one; d.size()]),
            ];
            for (name, input) in cases {
                let mut want = input.clone();
                cpu_ntt(&d, &mut want, kind);
                let mut got = input;
                gpu.ntt(&mut got, kind).map_err(|e| e.to_string())?;
                r.check(format!("ntt 2^{log_n} {kind:?} {name}"), got == want);
            }
        }
    }
    // compute_h at odd lengths (padding), edge values, vs the CPU oracle.
    let lens: &[usize] =
        if quick { &[1, 2, 3, 1000, 4097, (1 << 19) + 3] } else { &[1, 2, 3, 1000, 4097, 1 << 16, (1 << 20) + 1] };
    for &n in lens {
        let mut cases = vec![("random", [random_vec(n, 1), random_vec(n, 2), random_vec(n, 3)])];
        if n == 1000 {
            cases.push(("zero", [vec![Scalar::ZERO; n], vec![Scalar::ZERO; n], vec![Scalar::ZERO; n]]));
            cases.push(("r-1", [vec![minus_one; n], vec![minus_one; n], vec![minus_one; n]]));
        }
        for (name, [a, b, c]) in cases {
            let want = CpuNtt.compute_h(a.clone(), b.clone(), c.clone()).map_err(|e| e.to_string())?;
            let got = gpu.compute_h(a, b, c).map_err(|e| e.to_string())?;
            r.check(format!("compute_h n={n} {name}"), got == want);
        }
    }
    if !quick {
        // The largest size: forward NTT at 2^27 against the CPU (16 cores).
        let log_n = 27;
        let d = Domain::new(log_n).map_err(|e| e.to_string())?;
        let input = random_vec(d.size(), 27);
        let t = Instant::now();
        let mut want = input.clone();
        d.fft(&mut want);
        println!("  (cpu fft 2^27: {:.1?})", t.elapsed());
        let mut got = input.clone();
        gpu.ntt(&mut got, NttKind::Forward).map_err(|e| e.to_string())?;
        r.check("ntt 2^27 Forward random".into(), got == want);
        drop((got, want));
        let t = Instant::now();
        let mut want = input.clone();
        d.ifft(&mut want);
        println!("  (cpu ifft 2^27: {:.1?})", t.elapsed());
        let mut got = input;
        gpu.ntt(&mut got, NttKind::Inverse).map_err(|e| e.to_string())?;
        r.check("ntt 2^27 Inverse random".into(), got == want);
        drop((got, want));
        // Constant inputs have closed forms: fft(c,..,c) = (n·c, 0, .., 0)
        // and ifft(c,..,c) = (c, 0, .., 0); zero maps to zero.
        let n = d.size();
        for (name, c) in [("zero", Scalar::ZERO), ("r-1", minus_one)] {
            let mut got = vec![c; n];
            gpu.ntt(&mut got, NttKind::Forward).map_err(|e| e.to_string())?;
            let ok = got[0] == c * Scalar::from(n as u64) && got[1..].par_iter().all(|x| *x == Scalar::ZERO);
            r.check(format!("ntt 2^27 Forward {name}"), ok);
            let mut got = vec![c; n];
            gpu.ntt(&mut got, NttKind::Inverse).map_err(|e| e.to_string())?;
            let ok = got[0] == c && got[1..].par_iter().all(|x| *x == Scalar::ZERO);
            r.check(format!("ntt 2^27 Inverse {name}"), ok);
        }
        let a = random_vec(1 << log_n, 271);
        let mut got = a.clone();
        gpu.ntt(&mut got, NttKind::CosetForward).map_err(|e| e.to_string())?;
        gpu.ntt(&mut got, NttKind::CosetInverse).map_err(|e| e.to_string())?;
        r.check("ntt 2^27 coset round trip".into(), got == a);
    }
    Ok(())
}

/// G1/G2 XYZZ formulas (the MSM bucket arithmetic) vs blstrs, random points
/// plus the exceptional cases: infinity on either side, P + P, P + (-P).
fn curve_checks(gpu: Arc<Gpu>, r: &mut Report) -> Result<(), String> {
    use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
    use group::{prime::PrimeCurveAffine, Curve, Group};
    let check = c2_testkit::curve_check::GpuCurveCheck::new(gpu).map_err(|e| e.to_string())?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(3),
    );
    fn cases<P: Group + Curve>(rng: &mut impl rand::RngCore, n: usize) -> (Vec<P::AffineRepr>, Vec<P::AffineRepr>)
    where
        P::AffineRepr: PrimeCurveAffine<Curve = P>,
    {
        let mut a: Vec<P::AffineRepr> = (0..n).map(|_| P::random(&mut *rng).to_affine()).collect();
        let mut b: Vec<P::AffineRepr> = (0..n).map(|_| P::random(&mut *rng).to_affine()).collect();
        let inf = P::AffineRepr::identity();
        a[0] = inf; // inf + b
        b[1] = inf; // a + inf
        a[2] = inf; // inf + inf
        b[2] = inf;
        b[3] = a[3]; // P + P
        b[4] = (-a[4].to_curve()).to_affine(); // P + (-P)
        b[5] = (a[5].to_curve().double()).to_affine(); // 2P: 2a + b = 4a
        (a, b)
    }
    fn expect<P: Group + Curve>(a: &P::AffineRepr, b: &P::AffineRepr) -> [P::AffineRepr; 4]
    where
        P::AffineRepr: PrimeCurveAffine<Curve = P>,
    {
        let (pa, pb) = (a.to_curve(), b.to_curve());
        let sum = (pa + pb).to_affine();
        let d = pa.double();
        [sum, sum, d.to_affine(), (d + pb).to_affine()]
    }
    let (a, b) = cases::<G1Projective>(&mut rng, 4096);
    let got = check.g1(&a, &b).map_err(|e| e.to_string())?;
    let bad = a.iter().zip(&b).zip(&got).filter(|((x, y), g)| expect::<G1Projective>(x, y) != **g).count();
    r.check(format!("G1 xyzz add/madd/dbl vs blstrs (4096 pairs incl. inf, P+P, P-P): {bad} wrong"), bad == 0);
    let (a, b) = cases::<G2Projective>(&mut rng, 1024);
    let got = check.g2(&a, &b).map_err(|e| e.to_string())?;
    let bad = a.iter().zip(&b).zip(&got).filter(|((x, y), g)| expect::<G2Projective>(x, y) != **g).count();
    r.check(format!("G2 xyzz add/madd/dbl vs blstrs (1024 pairs incl. inf, P+P, P-P): {bad} wrong"), bad == 0);
    let _ = (G1Affine::identity(), G2Affine::identity());
    Ok(())
}

pub(crate) use c2_testkit::median;

/// Bytes one in-place NTT of 2^log_n moves through device memory, as our
/// kernels are built: (data, twiddle-table reads). Data: the permutation and
/// each shared-memory pass read and write every element once (32 bytes).
/// Table: each pass after the first twists every element by a root read
/// from the table, one 32-byte sector per element (an upper bound: runs of
/// a block share sectors); the butterflies' 2^9 small roots stay in cache.
fn ntt_bytes(log_n: u32) -> (f64, f64) {
    let n = (1u64 << log_n) as f64;
    let later = later_passes(log_n);
    let data = f64::from(1 + 1 + later) * 2.0 * n * 32.0;
    let table = f64::from(later) * n * 32.0;
    (data, table)
}

/// Passes after the first of a 2^log_n transform (c2-ntt's plan: 10 stages,
/// then up to 9 per pass).
fn later_passes(log_n: u32) -> u32 {
    log_n.saturating_sub(10).div_ceil(9)
}

/// Bytes compute_h moves through device memory (data only): seven
/// transforms of `1 + later` passes each and one permutation, each reading
/// and writing every element once; a*b and (ab - c)/Z folded into b's and
/// c's last forward passes, each reading one vector more.
fn compute_h_bytes(log_n: u32) -> f64 {
    let n = (1u64 << log_n) as f64;
    let passes = 7 * (1 + later_passes(log_n)) + 1;
    (f64::from(passes) * 2.0 + 2.0) * n * 32.0
}

fn bench(gpu: &GpuNtt, sizes: &[u32], peer_max: u32, r: &mut Report) -> Result<(), String> {
    let g = gpu.gpu().clone();
    let e = |x: GpuError| x.to_string();
    let stream = g.stream().map_err(e)?;
    let (start, end) = (g.event().map_err(e)?, g.event().map_err(e)?);
    let mut ec_program = ec_gpu_fft()?;
    r.bench.push(format!(
        "{:>5} | {:>12} {:>9} {:>9} {:>10} | {:>12} {:>12} | {:>12} {:>9} {:>12} | {:>14} {:>14}",
        "log_n",
        "ntt kernel",
        "data GB/s",
        "+table",
        "perm",
        "ntt +xfer",
        "ec-gpu fft",
        "h kernel",
        "h GB/s",
        "h +xfer",
        "ec-gpu h path",
        "h speedup"
    ));
    r.bench.push(format!(
        "      (GB/s: bytes moved / kernel time; data = permutation + passes, +table = with the twiddle-table \
         reads (upper bound), against the 3.98 TB/s copy ceiling; perm = the bit reversal alone; h GB/s: \
         compute_h's data bytes; ec-gpu-gen's paths up to 2^{peer_max})"
    ));
    for &log_n in sizes {
        let n = 1usize << log_n;
        let host = random_vec(n, 100 + log_n as u64);
        let mut x = g.alloc::<Scalar>(n).map_err(e)?;
        x.upload(0, &host, &stream).map_err(e)?;
        stream.synchronize().map_err(e)?;
        // Kernel-only: data resident and transformed in place again and
        // again (the cost does not depend on the values), CUDA events,
        // median of 10 after 3 warm-ups.
        let kernel_ms = |x: &mut c2_cuda::DeviceBuffer<Scalar>,
                         f: &dyn Fn(&mut c2_cuda::DeviceBuffer<Scalar>) -> Result<(), c2_ntt::NttError>|
         -> Result<f64, String> {
            let mut ts = Vec::new();
            for it in 0..13 {
                start.record(&stream).map_err(e)?;
                f(x).map_err(|x| x.to_string())?;
                end.record(&stream).map_err(e)?;
                end.synchronize().map_err(e)?;
                if it >= 3 {
                    ts.push(end.elapsed_ms(&start).map_err(e)? as f64);
                }
            }
            Ok(median(ts))
        };
        let ntt_ms = kernel_ms(&mut x, &|x| gpu.ntt_in_place(x, log_n, NttKind::Forward, &stream))?;
        // The permutation alone (one per forward transform and per compute_h).
        let perm_ms = kernel_ms(&mut x, &|x| gpu.bit_reverse(x, log_n, &stream))?;
        let (data_bytes, table_bytes) = ntt_bytes(log_n);
        let gbs = data_bytes / (ntt_ms * 1e-3) / 1e9;
        let gbs_all = (data_bytes + table_bytes) / (ntt_ms * 1e-3) / 1e9;
        let peers = log_n <= peer_max;
        // NTT with transfers (host -> device -> host, pinning included).
        let mut ts = Vec::new();
        for _ in 0..3 {
            let mut v = host.clone();
            let t = Instant::now();
            gpu.ntt(&mut v, NttKind::Forward).map_err(|x| x.to_string())?;
            ts.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let ntt_xfer = median(ts);
        // ec-gpu-gen's FFT (bellperson's kernel): its API always uploads and
        // downloads, so only the with-transfers figure exists.
        let mut ts = Vec::new();
        let omega = Domain::new(log_n).map_err(|x| x.to_string())?.omega();
        for _ in 0..if peers { 3 } else { 0 } {
            let mut v = host.clone();
            let t = Instant::now();
            ec_fft(&mut ec_program, &mut v, omega, log_n)?;
            ts.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let ec_ms = if peers { median(ts) } else { f64::NAN };
        drop(x);

        // compute_h resident: a, b, c re-copied (untimed) before each run.
        let (a, b, c) = (host.clone(), random_vec(n, 7), random_vec(n, 8));
        let mut orig = Vec::new();
        for v in [&a, &b, &c] {
            let mut d = g.alloc::<Scalar>(n).map_err(e)?;
            d.upload(0, v, &stream).map_err(e)?;
            orig.push(d);
        }
        let mut work: Vec<_> = (0..3).map(|_| g.alloc::<Scalar>(n)).collect::<Result<_, _>>().map_err(e)?;
        let mut ts = Vec::new();
        for it in 0..7 {
            for (w, o) in work.iter_mut().zip(&orig) {
                w.copy_from_async(0, o, &stream).map_err(e)?;
            }
            start.record(&stream).map_err(e)?;
            let (wa, rest) = work.split_at_mut(1);
            let (wb, wc) = rest.split_at_mut(1);
            gpu.compute_h_device(&mut wa[0], &mut wb[0], &mut wc[0], log_n, &stream).map_err(|x| x.to_string())?;
            end.record(&stream).map_err(e)?;
            end.synchronize().map_err(e)?;
            if it >= 2 {
                ts.push(end.elapsed_ms(&start).map_err(e)? as f64);
            }
        }
        let h_ms = median(ts);
        // The three-vector device sequence against the host-level
        // (two-vector) one and bellperson's path below.
        let mut resident_h = vec![Scalar::ZERO; n - 1];
        work[0].download(0, &mut resident_h, &stream).map_err(e)?;
        stream.synchronize().map_err(e)?;
        drop((orig, work));
        let mut ts = Vec::new();
        for _ in 0..3 {
            let (x, y, z) = (a.clone(), b.clone(), c.clone());
            let t = Instant::now();
            let out = gpu.compute_h(x, y, z).map_err(|x| x.to_string())?;
            ts.push(t.elapsed().as_secs_f64() * 1e3);
            drop(out);
        }
        let h_xfer = median(ts);
        // bellperson's execute_fft with ec-gpu-gen's GPU FFT: 7 GPU FFTs with
        // transfers, the scalings and pointwise steps on the CPU (as
        // bellperson does them).
        let mut ec_h_ms = f64::NAN;
        if peers {
            let t = Instant::now();
            let ec_h = ec_compute_h(&mut ec_program, a.clone(), b.clone(), c.clone(), log_n)?;
            ec_h_ms = t.elapsed().as_secs_f64() * 1e3;
            if log_n <= 24 {
                let ours = gpu.compute_h(a, b, c).map_err(|x| x.to_string())?;
                r.check(format!("ec-gpu-gen h path == ours at 2^{log_n}"), ours == ec_h);
            }
            r.check(format!("compute_h_device (three vectors) == ec-gpu-gen h path at 2^{log_n}"), resident_h == ec_h);
        } else {
            // Without the peer: the resident sequence against the host-level one.
            let host_h = gpu.compute_h(a, b, c).map_err(|x| x.to_string())?;
            r.check(
                format!("compute_h_device (three vectors) == host-level compute_h at 2^{log_n}"),
                resident_h == host_h,
            );
        }
        r.bench.push(format!(
            "{:>5} | {:>9.2} ms {:>9.0} {:>9.0} {:>7.2} ms | {:>9.1} ms {:>9.1} ms | {:>9.1} ms {:>9.0} {:>9.1} ms | {:>11.1} ms {:>13.1}x",
            log_n,
            ntt_ms,
            gbs,
            gbs_all,
            perm_ms,
            ntt_xfer,
            ec_ms,
            h_ms,
            compute_h_bytes(log_n) / (h_ms * 1e-3) / 1e9,
            h_xfer,
            ec_h_ms,
            ec_h_ms / h_xfer
        ));
        println!("{}", r.bench.last().unwrap());
    }
    Ok(())
}

type EcFft = ec_gpu_gen::fft::SingleFftKernel<'static, Scalar>;

fn ec_gpu_fft() -> Result<EcFft, String> {
    use ec_gpu_gen::rust_gpu_tools::Device;
    let devices = Device::all();
    let device = devices.first().ok_or("ec-gpu-gen sees no device")?;
    let program = ec_gpu_gen::program!(device).map_err(|e| format!("ec-gpu-gen program: {e}"))?;
    EcFft::create(program, None).map_err(|e| e.to_string())
}

fn ec_fft(k: &mut EcFft, v: &mut [Scalar], omega: Scalar, log_n: u32) -> Result<(), String> {
    k.radix_fft(v, &omega, log_n).map_err(|e| e.to_string())
}

/// bellperson 0.27's `execute_fft` with its GPU FFT kernel: the transforms on
/// the GPU (one upload/download each), the rest on the CPU.
fn ec_compute_h(
    p: &mut EcFft,
    mut a: Vec<Scalar>,
    mut b: Vec<Scalar>,
    mut c: Vec<Scalar>,
    log_n: u32,
) -> Result<Vec<Scalar>, String> {
    let d = Domain::new(log_n).map_err(|e| e.to_string())?;
    let n = d.size();
    let omega = d.omega();
    let omega_inv = omega.invert().unwrap();
    let minv = Scalar::from(n as u64).invert().unwrap();
    let g = Scalar::MULTIPLICATIVE_GENERATOR;
    let powers = |v: &mut [Scalar], x: Scalar| {
        v.par_chunks_mut(1 << 12).enumerate().for_each(|(i, ch)| {
            let mut u = x.pow_vartime([(i << 12) as u64]);
            for e in ch {
                *e *= u;
                u *= x;
            }
        })
    };
    for v in [&mut a, &mut b, &mut c] {
        ec_fft(p, v, omega_inv, log_n)?;
        v.par_iter_mut().for_each(|x| *x *= minv);
        powers(v, g);
        ec_fft(p, v, omega, log_n)?;
    }
    let zinv = d.z_on_coset_inverse();
    a.par_iter_mut().zip(b.par_iter()).zip(c.par_iter()).for_each(|((x, y), z)| *x = (*x * y - z) * zinv);
    ec_fft(p, &mut a, omega_inv, log_n)?;
    a.par_iter_mut().for_each(|x| *x *= minv);
    powers(&mut a, g.invert().unwrap());
    a.truncate(n - 1);
    Ok(a)
}

/// A registered proof type named on the command line (2k, 8m, 512m, 32g,
/// 64g), or a FAIL line and exit 1.
fn sector_size_or_exit(flag: &str, t: &str) -> RegisteredSealProof {
    c2_testkit::cli::parse_sector_size(t).unwrap_or_else(|| {
        println!("FAIL: unknown {flag} size {t} (2k, 8m, 512m, 32g, 64g)");
        std::process::exit(1)
    })
}

fn main() {
    // The library's log lines (plans, pinning, retries) with RUST_LOG=info.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let skip_bench = args.iter().any(|a| a == "--skip-bench");
    // --skip-ntt-checks: the NTT bench alone (profiling a kernel under ncu
    // without the differential suite's launches before it).
    let skip_ntt_checks = args.iter().any(|a| a == "--skip-ntt-checks" || a == "--skip-checks");
    // --skip-checks: the benches alone, every differential suite skipped
    // (a later step or call of the same binary runs them).
    let skip_msm_checks = args.iter().any(|a| a == "--skip-checks");
    let sizes: Vec<u32> = args
        .iter()
        .position(|a| a == "--sizes")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![20, 24, 26, 27]);
    let list = |flag: &str, default: &[u32]| -> Vec<u32> {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
            .unwrap_or_else(|| default.to_vec())
    };
    let msm_g1 = list("--msm-g1", &[20, 24, 26, 27]);
    let msm_g2 = list("--msm-g2", &[20, 24, 25]);
    let msm_porep = list("--msm-porep", &[26]);
    let msm_sweep = list("--msm-sweep", &[]);
    // --msm-copies 20x2,20x3: precomputed copies of the bases timed at every
    // random-scalar size ((window width, copies) each).
    let copies_list = |flag: &str| -> Vec<(u32, u32)> {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .map(|v| {
                v.split(',')
                    .filter_map(|x| x.split_once('x'))
                    .filter_map(|(c, k)| Some((c.parse().ok()?, k.parse().ok()?)))
                    .collect()
            })
            .unwrap_or_default()
    };
    let msm_copies = copies_list("--msm-copies");
    // --h-copies none,20x4 for --only partition: a run per entry, the H MSM
    // over that many precomputed copies (none: over H itself, the default).
    let h_copies: Vec<Option<(u32, u32)>> = match args.iter().position(|a| a == "--h-copies") {
        Some(i) => args
            .get(i + 1)
            .map(|v| {
                v.split(',')
                    .map(|x| x.split_once('x').and_then(|(c, k)| Some((c.parse().ok()?, k.parse().ok()?))))
                    .collect()
            })
            .unwrap_or_default(),
        None => vec![None],
    };
    // --ntt-peer-max 26: ec-gpu-gen's FFT and h path (bellperson's) only up
    // to this size (its h path took 14.6 s at 2^26 on the H200).
    let ntt_peer_max = list("--ntt-peer-max", &[26]).first().copied().unwrap_or(26);
    // --only ntt | msm: one stage's checks and benchmarks.
    let only = args.iter().position(|a| a == "--only").and_then(|i| args.get(i + 1)).cloned();
    let run_ntt = only.as_deref().is_none_or(|o| o == "ntt");
    let run_msm = only.as_deref().is_none_or(|o| o == "msm");
    // --only facade: the tiny real sector, GPU vs CPU proof bytes.
    let run_facade = only.as_deref().is_none_or(|o| o == "facade");
    // --only abc: a, b, c from the matrices on the GPU (--abc-sectors 2k,32g).
    let run_abc = only.as_deref().is_none_or(|o| o == "abc");
    // A comma-separated list of sector sizes (2k, 8m, 512m, 32g, 64g) after
    // `flag`, or `default`'s.
    let sizes_of = |flag: &str, default: &str| -> Vec<RegisteredSealProof> {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .map_or(default, |v| v.as_str())
            .split(',')
            .map(|t| sector_size_or_exit(flag, t))
            .collect()
    };
    let abc_sectors = sizes_of("--abc-sectors", "2k");
    // --only real: the real circuit at full size (--real-sector 32g, --real-partitions 2).
    let run_real = only.as_deref() == Some("real");
    let real_sector = match args
        .iter()
        .position(|a| a == "--real-sector")
        .and_then(|i| args.get(i + 1))
        .map_or("32g", |v| v.as_str())
    {
        "2k" => RegisteredSealProof::StackedDrg2KiBV1_1,
        "8m" => RegisteredSealProof::StackedDrg8MiBV1_1,
        "512m" => RegisteredSealProof::StackedDrg512MiBV1_1,
        "64g" => RegisteredSealProof::StackedDrg64GiBV1_1,
        _ => RegisteredSealProof::StackedDrg32GiBV1_1,
    };
    // --bellperson: `--only real`, `post` and `update` prove partition 0
    // with bellperson too (its CUDA prover in a `bellperson-cuda` build).
    let bellperson = args.iter().any(|a| a == "--bellperson");
    let real = real::RealBench {
        sector: real_sector,
        partitions: list("--real-partitions", &[2]).first().copied().unwrap_or(2) as usize,
        proofs: list("--real-proofs", &[0]).first().copied().unwrap_or(0) as usize,
        concurrency: list("--real-concurrency", &[2, 3]).iter().map(|&c| c as usize).collect(),
        caps: list("--real-vram-caps", &[]).iter().map(|&c| c as usize).collect(),
        cap_partitions: list("--real-cap-partitions", &[]).first().map_or(0, |&n| n as usize),
        cap_variants: args
            .iter()
            .position(|a| a == "--real-cap-variants")
            .and_then(|i| args.get(i + 1))
            .map(|v| v.split(',').map(str::to_string).collect())
            .unwrap_or_default(),
        cap_proofs: list("--real-cap-proofs", &[0]).first().copied().unwrap_or(0) as usize,
        cap_workers: list("--real-cap-workers", &[1, 2]).iter().map(|&w| w as usize).collect(),
        bellperson,
    };
    // --only partition: the 32 GiB-shaped partition bench alone.
    let run_partition = only.as_deref() == Some("partition");
    let partition_scale = list("--partition-scale", &[1]).first().copied().unwrap_or(1) as usize;
    let partitions = list("--partitions", &[2]).first().copied().unwrap_or(2) as usize;
    let proofs = list("--proofs", &[1]).first().copied().unwrap_or(1) as usize;
    let workers: Vec<usize> = list("--workers", &[2]).iter().map(|&w| w as usize).collect();
    let gpus: Vec<usize> = list("--gpus", &[1]).iter().map(|&g| g as usize).collect();
    // --only affine: batched-affine bucket sums vs XYZZ (batch x threads).
    let run_affine = only.as_deref() == Some("affine");
    // --only peers: the shaped circuit side by side with peer-prove's runs.
    let run_peers = only.as_deref() == Some("peers");
    let peer_scale = list("--peer-scale", &[4]).first().copied().unwrap_or(4) as usize;
    let peer_partitions = list("--peer-partitions", &[1]).first().copied().unwrap_or(1) as usize;
    let peer_reps = list("--peer-reps", &[2]).first().copied().unwrap_or(2) as usize;
    let peer_seed = list("--peer-seed", &[7]).first().copied().unwrap_or(7) as u64;
    let peer_dir =
        args.iter().position(|a| a == "--peer-dir").and_then(|i| args.get(i + 1)).map(std::path::PathBuf::from);
    let peer_cap = list("--peer-vram-cap", &[]).first().map(|&g| g as usize);
    // --only registered: registered proof types through verify_seal
    // (--registered 2k,8m; --vram-cap-gib 12 caps the pool).
    let run_registered = only.as_deref() == Some("registered");
    let registered_types = sizes_of("--registered", "2k");
    // --vram-caps 0,40,24,16 (GiB, 0 = none) for --only partition;
    // --vram-cap-gib N for --only registered.
    let vram_caps: Vec<usize> = list("--vram-caps", &[0]).iter().map(|&g| g as usize).collect();
    // --accumulate-blocks 0,3,4 for --only partition: the MSM's bucket
    // accumulation kernel per run (0 = unbounded registers); without the
    // flag, one run with the measured default.
    let accumulate_blocks: Vec<Option<u32>> = match list("--accumulate-blocks", &[]) {
        v if v.is_empty() => vec![None],
        v => v.into_iter().map(Some).collect(),
    };
    let registered_cap = list("--vram-cap-gib", &[]).first().map(|&g| g as usize);
    // --only post: WindowPoSt / WinningPoSt test sectors at full size
    // (--post-sizes 2k,32g; --post-proofs 3 end-to-end proofs each).
    let run_post = only.as_deref() == Some("post");
    let post_sizes: Vec<&str> = args
        .iter()
        .position(|a| a == "--post-sizes")
        .and_then(|i| args.get(i + 1))
        .map_or("32g", |v| v.as_str())
        .split(',')
        .collect();
    // --post-kinds window,winning (default both): one kind per call keeps
    // a 32 GiB run inside a device call's limit.
    let post_kinds: Vec<&str> = args
        .iter()
        .position(|a| a == "--post-kinds")
        .and_then(|i| args.get(i + 1))
        .map_or("window,winning", |v| v.as_str())
        .split(',')
        .collect();
    let post_types: Vec<_> = post::proofs_of(&post_sizes)
        .unwrap_or_else(|e| {
            println!("FAIL: {e}");
            std::process::exit(1)
        })
        .into_iter()
        .filter(|rp| {
            let kind = if rp.typ() == filecoin_proofs_api::PoStType::Winning { "winning" } else { "window" };
            post_kinds.contains(&kind)
        })
        .collect();
    // --proof-dir DIR (--only post, --only update): the witness path's proof
    // of each circuit written as DIR/ours-<window|winning|update>-<size>.proof
    // (for comparison outside the runner; `--bellperson` compares inside it).
    let proof_dir =
        args.iter().position(|a| a == "--proof-dir").and_then(|i| args.get(i + 1)).map(std::path::PathBuf::from);
    // --only update: SnapDeals test updates at full size (--update-sizes
    // 2k,32g; --update-proofs 2 end-to-end proofs each).
    let run_update = only.as_deref() == Some("update");
    let update_sizes: Vec<&str> = args
        .iter()
        .position(|a| a == "--update-sizes")
        .and_then(|i| args.get(i + 1))
        .map_or("32g", |v| v.as_str())
        .split(',')
        .collect();
    let update_types = update::proofs_of(&update_sizes).unwrap_or_else(|e| {
        println!("FAIL: {e}");
        std::process::exit(1)
    });
    let update_proofs = list("--update-proofs", &[2]).first().map_or(2, |&n| n as usize);
    // --only daemon: PoSt through the service in this process (registered
    // 2 KiB verified; WinningPoSt 32 GiB latency alone and under C2 load).
    let run_daemon = only.as_deref() == Some("daemon");
    let daemon_run = daemon::DaemonRun {
        winning: list("--daemon-winning", &[8]).first().map_or(8, |&n| n as usize),
        c2_proofs: list("--daemon-c2", &[4]).first().map_or(4, |&n| n as usize),
        // 1: the urgent lane on (pass 0), 0: off; default both.
        lanes: list("--daemon-urgent-lane", &[1, 0]).into_iter().map(|x| x != 0).collect(),
    };
    let post_proofs = list("--post-proofs", &[3]).first().map_or(3, |&n| n as usize);
    // --only setup: Groth16 test parameters made on the GPU from the
    // matrices of a CC test sector's partition (--setup-sizes 2k,32g), every
    // point compared with the host's up to --setup-full-check (2k), a
    // sample of --setup-samples points per query above it.
    let run_setup = only.as_deref() == Some("setup");
    let setup_run = setup::SetupRun {
        sizes: sizes_of("--setup-sizes", "2k,32g"),
        full_check_max: sizes_of("--setup-full-check", "2k")
            .iter()
            .map(|rp| u64::from(rp.sector_size()))
            .max()
            .unwrap_or(0),
        samples: list("--setup-samples", &[256]).first().map_or(256, |&n| n as usize),
    };

    let devices = match c2_cuda::devices() {
        Ok(d) => d,
        Err(e) => {
            println!("SKIP: {e} -- no GPU tests ran");
            std::process::exit(2);
        }
    };
    for d in &devices {
        println!(
            "device {}: {} ({:.1} GiB, sm_{}{})",
            d.ordinal,
            d.name,
            d.total_memory as f64 / (1u64 << 30) as f64,
            d.compute_capability.0,
            d.compute_capability.1
        );
    }
    let gpu: Arc<Gpu> = Gpu::open(0).unwrap_or_else(|e| {
        println!("FAIL opening device 0: {e}");
        std::process::exit(1)
    });
    let ntt = GpuNtt::new(gpu.clone()).unwrap_or_else(|e| {
        println!("FAIL loading kernels: {e}");
        std::process::exit(1)
    });
    let mut report = Report { checks: Vec::new(), bench: Vec::new() };
    // --only field (and the default run): both field backends.
    if only.as_deref().is_none_or(|o| o == "field") {
        if let Err(e) = field::run(gpu.clone(), &mut report, skip_bench) {
            report.check(format!("field checks aborted: {e}"), false);
        }
    }
    if run_msm && !skip_msm_checks {
        if let Err(e) = curve_checks(gpu.clone(), &mut report) {
            report.check(format!("curve checks aborted: {e}"), false);
        }
        if let Err(e) = msm::checks(gpu.clone(), &mut report, quick) {
            report.check(format!("msm checks aborted: {e}"), false);
        }
    }
    let t = Instant::now();
    if run_ntt && !skip_ntt_checks {
        if let Err(e) = differential(&ntt, &mut report, quick) {
            report.check(format!("differential tests aborted: {e}"), false);
        }
        println!("differential tests: {:.1?}", t.elapsed());
    }
    if !skip_bench && run_msm {
        if let Err(e) = msm::bench(gpu.clone(), &mut report, &msm_g1, &msm_g2, &msm_porep, &msm_sweep, &msm_copies) {
            report.check(format!("msm benchmarks aborted: {e}"), false);
        }
    }
    if run_facade {
        if let Err(e) = facade::check(gpu.clone(), &mut report) {
            report.check(format!("facade check aborted: {e}"), false);
        }
    }
    if run_abc {
        if let Err(e) = abc::checks(gpu.clone(), &mut report, &abc_sectors) {
            report.check(format!("abc checks aborted: {e}"), false);
        }
    }
    if run_real {
        if let Err(e) = real::bench(gpu.clone(), &mut report, &real) {
            report.check(format!("real-circuit bench aborted: {e}"), false);
        }
    }
    if run_affine {
        if let Err(e) = msm::affine_sweep(gpu.clone(), &mut report, &msm_g1, &msm_g2) {
            report.check(format!("affine sweep aborted: {e}"), false);
        }
    }
    if run_partition {
        let runs = partition::Runs {
            scale: partition_scale,
            partitions,
            proofs,
            workers: &workers,
            gpus: &gpus,
            caps: &vram_caps,
            accumulate: &accumulate_blocks,
            h_copies: &h_copies,
        };
        if let Err(e) = partition::bench(&mut report, &runs) {
            report.check(format!("partition bench aborted: {e}"), false);
        }
    }
    if run_peers {
        let peer = peers::PeerRun {
            scale: peer_scale,
            partitions: peer_partitions,
            reps: peer_reps,
            seed: peer_seed,
            dir: peer_dir.as_deref(),
            vram_cap_gib: peer_cap,
        };
        if let Err(e) = peers::compare(&mut report, &peer) {
            report.check(format!("peer comparison aborted: {e}"), false);
        }
    }
    if run_post {
        if let Err(e) =
            post::bench(gpu.clone(), &mut report, &post_types, post_proofs, proof_dir.as_deref(), bellperson)
        {
            report.check(format!("PoSt bench aborted: {e}"), false);
        }
    }
    if run_setup {
        if let Err(e) = setup::bench(gpu.clone(), &mut report, &setup_run) {
            report.check(format!("set-up bench aborted: {e}"), false);
        }
    }
    if run_update {
        if let Err(e) =
            update::bench(gpu.clone(), &mut report, &update_types, update_proofs, proof_dir.as_deref(), bellperson)
        {
            report.check(format!("update bench aborted: {e}"), false);
        }
    }
    if run_daemon {
        if let Err(e) = daemon::bench(gpu.clone(), &mut report, &daemon_run) {
            report.check(format!("daemon bench aborted: {e}"), false);
        }
    }
    if run_registered {
        if let Err(e) = registered::check(&mut report, &registered_types, registered_cap) {
            report.check(format!("registered check aborted: {e}"), false);
        }
    }
    if !skip_bench && run_ntt {
        if let Err(e) = bench(&ntt, &sizes, ntt_peer_max, &mut report) {
            report.check(format!("benchmarks aborted: {e}"), false);
        }
    }
    let failed: Vec<_> = report.checks.iter().filter(|(_, ok)| !ok).collect();
    println!("\n==== summary ====");
    println!("{} checks, {} failed", report.checks.len(), failed.len());
    for (name, _) in &failed {
        println!("  FAILED: {name}");
    }
    for line in &report.bench {
        println!("{line}");
    }
    println!("{} passed, {} failed", report.checks.len() - failed.len(), failed.len());
    std::process::exit(if failed.is_empty() { 0 } else { 1 });
}
