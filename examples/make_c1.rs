//! Seals random data with filecoin-proofs' own PC1, PC2 and C1 for a
//! registered sector size and writes the C1 output as JSON (the form Lotus and
//! Curio write), ready for the `prove` example. With `--cc` it seals
//! nothing: it makes a valid committed-capacity test sector's C1 from the
//! nodes the challenges open (`c2_synth::cc_sector`; any size, 32 GiB in a
//! few seconds), checked with storage-proofs' vanilla verifier before it is
//! written.
//!
//! ```text
//! cargo run --release --example make-c1 -- --sector-size 2KiB --out c1.json \
//!     [--cc] [--seed 1] [--work-dir DIR] [--gen-params DIR]
//! ```
//! `--gen-params DIR` also generates random Groth16 parameters for that
//! circuit into DIR under filecoin-proofs' file names (2 KiB: ~14 minutes on
//! 2 cores). Random parameters verify only against their own verifying key:
//! keep DIR apart from a production parameter cache.

use std::path::PathBuf;
use std::time::Instant;

use c2_testkit::demo;
use filecoin_proofs_api::RegisteredSealProof;

fn usage() -> ! {
    eprintln!(
        "usage: make-c1 [--sector-size 2KiB|8MiB|512MiB|32GiB|64GiB] [--out c1.json] [--cc] [--seed N] \
         [--work-dir DIR] [--gen-params DIR]"
    );
    std::process::exit(2)
}

fn main() {
    env_logger::init();
    let mut size = "2KiB".to_string();
    let mut out = PathBuf::from("c1.json");
    let mut seed = 1u64;
    let mut work_dir: Option<PathBuf> = None;
    let mut gen_params: Option<PathBuf> = None;
    let mut cc = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--sector-size" => size = val(),
            "--out" => out = val().into(),
            "--seed" => seed = val().parse().unwrap_or_else(|_| usage()),
            "--work-dir" => work_dir = Some(val().into()),
            "--gen-params" => gen_params = Some(val().into()),
            "--cc" => cc = true,
            _ => usage(),
        }
    }
    let registered = c2_testkit::cli::parse_sector_size(&size).unwrap_or_else(|| usage());
    let tmp;
    let dir = match work_dir {
        Some(d) => d,
        None => {
            tmp = tempfile::tempdir().expect("creating a temporary folder");
            tmp.path().to_path_buf()
        }
    };
    let t = Instant::now();
    let sector = if cc {
        match make_cc(registered, seed) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1)
            }
        }
    } else {
        match demo::seal_registered(registered, &dir, seed) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1)
            }
        }
    };
    eprintln!("{} {size} in {:.2?}", if cc { "made a CC test sector of" } else { "sealed (PC1+PC2+C1)" }, t.elapsed());
    let json = serde_json::to_vec(&sector.c1).expect("C1 serializes");
    if let Err(e) = std::fs::write(&out, json) {
        eprintln!("error: writing {}: {e}", out.display());
        std::process::exit(1)
    }
    let prover_hex: String = sector.prover_id.iter().map(|b| format!("{b:02x}")).collect();
    eprintln!("wrote {}", out.display());
    println!("--prover-id {prover_hex} --sector-id {}", u64::from(sector.sector_id));
    if let Some(params_dir) = gen_params {
        let t = Instant::now();
        match demo::ensure_registered_parameters(&sector.c1, sector.prover_id, sector.sector_id, &params_dir, seed) {
            Ok((_, generated)) => eprintln!(
                "parameters in {} ({} in {:.2?})",
                params_dir.display(),
                if generated { "generated" } else { "already present" },
                t.elapsed()
            ),
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1)
            }
        }
    }
}

/// A CC test sector for `seed`, verified with storage-proofs' vanilla
/// verifier, in the sealed sector's form.
fn make_cc(registered: RegisteredSealProof, seed: u64) -> Result<demo::SealedSector, porep_c2::Error> {
    let config = c2_synth::CcSectorConfig { rng_seed: seed, sector_id: seed, ..Default::default() };
    let s = c2_synth::cc_sector(registered, &config)?;
    porep_c2::instance_from_c1(&s.c1, s.prover_id, s.sector_id)?.check_vanilla_proofs()?;
    Ok(demo::SealedSector {
        c1: s.c1,
        prover_id: s.prover_id,
        sector_id: s.sector_id.into(),
        dir: std::env::temp_dir(),
    })
}
