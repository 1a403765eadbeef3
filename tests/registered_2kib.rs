//! End to end on the registered 2 KiB proof type: filecoin-proofs' own seal
//! flow (PC1, PC2, C1) -> `prove_porep_c2` -> `filecoin_proofs::verify_seal`.
//!
//! Ignored by default: the first run generates random 2 KiB Groth16
//! parameters (~2.5 minutes on 2 cores, from the recorded matrices). They are cached
//! outside the repository:
//!
//! ```text
//! FIL_PROOFS_PARAMETER_CACHE=/var/tmp/porep-c2-test-params \
//!     cargo test --release --test registered_2kib -- --ignored --nocapture
//! ```
//! (that folder is also the default). Random parameters under production
//! file names verify only against their own verifying key: never point this
//! at a production parameter cache.

use std::path::PathBuf;
use std::time::Instant;

use c2_testkit::demo;
use filecoin_proofs_api::seal::seal_commit_phase2;
use filecoin_proofs_api::RegisteredSealProof;
use porep_c2::{prove_porep_c2_with_report, ParamsSource, ProverConfig, Randomness};

#[test]
#[ignore = "generates 2 KiB parameters on first run (~2.5 min on 2 cores); see the file's docs"]
fn registered_2kib_c1_to_verify_seal() {
    let _ = env_logger::builder().is_test(true).try_init();
    // filecoin-proofs reads its settings once per process: set the folder
    // before its first call.
    let dir = match std::env::var_os(porep_c2::PARAMETER_CACHE_ENV) {
        Some(d) => PathBuf::from(d),
        None => {
            let d = PathBuf::from("/var/tmp/porep-c2-test-params");
            std::env::set_var(porep_c2::PARAMETER_CACHE_ENV, &d);
            d
        }
    };
    let work = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let s = demo::seal_registered(RegisteredSealProof::StackedDrg2KiBV1_1, work.path(), 1).unwrap();
    eprintln!("PC1+PC2+C1: {:.2?}", t.elapsed());

    let t = Instant::now();
    let (_, generated) = demo::ensure_registered_parameters(&s.c1, s.prover_id, s.sector_id, &dir, 1).unwrap();
    eprintln!("parameters {} in {:.1?} ({})", if generated { "generated" } else { "read" }, t.elapsed(), dir.display());

    let config = ProverConfig {
        params: ParamsSource::CacheDir(dir.clone()),
        randomness: Randomness::Seed([3; 32]),
        ..ProverConfig::default()
    };
    let t = Instant::now();
    let (out, report) = prove_porep_c2_with_report(&s.c1, s.prover_id, s.sector_id, &config).unwrap();
    let ours = t.elapsed();
    eprintln!("{report:#?}");
    assert_eq!(out.proof.len(), 192);

    let t = Instant::now();
    let ok = s.verify_seal(&out.proof).unwrap();
    eprintln!("filecoin_proofs verify_seal: {ok} in {:.2?}", t.elapsed());
    assert!(ok, "filecoin-proofs accepts our proof");

    // Same seed, same bytes.
    let again = porep_c2::prove_porep_c2(&s.c1, s.prover_id, s.sector_id, &config).unwrap();
    assert_eq!(again.proof, out.proof, "reproducible with a fixed seed");

    // filecoin-proofs' own C2 on the same machine and parameters, for scale.
    let t = Instant::now();
    let theirs = seal_commit_phase2(s.c1.clone(), s.prover_id, s.sector_id).unwrap();
    let reference = t.elapsed();
    assert_eq!(theirs.proof.len(), 192);
    eprintln!(
        "C2 2 KiB: porep-c2 {:.2?} (incl. {:.2?} reading parameters) | filecoin-proofs seal_commit_phase2 {:.2?}",
        ours, report.load_params, reference
    );
}
