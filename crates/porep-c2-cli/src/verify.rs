//! `porep-c2 verify`: checks a proof (from `prove`, a daemon, or any C2
//! prover) against the sector's C1 output with the verifying key, as a
//! node does before it submits the proof.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use porep_c2::{verify_porep_c2, ParamsSource, SealCommitPhase2Output};

use crate::SectorArgs;

/// `porep-c2 verify`.
#[derive(Args)]
pub struct VerifyArgs {
    /// The sector's C1 output (raw JSON, Curio's envelope or lotus-bench's
    /// `Commit2In`).
    c1: PathBuf,
    /// The proof: filecoin-proofs' JSON (`{"proof":[...]}`), hex, or raw
    /// bytes (192 per partition).
    proof: PathBuf,
    /// Whose sector (`--sector-id` defaults to the envelope's `SectorNum`).
    #[command(flatten)]
    sector: SectorArgs,
    /// Folder of the verifying keys (default: `FIL_PROOFS_PARAMETER_CACHE`,
    /// else filecoin-proofs' default folder).
    #[arg(long)]
    params_dir: Option<PathBuf>,
}

/// The proof bytes of a file in any of `prove`'s formats.
fn read_proof(path: &PathBuf) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if let Ok(json) = serde_json::from_slice::<SealCommitPhase2Output>(&bytes) {
        return Ok(json.proof);
    }
    let text = String::from_utf8_lossy(&bytes);
    if let Ok(raw) = hex::decode(text.trim()) {
        return Ok(raw);
    }
    Ok(bytes)
}

/// Runs `porep-c2 verify`: exit 0 when every partition verifies.
pub fn run(a: VerifyArgs) -> Result<()> {
    let input = crate::prove::read_input(&a.c1, a.sector.sector_id)?;
    let Some(sector_id) = a.sector.sector_id.or(input.sector_number()) else { bail!("give --sector-id") };
    let prover_id = a.sector.prover_id()?;
    let proof = read_proof(&a.proof)?;
    let params = match a.params_dir {
        Some(d) => ParamsSource::CacheDir(d),
        None => ParamsSource::from_env(),
    };
    verify_porep_c2(&input.c1, prover_id, sector_id.into(), &proof, &params)?;
    println!("verified: {} partition(s) of {:?} sector {sector_id}", proof.len() / 192, input.c1.registered_proof);
    Ok(())
}
