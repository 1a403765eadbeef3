//! `porep-c2 check-params`: parameter files against filecoin-proofs'
//! manifest of blake2b digests.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args;
use porep_c2::params_check::{FileStatus, ParameterManifest};
use porep_c2::ParamsSource;

use crate::progress_bar;

/// `porep-c2 check-params`.
#[derive(Args)]
pub struct CheckParamsArgs {
    /// The parameter folder (default: `FIL_PROOFS_PARAMETER_CACHE`, else
    /// filecoin-proofs' default folder).
    #[arg(long)]
    params_dir: Option<PathBuf>,
    /// Only the files for these sector sizes (2KiB, 8MiB, 512MiB, 32GiB,
    /// 64GiB; comma-separated). Then a missing file is an error too.
    #[arg(long, value_delimiter = ',', value_parser = parse_bytes)]
    sector_size: Vec<u64>,
    /// Only PoRep files (`stacked-proof-of-replication`), not PoSt,
    /// SnapDeals or the aggregation SRS.
    #[arg(long)]
    porep_only: bool,
}

fn parse_bytes(s: &str) -> Result<u64, String> {
    c2_testkit::cli::parse_sector_size(s)
        .map(|rp| u64::from(rp.sector_size()))
        .ok_or_else(|| format!("{s:?}: expected 2KiB, 8MiB, 512MiB, 32GiB or 64GiB"))
}

/// Runs `porep-c2 check-params`: a line per file, a summary, and exit
/// status 1 when a file is mismatched or unreadable (or, with
/// `--sector-size`, missing).
pub fn run(a: CheckParamsArgs) -> Result<()> {
    let dir = match a.params_dir {
        Some(d) => d,
        None => {
            let ParamsSource::CacheDir(d) = ParamsSource::from_env() else { bail!("give --params-dir") };
            d
        }
    };
    let manifest = ParameterManifest::production();
    let select = |e: &porep_c2::params_check::ManifestEntry| {
        (a.sector_size.is_empty() || a.sector_size.contains(&e.sector_size))
            && (!a.porep_only || e.name.contains("stacked-proof-of-replication"))
    };
    let present: u64 = manifest
        .entries()
        .filter(|e| select(e))
        .filter_map(|e| std::fs::metadata(dir.join(&e.name)).ok())
        .map(|m| m.len())
        .sum();
    log::info!("checking {} ({:.1} GB to hash)", dir.display(), present as f64 / 1e9);
    let bar = progress_bar(present, "{elapsed_precise} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}");
    let read = AtomicU64::new(0);
    let t = Instant::now();
    let reports = manifest.check_dir(&dir, &select, &|n| {
        read.fetch_add(n, Ordering::Relaxed);
        if let Some(b) = &bar {
            b.inc(n);
        }
    })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut counts = [0usize; 5];
    for r in &reports {
        let (i, word, detail) = match &r.status {
            FileStatus::Valid => (0, "valid", String::new()),
            FileStatus::Missing => (1, "MISSING", String::new()),
            FileStatus::Mismatched { digest } => {
                let want = r.entry.as_ref().map_or("", |e| e.digest.as_str());
                (2, "MISMATCH", format!(" (blake2b {digest}, parameters.json {want})"))
            }
            FileStatus::Unreadable(why) => (3, "UNREADABLE", format!(" ({why})")),
            FileStatus::Unknown => (4, "unknown", " (not in parameters.json)".to_string()),
        };
        counts[i] += 1;
        let size = match &r.entry {
            Some(e) if e.sector_size > 0 => format!(" [{} B sectors]", e.sector_size),
            Some(_) => " [every sector size]".to_string(),
            None => String::new(),
        };
        println!("{word:>10}  {}{size}{detail}", r.name);
    }
    println!(
        "{} valid, {} missing, {} mismatched, {} unreadable, {} unknown; {:.1} GB hashed in {:.1} s",
        counts[0],
        counts[1],
        counts[2],
        counts[3],
        counts[4],
        read.load(Ordering::Relaxed) as f64 / 1e9,
        t.elapsed().as_secs_f64()
    );
    if counts[2] + counts[3] > 0 {
        bail!("{} parameter file(s) do not match filecoin-proofs' digests", counts[2] + counts[3]);
    }
    if !a.sector_size.is_empty() && counts[1] > 0 {
        bail!("{} parameter file(s) for the sizes asked for are missing", counts[1]);
    }
    Ok(())
}
