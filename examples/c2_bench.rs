//! c2-bench: proves `-j` sectors with `-c` proofs in flight, like
//! lotus-bench / cuzk-bench, and reports seconds per proof (progress on
//! stderr: a line per proof, and on a terminal a bar per partition;
//! optional JSON report). Every proof is verified unless
//! `--no-verify`.
//!
//! ```text
//! # the built-in tiny StackedDrg sector (parameters cached in the temp folder)
//! cargo run --release --example c2-bench -- -c 2 -j 4 --json bench.json
//!
//! # a real C1 output, proved -j times (parameters read per proof, as a
//! # fresh prover would)
//! cargo run --release --example c2-bench -- --c1 c1.json --prover-id HEX --sector-id N -c 1 -j 3
//!
//! # all proofs in flight share one host-memory budget (GB); a partition is
//! # admitted on an estimate (GB; 0 or absent: the facade's estimate from its
//! # shape) and then holds what it really holds
//! ... --host-budget-gb 100 --partition-gb 20
//!
//! # 32 GiB-shaped synthetic partitions (random parameters: TIMING ONLY, the
//! # proofs do not verify), every size divided by --scale (1, 2, 4, 8, ...)
//! cargo run --release --features cuda --example c2-bench -- --synthetic --scale 1 --partitions 10 -c 1 -j 3
//!
//! # parameters uploaded to the devices before the clock starts (a
//! # long-running node's steady state; synthetic and tiny modes)
//! ... --preload
//! ```
//! `--backend auto` (default) uses the GPU workers (two per device,
//! parameters resident) when built with `--features cuda` and a device
//! answers. The report gives each partition's timeline (synthesis, queue,
//! upload, NTT and each MSM from CUDA events) and kernel time over wall time.

use c2_testkit::cli::{fail, parse_backend, parse_hex32};
use c2_testkit::demo;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use porep_c2::{prove_instance, prove_porep_c2_with_report, ProofReport, ProverConfig, Randomness};

fn usage() -> ! {
    eprintln!(
        "usage: c2-bench [-c CONCURRENT] [-j TOTAL] [--c1 C1_JSON --prover-id HEX --sector-id N] \
         [--synthetic [--scale D] [--partitions K]] [--backend cpu|auto] [--json FILE] \
         [--host-budget-gb X --partition-gb Y] [--no-verify] [--preload]"
    );
    std::process::exit(2)
}

/// `--preload`: the parameters onto every GPU worker's device before the
/// clock starts, as a long-running node does once at start-up (without it
/// the first partitions on each device wait for the upload).
fn preload_parameters(
    backend: &porep_c2::Backend,
    parameter_id: &str,
    params: &bellperson::groth16::Parameters<blstrs::Bls12>,
) {
    let t = Instant::now();
    let n = backend.preload(parameter_id, params).unwrap_or_else(|e| fail(format!("preload: {e}")));
    eprintln!("parameters preloaded: resident for {n} worker(s) in {:.1?} (before the clock starts)", t.elapsed());
}

/// What one proof cost, for the JSON report.
#[derive(serde::Serialize)]
struct ProofRun {
    index: usize,
    wall_s: f64,
    report: ProofReport,
}

#[derive(serde::Serialize)]
struct BenchReport {
    sector: String,
    concurrent: usize,
    proofs: usize,
    wall_s: f64,
    seconds_per_proof: f64,
    /// GPU busy time over wall time, percent, averaged over devices: per
    /// device the union of the partitions' kernel spans (CUDA events on a
    /// common per-device origin); absent on the CPU.
    kernel_busy_percent: Option<f64>,
    /// The sum of the partitions' kernel times over wall time and devices,
    /// percent: overstates busy time when two workers' kernels overlap.
    kernel_time_sum_percent: Option<f64>,
    /// Partitions proved again on the retry backend after their primary
    /// backend failed (a GPU error): not GPU speed, so counted and said.
    retried_partitions: usize,
    runs: Vec<ProofRun>,
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let (mut concurrent, mut total) = (1usize, 1usize);
    let (mut c1_path, mut prover_id, mut sector_id): (Option<PathBuf>, Option<[u8; 32]>, Option<u64>) =
        (None, None, None);
    let mut json: Option<PathBuf> = None;
    let (mut budget_gb, mut partition_gb) = (None::<f64>, 0f64);
    let (mut synthetic, mut scale, mut synthetic_partitions) = (false, 1usize, 10usize);
    let mut preload = false;
    let mut config = ProverConfig::from_env();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "-c" => concurrent = val().parse().unwrap_or_else(|_| usage()),
            "-j" => total = val().parse().unwrap_or_else(|_| usage()),
            "--c1" => c1_path = Some(val().into()),
            "--prover-id" => prover_id = Some(parse_hex32(&val()).unwrap_or_else(|| usage())),
            "--sector-id" => sector_id = Some(val().parse().unwrap_or_else(|_| usage())),
            "--json" => json = Some(val().into()),
            "--host-budget-gb" => budget_gb = Some(val().parse().unwrap_or_else(|_| usage())),
            "--partition-gb" => partition_gb = val().parse().unwrap_or_else(|_| usage()),
            "--no-verify" => config.verify = false,
            "--synthetic" => synthetic = true,
            "--preload" => preload = true,
            "--scale" => scale = val().parse().unwrap_or_else(|_| usage()),
            "--partitions" => synthetic_partitions = val().parse().unwrap_or_else(|_| usage()),
            "--backend" => config.backend = parse_backend(&val()).unwrap_or_else(|| usage()),
            _ => usage(),
        }
    }
    if concurrent == 0 || total == 0 {
        usage();
    }
    if let Some(gb) = budget_gb {
        config.pipeline.host_budget = Some(porep_c2::HostBudget::new((gb * 1e9) as usize));
        config.pipeline.item_bytes = (partition_gb * 1e9) as usize;
    }
    config.randomness = Randomness::Os;
    // On a terminal, a progress line per partition proved (the per-proof
    // lines below stay, for logs).
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    if tty {
        let (count, t0) = (AtomicUsize::new(0), Instant::now());
        let expected = if synthetic { Some(total * synthetic_partitions) } else { None };
        config.progress = Some(porep_c2::Progress::new(move |_k| {
            let n = count.fetch_add(1, Ordering::SeqCst) + 1;
            let bar = expected.map_or(String::new(), |all| {
                let filled = (30 * n / all.max(1)).min(30);
                format!("[{}{}] ", "#".repeat(filled), ".".repeat(30 - filled))
            });
            eprint!("\r{bar}{n} partition(s) proved, {:.0} s ", t0.elapsed().as_secs_f64());
        }));
    }
    if synthetic {
        // Random parameters: verification would fail by design.
        config.verify = false;
        config.check_vanilla_proofs = false;
    }

    // The job: a real C1 output, or the tiny demo sector with its parameters.
    type Job = Box<dyn Fn() -> Result<ProofReport, porep_c2::Error> + Send + Sync>;
    let (sector, job): (String, Job) = match c1_path {
        _ if synthetic => {
            use c2_testkit::synthetic::{SyntheticPorep, SyntheticShape};
            let shape = SyntheticShape::porep_32gib().scaled(scale);
            let instance = SyntheticPorep::new(shape.clone(), synthetic_partitions);
            let t = Instant::now();
            let params = instance.parameters(1);
            eprintln!(
                "synthetic: random parameters built in {:.1?}; {:.1} GB of host vectors per partition (TIMING ONLY: proofs do not verify)",
                t.elapsed(),
                shape.host_bytes() as f64 / 1e9
            );
            if preload {
                preload_parameters(&config.backend, porep_c2::PorepInstance::parameter_id(&instance), &params);
            }
            let config = config.clone();
            let blinding = vec![(blstrs::Scalar::from(3u64), blstrs::Scalar::from(5u64)); synthetic_partitions];
            let job: Job = Box::new(move || prove_instance(&instance, &params, &blinding, &config).map(|(_, r)| r));
            let name = format!(
                "synthetic 32 GiB-shaped 1/{scale}: {synthetic_partitions} partitions of {} constraints, {} aux (timing only)",
                shape.constraints, shape.aux
            );
            (name, job)
        }
        Some(path) => {
            let (Some(prover_id), Some(sector_id)) = (prover_id, sector_id) else { usage() };
            let c1 = porep_c2::read_c1_json(&path).unwrap_or_else(|e| fail(e));
            let name = format!("{} ({:?})", path.display(), c1.registered_proof);
            let config = config.clone();
            let job: Job =
                Box::new(move || prove_porep_c2_with_report(&c1, prover_id, sector_id.into(), &config).map(|(_, r)| r));
            (name, job)
        }
        None => {
            let tiny = demo::TinyConfig::default();
            let instance = demo::tiny_instance(&tiny).unwrap_or_else(|e| fail(e));
            let dir = std::env::temp_dir().join("porep-c2-demo-params");
            let t = Instant::now();
            let (params, generated) = demo::ensure_parameters(&instance, &dir, 0).unwrap_or_else(|e| fail(e));
            eprintln!(
                "tiny sector parameters {} in {:.1?}",
                if generated { "generated" } else { "loaded" },
                t.elapsed()
            );
            let partitions = porep_c2::PorepInstance::num_partitions(&instance);
            if preload {
                preload_parameters(&config.backend, porep_c2::PorepInstance::parameter_id(&instance), &params);
            }
            let config = config.clone();
            let job: Job = Box::new(move || {
                let blinding = porep_c2::blinding_pairs(&config.randomness, partitions)?;
                prove_instance(&instance, &params, &blinding, &config).map(|(_, r)| r)
            });
            (format!("tiny StackedDrg ({} nodes, {partitions} partition(s))", tiny.nodes), job)
        }
    };
    eprintln!("c2-bench: {sector}, {total} proof(s), {concurrent} in flight, backend {:?}", config.backend);

    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let start = Instant::now();
    let job = Arc::new(job);
    let mut runs: Vec<ProofRun> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..concurrent.min(total))
            .map(|_| {
                let (job, next, done) = (job.clone(), &next, &done);
                s.spawn(move || {
                    let mut mine = Vec::new();
                    loop {
                        let index = next.fetch_add(1, Ordering::SeqCst);
                        if index >= total {
                            break mine;
                        }
                        let t = Instant::now();
                        let report = job().unwrap_or_else(|e| fail(format!("proof {index}: {e}")));
                        let wall_s = t.elapsed().as_secs_f64();
                        let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                        if tty {
                            eprintln!(); // end the progress bar's line
                        }
                        for p in &report.partitions {
                            eprintln!("  {}", p.timeline());
                        }
                        eprintln!(
                            "[{n}/{total}] proof {index}: {wall_s:.2} s ({} partition(s){}); {:.1} s elapsed",
                            report.partitions.len(),
                            if config.verify { ", verified" } else { "" },
                            start.elapsed().as_secs_f64()
                        );
                        mine.push(ProofRun { index, wall_s, report });
                    }
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_else(|_| fail("a bench worker panicked"))).collect()
    });
    runs.sort_by_key(|r| r.index);
    let wall_s = start.elapsed().as_secs_f64();
    let gpu_parts: Vec<_> =
        runs.iter().flat_map(|r| r.report.partitions.iter()).filter_map(|p| p.steps.gpu.as_ref()).collect();
    let devices = gpu_parts.iter().map(|g| g.device).collect::<std::collections::BTreeSet<_>>().len();
    let per_device = |ms: f64| 100.0 * ms / 1e3 / (wall_s * devices as f64);
    let busy = porep_c2::device_busy_ms(gpu_parts.iter().copied());
    let kernel_busy_percent = (!gpu_parts.is_empty()).then(|| per_device(busy.iter().map(|(_, ms)| ms).sum()));
    let kernel_time_sum_percent =
        (!gpu_parts.is_empty()).then(|| per_device(gpu_parts.iter().map(|g| g.kernel_ms() as f64).sum()));
    let host_peak = config.pipeline.host_budget.as_ref().map(|b| (b.settled_peak(), b.peak()));
    let retried_partitions = runs.iter().map(|r| r.report.retries()).sum();
    let report = BenchReport {
        sector,
        concurrent,
        proofs: total,
        wall_s,
        seconds_per_proof: wall_s / total as f64,
        kernel_busy_percent,
        kernel_time_sum_percent,
        retried_partitions,
        runs,
    };
    println!(
        "{} proof(s) in {:.2} s: {:.2} s/proof with {} in flight (mean single-proof wall {:.2} s)",
        total,
        wall_s,
        report.seconds_per_proof,
        concurrent,
        report.runs.iter().map(|r| r.wall_s).sum::<f64>() / total as f64
    );
    if let (Some(b), Some(sum)) = (kernel_busy_percent, kernel_time_sum_percent) {
        let each: Vec<String> =
            busy.iter().map(|(d, ms)| format!("cuda:{d} {:.0}%", 100.0 * ms / 1e3 / wall_s)).collect();
        println!(
            "GPU busy (union of kernel spans, CUDA events) / wall: {b:.0}% per device over {devices} device(s) [{}]; sum of kernel times / wall: {sum:.0}%",
            each.join(", ")
        );
    }
    if retried_partitions > 0 {
        let first = report.runs.iter().flat_map(|r| &r.report.partitions).find_map(|p| p.retried_after.as_deref());
        println!(
            "WARNING: {retried_partitions} partition(s) were retried on the fallback backend after a failure (first cause: {}): these figures are not the primary backend's",
            first.unwrap_or("?")
        );
    }
    if let Some((held, admitted)) = host_peak {
        println!(
            "host memory budget: peak {:.2} GB held by synthesized partitions in flight ({:.2} GB admitted, estimates included)",
            held as f64 / 1e9,
            admitted as f64 / 1e9
        );
    }
    if let Some(path) = json {
        let bytes = serde_json::to_vec_pretty(&report).unwrap_or_else(|e| fail(e));
        std::fs::write(&path, bytes).unwrap_or_else(|e| fail(format!("writing {}: {e}", path.display())));
        eprintln!("wrote {}", path.display());
    }
}
