//! 32 GiB-shaped synthetic partitions through the library's GPU path
//! (`porep_c2::gpu`): `prove_instance` over `c2_testkit::synthetic` partitions
//! with GPU workers, parameters resident, verification off (random
//! parameters: timing only). Prints every partition's timeline (host stages
//! and CUDA-event kernel times) and, per run, seconds per partition and
//! kernel time over wall time.

use std::time::Instant;

use c2_testkit::synthetic::{SyntheticPorep, SyntheticShape};
use porep_c2::gpu::{gpu_backend, GpuBackendConfig};
use porep_c2::{prove_instance, HostBudget, PipelineConfig, ProofReport, ProverConfig};

use crate::Report;

fn print_partitions(rep: &ProofReport) {
    for p in &rep.partitions {
        println!("  {}", p.timeline());
    }
}

/// `proofs` proofs of `partitions` partitions each, shape divided by `scale`,
/// for every GPU count in `gpus` (devices 0..g) and worker count in `workers`.
pub fn bench(
    r: &mut Report,
    scale: usize,
    partitions: usize,
    proofs: usize,
    workers: &[usize],
    gpus: &[usize],
) -> Result<(), String> {
    let shape = SyntheticShape::porep_32gib().scaled(scale);
    let instance = SyntheticPorep::new(shape.clone(), partitions);
    let t = Instant::now();
    let params = instance.parameters(11);
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
    for (&gpus, &w) in gpus.iter().flat_map(|g| workers.iter().map(move |w| (g, w))) {
        let devices: Vec<usize> = (0..gpus).collect();
        let backend =
            gpu_backend(&GpuBackendConfig { devices: devices.clone(), workers_per_device: w, ..Default::default() })
                .map_err(|e| e.to_string())?;
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
        // Same r, s: every worker and GPU count gives the same bytes.
        let label = format!("{gpus} GPU(s) x {w} worker(s)");
        match &first_bytes {
            None => first_bytes = Some((label, bytes)),
            Some((l0, b0)) => r.check(format!("synthetic 1/{scale}: {label} bytes == {l0} bytes"), *b0 == bytes),
        }
        println!("{w} worker(s)/GPU x {gpus} GPU(s): warm-up proof {:.1?}", t.elapsed());
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
        r.bench.push(format!(
            "synthetic 1/{scale} (2^{}), {gpus} GPU(s) x {w} worker(s): {proofs} proofs x {partitions} partitions in {wall:.1} s = {per_partition:.2} s/partition, {:.1} s/proof; GPU busy (union of kernel spans) / wall = {busy:.0}% per GPU (sum of kernel times {sum:.0}%); peak host budget in use {:.1} GB",
            shape.domain().trailing_zeros(),
            wall / proofs as f64,
            budget.peak() as f64 / 1e9,
        ));
        println!("{}", r.bench.last().expect("pushed"));
    }
    Ok(())
}
