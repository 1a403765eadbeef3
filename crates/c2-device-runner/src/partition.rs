//! 32 GiB-shaped synthetic partitions through the library's GPU path
//! (`porep_c2::gpu`): `prove_instance` over `c2_testkit::synthetic` partitions
//! with GPU workers, verification off (random parameters: timing only; the
//! generator stands in for synthesis and says so). The device pool is
//! capped at each of `caps` (GiB; 0 = uncapped) to behave like a 16, 24 or
//! 40 GB card: the workers plan their working set from the cap, and every
//! run's bytes must equal the first run's (same parameters and r, s).
//! Prints every partition's timeline (host stages, CUDA-event kernel times,
//! bytes host-to-device) and, per run, seconds per partition, PCIe bytes
//! per partition and kernel time over wall time.

use std::time::Instant;

use c2_testkit::synthetic::{SyntheticPorep, SyntheticShape};
use porep_c2::gpu::{gpu_backend, GpuBackendConfig};
use porep_c2::plan::{plan_device, PartitionShape};
use porep_c2::{prove_instance, HostBudget, PipelineConfig, ProofReport, ProverConfig};

use crate::Report;

fn print_partitions(rep: &ProofReport) {
    for p in &rep.partitions {
        println!("  {}", p.timeline());
    }
}

/// What [`bench()`] runs.
pub struct Runs<'a> {
    /// Every size divided by this (1 = the 32 GiB partition).
    pub scale: usize,
    /// Partitions per proof.
    pub partitions: usize,
    /// Timed proofs per run (after a warm-up proof).
    pub proofs: usize,
    /// Workers per device, one run each.
    pub workers: &'a [usize],
    /// GPU counts (devices 0..g), one run each.
    pub gpus: &'a [usize],
    /// Device pool caps in GiB (0 = uncapped), one run each.
    pub caps: &'a [usize],
    /// The MSM's bucket-accumulation kernel per run (`GpuMsmConfig::
    /// accumulate_blocks`: `None` = the measured default, 0 = unbounded, 3
    /// or 4 blocks per SM), one run each.
    pub accumulate: &'a [Option<u32>],
    /// Precomputed copies of H per run, (window bits, copies)
    /// (`GpuBackendConfig::h_copies`; `None`: none), one run each.
    pub h_copies: &'a [Option<(u32, u32)>],
}

/// `proofs` proofs of `partitions` partitions each, shape divided by `scale`,
/// for every cap, GPU count in `gpus` (devices 0..g) and worker count.
pub fn bench(r: &mut Report, runs: &Runs<'_>) -> Result<(), String> {
    let Runs { scale, partitions, proofs, .. } = *runs;
    let shape = SyntheticShape::porep_32gib().scaled(scale);
    let instance = SyntheticPorep::new(shape.clone(), partitions);
    let t = Instant::now();
    let params = instance.parameters(11);
    let planned = PartitionShape::of_parameters(&params);
    println!(
        "synthetic partition 1/{scale}: {} constraints, {} aux, domain 2^{}; parameters built in {:.1?}; {:.1} GB of host vectors per partition",
        shape.constraints,
        shape.aux,
        shape.domain().trailing_zeros(),
        t.elapsed(),
        shape.host_bytes() as f64 / 1e9
    );
    let blinding = vec![(blstrs::Scalar::from(3u64), blstrs::Scalar::from(5u64)); partitions];
    let mut first_bytes: Option<(String, Vec<u8>)> = None;
    let mut combos = Vec::new();
    for &cap in runs.caps {
        for &g in runs.gpus {
            for &w in runs.workers {
                for &a in runs.accumulate {
                    combos.extend(runs.h_copies.iter().map(|&h| (cap, g, w, a, h)));
                }
            }
        }
    }
    for (cap, gpus, w, accumulate, h_copies) in combos {
        let devices: Vec<usize> = (0..gpus).collect();
        let mut config = GpuBackendConfig {
            devices: devices.clone(),
            workers_per_device: w,
            plan_for: planned,
            ..Default::default()
        };
        config.vram.cap = (cap > 0).then_some(cap << 30);
        config.msm.accumulate_blocks = accumulate;
        config.h_copies = h_copies;
        let mut cap_label = if cap > 0 { format!("cap {cap} GiB") } else { "uncapped".to_string() };
        if let Some((c, k)) = h_copies {
            cap_label += &format!(", H over {k} precomputed copies ({c}-bit windows)");
        }
        if let Some(blocks) = accumulate {
            cap_label += &format!(", MSM accumulation compiled for {blocks} blocks/SM (0: unbounded)");
        }
        let backend = match gpu_backend(&config) {
            Ok(b) => b,
            Err(e) => {
                // A refused device is a result (the minimum is in the message).
                r.bench.push(format!("synthetic 1/{scale}, {cap_label}, {gpus} GPU(s) x {w} worker(s): refused: {e}"));
                println!("{}", r.bench.last().expect("pushed"));
                continue;
            }
        };
        if let Some(budget) = config.vram.cap {
            if let Ok(p) = plan_device(budget, w, &planned) {
                println!("{cap_label}: plan {}", p.describe(&planned));
            }
        }
        let n_workers = backend.consumers();
        // Host memory: synthesized partitions in flight bounded by a budget
        // (the machine has 128 GB; the parameters take ~47 GB of it).
        let budget = HostBudget::new((n_workers + 1) * shape.host_bytes());
        let config = ProverConfig {
            backend,
            retry_backend: None,
            verify: false,
            check_vanilla_proofs: false,
            pipeline: PipelineConfig {
                synthesis_workers: n_workers + 1,
                host_budget: Some(budget.clone()),
                item_bytes: shape.host_bytes(),
                ..Default::default()
            },
            ..ProverConfig::default()
        };
        // Warm-up proof: parameters uploaded, scratch and tables sized.
        let t = Instant::now();
        let (bytes, warm) = prove_instance(&instance, &params, &blinding, &config).map_err(|e| e.to_string())?;
        // Same r, s: every cap, worker and GPU count gives the same bytes.
        let label = format!("{cap_label}, {gpus} GPU(s) x {w} worker(s) ({n_workers} planned)");
        match &first_bytes {
            None => first_bytes = Some((label.clone(), bytes)),
            Some((l0, b0)) => r.check(format!("synthetic 1/{scale}: {label} bytes == {l0} bytes"), *b0 == bytes),
        }
        println!("{label}: warm-up proof {:.1?}", t.elapsed());
        // A fingerprint of the bytes, for comparing runs of differently
        // built binaries (the field backends) by their logs.
        if let Some((_, b)) = &first_bytes {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            b.hash(&mut h);
            println!("proof bytes: {} bytes, fingerprint {:016x}", b.len(), h.finish());
        }
        print_partitions(&warm);
        let t = Instant::now();
        let mut kernel_ms = 0.0f64;
        let mut times = Vec::new();
        for j in 0..proofs {
            let (_, rep) = prove_instance(&instance, &params, &blinding, &config).map_err(|e| e.to_string())?;
            println!("proof {j}: {:.2} s (pipeline {:.2} s)", rep.total.as_secs_f64(), rep.pipeline.as_secs_f64());
            print_partitions(&rep);
            kernel_ms +=
                rep.partitions.iter().filter_map(|p| p.steps.gpu.as_ref()).map(|g| g.kernel_ms() as f64).sum::<f64>();
            times.extend(rep.partitions.iter().filter_map(|p| p.steps.gpu.clone()));
        }
        let wall = t.elapsed().as_secs_f64();
        let per_partition = wall / (proofs * partitions) as f64;
        let sum = 100.0 * kernel_ms / 1e3 / (wall * gpus as f64);
        let union: f64 = porep_c2::device_busy_ms(&times).iter().map(|(_, ms)| ms).sum();
        let busy = 100.0 * union / 1e3 / (wall * gpus as f64);
        let h2d: u64 = times.iter().map(|g| g.h2d_bytes).sum();
        r.bench.push(format!(
            "synthetic 1/{scale} (2^{}), {label}: {proofs} proofs x {partitions} partitions in {wall:.1} s = {per_partition:.2} s/partition, {:.1} s/proof; {:.1} GB host-to-device per partition; GPU busy (union of kernel spans) / wall = {busy:.0}% per GPU (sum of kernel times {sum:.0}%); peak host budget in use {:.1} GB",
            shape.domain().trailing_zeros(),
            wall / proofs as f64,
            h2d as f64 / 1e9 / times.len().max(1) as f64,
            budget.peak() as f64 / 1e9,
        ));
        println!("{}", r.bench.last().expect("pushed"));
    }
    Ok(())
}
