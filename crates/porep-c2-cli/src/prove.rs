//! `porep-c2 prove`: one sector's C1 output to its proof.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use porep_c2::{prove_porep_c2_with_report, C1Input, Progress, SealCommitPhase2Output};

use crate::{progress_bar, SectorArgs};

/// How the proof is written.
#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    /// filecoin-proofs' `SealCommitPhase2Output` JSON: `{"proof":[...]}`.
    Json,
    /// The proof bytes as hex.
    Hex,
    /// The proof bytes (192 per partition).
    Raw,
}

/// `porep-c2 prove`.
#[derive(Args)]
pub struct ProveArgs {
    /// The C1 output (filecoin-proofs-api JSON, as Lotus and Curio write
    /// it) or lotus-bench's `Commit2In` file; `-` reads stdin.
    input: PathBuf,
    /// Whose sector (`--sector-id` defaults to a `Commit2In` file's `SectorNum`).
    #[command(flatten)]
    sector: SectorArgs,
    /// Where to write the proof (default: stdout).
    #[arg(long, short)]
    out: Option<PathBuf>,
    /// How to write it.
    #[arg(long, value_enum, default_value = "json")]
    format: Format,
    #[command(flatten)]
    options: crate::ProveOptions,
}

/// The input file (or stdin) as raw C1 JSON or the envelope, its sector
/// fields checked against the C1 output and `--sector-id`.
pub fn read_input(path: &PathBuf, sector_id: Option<u64>) -> Result<C1Input> {
    let bytes = if path.as_os_str() == "-" {
        let mut b = Vec::new();
        std::io::stdin().read_to_end(&mut b).context("reading stdin")?;
        b
    } else {
        std::fs::read(path).with_context(|| format!("reading {}", path.display()))?
    };
    let input = C1Input::parse(&bytes)?;
    input.check_sector(sector_id, None)?;
    Ok(input)
}

/// Runs `porep-c2 prove`.
pub fn run(a: ProveArgs) -> Result<()> {
    let input = read_input(&a.input, a.sector.sector_id)?;
    let prover_id = a.sector.prover_id()?;
    let Some(sector_id) = a.sector.sector_id.or(input.sector_number()) else { bail!("give --sector-id") };
    let c1 = input.c1;
    let mut config = a.options.config(Some(u64::from(c1.registered_proof.sector_size())))?;
    let partitions = c1.registered_proof.partitions() as u64;
    let bar = progress_bar(partitions, "{elapsed_precise} [{bar:30}] {pos}/{len} partitions");
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
