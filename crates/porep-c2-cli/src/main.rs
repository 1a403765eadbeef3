//! `porep-c2`: prove a sector's C1 output (commit phase 2) by hand, measure
//! throughput, make test sectors, check parameter files, or serve Curio's
//! cuzk.v1 proving protocol.
//!
//! ```text
//! porep-c2 prove c1.json --miner f01000 --sector-id 7 --out proof.json
//! porep-c2 prove commit2-in.json --miner t01000           # lotus-bench's Commit2In / Curio's envelope
//! porep-c2 verify c1.json proof.json --miner f01000 --sector-id 7
//! porep-c2 bench --c1 c1.json --miner f01000 --sector-id 7 -c 4 -j 16
//! porep-c2 bench --daemon unix:///run/curio/cuzk.sock --c1 c1.json --miner f01000 --sector-id 7 -c 4 -j 16
//! porep-c2 make-c1 --sector-size 32GiB --cc --miner f01000 --out c1.json
//! porep-c2 check-params --sector-size 32GiB              # blake2b digests vs parameters.json
//! porep-c2 serve --config /etc/porep-c2.toml               # Curio: [Cuzk] Address
//! porep-c2 serve --print-config                            # the defaults, documented
//! ```
//! Logs go to stderr (`RUST_LOG`, default `info`); errors are printed with
//! their causes and exit with status 1 (2 for bad arguments).

mod bench;
mod check_params;
mod daemon_bench;
mod make_c1;
mod post;
mod prove;
mod serve;
mod synthetic_engine;
mod update;
mod verify;

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use porep_c2_service::config::ProverSection;
use porep_c2_service::{prover_id_from_actor, Circuit, ProofKind};

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
    Prove(prove::ProveArgs),
    /// Prove many sectors with several in flight and report seconds per
    /// proof and GPU busy time (in this process, or through a daemon).
    Bench(bench::BenchArgs),
    /// Make a sector's C1 output: seal random data with filecoin-proofs'
    /// PC1, PC2 and C1, or (`--cc`) a committed-capacity test sector of any
    /// size in seconds.
    #[command(name = "make-c1")]
    MakeC1(make_c1::MakeC1Args),
    /// Check parameter files against filecoin-proofs' parameters.json
    /// (blake2b digests): valid, missing, mismatched and unknown files.
    #[command(name = "check-params")]
    CheckParams(check_params::CheckParamsArgs),
    /// Serve the cuzk.v1 gRPC protocol (what Curio's `[Cuzk] Address` points at).
    Serve(serve::ServeArgs),
    /// Verify a proof against the sector's C1 output and the verifying key.
    Verify(verify::VerifyArgs),
    /// Prove a WindowPoSt partition or a WinningPoSt from a request file
    /// (the fields Curio sends: registered proof, miner, randomness,
    /// partition, bincode vanilla proofs as base64).
    ProvePost(post::ProveFileArgs),
    /// Make a PoSt request file: seal sectors with filecoin-proofs and write
    /// their vanilla proofs (filecoin-proofs' challenge and vanilla-proof
    /// functions), optionally with random parameters for the circuit.
    MakePost(post::MakePostArgs),
    /// Prove a SnapDeals sector update from a request file (the fields
    /// Curio sends: registered update proof, the three commitments, bincode
    /// partition proofs as base64).
    ProveUpdate(post::ProveFileArgs),
    /// Make an update request file: seal a sector with filecoin-proofs,
    /// encode new data into it and write its partition vanilla proofs,
    /// optionally with random parameters for the circuit.
    MakeUpdate(update::MakeUpdateArgs),
}

/// The prover's settings shared by `prove`, `bench` and `serve`.
#[derive(Args, Clone)]
struct ProverArgs {
    /// `auto` (the GPUs when a device answers, else the CPU), `gpu` or `cpu`.
    #[arg(long, default_value = "auto", value_parser = ["auto", "gpu", "cpu"])]
    backend: String,
    /// Device ordinals (comma-separated); default every device
    /// (`CUDA_VISIBLE_DEVICES` applies as usual).
    #[arg(long, value_delimiter = ',')]
    devices: Vec<usize>,
    /// Device memory to use per device, GiB (0: what the workers and the
    /// sector size's parameters need, sized by the planner).
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
    /// The prover's settings, device memory sized for sectors of
    /// `sector_size` bytes when known (else for 32 GiB).
    fn section(&self, sector_size: Option<u64>) -> ProverSection {
        let circuit = sector_size
            .filter(|b| Circuit::all().iter().any(|c| c.sector_size == *b))
            .map(|sector_size| Circuit { kind: ProofKind::PorepSealCommit, sector_size }.id());
        ProverSection {
            backend: self.backend.clone(),
            devices: self.devices.clone(),
            vram_cap_gib: self.vram_cap,
            workers_per_device: self.workers,
            params_dir: self.params_dir.clone().unwrap_or_default(),
            circuits: circuit.into_iter().collect(),
            ..ProverSection::default()
        }
    }
}

/// What `prove` and `prove-post` share: the prover's settings, the
/// blinding seed, verification.
#[derive(Args)]
struct ProveOptions {
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

impl ProveOptions {
    /// The configuration for one proof of a sector of `sector_size` bytes
    /// (when known): the default synthesis path (matrices only where they
    /// pay within one proof), verification unless `--no-verify`, blinding
    /// from `--seed`.
    fn config(&self, sector_size: Option<u64>) -> Result<porep_c2::ProverConfig> {
        let mut config = self.prover.section(sector_size).prover_config()?;
        config.synthesis = porep_c2::SynthesisPath::Auto;
        config.verify = !self.no_verify;
        if let Some(seed) = self.seed {
            let mut s = [0u8; 32];
            s[..8].copy_from_slice(&seed.to_le_bytes());
            config.randomness = porep_c2::Randomness::Seed(s);
        }
        Ok(config)
    }
}

/// Whose sector: the prover id (from the miner's actor id, as filecoin-ffi
/// derives it, or given) and the sector number.
#[derive(Args, Clone, Default)]
struct SectorArgs {
    /// The miner (`f01000`, `t01000` or the actor id): the prover id is
    /// derived from it as filecoin-ffi does.
    #[arg(long, conflicts_with = "prover_id")]
    miner: Option<String>,
    /// The prover id as 64 hex digits (instead of `--miner`).
    #[arg(long)]
    prover_id: Option<String>,
    /// The sector number.
    #[arg(long)]
    sector_id: Option<u64>,
}

impl SectorArgs {
    /// The miner's actor id, when given.
    fn actor(&self) -> Result<Option<u64>> {
        self.miner.as_deref().map(actor_id).transpose()
    }

    /// The prover id: from `--miner` or `--prover-id`.
    fn prover_id(&self) -> Result<[u8; 32]> {
        match (self.actor()?, &self.prover_id) {
            (Some(actor), _) => Ok(prover_id_from_actor(actor)),
            (None, Some(h)) => hex::decode(h.trim_start_matches("0x"))
                .ok()
                .and_then(|v| v.try_into().ok())
                .with_context(|| format!("--prover-id {h:?}: expected 32 bytes of hex")),
            (None, None) => bail!("give --miner (f0<id>) or --prover-id (64 hex digits)"),
        }
    }
}

/// The actor id of `f01000`, `t01000` or `1000`.
fn actor_id(miner: &str) -> Result<u64> {
    let digits = miner.strip_prefix("f0").or_else(|| miner.strip_prefix("t0")).unwrap_or(miner);
    digits.parse().with_context(|| format!("--miner {miner:?}: expected f0<id>, t0<id> or an actor id"))
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Prove(a) => prove::run(a),
        Command::Bench(a) => bench::run(a),
        Command::MakeC1(a) => make_c1::run(a),
        Command::CheckParams(a) => check_params::run(a),
        Command::Serve(a) => serve::run(a),
        Command::Verify(a) => verify::run(a),
        Command::ProvePost(a) => post::run_prove(a),
        Command::MakePost(a) => post::run_make(a),
        Command::ProveUpdate(a) => update::run_prove(a),
        Command::MakeUpdate(a) => update::run_make(a),
    };
    if let Err(e) = result {
        eprintln!("porep-c2: error: {e:#}");
        std::process::exit(1);
    }
}

/// A progress bar on a terminal (none when stderr is not one).
fn progress_bar(len: u64, template: &str) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(len);
        b.set_style(
            indicatif::ProgressStyle::with_template(template)
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn miners_name_actor_ids() {
        assert_eq!(actor_id("f01000").unwrap(), 1000);
        assert_eq!(actor_id("t01000").unwrap(), 1000);
        assert_eq!(actor_id("42").unwrap(), 42);
        assert!(actor_id("f1abc").is_err());
        let s = SectorArgs { miner: Some("f01000".into()), ..Default::default() };
        assert_eq!(s.prover_id().unwrap(), prover_id_from_actor(1000));
        let hex_id = SectorArgs { prover_id: Some(format!("0x{}", "ab".repeat(32))), ..Default::default() };
        assert_eq!(hex_id.prover_id().unwrap(), [0xab; 32]);
        assert!(SectorArgs { prover_id: Some("abcd".into()), ..Default::default() }.prover_id().is_err());
        assert!(SectorArgs::default().prover_id().is_err());
    }

    #[test]
    fn every_subcommand_parses_its_help() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
