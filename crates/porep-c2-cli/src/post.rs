//! `porep-c2 prove-post` and `make-post`: WindowPoSt partitions and
//! WinningPoSt from a request file that holds what Curio sends the daemon.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use base64::Engine as _;
use c2_testkit::demo;
use clap::{Args, ValueEnum};
use filecoin_proofs_api::post as api;
use filecoin_proofs_api::{PoStType, RegisteredPoStProof, SectorId};
use porep_c2::{post_instance, prove_window_post_with_report, prove_winning_post_with_report, PoStKind};
use porep_c2_service::{prover_id_from_actor, registered_post_proof};
use serde::{Deserialize, Serialize};

use crate::actor_id;

/// A PoSt request as a file: the fields of Curio's `WindowPoStCuzk` /
/// `WinningPoStCuzk` request, and the sectors' public replicas so the proof
/// can be checked as the chain checks it.
#[derive(Serialize, Deserialize)]
pub struct PostRequestFile {
    /// `abi.RegisteredPoStProof`: WinningPoSt 0-4, WindowPoSt 5-9 and 10-14
    /// (2 KiB .. 64 GiB).
    pub registered_proof: u64,
    /// The miner's actor id (the prover id is derived from it).
    pub miner_id: u64,
    /// The challenge randomness, 64 hex digits (a canonical field element).
    pub randomness: String,
    /// The WindowPoSt partition's index (0 for WinningPoSt).
    #[serde(default)]
    pub partition_index: u32,
    /// One bincode `FallbackPoStSectorProof` per sector, base64 (Go's
    /// `json.Marshal` of a `[][]byte`).
    pub vanilla_proofs: Vec<String>,
    /// The sectors' ids and comm_r (hex), in the vanilla proofs' order: what
    /// `verify_window_post` / `verify_winning_post` take. The whole
    /// deadline's for WindowPoSt partition 0; may be empty (then the proof
    /// is checked by the prover's own verification only).
    #[serde(default)]
    pub sectors: Vec<PostSector>,
}

/// A sector's public replica.
#[derive(Serialize, Deserialize)]
pub struct PostSector {
    /// Its number.
    pub sector_id: u64,
    /// Its comm_r, 64 hex digits.
    pub comm_r: String,
}

impl PostRequestFile {
    fn read(path: &PathBuf) -> Result<Self> {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_slice(&bytes).with_context(|| format!("{}: not a PoSt request file", path.display()))
    }

    fn registered(&self) -> Result<RegisteredPoStProof> {
        registered_post_proof(self.registered_proof)
            .with_context(|| format!("registered_proof {} is not a registered PoSt proof", self.registered_proof))
    }

    fn randomness(&self) -> Result<[u8; 32]> {
        c2_testkit::cli::parse_hex32(&self.randomness)
            .with_context(|| format!("randomness {:?}: expected 64 hex digits", self.randomness))
    }

    fn vanilla(&self) -> Result<Vec<Vec<u8>>> {
        let b64 = base64::engine::general_purpose::STANDARD;
        let decode =
            |(i, v): (usize, &String)| b64.decode(v).with_context(|| format!("vanilla_proofs[{i}]: not base64"));
        self.vanilla_proofs.iter().enumerate().map(decode).collect()
    }
}

/// How the proof is written.
#[derive(Clone, Copy, ValueEnum)]
pub enum PostFormat {
    /// The proof bytes as hex.
    Hex,
    /// The proof bytes (192).
    Raw,
}

/// `porep-c2 prove-post` and `prove-update`: a request file in, a proof out.
#[derive(Args)]
pub struct ProveFileArgs {
    /// The request file (`make-post` / `make-update` write one).
    pub(crate) input: PathBuf,
    /// Where to write the proof (default: stdout).
    #[arg(long, short)]
    pub(crate) out: Option<PathBuf>,
    /// How to write it.
    #[arg(long, value_enum, default_value = "hex")]
    pub(crate) format: PostFormat,
    #[command(flatten)]
    pub(crate) options: crate::ProveOptions,
}

/// Writes `proof` to `out` (stdout when `None`) as `format` says.
pub(crate) fn write_proof(out: Option<&PathBuf>, format: PostFormat, proof: Vec<u8>) -> Result<()> {
    let bytes = match format {
        PostFormat::Hex => format!("{}\n", hex::encode(&proof)).into_bytes(),
        PostFormat::Raw => proof,
    };
    match out {
        Some(p) => std::fs::write(p, &bytes).with_context(|| format!("writing {}", p.display()))?,
        None => std::io::Write::write_all(&mut std::io::stdout().lock(), &bytes)?,
    }
    Ok(())
}

/// Runs `porep-c2 prove-post`: the proof, verified by the prover (and by
/// filecoin-proofs' chain verifier when the file lists the sectors).
pub fn run_prove(a: ProveFileArgs) -> Result<()> {
    if let Some(dir) = &a.options.prover.params_dir {
        // filecoin-proofs' chain verifiers below read their verifying keys
        // from its parameter folder (read once, before its first use).
        std::env::set_var(porep_c2::PARAMETER_CACHE_ENV, dir);
    }
    let request = PostRequestFile::read(&a.input)?;
    let rp = request.registered()?;
    let randomness = request.randomness()?;
    let vanilla = request.vanilla()?;
    let prover_id = prover_id_from_actor(request.miner_id);
    let config = a.options.config(None)?;
    let t = Instant::now();
    let partition = request.partition_index as usize;
    let (proof, report) = match rp.typ() {
        PoStType::Window => prove_window_post_with_report(rp, &randomness, prover_id, &vanilla, partition, &config)?,
        PoStType::Winning => prove_winning_post_with_report(rp, &randomness, prover_id, &vanilla, &config)?,
    };
    log::info!(
        "{rp:?}, {} sector(s): proved in {:.2} s ({}; parameters {:.2} s, verified: {})",
        vanilla.len(),
        t.elapsed().as_secs_f64(),
        report.backend,
        report.load_params.as_secs_f64(),
        config.verify
    );
    // The chain's check with the replicas the file names: a WinningPoSt,
    // or a deadline of this one partition.
    if !request.sectors.is_empty() && request.partition_index == 0 {
        let replicas = public_replicas(&request, rp)?;
        let (ok, name) = match rp.typ() {
            PoStType::Winning => {
                (api::verify_winning_post(&randomness, &proof, &replicas, prover_id)?, "verify_winning_post")
            }
            PoStType::Window => {
                (api::verify_window_post(&randomness, &[(rp, &proof[..])], &replicas, prover_id)?, "verify_window_post")
            }
        };
        if !ok {
            bail!("filecoin-proofs' {name} refused the proof");
        }
        log::info!("filecoin-proofs' {name} accepts it");
    }
    write_proof(a.out.as_ref(), a.format, proof)
}

fn public_replicas(
    request: &PostRequestFile,
    rp: RegisteredPoStProof,
) -> Result<BTreeMap<SectorId, filecoin_proofs_api::PublicReplicaInfo>> {
    request
        .sectors
        .iter()
        .map(|s| {
            let comm_r = c2_testkit::cli::parse_hex32(&s.comm_r)
                .with_context(|| format!("sector {}: comm_r {:?} is not 64 hex digits", s.sector_id, s.comm_r))?;
            Ok((SectorId::from(s.sector_id), filecoin_proofs_api::PublicReplicaInfo::new(rp, comm_r)))
        })
        .collect()
}

/// `porep-c2 make-post`.
#[derive(Args)]
pub struct MakePostArgs {
    /// The registered PoSt proof as Lotus numbers it (`abi.RegisteredPoStProof`:
    /// 0 WinningPoSt 2 KiB, 10 WindowPoSt 2 KiB V1_1, ...).
    #[arg(long, default_value_t = 10)]
    registered_proof: u64,
    /// Sectors to seal (filecoin-proofs' PC1, PC2; 2 KiB takes a second).
    /// WindowPoSt: all in partition 0 (at most the proof type's sector
    /// count); WinningPoSt: the one the randomness picks among them.
    #[arg(long, default_value_t = 2)]
    sectors: u64,
    /// The miner (`f01000`): the sectors' prover.
    #[arg(long, default_value = "f01000")]
    miner: String,
    /// Seed of every random choice (data, tickets, randomness).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where to write the request file.
    #[arg(long, short, default_value = "post.json")]
    out: PathBuf,
    /// Also generate random Groth16 parameters for the circuit into this
    /// folder under filecoin-proofs' names (2 KiB: seconds). They verify
    /// only against their own verifying key: keep the folder apart from a
    /// production parameter cache.
    #[arg(long)]
    gen_params: Option<PathBuf>,
}

/// Runs `porep-c2 make-post`: seals sectors and writes a PoSt request file
/// with their vanilla proofs.
pub fn run_make(a: MakePostArgs) -> Result<()> {
    let rp = registered_post_proof(a.registered_proof)
        .with_context(|| format!("--registered-proof {} is not a registered PoSt proof", a.registered_proof))?;
    if a.sectors == 0 || (rp.typ() == PoStType::Window && a.sectors as usize > rp.sector_count()) {
        bail!("--sectors {}: {rp:?} takes 1 to {} per partition", a.sectors, rp.sector_count());
    }
    let seal = c2_testkit::cli::parse_sector_size(&size_name(u64::from(rp.sector_size())))
        .with_context(|| format!("{rp:?}: no seal proof of its size"))?;
    let miner = actor_id(&a.miner)?;
    let prover_id = prover_id_from_actor(miner);
    let work = tempfile::tempdir().context("creating a temporary folder")?;
    let t = Instant::now();
    let sealed = (0..a.sectors)
        .map(|i| {
            let dir = work.path().join(format!("s{i}"));
            demo::seal_registered_for(seal, &dir, a.seed * 1000 + i, Some(prover_id), Some(a.seed * 1000 + i + 1))
        })
        .collect::<Result<Vec<_>, _>>()?;
    log::info!("sealed {} {seal:?} sector(s) in {:.1?}", sealed.len(), t.elapsed());
    let randomness = randomness_of(a.seed);
    let chosen: Vec<&demo::SealedSector> = match rp.typ() {
        PoStType::Window => sealed.iter().collect(),
        PoStType::Winning => {
            let picked = api::generate_winning_post_sector_challenge(rp, &randomness, a.sectors, prover_id)?;
            vec![&sealed[picked[0] as usize]]
        }
    };
    let vanilla = demo::post_vanilla_proofs(rp, &chosen, &randomness)?;
    let b64 = base64::engine::general_purpose::STANDARD;
    let file = PostRequestFile {
        registered_proof: a.registered_proof,
        miner_id: miner,
        randomness: hex::encode(randomness),
        partition_index: 0,
        vanilla_proofs: vanilla.iter().map(|v| b64.encode(v)).collect(),
        sectors: chosen
            .iter()
            .map(|s| PostSector { sector_id: u64::from(s.sector_id), comm_r: hex::encode(s.c1.comm_r) })
            .collect(),
    };
    std::fs::write(&a.out, serde_json::to_vec_pretty(&file)?)
        .with_context(|| format!("writing {}", a.out.display()))?;
    log::info!("wrote {} ({rp:?}, {} sector(s))", a.out.display(), chosen.len());
    if let Some(dir) = &a.gen_params {
        let kind = match rp.typ() {
            PoStType::Window => PoStKind::Window { partition_index: 0 },
            PoStType::Winning => PoStKind::Winning,
        };
        let instance = post_instance(rp, kind, &randomness, &prover_id, &vanilla)?;
        let t = Instant::now();
        let (_, generated) = demo::ensure_parameters(instance.as_ref(), dir, a.seed)?;
        let what = if generated { "generated" } else { "already present" };
        log::info!("parameters in {} ({what} in {:.2?})", dir.display(), t.elapsed());
    }
    Ok(())
}

/// Challenge randomness from a seed (splitmix64 words), masked to a
/// canonical field element as Curio masks the chain's.
fn randomness_of(seed: u64) -> [u8; 32] {
    let mut state = seed;
    let mut out = [0u8; 32];
    for chunk in out.chunks_exact_mut(8) {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        chunk.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out[31] &= 0x3f;
    out
}

/// `2KiB`, `8MiB`, ... of a sector size.
pub(crate) fn size_name(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{}GiB", b >> 30),
        b if b >= 1 << 20 => format!("{}MiB", b >> 20),
        b => format!("{}KiB", b >> 10),
    }
}
