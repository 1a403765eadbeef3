//! `porep-c2 make-c1`: a sector's C1 output for tests and benchmarks.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use c2_testkit::demo;
use clap::Args;
use filecoin_proofs_api::RegisteredSealProof;

use crate::SectorArgs;

/// `porep-c2 make-c1`.
#[derive(Args)]
pub struct MakeC1Args {
    /// The sector size: 2KiB, 8MiB, 512MiB, 32GiB or 64GiB (registered
    /// proof V1_1).
    #[arg(long, default_value = "2KiB", value_parser = parse_size)]
    sector_size: RegisteredSealProof,
    /// Where to write the C1 output (filecoin-proofs-api JSON).
    #[arg(long, short, default_value = "c1.json")]
    out: PathBuf,
    /// A committed-capacity test sector made from the nodes its challenges
    /// open (any size, 32 GiB in seconds; checked with storage-proofs'
    /// vanilla verifier) instead of sealing random data (PC1 + PC2 + C1 with
    /// filecoin-proofs: 8 MiB ~13 s, 512 MiB ~12 min on 2 cores).
    #[arg(long)]
    cc: bool,
    /// Seed of every random choice (data, ticket, seed, ...).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Whose sector (default: a prover id and sector number from the seed).
    /// `--miner` makes it provable through a service, which derives the
    /// prover id from the miner's actor id.
    #[command(flatten)]
    sector: SectorArgs,
    /// Where sealing writes the sector (default: a temporary folder).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Also generate random Groth16 parameters for the circuit into this
    /// folder under filecoin-proofs' names (2 KiB: ~14 min on 2 cores).
    /// They verify only against their own verifying key: keep the folder
    /// apart from a production parameter cache.
    #[arg(long)]
    gen_params: Option<PathBuf>,
    /// Write the C1 output in the envelope Curio sends and lotus-bench
    /// writes (`Commit2In`: `{"SectorNum", "Phase1Out" (base64), "SectorSize"}`)
    /// instead of raw filecoin-proofs-api JSON.
    #[arg(long)]
    commit2in: bool,
}

fn parse_size(s: &str) -> Result<RegisteredSealProof, String> {
    c2_testkit::cli::parse_sector_size(s).ok_or_else(|| format!("{s:?}: expected 2KiB, 8MiB, 512MiB, 32GiB or 64GiB"))
}

/// Runs `porep-c2 make-c1`.
pub fn run(a: MakeC1Args) -> Result<()> {
    let given_prover =
        (a.sector.miner.is_some() || a.sector.prover_id.is_some()).then(|| a.sector.prover_id()).transpose()?;
    let t = Instant::now();
    let (c1, prover_id, sector_id) = if a.cc {
        let mut config = c2_synth::CcSectorConfig { rng_seed: a.seed, sector_id: a.seed, ..Default::default() };
        config.prover_id = given_prover.unwrap_or(config.prover_id);
        config.sector_id = a.sector.sector_id.unwrap_or(config.sector_id);
        let s = c2_synth::cc_sector(a.sector_size, &config)?;
        porep_c2::instance_from_c1(&s.c1, s.prover_id, s.sector_id)?.check_vanilla_proofs()?;
        log::info!("made a CC test sector ({:?}) in {:.2?}", a.sector_size, t.elapsed());
        (s.c1, s.prover_id, s.sector_id)
    } else {
        let tmp;
        let dir = match &a.work_dir {
            Some(d) => d.clone(),
            None => {
                tmp = tempfile::tempdir().context("creating a temporary folder")?;
                tmp.path().to_path_buf()
            }
        };
        let s = demo::seal_registered_for(a.sector_size, &dir, a.seed, given_prover, a.sector.sector_id)?;
        log::info!("sealed {:?} (PC1 + PC2 + C1) in {:.2?}", a.sector_size, t.elapsed());
        (s.c1, s.prover_id, u64::from(s.sector_id))
    };
    let mut json = serde_json::to_vec(&c1)?;
    if a.commit2in {
        let sector_size = u64::from(c1.registered_proof.sector_size());
        json = porep_c2::C1Envelope { sector_number: sector_id, sector_size }.wrap(&json);
    }
    std::fs::write(&a.out, json).with_context(|| format!("writing {}", a.out.display()))?;
    log::info!("wrote {}", a.out.display());
    // What `prove` and `bench` need for this sector.
    match &a.sector.miner {
        Some(m) => println!("--miner {m} --sector-id {sector_id}"),
        None => println!("--prover-id {} --sector-id {sector_id}", hex::encode(prover_id)),
    }
    if let Some(params_dir) = &a.gen_params {
        let t = Instant::now();
        let (_, generated) = demo::ensure_registered_parameters(&c1, prover_id, sector_id.into(), params_dir, a.seed)?;
        log::info!(
            "parameters in {} ({} in {:.2?})",
            params_dir.display(),
            if generated { "generated" } else { "already present" },
            t.elapsed()
        );
    }
    Ok(())
}
