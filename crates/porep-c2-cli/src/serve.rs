//! `porep-c2 serve`: the cuzk.v1 gRPC daemon.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use porep_c2_service::{serve_with, Engine, FilecoinEngine, Jobs, Metrics, ServiceConfig};

/// `porep-c2 serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// The configuration file (TOML; see `--print-config`).
    #[arg(long, short, env = "POREP_C2_CONFIG")]
    config: Option<PathBuf>,
    /// Where to listen (overrides the file): `unix:///path.sock` or `host:port`.
    #[arg(long)]
    listen: Option<String>,
    /// Device memory per device, GiB (overrides the file).
    #[arg(long, env = "POREP_C2_VRAM_CAP_GIB")]
    vram_cap: Option<usize>,
    /// Folder of the parameter files (overrides the file).
    #[arg(long)]
    params_dir: Option<PathBuf>,
    /// `auto`, `gpu` or `cpu` (overrides the file).
    #[arg(long, value_parser = ["auto", "gpu", "cpu"])]
    backend: Option<String>,
    /// Seconds a GPU stays fenced after a device fault (overrides the file).
    #[arg(long)]
    fence_secs: Option<u64>,
    /// Fail a proof instead of proving on the CPU when no GPU can
    /// (`retry_on_cpu = false`; overrides the file).
    #[arg(long)]
    no_cpu_retry: bool,
    /// Print the configuration (defaults with the file and flags applied) and exit.
    #[arg(long)]
    print_config: bool,
    /// TIMING ONLY, never for a node: answer every PoRep request with a
    /// proof of synthetic 32 GiB-shaped partitions over random parameters
    /// (they do not verify), to measure the service at the 32 GiB shape
    /// with `porep-c2 bench --daemon --synthetic`.
    #[arg(long)]
    synthetic_timing_only: bool,
    /// With `--synthetic-timing-only`: the shape's divisor.
    #[arg(long, default_value_t = 1, requires = "synthetic_timing_only")]
    scale: usize,
    /// With `--synthetic-timing-only`: partitions per proof.
    #[arg(long, default_value_t = 10, requires = "synthetic_timing_only")]
    partitions: usize,
    /// A FAULT DRILL, never for production proving: `DEVICE:FROM[:FAULTS]`
    /// makes that GPU's workers fail from their partition FROM on (FAULTS
    /// times; without: every one, a dead device), to watch the fallback:
    /// the device fenced for `fence_secs`, its partitions on the other GPUs
    /// or the CPU, no proof lost, `porep_c2_worker_healthy` at 0.
    #[arg(long, value_parser = porep_c2::FaultDrill::parse, conflicts_with = "synthetic_timing_only")]
    fault_drill: Option<porep_c2::FaultDrill>,
}

/// Runs `porep-c2 serve` until SIGTERM or Ctrl-C, then drains.
pub fn run(a: ServeArgs) -> Result<()> {
    let mut config = match &a.config {
        Some(p) => ServiceConfig::read(p)?,
        None => ServiceConfig::default(),
    };
    if let Some(l) = a.listen {
        config.server.listen = l;
    }
    if let Some(c) = a.vram_cap {
        config.prover.vram_cap_gib = c;
    }
    if let Some(d) = a.params_dir {
        config.prover.params_dir = d;
    }
    if let Some(b) = a.backend {
        config.prover.backend = b;
    }
    if let Some(f) = a.fence_secs {
        config.prover.fence_secs = f;
    }
    if a.no_cpu_retry {
        config.prover.retry_on_cpu = false;
    }
    config.check()?;
    if a.print_config {
        print!("{}", config.to_toml());
        return Ok(());
    }
    let options = config.server.serve_options()?;
    let engine: Arc<dyn Engine> = if a.synthetic_timing_only {
        let engine =
            crate::synthetic_engine::SyntheticEngine::new(a.scale, a.partitions, config.prover.prover_config()?);
        engine.preload("")?;
        Arc::new(engine)
    } else {
        let mut prover = config.prover.prover_config()?;
        if let Some(drill) = a.fault_drill {
            prover.backend = prover.backend.with_fault_drill(drill).0;
        }
        let engine = FilecoinEngine::new(prover);
        Arc::new(match config.jobs.host_lanes()? {
            Some(lanes) => engine.with_host_lanes(lanes),
            None => engine,
        })
    };
    for id in &config.prover.preload {
        let t = Instant::now();
        engine.preload(id).with_context(|| format!("preloading {id}"))?;
        log::info!("porep-c2: {id} ready in {:.1} s", t.elapsed().as_secs_f64());
    }
    let jobs = Jobs::start(engine, config.jobs.jobs_config(), Arc::new(Metrics::default()));
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async {
        let shutdown = async {
            let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(e) => {
                    log::error!("porep-c2: no SIGTERM handler ({e}); stop with Ctrl-C");
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        };
        serve_with(&options, jobs, shutdown, || {}).await
    })?;
    Ok(())
}
