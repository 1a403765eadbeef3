//! GPU MSM: differential checks against blst (CpuMsm) and the benchmark
//! against ec-gpu-gen's multiexp (the kernel bellperson 0.27's GPU multiexp
//! runs).

use std::sync::Arc;
use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use c2_cuda::{DeviceBuffer, Gpu, PinnedRange, PinnedShared};
use c2_msm::gpu::{
    BatchScalars, BucketSum, DeviceScalars, GpuCurve, GpuMsm, GpuMsmConfig, MsmScalars, ScratchShape, Sort, G1, G2,
};
use c2_msm::{CpuMsm, Density, Msm};
use c2_synth::CompactWitness;
use ff::{Field, PrimeField};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::{median, random_vec, Report};

/// Scalar mixes the checks run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mix {
    Random,
    Zero,
    One,
    /// r - 1 everywhere.
    MinusOne,
    /// PoRep-like: 51% zero, 47% one, 2% random (ARCHITECTURE.md, "Facts we rely on").
    Porep,
    /// 2..=9 only: a few huge buckets (segment fix-up path).
    Small,
}

/// Batch of the batched-affine bucket sums (chains in device memory) the
/// bench compares with XYZZ on 2^15 threads: the best of 128 / 256 / 512
/// measured (H200, session 21: G1 2^27 1460.7 / 1282.8 / 1182.6 ms of
/// accumulation against XYZZ's 929.5).
const AFFINE_BATCHES: [u32; 1] = [512];
/// (batch, min_threads) of the affine pair passes the bench times.
const PAIR_BATCHES: [(u32, usize); 3] = [(256, 1 << 15), (512, 1 << 15), (128, 1 << 16)];

const MIXES: [Mix; 6] = [Mix::Random, Mix::Zero, Mix::One, Mix::MinusOne, Mix::Porep, Mix::Small];

fn scalars(n: usize, mix: Mix, salt: u64) -> Vec<Scalar> {
    match mix {
        Mix::Random => random_vec(n, salt),
        Mix::Zero => vec![Scalar::ZERO; n],
        Mix::One => vec![Scalar::ONE; n],
        Mix::MinusOne => vec![-Scalar::ONE; n],
        Mix::Porep | Mix::Small => {
            let r = random_vec(n, salt);
            r.par_iter()
                .enumerate()
                .map(|(i, x)| {
                    let u = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(salt) >> 40;
                    match mix {
                        Mix::Small => Scalar::from(2 + u % 8),
                        _ => match u % 100 {
                            0..=50 => Scalar::ZERO,
                            51..=97 => Scalar::ONE,
                            _ => *x,
                        },
                    }
                })
                .collect()
        }
    }
}

/// n pseudo-random points, fast: each chunk walks P, P + Q, P + 2Q, ... from
/// a random P with a random step Q, then normalises in one batch. With
/// `infinity`, every 997th point is the point at infinity.
fn points<P>(n: usize, seed: u64, infinity: bool) -> Vec<P::AffineRepr>
where
    P: Group + Curve + Send + Sync,
    P::AffineRepr: PrimeCurveAffine + Send + Sync,
{
    let mut out = c2_testkit::synthetic::random_points::<P>(n, seed);
    if infinity {
        for i in (0..n).step_by(997) {
            out[i] = P::AffineRepr::identity();
        }
    }
    out
}

fn random_mask(n: usize, density_pct: u64, seed: u64) -> Density {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    Density::from_bools((0..n).map(|_| rng.gen_range(0..100) < density_pct))
}

trait Oracle: GpuCurve {
    fn cpu(bases: &[Self::Affine], s: &[Scalar], mask: Option<&Density>) -> Self::Projective;
    /// sppark's MSM where the baseline has one (G1, feature `sppark`).
    fn sppark(bases: &[Self::Affine], s: &[Scalar]) -> Option<SpparkRun<Self::Projective>>;
    fn gpu(
        m: &GpuMsm,
        bases: &[Self::Affine],
        s: &[Scalar],
        mask: Option<&Density>,
    ) -> Result<Self::Projective, String>;
}

impl Oracle for G1 {
    fn cpu(bases: &[G1Affine], s: &[Scalar], mask: Option<&Density>) -> G1Projective {
        CpuMsm.msm_g1(bases, s, mask).expect("cpu msm")
    }
    fn sppark(bases: &[G1Affine], s: &[Scalar]) -> Option<SpparkRun<G1Projective>> {
        #[cfg(feature = "sppark")]
        return Some(sppark_g1(bases, s));
        #[cfg(not(feature = "sppark"))]
        return None;
    }
    fn gpu(m: &GpuMsm, bases: &[G1Affine], s: &[Scalar], mask: Option<&Density>) -> Result<G1Projective, String> {
        m.msm_g1(bases, s, mask).map_err(|e| e.to_string())
    }
}

impl Oracle for G2 {
    fn cpu(bases: &[G2Affine], s: &[Scalar], mask: Option<&Density>) -> G2Projective {
        CpuMsm.msm_g2(bases, s, mask).expect("cpu msm")
    }
    fn sppark(_: &[G2Affine], _: &[Scalar]) -> Option<SpparkRun<G2Projective>> {
        None // the baseline wraps sppark's G1 only
    }
    fn gpu(m: &GpuMsm, bases: &[G2Affine], s: &[Scalar], mask: Option<&Density>) -> Result<G2Projective, String> {
        m.msm_g2(bases, s, mask).map_err(|e| e.to_string())
    }
}

fn diff_case<C: Oracle>(
    m: &GpuMsm,
    r: &mut Report,
    tag: &str,
    label: &str,
    bases: &[C::Affine],
    s: &[Scalar],
    mask: Option<&Density>,
) -> Result<(), String> {
    let want = C::cpu(bases, s, mask);
    let got = C::gpu(m, bases, s, mask)?;
    r.check(format!("msm {}{tag} {label}", C::PREFIX), got == want);
    Ok(())
}

/// The differential suite with `base` as every instance's configuration;
/// `tag` goes into the check names.
fn curve_suite<C: Oracle>(
    gpu: &Arc<Gpu>,
    r: &mut Report,
    quick: bool,
    seed: u64,
    base: &GpuMsmConfig,
    tag: &str,
) -> Result<(), String>
where
    C::Projective: Send + Sync,
    C::Affine: Send + Sync,
{
    let m = GpuMsm::with_config(gpu.clone(), base.clone()).map_err(|e| e.to_string())?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let big = if quick { 1 << 16 } else { 1 << 20 };
    let mut sizes = vec![1usize, 2, 3, 255, 1000, (1 << 10) + 1, 1 << 16, big];
    sizes.push(rng.gen_range(1..300_000));
    sizes.push(rng.gen_range(1..3_000));
    sizes.dedup();
    let all = points::<C::Projective>(*sizes.iter().max().unwrap_or(&1), seed, true);
    for &n in &sizes {
        let bases = &all[..n];
        for (k, &mix) in MIXES.iter().enumerate() {
            if n == big && C::PREFIX == "g2" && !matches!(mix, Mix::Random | Mix::Porep) {
                continue; // keep G2 at 2^20 to the mixes that matter
            }
            let s = scalars(n, mix, seed ^ (n as u64) ^ k as u64);
            diff_case::<C>(&m, r, tag, &format!("n={n} {mix:?}"), bases, &s, None)?;
        }
    }
    // Density masks: 25% (B) and 99.7%-like (A), PoRep mix; bases = set bits.
    for &n in &[1000usize, 1 << 16, big] {
        for pct in [25u64, 99] {
            let mask = random_mask(n, pct, seed ^ n as u64 ^ pct);
            let s = scalars(n, Mix::Porep, seed ^ pct);
            diff_case::<C>(
                &m,
                r,
                tag,
                &format!("n={n} mask {pct}% ({} set) porep", mask.count_ones()),
                &all[..mask.count_ones()],
                &s,
                Some(&mask),
            )?;
            let s = scalars(n, Mix::Random, seed ^ pct ^ 7);
            diff_case::<C>(
                &m,
                r,
                tag,
                &format!("n={n} mask {pct}% random"),
                &all[..mask.count_ones()],
                &s,
                Some(&mask),
            )?;
        }
    }
    // All-zero and all-one masks.
    let n = 5000;
    let s = scalars(n, Mix::Random, 11);
    diff_case::<C>(&m, r, tag, "n=5000 empty mask", &all[..0], &s, Some(&Density::with_len(n)))?;
    diff_case::<C>(&m, r, tag, "n=5000 full mask", &all[..n], &s, Some(&Density::full(n)))?;
    // Bases all infinity; all equal (every bucket doubles).
    let inf = vec![C::Affine::identity(); n];
    diff_case::<C>(&m, r, tag, "n=5000 all bases infinity", &inf, &s, None)?;
    let same = vec![all[1]; n];
    diff_case::<C>(&m, r, tag, "n=5000 all bases equal", &same, &s, None)?;
    diff_case::<C>(&m, r, tag, "n=5000 all bases equal, small scalars", &same, &scalars(n, Mix::Small, 5), None)?;

    // Every window width, and multi-pass (tiny budget), on one input.
    let n = 20_000;
    let s = scalars(n, Mix::Random, 13);
    let want = C::cpu(&all[..n], &s, None);
    for c in [2u32, 3, 5, 8, 11, 13, 15, 16, 18, 20, 22] {
        let cfg = GpuMsmConfig { window_bits: Some(c), ..base.clone() };
        let mc = GpuMsm::with_config(gpu.clone(), cfg).map_err(|e| e.to_string())?;
        let got = C::gpu(&mc, &all[..n], &s, None)?;
        r.check(format!("msm {}{tag} n={n} window c={c}", C::PREFIX), got == want);
    }
    // A budget of 1.1 windows' scratch (12-bit windows, 2^12 target
    // threads; the shape of this suite's bucket sum): one window per pass
    // (a second window adds its entries and buckets, > 10 %).
    let (xyzz, threads) = (std::mem::size_of::<C::Xyzz>(), 1 << 12);
    let sum = base.bucket_sum.unwrap_or(BucketSum::measured_default(xyzz, n));
    let window = ScratchShape::for_bucket_sum(sum, xyzz, threads).with_sort(base.sort).window_bytes(n, 12);
    let cfg = GpuMsmConfig {
        window_bits: Some(12),
        memory_budget: Some(window * 11 / 10),
        target_threads: threads,
        ..base.clone()
    };
    let mc = GpuMsm::with_config(gpu.clone(), cfg).map_err(|e| e.to_string())?;
    let got = C::gpu(&mc, &all[..n], &s, None)?;
    r.check(
        format!(
            "msm {}{tag} n={n} multi-pass ({:.1} MB budget: one window per pass)",
            C::PREFIX,
            window as f64 * 1.1e-6
        ),
        got == want,
    );
    // Few threads: long segments, many crossing buckets.
    let cfg = GpuMsmConfig { target_threads: 64, ..base.clone() };
    let mc = GpuMsm::with_config(gpu.clone(), cfg).map_err(|e| e.to_string())?;
    let got = C::gpu(&mc, &all[..n], &s, None)?;
    r.check(format!("msm {}{tag} n={n} 64 target threads", C::PREFIX), got == want);
    // Streamed bases: chunks of 4099, with and without a mask.
    let cfg = GpuMsmConfig { stream_chunk: 4099, ..base.clone() };
    let mc = GpuMsm::with_config(gpu.clone(), cfg).map_err(|e| e.to_string())?;
    let got = C::gpu(&mc, &all[..n], &s, None)?;
    r.check(format!("msm {}{tag} n={n} streamed in chunks of 4099", C::PREFIX), got == want);
    let mask = random_mask(n, 40, 17);
    let sp = scalars(n, Mix::Porep, 19);
    let want_m = C::cpu(&all[..mask.count_ones()], &sp, Some(&mask));
    let got = C::gpu(&mc, &all[..mask.count_ones()], &sp, Some(&mask))?;
    r.check(format!("msm {}{tag} n={n} streamed + mask 40% porep", C::PREFIX), got == want_m);
    // Slots sized in bytes (a device plan's): G1 chunks of 4099 bases, G2
    // chunks of 2049; scratch given back after each MSM.
    let cfg = GpuMsmConfig { stream_slot_bytes: Some(4099 * 96), release_scratch: true, ..base.clone() };
    let ms = GpuMsm::with_config(gpu.clone(), cfg).map_err(|e| e.to_string())?;
    let got = C::gpu(&ms, &all[..mask.count_ones()], &sp, Some(&mask))?;
    r.check(format!("msm {}{tag} n={n} streamed through 393 KB slots + mask", C::PREFIX), got == want_m);
    // Page-locked bases, copied straight from the registered vector, from
    // a first base on (as the prover's A and B aux parts stream).
    let first = 7;
    let mut with_first = vec![C::Affine::identity(); first];
    with_first.extend_from_slice(&all[..mask.count_ones()]);
    let pinned = PinnedShared::new(gpu, Arc::new(with_first)).map_err(|e| e.to_string())?;
    let d_sp_mont = ms.upload_scalars(&sp).map_err(|e| e.to_string())?;
    let d_mask_s = ms.upload_density(&mask).map_err(|e| e.to_string())?;
    let got = ms
        .msm_pinned_bases::<C>(&pinned, first, DeviceScalars::montgomery(&d_sp_mont), Some(&d_mask_s))
        .map_err(|e| e.to_string())?;
    r.check(format!("msm {}{tag} n={n} page-locked bases streamed + mask + first base 7", C::PREFIX), got == want_m);
    drop(pinned);
    batch_suite::<C>(gpu, r, base, tag, &all)?;
    // Runs whose buckets add into one set of totals, with passes of one
    // window each (1.1 windows' budget), and chunks with no full-width
    // scalars (all zero / all one) before and between the others.
    let mut sz = s.clone();
    for (i, x) in sz.iter_mut().enumerate() {
        match i {
            0..4099 => *x = Scalar::ZERO,
            4099..8198 => *x = Scalar::ONE,
            12_297..16_396 => *x = if i % 2 == 0 { Scalar::ZERO } else { Scalar::ONE },
            _ => {}
        }
    }
    let want_z = C::cpu(&all[..n], &sz, None);
    let cfg = GpuMsmConfig {
        stream_chunk: 4099,
        window_bits: Some(12),
        memory_budget: Some(window * 11 / 10),
        target_threads: threads,
        ..base.clone()
    };
    let mp = GpuMsm::with_config(gpu.clone(), cfg).map_err(|e| e.to_string())?;
    let got = C::gpu(&mp, &all[..n], &sz, None)?;
    r.check(
        format!("msm {}{tag} n={n} streamed chunks of 4099 (zero / one chunks) + one window per pass", C::PREFIX),
        got == want_z,
    );
    let got = C::gpu(&mc, &all[..n], &sz, None)?;
    r.check(format!("msm {}{tag} n={n} streamed chunks of 4099, zero / one chunks", C::PREFIX), got == want_z);

    // Device API with canonical scalars.
    let canon: Vec<[u64; 4]> = s.iter().map(canonical).collect();
    let mut d_s = gpu.alloc::<[u64; 4]>(n).map_err(|e| e.to_string())?;
    let stream = gpu.stream().map_err(|e| e.to_string())?;
    d_s.upload(0, &canon, &stream).map_err(|e| e.to_string())?;
    let mut d_b = gpu.alloc::<C::Affine>(n).map_err(|e| e.to_string())?;
    d_b.upload(0, &all[..n], &stream).map_err(|e| e.to_string())?;
    stream.synchronize().map_err(|e| e.to_string())?;
    let got = m.msm_device::<C>(&d_b, DeviceScalars::canonical(&d_s), None).map_err(|e| e.to_string())?;
    r.check(format!("msm {}{tag} n={n} device-resident, canonical scalars", C::PREFIX), got == want);
    // Resident bases in runs of 4099 (a bounded split, as a small device's
    // plan sets it), scratch given back after every MSM; with a mask and
    // from a first base, as the prover's A and B aux parts run.
    let cfg = GpuMsmConfig { max_run: Some(4099), release_scratch: true, ..base.clone() };
    let mr = GpuMsm::with_config(gpu.clone(), cfg).map_err(|e| e.to_string())?;
    let got = mr.msm_device::<C>(&d_b, DeviceScalars::canonical(&d_s), None).map_err(|e| e.to_string())?;
    r.check(format!("msm {}{tag} n={n} device-resident in runs of 4099", C::PREFIX), got == want);
    let d_sp = upload_canonical(gpu, &sp)?;
    let first = 7;
    let mut d_bm = gpu.alloc::<C::Affine>(first + mask.count_ones()).map_err(|e| e.to_string())?;
    d_bm.upload(first, &all[..mask.count_ones()], &stream).map_err(|e| e.to_string())?;
    stream.synchronize().map_err(|e| e.to_string())?;
    let d_mask = mr.upload_density(&mask).map_err(|e| e.to_string())?;
    let got = mr
        .msm_device_from::<C>(&d_bm, first, DeviceScalars::canonical(&d_sp), Some(&d_mask))
        .map_err(|e| e.to_string())?;
    r.check(format!("msm {}{tag} n={n} device-resident runs of 4099 + mask + first base 7", C::PREFIX), got == want_m);

    // Precomputed copies of the bases: every copy count from none to one
    // window per copy, widths across both sorts (c > 20: global counters),
    // runs of 4099 into shared totals, a pass per window, masks, and the
    // mixes with huge buckets; each against the CPU over the plain bases.
    let t_copies = Instant::now();
    for (c, k) in
        [(16u32, 1u32), (16, 2), (16, 3), (16, 16), (12, 4), (8, 5), (5, 7), (3, 86), (20, 2), (20, 3), (22, 3)]
    {
        let pre = m.precompute::<C>(&d_b, c, k).map_err(|e| e.to_string())?;
        let got = m.msm_precomputed::<C>(&pre, DeviceScalars::canonical(&d_s), None).map_err(|e| e.to_string())?;
        r.check(format!("msm {}{tag} n={n} precomputed c={c} x{k}", C::PREFIX), got == want);
    }
    let pre = m.precompute::<C>(&d_b, 13, 4).map_err(|e| e.to_string())?;
    let got = mr.msm_precomputed::<C>(&pre, DeviceScalars::canonical(&d_s), None).map_err(|e| e.to_string())?;
    r.check(format!("msm {}{tag} n={n} precomputed c=13 x4 in runs of 4099", C::PREFIX), got == want);
    // One window of buckets per pass (1.1 windows' scratch of this shape).
    let window =
        ScratchShape::for_bucket_sum(sum, xyzz, threads).with_sort(base.sort).with_copies(4).window_bytes(n, 13);
    let cfg = GpuMsmConfig { memory_budget: Some(window * 11 / 10), target_threads: threads, ..base.clone() };
    let m1 = GpuMsm::with_config(gpu.clone(), cfg).map_err(|e| e.to_string())?;
    let got = m1.msm_precomputed::<C>(&pre, DeviceScalars::canonical(&d_s), None).map_err(|e| e.to_string())?;
    r.check(format!("msm {}{tag} n={n} precomputed c=13 x4, one window per pass", C::PREFIX), got == want);
    let d_sz = upload_canonical(gpu, &sz)?;
    let got = mr.msm_precomputed::<C>(&pre, DeviceScalars::canonical(&d_sz), None).map_err(|e| e.to_string())?;
    r.check(format!("msm {}{tag} n={n} precomputed c=13 x4, runs of 4099, zero / one runs", C::PREFIX), got == want_z);
    // The mask's bases without the 7 in front of them.
    let mut d_bm_aux = gpu.alloc::<C::Affine>(mask.count_ones()).map_err(|e| e.to_string())?;
    d_bm_aux.copy_range_from_async(0, &d_bm, first, mask.count_ones(), &stream).map_err(|e| e.to_string())?;
    stream.synchronize().map_err(|e| e.to_string())?;
    let pre_m = m.precompute::<C>(&d_bm_aux, 16, 3).map_err(|e| e.to_string())?;
    let got =
        m.msm_precomputed::<C>(&pre_m, DeviceScalars::canonical(&d_sp), Some(&d_mask)).map_err(|e| e.to_string())?;
    r.check(format!("msm {}{tag} n={n} precomputed c=16 x3 + mask 40% porep", C::PREFIX), got == want_m);
    for (label, bases, mix) in [
        ("all bases infinity", &inf, Mix::Random),
        ("all bases equal", &same, Mix::Random),
        ("all bases equal, small scalars", &same, Mix::Small),
        ("porep mix", &all[..5000].to_vec(), Mix::Porep),
        ("r - 1", &all[..5000].to_vec(), Mix::MinusOne),
    ] {
        let sc = scalars(bases.len(), mix, 23);
        let want = C::cpu(bases, &sc, None);
        let mut d = gpu.alloc::<C::Affine>(bases.len()).map_err(|e| e.to_string())?;
        d.upload(0, bases, &stream).map_err(|e| e.to_string())?;
        stream.synchronize().map_err(|e| e.to_string())?;
        let d_c = upload_canonical(gpu, &sc)?;
        for (c, k) in [(16u32, 3u32), (10, 9)] {
            let pre = m.precompute::<C>(&d, c, k).map_err(|e| e.to_string())?;
            let got = m.msm_precomputed::<C>(&pre, DeviceScalars::canonical(&d_c), None).map_err(|e| e.to_string())?;
            r.check(format!("msm {}{tag} n=5000 precomputed c={c} x{k} {label}", C::PREFIX), got == want);
        }
    }
    // Requests the copies cannot serve are typed errors.
    for (c, k) in [(16u32, 0u32), (16, 17), (25, 2), (1, 2)] {
        let err = m.precompute::<C>(&d_b, c, k);
        r.check(
            format!("msm {}{tag} precompute c={c} x{k} refused", C::PREFIX),
            matches!(err, Err(c2_msm::MsmError::BadCopies { .. })),
        );
    }
    println!("msm {}{tag} precomputed-copies checks: {:.1?}", C::PREFIX, t_copies.elapsed());
    Ok(())
}

/// Batched passes over streamed bases (issue 42): one pass of the bases
/// serves members whose scalars are field elements on the device (with and
/// without a mask), compact witnesses on the device (PoRep mix with a mask,
/// all zero, all one, all r - 1), scalars in host memory (shorter than the
/// bases, r - 1 among them) and an empty vector; chunks of 4099 bases, so
/// every member's state crosses chunk borders. Each member against the
/// CPU's MSM of its own scalars; then page-locked bases from a first base,
/// and slots sized in bytes with scratch given back.
fn batch_suite<C: Oracle>(
    gpu: &Arc<Gpu>,
    r: &mut Report,
    base: &GpuMsmConfig,
    tag: &str,
    all: &[C::Affine],
) -> Result<(), String> {
    let e = |e: c2_msm::MsmError| e.to_string();
    let n = 20_000.min(all.len());
    let mb = GpuMsm::with_config(gpu.clone(), GpuMsmConfig { stream_chunk: 4099, ..base.clone() }).map_err(e)?;
    let mask = random_mask(n, 40, 29);
    let set = mask.count_ones();
    let full = scalars(n, Mix::Random, 31);
    let masked = scalars(n, Mix::Random, 33);
    let porep = scalars(n, Mix::Porep, 37);
    let mut host = scalars(n - 5000, Mix::Porep, 41);
    for x in host.iter_mut().step_by(7) {
        *x = -Scalar::ONE;
    }
    let compact_mixes = [Mix::Porep, Mix::Zero, Mix::One, Mix::MinusOne];
    let compact_scalars: Vec<Vec<Scalar>> =
        compact_mixes.iter().enumerate().map(|(i, &mix)| scalars(n, mix, 43 + i as u64)).collect();
    let d_full = mb.upload_scalars(&full).map_err(e)?;
    let d_masked = mb.upload_scalars(&masked).map_err(e)?;
    let d_mask = mb.upload_density(&mask).map_err(e)?;
    let c_porep = mb.upload_compact(&CompactWitness::from_scalars(&porep)).map_err(e)?;
    let compacts = compact_scalars
        .iter()
        .map(|v| mb.upload_compact(&CompactWitness::from_scalars(v)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(e)?;
    let mut members = vec![
        ("field elements", BatchScalars::Device(DeviceScalars::montgomery(&d_full).into(), None)),
        ("field elements + mask 40%", BatchScalars::Device(DeviceScalars::montgomery(&d_masked).into(), Some(&d_mask))),
        ("compact porep + mask 40%", BatchScalars::Device(MsmScalars::Compact(&c_porep), Some(&d_mask))),
        ("host, 15000 of 20000, r - 1 every 7th", BatchScalars::Host(&host)),
        ("host, empty", BatchScalars::Host(&[])),
    ];
    let mut want = vec![
        C::cpu(&all[..n], &full, None),
        C::cpu(&all[..set], &masked, Some(&mask)),
        C::cpu(&all[..set], &porep, Some(&mask)),
        C::cpu(&all[..host.len()], &host, None),
        C::Projective::identity(),
    ];
    let labels = ["compact porep", "compact all zero", "compact all one", "compact all r - 1"];
    for ((label, c), v) in labels.iter().zip(&compacts).zip(&compact_scalars) {
        members.push((label, BatchScalars::Device(MsmScalars::Compact(c), None)));
        want.push(C::cpu(&all[..n], v, None));
    }
    let batch: Vec<BatchScalars<'_>> = members.iter().map(|(_, m)| *m).collect();
    let got = mb.msm_batch_host_bases::<C>(&all[..n], &batch, None).map_err(e)?;
    for (i, (label, _)) in members.iter().enumerate() {
        r.check(
            format!("msm {}{tag} batch of {} in chunks of 4099: {label}", C::PREFIX, batch.len()),
            got.get(i) == Some(&want[i]),
        );
    }
    // Bases that fit one chunk (a batch's public-input parts): every
    // member's single run leaves its windows in the shared finals, so each
    // must be collected before the next member runs.
    let one = 3000;
    let c_one = mb.upload_compact(&CompactWitness::from_scalars(&porep[..one])).map_err(e)?;
    let small = [
        BatchScalars::Device(DeviceScalars::montgomery(&d_full).prefix(one).into(), None),
        BatchScalars::Device(MsmScalars::Compact(&c_one), None),
        BatchScalars::Host(&host[..one]),
    ];
    let got = mb.msm_batch_host_bases::<C>(&all[..one], &small, None).map_err(e)?;
    let want_small = [
        C::cpu(&all[..one], &full[..one], None),
        C::cpu(&all[..one], &porep[..one], None),
        C::cpu(&all[..one], &host[..one], None),
    ];
    r.check(
        format!("msm {}{tag} batch of 3 over 3000 bases (one chunk): each member its own sum", C::PREFIX),
        got.len() == 3 && got.iter().zip(&want_small).all(|(g, w)| g == w),
    );
    // Page-locked bases from base 7 on, slots sized in bytes (G1 chunks of
    // 4099 bases), scratch given back after the MSM: two and three members.
    let first = 7;
    let mut with_first = vec![C::Affine::identity(); first];
    with_first.extend_from_slice(&all[..n]);
    let pinned = PinnedShared::new(gpu, Arc::new(with_first)).map_err(|e| e.to_string())?;
    let cfg = GpuMsmConfig { stream_slot_bytes: Some(4099 * 96), release_scratch: true, ..base.clone() };
    let ms = GpuMsm::with_config(gpu.clone(), cfg).map_err(e)?;
    // The three-member batch's own state (ones, totals, host scalar
    // chunks) in memory the caller lends, given back on return (a GPU
    // worker lends its vectors arena).
    let lent = c2_cuda::DeviceMemory::driver(gpu.clone());
    // The three-member batch's host scalars page-locked (copied by the DMA
    // engine, as a GPU worker's batch members' H).
    let mut host_pinned = c2_cuda::PinnedBuffer::<Scalar>::new(gpu, host.len()).map_err(|e| e.to_string())?;
    host_pinned.as_mut_slice().copy_from_slice(&host);
    for k in [2usize, 3] {
        let pick = [2usize, 3, 0];
        let mut batch: Vec<BatchScalars<'_>> = pick[..k].iter().map(|&i| members[i].1).collect();
        if k == 3 {
            batch[1] = BatchScalars::Pinned(host_pinned.as_slice());
        }
        let state = (k == 3).then_some(&lent);
        let got = ms.msm_batch_pinned_bases::<C>(&pinned, first, &batch, state).map_err(e)?;
        r.check(
            format!(
                "msm {}{tag} batch of {k}, page-locked bases from base 7, 393 KB slots{}",
                C::PREFIX,
                if state.is_some() { ", page-locked host scalars, members' state in lent memory" } else { "" }
            ),
            pick[..k].iter().enumerate().all(|(j, &i)| got.get(j) == Some(&want[i])),
        );
    }
    // A compact witness over resident bases (a batch's resident queries),
    // from base 7 on, masked and not.
    let mut d_bases = gpu.alloc::<C::Affine>(first + n).map_err(|e| e.to_string())?;
    let stream = gpu.stream().map_err(|e| e.to_string())?;
    d_bases.upload(0, pinned.as_slice(), &stream).map_err(|e| e.to_string())?;
    let masked_resident = mb.msm_device_from::<C>(&d_bases, first, &c_porep, Some(&d_mask)).map_err(e)?;
    r.check(
        format!("msm {}{tag} resident bases from 7, compact porep + mask 40%", C::PREFIX),
        masked_resident == want[2],
    );
    let whole = mb.msm_device_from::<C>(&d_bases, first, &compacts[3], None).map_err(e)?;
    r.check(format!("msm {}{tag} resident bases from 7, compact all r - 1", C::PREFIX), whole == want[8]);
    // A batch of one equals the single MSM's result (the same code path).
    let single = mb.msm_host_bases::<C>(&all[..n], DeviceScalars::montgomery(&d_masked), Some(&d_mask)).map_err(e)?;
    r.check(format!("msm {}{tag} single streamed MSM == its batch member", C::PREFIX), single == want[1]);
    Ok(())
}

/// `s` in canonical form on the device (uploaded and waited for).
fn upload_canonical(gpu: &Arc<Gpu>, s: &[Scalar]) -> Result<DeviceBuffer<[u64; 4]>, String> {
    let canon: Vec<[u64; 4]> = s.iter().map(canonical).collect();
    let mut d = gpu.alloc::<[u64; 4]>(s.len()).map_err(|e| e.to_string())?;
    let stream = gpu.stream().map_err(|e| e.to_string())?;
    d.upload(0, &canon, &stream).map_err(|e| e.to_string())?;
    stream.synchronize().map_err(|e| e.to_string())?;
    Ok(d)
}

fn canonical(x: &Scalar) -> [u64; 4] {
    let b = x.to_repr();
    let b = b.as_ref();
    std::array::from_fn(|i| u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().expect("8 bytes")))
}

/// All MSM differential checks.
pub fn checks(gpu: Arc<Gpu>, r: &mut Report, quick: bool) -> Result<(), String> {
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(5);
    println!("msm checks: seed {seed}");
    let t = Instant::now();
    // Every check once per bucket accumulation kernel: XYZZ (the measured
    // default, unbounded, held to 3 and 4 blocks per SM), and batched affine
    // (a small batch, so chains are many and short and cross buckets often).
    let xyzz = GpuMsmConfig { bucket_sum: Some(BucketSum::Xyzz), ..Default::default() };
    let xyzz_wide = GpuMsmConfig { accumulate_blocks: Some(0), ..xyzz.clone() };
    let xyzz3 = GpuMsmConfig { accumulate_blocks: Some(3), ..xyzz.clone() };
    let xyzz4 = GpuMsmConfig { accumulate_blocks: Some(4), ..xyzz.clone() };
    let affine = GpuMsmConfig {
        bucket_sum: Some(BucketSum::BatchedAffine { batch: 8, threads: 1 << 17 }),
        ..Default::default()
    };
    // Affine pair passes: small batches and every pass down to one point
    // per bucket (each pair case: doubling, cancelling, infinity, odd
    // lists), and the bench's shape (passes while 2^10 threads stay busy).
    let pairs =
        GpuMsmConfig { bucket_sum: Some(BucketSum::AffinePairs { batch: 4, min_threads: 1 }), ..Default::default() };
    let pairs_big = GpuMsmConfig {
        bucket_sum: Some(BucketSum::AffinePairs { batch: 256, min_threads: 1 << 10 }),
        ..Default::default()
    };
    // The sort by global counters (the default sorts in two levels), and
    // the two-level placement at two blocks per SM (a smaller tile).
    let global_sort = GpuMsmConfig { sort: Sort::GlobalCounters, ..xyzz.clone() };
    let place2 = GpuMsmConfig { sort_place_blocks: 2, ..xyzz.clone() };
    for (tag, base) in [
        ("", &xyzz),
        (" inl2", &xyzz_wide),
        (" inl3", &xyzz3),
        (" inl4", &xyzz4),
        (" affine", &affine),
        (" pairs", &pairs),
        (" pairs256", &pairs_big),
        (" global-sort", &global_sort),
        (" place2", &place2),
    ] {
        curve_suite::<G1>(&gpu, r, quick, seed, base, tag)?;
        println!("msm G1{tag} checks: {:.1?}", t.elapsed());
        curve_suite::<G2>(&gpu, r, quick, seed ^ 1, base, tag)?;
        println!("msm G2{tag} checks: {:.1?}", t.elapsed());
    }
    Ok(())
}

type EcMsm<G> = ec_gpu_gen::multiexp::MultiexpKernel<'static, G>;

fn ec_msm<G: PrimeCurveAffine + ec_gpu::GpuName>() -> Result<EcMsm<G>, String> {
    use ec_gpu_gen::rust_gpu_tools::Device;
    let devices = Device::all();
    let device = devices.first().ok_or("ec-gpu-gen sees no device")?;
    let program = ec_gpu_gen::program!(device).map_err(|e| format!("ec-gpu-gen program: {e}"))?;
    EcMsm::<G>::create(vec![program], &[device]).map_err(|e| e.to_string())
}

/// Runs an MSM variant twice (the first run sizes the instance's scratch),
/// records a failed check named `check` if a result differs from `want`,
/// and returns the second run's milliseconds.
fn time_twice<P: PartialEq>(
    r: &mut Report,
    check: String,
    want: &P,
    mut f: impl FnMut() -> Result<P, c2_msm::MsmError>,
) -> Result<f64, String> {
    let mut ms = 0.0;
    for _ in 0..2 {
        let start = Instant::now();
        let p = f().map_err(|x| x.to_string())?;
        ms = start.elapsed().as_secs_f64() * 1e3;
        if p != *want {
            r.check(check.clone(), false);
        }
    }
    Ok(ms)
}

/// Copies of a pool of distinct points up to n (timing does not depend on
/// distinctness; generating 2^27 distinct points would dominate the run).
fn tiled<A: Copy + Send + Sync>(pool: &[A], n: usize) -> Vec<A> {
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        let k = (n - v.len()).min(pool.len());
        v.extend_from_slice(&pool[..k]);
    }
    v
}

fn bench_curve<C: Oracle>(
    gpu: &Arc<Gpu>,
    r: &mut Report,
    log_sizes: &[u32],
    mix: Mix,
    with_ec: bool,
    sweep: &[u32],
    copies: &[(u32, u32)],
) -> Result<(), String>
where
    C::Affine: ec_gpu::GpuName + PrimeCurveAffine<Scalar = Scalar> + Send + Sync,
    C::Projective: Send + Sync,
{
    let e = |x: c2_cuda::GpuError| x.to_string();
    let m = GpuMsm::new(gpu.clone()).map_err(|x| x.to_string())?;
    let mut ec = if with_ec { Some(ec_msm::<C::Affine>()?) } else { None };
    let pool_n = 1usize << 22;
    // No infinity among the bench bases: ec-gpu-gen's kernel reads blst's
    // (0, 0) infinity encoding as an ordinary point.
    let pool = points::<C::Projective>(pool_n.min(1 << log_sizes.iter().max().copied().unwrap_or(20)), 99, false);
    let stream = gpu.stream().map_err(e)?;
    let (t0, t1) = (gpu.event().map_err(e)?, gpu.event().map_err(e)?);
    for &log_n in log_sizes {
        let n = 1usize << log_n;
        let mut bases = tiled(&pool, n);
        let mut s = scalars(n, mix, log_n as u64);
        let (mut d_b, mut d_s) = (gpu.alloc::<C::Affine>(n).map_err(e)?, gpu.alloc::<Scalar>(n).map_err(e)?);
        // Upload from page-locked memory (how the prover stages data).
        let up_ms = {
            let pb = PinnedRange::new(gpu, &mut bases).map_err(e)?;
            let ps = PinnedRange::new(gpu, &mut s).map_err(e)?;
            t0.record(&stream).map_err(e)?;
            // SAFETY: page-locked ranges, alive and untouched until the
            // stream is synchronised three lines below.
            unsafe { d_b.upload_async(0, &pb[..], &stream) }.map_err(e)?;
            // SAFETY: as above.
            unsafe { d_s.upload_async(0, &ps[..], &stream) }.map_err(e)?;
            t1.record(&stream).map_err(e)?;
            stream.synchronize().map_err(e)?;
            t1.elapsed_ms(&t0).map_err(e)? as f64
        };
        let run = |d_b: &DeviceBuffer<C::Affine>, d_s: &DeviceBuffer<Scalar>| -> Result<(f64, C::Projective), String> {
            let t = Instant::now();
            let p = m.msm_device::<C>(d_b, DeviceScalars::montgomery(d_s), None).map_err(|x| x.to_string())?;
            Ok((t.elapsed().as_secs_f64() * 1e3, p))
        };
        let (_, ours) = run(&d_b, &d_s)?; // warm-up (scratch allocation)
        let mut times = Vec::new();
        for _ in 0..3 {
            times.push(run(&d_b, &d_s)?.0);
        }
        let resident = median(times);
        // Stage breakdown (events between stages) and a window-width sweep.
        {
            let cfg = GpuMsmConfig { stage_timing: true, ..Default::default() };
            let mt = GpuMsm::with_config(gpu.clone(), cfg).map_err(|x| x.to_string())?;
            // Twice: the first run allocates scratch between stages.
            for _ in 0..2 {
                mt.msm_device::<C>(&d_b, DeviceScalars::montgomery(&d_s), None).map_err(|x| x.to_string())?;
            }
            let st: Vec<String> = mt.last_stage_times().iter().map(|(n, t)| format!("{n} {t:.1}")).collect();
            r.bench.push(format!("     stages (ms) {} 2^{log_n} {mix:?}: {}", C::PREFIX, st.join(", ")));
            println!("{}", r.bench.last().expect("pushed"));
        }
        // Variants: forced window widths, and the inlined bucket addition.
        let variants: Vec<(String, GpuMsmConfig)> = sweep
            .iter()
            .filter(|_| mix == Mix::Random)
            .map(|&c| {
                (format!("c={c}"), GpuMsmConfig { window_bits: Some(c), stage_timing: true, ..Default::default() })
            })
            .chain(std::iter::once((
                "global-counter sort".to_string(),
                GpuMsmConfig { sort: Sort::GlobalCounters, stage_timing: true, ..Default::default() },
            )))
            .chain(PAIR_BATCHES.iter().map(|&(batch, min_threads)| {
                let cfg = GpuMsmConfig {
                    bucket_sum: Some(BucketSum::AffinePairs { batch, min_threads }),
                    stage_timing: true,
                    ..Default::default()
                };
                (format!("affine pairs, batch {batch}, passes while >= {min_threads} threads, then xyzz"), cfg)
            }))
            .chain(std::iter::once((
                "xyzz bucket sums".to_string(),
                GpuMsmConfig { bucket_sum: Some(BucketSum::Xyzz), stage_timing: true, ..Default::default() },
            )))
            .chain(AFFINE_BATCHES.iter().map(|&batch| {
                let cfg = GpuMsmConfig {
                    bucket_sum: Some(BucketSum::BatchedAffine { batch, threads: 1 << 15 }),
                    stage_timing: true,
                    ..Default::default()
                };
                (format!("batched affine, batch {batch}, 2^15 threads"), cfg)
            }))
            .collect();
        for (c, cfg) in variants {
            let mc = GpuMsm::with_config(gpu.clone(), cfg).map_err(|x| x.to_string())?;
            let timed = time_twice(r, format!("msm {} 2^{log_n} {c} equals the default run", C::PREFIX), &ours, || {
                mc.msm_device::<C>(&d_b, DeviceScalars::montgomery(&d_s), None)
            });
            // A variant with more scratch than the memory the other
            // instances left is reported, not fatal (affine pair passes at
            // 2^27: ~10 GB per window).
            let ms = match timed {
                Err(err) if err.contains("bytes of device scratch") => {
                    r.bench.push(format!("     variant {} 2^{log_n} {mix:?}: {c} does not fit: {err}", C::PREFIX));
                    println!("{}", r.bench.last().expect("pushed"));
                    continue;
                }
                other => other?,
            };
            let stages: Vec<String> = mc.last_stage_times().iter().map(|(n, t)| format!("{n} {t:.1}")).collect();
            let stages = if stages.is_empty() { String::new() } else { format!(" ({})", stages.join(", ")) };
            r.bench.push(format!("     variant {} 2^{log_n} {mix:?}: {c} {ms:.1} ms{stages}", C::PREFIX));
            println!("{}", r.bench.last().expect("pushed"));
        }
        // Precomputed copies of the bases ((c, copies) each): build time,
        // device bytes, the MSM (median of 3) and its stages.
        for &(c, k) in copies.iter().filter(|_| mix == Mix::Random) {
            let cfg = GpuMsmConfig { stage_timing: true, ..Default::default() };
            let mp = GpuMsm::with_config(gpu.clone(), cfg).map_err(|x| x.to_string())?;
            let t = Instant::now();
            let pre = match mp.precompute::<C>(&d_b, c, k) {
                Ok(p) => p,
                Err(err) => {
                    r.bench.push(format!("     copies {} 2^{log_n}: c={c} x{k} not built: {err}", C::PREFIX));
                    println!("{}", r.bench.last().expect("pushed"));
                    continue;
                }
            };
            let build_ms = t.elapsed().as_secs_f64() * 1e3;
            let check = format!("msm {} 2^{log_n} precomputed c={c} x{k} equals the default run", C::PREFIX);
            let mut times = Vec::new();
            for _ in 0..3 {
                times.push(time_twice(r, check.clone(), &ours, || {
                    mp.msm_precomputed::<C>(&pre, DeviceScalars::montgomery(&d_s), None)
                })?);
            }
            let stages: Vec<String> = mp.last_stage_times().iter().map(|(n, t)| format!("{n} {t:.1}")).collect();
            r.bench.push(format!(
                "     copies {} 2^{log_n}: c={c} x{k} ({} windows of buckets, {:.1} GB of points, built in {build_ms:.0} ms): {:.1} ms ({})",
                C::PREFIX,
                c2_msm::plan::copy_windows(c, k),
                pre.device_bytes() as f64 * 1e-9,
                median(times),
                stages.join(", ")
            ));
            println!("{}", r.bench.last().expect("pushed"));
        }
        // Bases in pageable host memory, through the pinned staging path
        // (c2_cuda::Stager): uploaded whole, then computed, vs streamed in 4
        // chunks with the next upload overlapping.
        if mix == Mix::Random && log_n >= 24 {
            for (label, cfg) in [
                ("host bases, whole upload", GpuMsmConfig::default()),
                ("host bases, 4 streamed chunks", GpuMsmConfig { stream_chunk: n / 4, ..Default::default() }),
            ] {
                let mh = GpuMsm::with_config(gpu.clone(), cfg).map_err(|x| x.to_string())?;
                let check = format!("msm {} 2^{log_n} {label} equals the resident run", C::PREFIX);
                let ms = time_twice(r, check, &ours, || {
                    mh.msm_host_bases::<C>(&bases, DeviceScalars::montgomery(&d_s), None)
                })?;
                r.bench
                    .push(format!("     variant {} 2^{log_n} {mix:?}: {label} (pinned staging) {ms:.1} ms", C::PREFIX));
                println!("{}", r.bench.last().expect("pushed"));
            }
        }
        drop((d_b, d_s));
        let bases_for_cpu = Arc::new(bases);
        let (ec_ms, same) = match ec.as_mut() {
            Some(k) => {
                let b = bases_for_cpu.clone();
                let reprs: Arc<Vec<_>> = Arc::new(s.par_iter().map(|x| x.to_repr()).collect());
                let pool = ec_gpu_gen::threadpool::Worker::new();
                let t = Instant::now();
                let theirs = k.multiexp(&pool, b, reprs, 0).map_err(|x| x.to_string())?;
                (format!("{:.1}", t.elapsed().as_secs_f64() * 1e3), Some(theirs == ours))
            }
            None => ("-".into(), None),
        };
        if let Some(ok) = same {
            r.check(format!("msm {} 2^{log_n} {mix:?}: ours == ec-gpu-gen multiexp", C::PREFIX), ok);
        }
        if log_n <= 24 {
            let want = C::cpu(&bases_for_cpu, &s, None);
            r.check(format!("msm {} 2^{log_n} {mix:?}: ours == blst (CPU)", C::PREFIX), want == ours);
        }
        let sppark = sppark_times::<C>(r, &bases_for_cpu, &s, log_n, mix, &ours)?;
        let speed = ec_ms.parse::<f64>().map(|x| format!("{:.1}x", x / (resident + up_ms))).unwrap_or("-".into());
        r.bench.push(format!(
            "{:>4} {:>6} {:>8} | {:>12.1} {:>12.1} {:>14.1} | {:>14} {:>8} | {:>16} {:>16}",
            C::PREFIX,
            log_n,
            format!("{mix:?}"),
            resident,
            up_ms,
            resident + up_ms,
            ec_ms,
            speed,
            sppark.0,
            sppark.1
        ));
        println!("{}", r.bench.last().expect("pushed"));
    }
    Ok(())
}

/// MSM benchmark: ours with bases resident, the pinned upload, and ec-gpu-gen
/// (bellperson 0.27's GPU multiexp, which uploads from pageable memory).
/// `sweep`: window widths also timed (resident) at every random-scalar size;
/// `copies`: precomputed copies of the bases, (c, copies) each, timed there too.
pub fn bench(
    gpu: Arc<Gpu>,
    r: &mut Report,
    g1_sizes: &[u32],
    g2_sizes: &[u32],
    porep: &[u32],
    sweep: &[u32],
    copies: &[(u32, u32)],
) -> Result<(), String> {
    r.bench.push(format!(
        "{:>4} {:>6} {:>8} | {:>12} {:>12} {:>14} | {:>14} {:>8} | {:>16} {:>16}",
        "msm",
        "log_n",
        "scalars",
        "resident ms",
        "upload ms",
        "ours+upload",
        "ec-gpu-gen ms",
        "speedup",
        "sppark ms (pts res)",
        "sppark ms (all up)"
    ));
    bench_curve::<G1>(&gpu, r, g1_sizes, Mix::Random, true, sweep, copies)?;
    bench_curve::<G1>(&gpu, r, porep, Mix::Porep, true, &[], &[])?;
    bench_curve::<G2>(&gpu, r, g2_sizes, Mix::Random, true, sweep, copies)?;
    Ok(())
}

/// sppark's G1 MSM on the same data (G1 only): times with the points
/// resident (sppark uploads the scalars; median of 3) and with everything
/// uploaded (one run), checked against ours.
fn sppark_times<C: Oracle>(
    r: &mut Report,
    bases: &[C::Affine],
    s: &[Scalar],
    log_n: u32,
    mix: Mix,
    ours: &C::Projective,
) -> Result<(String, String), String> {
    let Some(res) = C::sppark(bases, s) else {
        return Ok(("-".into(), "-".into()));
    };
    let (resident, resident_ms, all, all_ms) = res?;
    r.check(format!("msm {} 2^{log_n} {mix:?}: ours == sppark", C::PREFIX), resident == *ours && all == *ours);
    Ok((format!("{resident_ms:.1}"), format!("{all_ms:.1}")))
}

/// (result with points resident, its median ms, result with all uploaded, ms).
type SpparkRun<P> = Result<(P, f64, P, f64), String>;

#[cfg(feature = "sppark")]
fn sppark_g1(bases: &[G1Affine], s: &[Scalar]) -> SpparkRun<G1Projective> {
    let prepared = c2_sppark_baseline::PreparedG1::new(bases)?;
    let (mut t, mut res) = (Vec::new(), G1Projective::identity());
    for _ in 0..3 {
        let start = Instant::now();
        res = prepared.msm(s)?;
        t.push(start.elapsed().as_secs_f64() * 1e3);
    }
    drop(prepared);
    let start = Instant::now();
    let all = c2_sppark_baseline::g1_msm(bases, s)?;
    Ok((res, median(t), all, start.elapsed().as_secs_f64() * 1e3))
}

/// Batched-affine bucket sums against XYZZ at the given sizes (random
/// scalars, bases resident): batch sizes x thread counts, with the stage
/// breakdown, each checked against the XYZZ result.
pub fn affine_sweep(gpu: Arc<Gpu>, r: &mut Report, g1_sizes: &[u32], g2_sizes: &[u32]) -> Result<(), String> {
    sweep_curve::<G1>(&gpu, r, g1_sizes)?;
    sweep_curve::<G2>(&gpu, r, g2_sizes)
}

fn sweep_curve<C: Oracle>(gpu: &Arc<Gpu>, r: &mut Report, log_sizes: &[u32]) -> Result<(), String>
where
    C::Affine: Send + Sync,
    C::Projective: Send + Sync,
{
    let e = |x: c2_cuda::GpuError| x.to_string();
    let pool = points::<C::Projective>(1 << 20, 5, false);
    let stream = gpu.stream().map_err(e)?;
    for &log_n in log_sizes {
        let n = 1usize << log_n;
        let (bases, s) = (tiled(&pool, n), scalars(n, Mix::Random, 77 + log_n as u64));
        let (mut d_b, mut d_s) = (gpu.alloc::<C::Affine>(n).map_err(e)?, gpu.alloc::<Scalar>(n).map_err(e)?);
        d_b.upload(0, &bases, &stream).map_err(e)?;
        d_s.upload(0, &s, &stream).map_err(e)?;
        stream.synchronize().map_err(e)?;
        let xyzz = GpuMsmConfig { bucket_sum: Some(BucketSum::Xyzz), stage_timing: true, ..Default::default() };
        let want = GpuMsm::with_config(gpu.clone(), xyzz.clone())
            .map_err(|x| x.to_string())?
            .msm_device::<C>(&d_b, DeviceScalars::montgomery(&d_s), None)
            .map_err(|x| x.to_string())?;
        let mut variants = vec![("xyzz".to_string(), xyzz)];
        for batch in [128u32, 256, 512] {
            for threads in [1usize << 15, 1 << 16, 1 << 17] {
                let cfg = GpuMsmConfig {
                    bucket_sum: Some(BucketSum::BatchedAffine { batch, threads }),
                    stage_timing: true,
                    ..Default::default()
                };
                variants.push((format!("affine batch {batch}, {threads} threads"), cfg));
            }
        }
        for (label, cfg) in variants {
            let mc = GpuMsm::with_config(gpu.clone(), cfg).map_err(|x| x.to_string())?;
            let check = format!("msm {} 2^{log_n} {label} equals xyzz", C::PREFIX);
            let ms = time_twice(r, check, &want, || mc.msm_device::<C>(&d_b, DeviceScalars::montgomery(&d_s), None))?;
            let st = mc.last_stage_times();
            let get = |k: &str| st.iter().find(|(n, _)| *n == k).map_or(0.0, |(_, t)| *t);
            r.bench.push(format!(
                "     sweep {} 2^{log_n}: {label}: {ms:.1} ms (accumulate {:.1}, fixup {:.1})",
                C::PREFIX,
                get("accumulate"),
                get("fixup")
            ));
            println!("{}", r.bench.last().expect("pushed"));
        }
    }
    Ok(())
}
