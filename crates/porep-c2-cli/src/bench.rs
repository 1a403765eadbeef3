//! `porep-c2 bench`: `-j` proofs with `-c` in flight, like lotus-bench /
//! cuzk-bench: seconds per proof, each partition's timeline (synthesis,
//! queue, upload, NTT and each MSM from CUDA events) and GPU busy time
//! (the union of kernel spans) over wall time. Every proof is verified
//! unless `--no-verify`. With `--daemon`, the same load goes through a
//! running service's gRPC API instead ([`crate::daemon_bench`]).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use c2_testkit::demo;
use clap::Args;
use porep_c2::{prove_instance, prove_porep_c2_with_report, ProofReport, Randomness};

use crate::{ProverArgs, SectorArgs};

/// `porep-c2 bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// Proofs in flight.
    #[arg(short = 'c', long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub concurrent: u64,
    /// Proofs in all.
    #[arg(short = 'j', long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub total: u64,
    /// A real C1 output to prove (needs `--miner` or `--prover-id`, and
    /// `--sector-id`). Default: the built-in tiny StackedDrg sector (its
    /// parameters generated into the temporary folder once).
    #[arg(long)]
    pub c1: Option<PathBuf>,
    /// Whose sector (with `--c1`).
    #[command(flatten)]
    pub sector: SectorArgs,
    /// 32 GiB-shaped synthetic partitions instead (random parameters:
    /// TIMING ONLY, the proofs do not verify), every size divided by `--scale`.
    /// With `--daemon`: the load for a daemon started with `porep-c2 serve
    /// --synthetic-timing-only` (requests carry no C1 output; nothing to verify).
    #[arg(long, conflicts_with = "c1")]
    pub synthetic: bool,
    /// The synthetic shape's divisor (1, 2, 4, ...).
    #[arg(long, default_value_t = 1, requires = "synthetic")]
    pub scale: usize,
    /// Synthetic partitions per proof.
    #[arg(long, default_value_t = 10, requires = "synthetic")]
    pub partitions: usize,
    /// Upload the parameters to the devices (and, with a C1 output, record
    /// its shape's constraint matrices) before the clock starts: a
    /// long-running node's steady state; held for the whole run.
    #[arg(long)]
    pub preload: bool,
    /// One host-memory budget (GB) shared by all proofs in flight.
    #[arg(long)]
    pub host_budget_gb: Option<f64>,
    /// A partition's admission estimate, GB (0: the facade's estimate).
    #[arg(long, default_value_t = 0.0, requires = "host_budget_gb")]
    pub partition_gb: f64,
    /// Skip verification.
    #[arg(long)]
    pub no_verify: bool,
    /// Write a JSON report here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Send the proofs to this daemon (`unix:///path.sock` or `host:port`)
    /// through its gRPC API instead of proving in this process (needs
    /// `--c1` and `--miner`, or `--synthetic`); each returned proof of a C1
    /// output is verified here.
    #[arg(long)]
    pub daemon: Option<String>,
    /// With `--daemon`: the requests' priority (`low`, `normal`, `high`,
    /// `critical`); a second bench at another priority beside this one
    /// shows the daemon's ordering in the two latencies.
    #[arg(long, default_value = "normal", requires = "daemon", value_parser = crate::daemon_bench::parse_priority)]
    pub priority: i32,
    #[command(flatten)]
    pub prover: ProverArgs,
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

type Job = Box<dyn Fn() -> Result<ProofReport, porep_c2::Error> + Send + Sync>;

/// Runs `porep-c2 bench`.
pub fn run(a: BenchArgs) -> Result<()> {
    if a.daemon.is_some() {
        return crate::daemon_bench::run(&a);
    }
    let (concurrent, total) = (a.concurrent as usize, a.total as usize);
    let c1 = a.c1.as_deref().map(porep_c2::read_c1_json).transpose()?;
    let size = c1.as_ref().map(|c| u64::from(c.registered_proof.sector_size()));
    let mut config = a.prover.section(size).prover_config()?;
    config.verify = !a.no_verify;
    if let Some(gb) = a.host_budget_gb {
        config.pipeline.host_budget = Some(porep_c2::HostBudget::new((gb * 1e9) as usize));
        config.pipeline.item_bytes = (a.partition_gb * 1e9) as usize;
    }
    config.randomness = Randomness::Os;
    let expected = a.synthetic.then_some(total * a.partitions);
    let bar = match expected {
        Some(n) => crate::progress_bar(n as u64, "{elapsed_precise} [{bar:30}] {pos}/{len} partitions"),
        None => crate::progress_bar(0, "{elapsed_precise} {pos} partition(s) proved"),
    };
    if let Some(b) = &bar {
        let b = b.clone();
        config.progress = Some(porep_c2::Progress::new(move |_| b.inc(1)));
    }
    if a.synthetic {
        // Random parameters: verification would fail by design.
        config.verify = false;
        config.check_vanilla_proofs = false;
    }
    let preload = |id: &str, params: &bellperson::groth16::Parameters<blstrs::Bls12>| -> Result<()> {
        let t = Instant::now();
        let n = config.backend.preload(id, params).context("preloading the parameters")?;
        log::info!("parameters resident for {n} worker(s) in {:.1?} (before the clock starts)", t.elapsed());
        Ok(())
    };

    // The job: a real C1 output, the synthetic shape, or the tiny sector.
    let mut held = None;
    let (sector, job): (String, Job) = if a.synthetic {
        use c2_testkit::synthetic::{SyntheticPorep, SyntheticShape};
        let shape = SyntheticShape::porep_32gib().scaled(a.scale);
        let instance = SyntheticPorep::new(shape.clone(), a.partitions);
        let t = Instant::now();
        let params = instance.parameters(1);
        log::warn!(
            "synthetic: random parameters built in {:.1?}; {:.1} GB of host vectors per partition (TIMING ONLY: proofs do not verify)",
            t.elapsed(),
            shape.host_bytes() as f64 / 1e9
        );
        if a.preload {
            preload(porep_c2::ProofInstance::parameter_id(&instance), &params)?;
        }
        let mut config = config.clone();
        // Admission before a partition exists: its known size, not the
        // facade's estimate (none for a shape without matrices, so the
        // first partitions of every proof in flight would all be admitted).
        if config.pipeline.item_bytes == 0 {
            config.pipeline.item_bytes = shape.host_bytes();
        }
        let blinding = vec![(blstrs::Scalar::from(3u64), blstrs::Scalar::from(5u64)); a.partitions];
        let name = format!(
            "synthetic 32 GiB-shaped 1/{}: {} partitions of {} constraints, {} aux (timing only)",
            a.scale, a.partitions, shape.constraints, shape.aux
        );
        (name, Box::new(move || prove_instance(&instance, &params, &blinding, &config).map(|(_, r)| r)))
    } else if let (Some(path), Some(c1)) = (&a.c1, c1) {
        let prover_id = a.sector.prover_id()?;
        let Some(sector_id) = a.sector.sector_id else { bail!("give --sector-id with --c1") };
        if a.preload {
            let instance = porep_c2::instance_from_c1(&c1, prover_id, sector_id)?;
            let id = instance.parameter_id().to_string();
            let params = config.params_cache.load(&config.params, &id)?;
            preload(&id, &params)?;
            // Held for the run: the cache keeps a set only while someone does.
            held = Some(params);
            // A long-lived process records the shape's matrices once (the
            // daemon on its first proof): before the clock, as the steady state.
            if config.synthesis == porep_c2::SynthesisPath::Recorded {
                let t = Instant::now();
                config.matrices.get(instance.as_ref(), None)?;
                log::info!("constraint matrices recorded in {:.1?} (before the clock starts)", t.elapsed());
            }
        }
        let name = format!("{} ({:?})", path.display(), c1.registered_proof);
        let config = config.clone();
        (name, Box::new(move || prove_porep_c2_with_report(&c1, prover_id, sector_id.into(), &config).map(|(_, r)| r)))
    } else {
        let tiny = demo::TinyConfig::default();
        let instance = demo::tiny_instance(&tiny)?;
        let dir = demo::tiny_params_dir();
        let t = Instant::now();
        let (params, generated) = demo::ensure_parameters(&instance, &dir, demo::TINY_PARAMS_SEED)?;
        log::info!("tiny sector parameters {} in {:.1?}", if generated { "generated" } else { "loaded" }, t.elapsed());
        let partitions = porep_c2::ProofInstance::num_partitions(&instance);
        if a.preload {
            preload(porep_c2::ProofInstance::parameter_id(&instance), &params)?;
        }
        let config = config.clone();
        let job: Job = Box::new(move || {
            let blinding = porep_c2::blinding_pairs(&config.randomness, partitions)?;
            prove_instance(&instance, &params, &blinding, &config).map(|(_, r)| r)
        });
        (format!("tiny StackedDrg ({} nodes, {partitions} partition(s))", tiny.nodes), job)
    };
    log::info!("bench: {sector}, {total} proof(s), {concurrent} in flight, backend {:?}", config.backend);

    let (next, done, start) = (AtomicUsize::new(0), AtomicUsize::new(0), Instant::now());
    let job = Arc::new(job);
    let results: Vec<Result<ProofRun>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..concurrent.min(total))
            .map(|_| {
                let (job, next, done, bar) = (job.clone(), &next, &done, &bar);
                s.spawn(move || {
                    let mut mine = Vec::new();
                    loop {
                        let index = next.fetch_add(1, Ordering::SeqCst);
                        if index >= total {
                            break mine;
                        }
                        let t = Instant::now();
                        let report = match job() {
                            Ok(r) => r,
                            Err(e) => {
                                // The others stop taking new proofs.
                                next.store(total, Ordering::SeqCst);
                                mine.push(Err(anyhow::Error::new(e).context(format!("proof {index}"))));
                                break mine;
                            }
                        };
                        let wall_s = t.elapsed().as_secs_f64();
                        let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                        let line = |l: String| match bar {
                            Some(b) => b.println(l),
                            None => eprintln!("{l}"),
                        };
                        for p in &report.partitions {
                            line(format!("  {}", p.timeline()));
                        }
                        line(format!(
                            "[{n}/{total}] proof {index}: {wall_s:.2} s ({} partition(s){}); {:.1} s elapsed",
                            report.partitions.len(),
                            if config.verify { ", verified" } else { "" },
                            start.elapsed().as_secs_f64()
                        ));
                        mine.push(Ok(ProofRun { index, wall_s, report }));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|_| vec![Err(anyhow::anyhow!("a bench worker panicked"))]))
            .collect()
    });
    let wall_s = start.elapsed().as_secs_f64();
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    drop(held);
    let mut runs = results.into_iter().collect::<Result<Vec<_>>>()?;
    runs.sort_by_key(|r| r.index);

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
    if let Some(path) = a.json {
        std::fs::write(&path, serde_json::to_vec_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
        log::info!("wrote {}", path.display());
    }
    Ok(())
}
