//! `porep-c2`: prove a sector's C1 output (commit phase 2) by hand, or serve
//! Curio's cuzk.v1 proving protocol.
//!
//! ```text
//! porep-c2 prove c1.json --miner f01000 --sector-id 7 --out proof.json
//! porep-c2 prove commit2-in.json --miner t01000           # lotus-bench's Commit2In
//! porep-c2 serve --config /etc/porep-c2.toml               # Curio: [Cuzk] Address
//! porep-c2 serve --print-config                            # the defaults, documented
//! ```
//! Logs go to stderr (`RUST_LOG`, default `info`); errors are printed with
//! their causes and exit with status 1 (2 for bad arguments).

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use base64::Engine as _;
use clap::{Args, Parser, Subcommand, ValueEnum};
use porep_c2::{parse_c1_json, prove_porep_c2_with_report, Progress, Randomness, SealCommitPhase2Output};
use porep_c2_service::config::ProverSection;
use porep_c2_service::{prover_id_from_actor, serve, Jobs, Listen, Metrics, PorepEngine, ServiceConfig};

/// Filecoin PoRep commit phase 2 (C2) on the GPU, bit-identical to
/// filecoin-proofs.
#[derive(Parser)]
#[command(name = "porep-c2", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Prove one sector's C1 output and write the proof.
    Prove(ProveArgs),
    /// Serve the cuzk.v1 gRPC protocol (what Curio's `[Cuzk] Address` points at).
    Serve(ServeArgs),
}

/// How the proof is written.
#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// filecoin-proofs' `SealCommitPhase2Output` JSON: `{"proof":[...]}`.
    Json,
    /// The proof bytes as hex.
    Hex,
    /// The proof bytes (192 per partition).
    Raw,
}

/// The prover's settings shared by `prove` and `serve`.
#[derive(Args, Clone)]
struct ProverArgs {
    /// `auto` (the GPUs when a device answers, else the CPU), `gpu` or `cpu`.
    #[arg(long, default_value = "auto", value_parser = ["auto", "gpu", "cpu"])]
    backend: String,
    /// Device ordinals (comma-separated); default every device
    /// (`CUDA_VISIBLE_DEVICES` applies as usual).
    #[arg(long, value_delimiter = ',')]
    devices: Vec<usize>,
    /// Device memory to use per device, GiB (0: all free memory but 2 GiB).
    #[arg(long, default_value_t = 0, env = "POREP_C2_VRAM_CAP_GIB")]
    vram_cap: usize,
    /// GPU workers per device.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Folder of the parameter files (default: `FIL_PROOFS_PARAMETER_CACHE`,
    /// else filecoin-proofs' default folder).
    #[arg(long)]
    params_dir: Option<PathBuf>,
}

impl ProverArgs {
    fn section(&self) -> ProverSection {
        ProverSection {
            backend: self.backend.clone(),
            devices: self.devices.clone(),
            vram_cap_gib: self.vram_cap,
            workers_per_device: self.workers,
            params_dir: self.params_dir.clone().unwrap_or_default(),
            ..ProverSection::default()
        }
    }
}

#[derive(Args)]
struct ProveArgs {
    /// The C1 output (filecoin-proofs-api JSON, as Lotus and Curio write
    /// it) or lotus-bench's `Commit2In` file; `-` reads stdin.
    input: PathBuf,
    /// The miner (`f01000`, `t01000` or the actor id): the prover id is
    /// derived from it as filecoin-ffi does.
    #[arg(long, conflicts_with = "prover_id")]
    miner: Option<String>,
    /// The prover id as 64 hex digits (instead of `--miner`).
    #[arg(long)]
    prover_id: Option<String>,
    /// The sector number (default: a `Commit2In` file's `SectorNum`).
    #[arg(long)]
    sector_id: Option<u64>,
    /// Where to write the proof (default: stdout).
    #[arg(long, short)]
    out: Option<PathBuf>,
    /// How to write it.
    #[arg(long, value_enum, default_value = "json")]
    format: Format,
    /// Blinding factors from this seed instead of the OS RNG: reproducible
    /// bytes for tests and audits, never for proofs you submit.
    #[arg(long)]
    seed: Option<u64>,
    /// Skip the verification of the proof (filecoin-proofs always verifies).
    #[arg(long)]
    no_verify: bool,
    #[command(flatten)]
    prover: ProverArgs,
}

#[derive(Args)]
struct ServeArgs {
    /// The configuration file (TOML; see `--print-config`).
    #[arg(long, short, env = "POREP_C2_CONFIG")]
    config: Option<PathBuf>,
    /// Where to listen (overrides the file): `unix:///path.sock` or `host:port`.
    #[arg(long)]
    listen: Option<String>,
    /// Device memory per device, GiB (overrides the file).
    #[arg(long, env = "POREP_C2_VRAM_CAP_GIB")]
    vram_cap: Option<usize>,
    /// Print the configuration (defaults with the file and flags applied) and exit.
    #[arg(long)]
    print_config: bool,
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Prove(a) => prove(a),
        Command::Serve(a) => serve_cmd(a),
    };
    if let Err(e) = result {
        eprintln!("porep-c2: error: {e:#}");
        std::process::exit(1);
    }
}

/// The actor id of `f01000`, `t01000` or `1000`.
fn actor_id(miner: &str) -> Result<u64> {
    let digits = miner.strip_prefix("f0").or_else(|| miner.strip_prefix("t0")).unwrap_or(miner);
    digits.parse().with_context(|| format!("--miner {miner:?}: expected f0<id>, t0<id> or an actor id"))
}

/// lotus-bench's `Commit2In`.
#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Commit2In {
    sector_num: u64,
    phase1_out: String,
    #[allow(dead_code)]
    sector_size: u64,
}

/// The C1 JSON and, from a `Commit2In`, the sector number.
fn read_input(path: &PathBuf) -> Result<(Vec<u8>, Option<u64>)> {
    let bytes = if path.as_os_str() == "-" {
        let mut b = Vec::new();
        std::io::stdin().read_to_end(&mut b).context("reading stdin")?;
        b
    } else {
        std::fs::read(path).with_context(|| format!("reading {}", path.display()))?
    };
    // A Commit2In has a Phase1Out key; a C1 output has registered_proof.
    if let Ok(c2in) = serde_json::from_slice::<Commit2In>(&bytes) {
        let c1 = base64::engine::general_purpose::STANDARD
            .decode(c2in.phase1_out.trim())
            .context("Commit2In.Phase1Out is not base64")?;
        return Ok((c1, Some(c2in.sector_num)));
    }
    Ok((bytes, None))
}

fn prove(a: ProveArgs) -> Result<()> {
    let (json, sector_num) = read_input(&a.input)?;
    let c1 = parse_c1_json(&json)?;
    let prover_id: [u8; 32] = match (&a.miner, &a.prover_id) {
        (Some(m), _) => prover_id_from_actor(actor_id(m)?),
        (None, Some(h)) => hex::decode(h.trim_start_matches("0x"))
            .ok()
            .and_then(|v| v.try_into().ok())
            .with_context(|| format!("--prover-id {h:?}: expected 32 bytes of hex"))?,
        (None, None) => bail!("give --miner (f0<id>) or --prover-id (64 hex digits)"),
    };
    let Some(sector_id) = a.sector_id.or(sector_num) else { bail!("give --sector-id") };
    let mut config = a.prover.section().prover_config()?;
    config.verify = !a.no_verify;
    if let Some(seed) = a.seed {
        let mut s = [0u8; 32];
        s[..8].copy_from_slice(&seed.to_le_bytes());
        config.randomness = Randomness::Seed(s);
    }
    let partitions = c1.registered_proof.partitions() as u64;
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(partitions);
        b.set_style(
            indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} partitions")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    if let Some(b) = &bar {
        let b = b.clone();
        config.progress = Some(Progress::new(move |_| b.inc(1)));
    }
    let t = Instant::now();
    let (out, report) = prove_porep_c2_with_report(&c1, prover_id, sector_id.into(), &config)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    log::info!(
        "{:?} sector {sector_id}: {} partitions proved in {:.1} s ({}; parameters {:.1} s, verified: {}, retried: {})",
        c1.registered_proof,
        report.partitions.len(),
        t.elapsed().as_secs_f64(),
        report.backend,
        report.load_params.as_secs_f64(),
        config.verify,
        report.retries()
    );
    let bytes = match a.format {
        Format::Json => serde_json::to_vec(&SealCommitPhase2Output { proof: out.proof })?,
        Format::Hex => hex::encode(&out.proof).into_bytes(),
        Format::Raw => out.proof,
    };
    match &a.out {
        Some(p) => std::fs::write(p, &bytes).with_context(|| format!("writing {}", p.display()))?,
        None => {
            let mut o = std::io::stdout().lock();
            o.write_all(&bytes)?;
            if !matches!(a.format, Format::Raw) {
                o.write_all(b"\n")?;
            }
        }
    }
    Ok(())
}

fn serve_cmd(a: ServeArgs) -> Result<()> {
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
    config.check()?;
    if a.print_config {
        print!("{}", config.to_toml());
        return Ok(());
    }
    let listen = Listen::parse(&config.server.listen).map_err(anyhow::Error::msg)?;
    let engine = std::sync::Arc::new(PorepEngine::new(config.prover.prover_config()?));
    for id in &config.prover.preload {
        use porep_c2_service::Engine;
        let t = Instant::now();
        engine.preload(id).with_context(|| format!("preloading {id}"))?;
        log::info!("porep-c2: {id} ready in {:.1} s", t.elapsed().as_secs_f64());
    }
    let jobs = Jobs::start(engine, config.jobs.jobs_config(), std::sync::Arc::new(Metrics::default()));
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
        serve(&listen, jobs, config.server.max_message_bytes, shutdown, || {}).await
    })?;
    Ok(())
}
