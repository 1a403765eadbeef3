//! `--only setup` (issue 41): Groth16 test parameters made on the GPU from a
//! real circuit's recorded constraint matrices (c2-testkit `setup::gpu`),
//! the StackedDrg partition of a CC test sector of each `--setup-sizes`
//! size. The toxic waste comes from a fixed seed: TEST ONLY, anyone with
//! the seed can forge proofs against these parameters.
//!
//! Per size: the host's QAP evaluation ([`query_scalars`]), then every
//! query's points on the GPU, timed per query; the parameters' lengths
//! against the circuit's. Up to `--setup-full-check` (2 KiB by default)
//! every point is compared with the host's combs (which `cargo test` holds
//! equal to bellperson's `generate_parameters`, byte for byte); above it, a
//! random sample of every query's points.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bellperson::groth16::Parameters;
use blstrs::{Bls12, G1Affine, G2Affine, Scalar};
use c2_cuda::Gpu;
use c2_synth::{cc_sector, CcSectorConfig, ConstraintMatrices, ProofInstance};
use c2_testkit::setup::gpu::GpuCombs;
use c2_testkit::setup::{draw, multiply, query_scalars, CpuCombs, FixedBase, QueryScalars, SetupStep, ToxicWaste};
use filecoin_proofs_api::RegisteredSealProof;
use porep_c2::MatrixStore;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use crate::post::size_name;
use crate::Report;

/// The seed of the toxic waste (printed with every run).
const WASTE_SEED: u64 = 41;

/// What `--only setup` runs.
pub struct SetupRun {
    /// The PoRep sizes whose partition circuit gets parameters.
    pub sizes: Vec<RegisteredSealProof>,
    /// Sizes up to this many bytes compare every point with the host's.
    pub full_check_max: u64,
    /// Points per query checked against the host's above that size.
    pub samples: usize,
}

/// Makes parameters for every size of `run` on `gpu`, checks and times them.
pub fn bench(gpu: Arc<Gpu>, r: &mut Report, run: &SetupRun) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    for &rp in &run.sizes {
        let size = u64::from(rp.sector_size());
        let tag = format!("setup {}", size_name(size));
        let t = Instant::now();
        let s = cc_sector(rp, &CcSectorConfig::default()).map_err(|x| e(&x))?;
        let instance = c2_synth::instance_from_c1(&s.c1, s.prover_id, s.sector_id).map_err(|x| e(&x))?;
        let m = instance.record_matrices().map_err(|x| e(&x))?;
        println!(
            "{tag}: CC test sector and its partition's matrices in {:.1?} ({} constraints, {} inputs, {} aux, A+B+C {} entries)",
            t.elapsed(),
            m.constraints(),
            m.inputs,
            m.aux,
            m.a.entries() + m.b.entries() + m.c.entries()
        );
        let full = size <= run.full_check_max;
        // The full comparison needs the scalars again: sampled runs drop
        // them with the matrices' other copies.
        let g = generate(gpu.clone(), r, &m, &tag, if full { 0 } else { run.samples })?;
        drop(m);
        if full {
            let host = CpuCombs::new(g.waste.g1, g.waste.g2);
            let t = Instant::now();
            let theirs = multiply(&g.scalars, &g.waste, &host, &|_| {}).map_err(|x| e(&x))?;
            let cpu = t.elapsed();
            let line = format!(
                "{tag} on the host's {} threads: {:.2} s for the points ({:.1}x the GPU's)",
                rayon::current_num_threads(),
                cpu.as_secs_f64(),
                cpu.as_secs_f64() / g.points.as_secs_f64().max(1e-9)
            );
            println!("{line}");
            r.bench.push(line);
            r.check(
                format!("{tag}: GPU parameters == the host combs' byte for byte"),
                bytes(&g.params) == bytes(&theirs),
            );
        }
    }
    Ok(())
}

/// Parameters made on the GPU by [`generate`], with what made them.
pub struct Generated {
    /// The parameters (the verifying key included).
    pub params: Parameters<Bls12>,
    /// The secrets they were made with (from [`WASTE_SEED`]).
    pub waste: ToxicWaste,
    /// Every query's scalars (the host's share of the work).
    pub scalars: QueryScalars,
    /// Wall time of the points alone.
    pub points: Duration,
}

/// Groth16 test parameters for the circuit of `m` on `gpu`, the toxic waste
/// from [`WASTE_SEED`] (printed: TEST ONLY): the host's QAP evaluation, the
/// comb tables, then every query's points on the GPU, timed per query (a
/// line in `r.bench` under `tag`). Checks the lengths against the circuit's
/// and, with `samples > 0`, that many random points of every query against
/// the host's combs.
pub fn generate(
    gpu: Arc<Gpu>,
    r: &mut Report,
    m: &ConstraintMatrices,
    tag: &str,
    samples: usize,
) -> Result<Generated, String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let n = m.parameter_lengths();
    println!("{tag}: toxic waste from seed {WASTE_SEED} (TEST ONLY: these parameters are forgeable)");
    let waste = draw(&mut ChaCha20Rng::seed_from_u64(WASTE_SEED));
    let t = Instant::now();
    let q = query_scalars(m, &waste).map_err(|x| e(&x))?;
    let qap = t.elapsed();
    let t = Instant::now();
    let bases = GpuCombs::new(gpu, waste.g1, waste.g2).map_err(|x| e(&x))?;
    let tables = t.elapsed();
    let (params, queries, total) = timed(&q, &waste, &bases).map_err(|x| e(&x))?;
    drop(bases);
    let points: u64 = queries.iter().map(|(_, n, _)| n).sum();
    let per_query: Vec<String> = queries
        .iter()
        .map(|(name, n, d)| {
            format!("{name} {n} in {:.2} s ({:.1} M/s)", d.as_secs_f64(), *n as f64 / d.as_secs_f64().max(1e-9) / 1e6)
        })
        .collect();
    let line = format!(
        "{tag} on the GPU: QAP on the host {:.2} s, comb tables {:.2} s; {}; all {points} points in {:.2} s, {:.2} s with the QAP",
        qap.as_secs_f64(),
        tables.as_secs_f64(),
        per_query.join(", "),
        total.as_secs_f64(),
        (qap + tables + total).as_secs_f64()
    );
    println!("{line}");
    r.bench.push(line);
    r.check(
        format!("{tag}: parameter lengths are the circuit's (h, ic, l, a, b_g1, b_g2)"),
        params.h.len() == n.domain - 1
            && params.vk.ic.len() == n.inputs
            && params.l.len() == n.aux
            && params.a.len() == n.a
            && params.b_g1.len() == n.b
            && params.b_g2.len() == n.b,
    );
    if samples > 0 {
        let host = CpuCombs::new(waste.g1, waste.g2);
        let ok = sampled(&q, &params, &host, samples).map_err(|x| e(&x))?;
        r.check(format!("{tag}: {samples} sampled points of every query == the host combs'"), ok);
    }
    Ok(Generated { params, waste, scalars: q, points: total })
}

/// Verifiable test parameters for `instance`'s circuit: its matrices from
/// `store` (recorded on first use), then [`generate`] on `gpu` with 64
/// sampled points per query checked against the host's. Prints what was
/// made under `tag`; the query scalars are dropped.
pub fn params_for(
    gpu: Arc<Gpu>,
    r: &mut Report,
    store: &MatrixStore,
    instance: &dyn ProofInstance,
    tag: &str,
) -> Result<Parameters<Bls12>, String> {
    let t = Instant::now();
    let m = store.get(instance, None).map_err(|x| x.to_string())?;
    let mx = &m.matrices;
    println!(
        "{tag}: matrices in {:.1?} ({} constraints, {} inputs, {} aux, A+B+C {} entries)",
        t.elapsed(),
        mx.constraints(),
        mx.inputs,
        mx.aux,
        mx.a.entries() + mx.b.entries() + mx.c.entries()
    );
    Ok(generate(gpu, r, mx, &format!("{tag} set-up"), 64)?.params)
}

/// The parameters of `q` by `bases`, with each query's name, point count
/// and wall time (from the progress reports), and the total.
#[allow(clippy::type_complexity)]
fn timed(
    q: &QueryScalars,
    waste: &ToxicWaste,
    bases: &GpuCombs,
) -> Result<(Parameters<Bls12>, Vec<(&'static str, u64, Duration)>, Duration), c2_testkit::setup::SetupError> {
    let marks: Mutex<Vec<(&'static str, u64, Instant)>> = Mutex::new(Vec::new());
    let start = Instant::now();
    let params = multiply(q, waste, bases, &|step| {
        if let SetupStep::Query(name, n) = step {
            marks.lock().unwrap_or_else(|p| p.into_inner()).push((name, n, Instant::now()));
        }
    })?;
    let end = Instant::now();
    let marks = marks.into_inner().unwrap_or_else(|p| p.into_inner());
    let queries = marks
        .iter()
        .enumerate()
        .map(|(i, &(name, n, at))| (name, n, marks.get(i + 1).map_or(end, |next| next.2) - at))
        .collect();
    Ok((params, queries, end - start))
}

/// `samples` random points of every query equal the host combs' for the
/// same scalars.
fn sampled(
    q: &QueryScalars,
    p: &Parameters<Bls12>,
    host: &CpuCombs,
    samples: usize,
) -> Result<bool, c2_testkit::setup::SetupError> {
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let mut pick = |len: usize| -> Vec<usize> { (0..samples.min(len)).map(|_| rng.gen_range(0..len)).collect() };
    let g1 = |scalars: &[Scalar], idx: &[usize], points: &dyn Fn(usize) -> G1Affine| {
        let s: Vec<Scalar> = idx.iter().map(|&i| scalars[i]).collect();
        host.g1(&s, &|_| {}).map(|want| idx.iter().zip(want).all(|(&i, w)| points(i) == w))
    };
    let ic_l = |i: usize| if i < q.inputs { p.vk.ic[i] } else { p.l[i - q.inputs] };
    let mut ok = g1(&q.h, &pick(q.h.len()), &|i| p.h[i])?;
    ok &= g1(&q.ic_l, &pick(q.ic_l.len()), &ic_l)?;
    ok &= g1(&q.a, &pick(q.a.len()), &|i| p.a[i])?;
    let idx = pick(q.b.len());
    ok &= g1(&q.b, &idx, &|i| p.b_g1[i])?;
    let s: Vec<Scalar> = idx.iter().map(|&i| q.b[i]).collect();
    let want: Vec<G2Affine> = host.g2(&s, &|_| {})?;
    ok &= idx.iter().zip(want).all(|(&i, w)| p.b_g2[i] == w);
    Ok(ok)
}

fn bytes(p: &Parameters<Bls12>) -> Vec<u8> {
    let mut out = Vec::new();
    p.write(&mut out).expect("writing to a Vec");
    out
}
