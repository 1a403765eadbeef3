//! `porep-c2 prove-update` and `make-update`: SnapDeals update proofs from a
//! request file that holds what Curio sends the daemon.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use base64::Engine as _;
use c2_testkit::demo;
use clap::Args;
use filecoin_proofs_api::RegisteredUpdateProof;
use porep_c2::{prove_empty_sector_update_with_report, update_instance};
use porep_c2_service::{prover_id_from_actor, registered_update_proof};
use serde::{Deserialize, Serialize};

use crate::actor_id;
use crate::post::{write_proof, ProveFileArgs};

/// A SnapDeals request as a file: the fields of Curio's update request.
#[derive(Serialize, Deserialize)]
pub struct UpdateRequestFile {
    /// `abi.RegisteredUpdateProof`: 0-4 for 2 KiB .. 64 GiB.
    pub registered_proof: u64,
    /// The miner's actor id.
    pub miner_id: u64,
    /// The sector's number.
    pub sector_number: u64,
    /// The sector key's comm_r, 64 hex digits.
    pub comm_r_old: String,
    /// The updated replica's comm_r, 64 hex digits.
    pub comm_r_new: String,
    /// The new data's comm_d, 64 hex digits.
    pub comm_d_new: String,
    /// One bincode `PartitionProof` per partition, base64 (Go's
    /// `json.Marshal` of a `[][]byte`).
    pub vanilla_proofs: Vec<String>,
}

impl UpdateRequestFile {
    fn read(path: &PathBuf) -> Result<Self> {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_slice(&bytes).with_context(|| format!("{}: not an update request file", path.display()))
    }

    fn registered(&self) -> Result<RegisteredUpdateProof> {
        registered_update_proof(self.registered_proof)
            .with_context(|| format!("registered_proof {} is not a registered update proof", self.registered_proof))
    }

    /// comm_r_old, comm_r_new, comm_d_new.
    fn commitments(&self) -> Result<[[u8; 32]; 3]> {
        let parse = |v: &String, name: &str| {
            c2_testkit::cli::parse_hex32(v).with_context(|| format!("{name} {v:?}: expected 64 hex digits"))
        };
        Ok([
            parse(&self.comm_r_old, "comm_r_old")?,
            parse(&self.comm_r_new, "comm_r_new")?,
            parse(&self.comm_d_new, "comm_d_new")?,
        ])
    }

    fn vanilla(&self) -> Result<Vec<Vec<u8>>> {
        let b64 = base64::engine::general_purpose::STANDARD;
        let decode =
            |(i, v): (usize, &String)| b64.decode(v).with_context(|| format!("vanilla_proofs[{i}]: not base64"));
        self.vanilla_proofs.iter().enumerate().map(decode).collect()
    }
}

/// Runs `porep-c2 prove-update`: the proof, verified by the prover and by
/// filecoin-proofs' `verify_empty_sector_update_proof`.
pub fn run_prove(a: ProveFileArgs) -> Result<()> {
    if let Some(dir) = &a.options.prover.params_dir {
        // filecoin-proofs' verifier below reads its verifying key from its
        // parameter folder (read once, before its first use).
        std::env::set_var(porep_c2::PARAMETER_CACHE_ENV, dir);
    }
    let request = UpdateRequestFile::read(&a.input)?;
    let rp = request.registered()?;
    let [old, new, d] = request.commitments()?;
    let vanilla = request.vanilla()?;
    let config = a.options.config(None)?;
    let t = Instant::now();
    let (proof, report) = prove_empty_sector_update_with_report(rp, &vanilla, &old, &new, &d, &config)?;
    log::info!(
        "{rp:?}, {} partition(s): proved in {:.2} s ({}; parameters {:.2} s, verified: {})",
        vanilla.len(),
        t.elapsed().as_secs_f64(),
        report.backend,
        report.load_params.as_secs_f64(),
        config.verify
    );
    if config.verify {
        if !filecoin_proofs_api::update::verify_empty_sector_update_proof(rp, &proof, old, new, d)? {
            bail!("filecoin-proofs' verify_empty_sector_update_proof refused the proof");
        }
        log::info!("filecoin-proofs' verify_empty_sector_update_proof accepts it");
    }
    write_proof(a.out.as_ref(), a.format, proof)
}

/// `porep-c2 make-update`.
#[derive(Args)]
pub struct MakeUpdateArgs {
    /// The registered update proof as Lotus numbers it
    /// (`abi.RegisteredUpdateProof`: 0 for 2 KiB .. 4 for 64 GiB).
    #[arg(long, default_value_t = 0)]
    registered_proof: u64,
    /// The miner (`f01000`): the sector's prover.
    #[arg(long, default_value = "f01000")]
    miner: String,
    /// The sector's number.
    #[arg(long, default_value_t = 1)]
    sector: u64,
    /// Seed of every random choice (old and new data, ticket).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where to write the request file.
    #[arg(long, short, default_value = "update.json")]
    out: PathBuf,
    /// Also generate random Groth16 parameters for the circuit into this
    /// folder under filecoin-proofs' names (2 KiB: ~2 minutes on two
    /// cores). They verify only against their own verifying key: keep the
    /// folder apart from a production parameter cache.
    #[arg(long)]
    gen_params: Option<PathBuf>,
}

/// Runs `porep-c2 make-update`: seals a sector with filecoin-proofs,
/// encodes new data into it (a SnapDeals update) and writes an update
/// request file with its partition vanilla proofs.
pub fn run_make(a: MakeUpdateArgs) -> Result<()> {
    let rp = registered_update_proof(a.registered_proof)
        .with_context(|| format!("--registered-proof {} is not a registered update proof", a.registered_proof))?;
    let seal = c2_testkit::cli::parse_sector_size(&crate::post::size_name(u64::from(rp.sector_size())))
        .with_context(|| format!("{rp:?}: no seal proof of its size"))?;
    let miner = actor_id(&a.miner)?;
    let prover_id = prover_id_from_actor(miner);
    let work = tempfile::tempdir().context("creating a temporary folder")?;
    let t = Instant::now();
    let sealed = demo::seal_registered_for(seal, &work.path().join("s"), a.seed, Some(prover_id), Some(a.sector))?;
    let update = demo::update_sector(&sealed, a.seed + 1)?;
    log::info!("sealed and updated a {seal:?} sector in {:.1?}", t.elapsed());
    let b64 = base64::engine::general_purpose::STANDARD;
    let file = UpdateRequestFile {
        registered_proof: a.registered_proof,
        miner_id: miner,
        sector_number: a.sector,
        comm_r_old: hex::encode(update.comm_r_old),
        comm_r_new: hex::encode(update.comm_r_new),
        comm_d_new: hex::encode(update.comm_d_new),
        vanilla_proofs: update.vanilla_proofs.iter().map(|v| b64.encode(v)).collect(),
    };
    std::fs::write(&a.out, serde_json::to_vec_pretty(&file)?)
        .with_context(|| format!("writing {}", a.out.display()))?;
    log::info!("wrote {} ({rp:?}, {} partition(s))", a.out.display(), update.vanilla_proofs.len());
    if let Some(dir) = &a.gen_params {
        let u = &update;
        let instance = update_instance(rp, &u.vanilla_proofs, &u.comm_r_old, &u.comm_r_new, &u.comm_d_new)?;
        let t = Instant::now();
        let (_, generated) = demo::ensure_parameters(instance.as_ref(), dir, a.seed)?;
        let what = if generated { "generated" } else { "already present" };
        log::info!("parameters in {} ({what} in {:.2?})", dir.display(), t.elapsed());
    }
    Ok(())
}
