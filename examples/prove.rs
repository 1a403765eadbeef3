//! Proves a sector (C2) and writes the proof as filecoin-proofs' serde JSON
//! (`SealCommitPhase2Output`), with per-stage timings on stderr.
//!
//! ```text
//! # no arguments: build a tiny StackedDrg sector, generate its parameters
//! # (cached in the temp folder), prove it and verify the proof
//! cargo run --release --example prove
//!
//! # a real C1 output (e.g. from `porep-c2 make-c1`, or Lotus/Curio)
//! cargo run --release --example prove -- c1.json --prover-id HEX --sector-id N \
//!     [--params-dir DIR | --params FILE] [--seed N] [--out proof.json] [--no-verify] \
//!     [--backend cpu|auto]
//! ```
//! `--backend auto` (the default) uses the GPU NTT when built with
//! `--features cuda` and a device answers, else the CPU (and says so).
//! Parameters default to `$FIL_PROOFS_PARAMETER_CACHE` (filecoin-proofs'
//! default folder when unset), under filecoin-proofs' file names.

use c2_testkit::cli::{fail, parse_backend, parse_hex32};
use c2_testkit::demo;

use std::path::PathBuf;
use std::time::Instant;

use porep_c2::{prove_instance, prove_porep_c2_with_report, ParamsSource, ProofReport, ProverConfig, Randomness};

fn usage() -> ! {
    eprintln!(
        "usage: prove [C1_JSON --prover-id HEX --sector-id N] [--params-dir DIR | --params FILE] \
         [--seed N] [--out proof.json] [--no-verify] [--synthesis-workers N] [--backend cpu|auto]"
    );
    std::process::exit(2)
}

fn seed_bytes(seed: u64) -> [u8; 32] {
    let mut s = [0u8; 32];
    s[..8].copy_from_slice(&seed.to_le_bytes());
    s
}

fn print_report(r: &ProofReport) {
    eprintln!("backend: {}", r.backend);
    eprintln!(
        "{:>4} {:>11} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9}",
        "part", "constraints", "synth", "queue", "ntt", "msm_h", "msm_l", "msm_a", "msm_b1", "msm_b2", "prove"
    );
    for p in &r.partitions {
        let s = &p.steps;
        eprintln!(
            "{:>4} {:>11} {:>9.3} {:>9.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>9.3}",
            p.partition,
            p.constraints,
            p.synthesis.as_secs_f64(),
            p.queue_wait.as_secs_f64(),
            s.ntt.as_secs_f64(),
            s.msm_h.as_secs_f64(),
            s.msm_l.as_secs_f64(),
            s.msm_a.as_secs_f64(),
            s.msm_b_g1.as_secs_f64(),
            s.msm_b_g2.as_secs_f64(),
            p.prove.as_secs_f64(),
        );
        if let Some(why) = &p.retried_after {
            eprintln!("     partition {} was proved again on the retry backend after: {why}", p.partition);
        }
    }
    eprintln!(
        "load params {:.3}s | check vanilla {:.3}s | synth+prove pipeline {:.3}s | verify {:.3}s | total {:.3}s (seconds)",
        r.load_params.as_secs_f64(),
        r.check_vanilla.as_secs_f64(),
        r.pipeline.as_secs_f64(),
        r.verify.as_secs_f64(),
        r.total.as_secs_f64()
    );
}

fn main() {
    // Warnings (such as "no GPU; proving on the CPU") are shown by default.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let mut c1_path: Option<PathBuf> = None;
    let mut prover_id: Option<[u8; 32]> = None;
    let mut sector_id: Option<u64> = None;
    let mut config = ProverConfig::from_env();
    let mut out: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--prover-id" => prover_id = Some(parse_hex32(&val()).unwrap_or_else(|| usage())),
            "--sector-id" => sector_id = Some(val().parse().unwrap_or_else(|_| usage())),
            "--params-dir" => config.params = ParamsSource::CacheDir(val().into()),
            "--params" => config.params = ParamsSource::File(val().into()),
            "--seed" => config.randomness = Randomness::Seed(seed_bytes(val().parse().unwrap_or_else(|_| usage()))),
            "--out" => out = Some(val().into()),
            "--no-verify" => config.verify = false,
            "--backend" => config.backend = parse_backend(&val()).unwrap_or_else(|| usage()),
            "--synthesis-workers" => config.pipeline.synthesis_workers = val().parse().unwrap_or_else(|_| usage()),
            s if !s.starts_with("--") && c1_path.is_none() => c1_path = Some(s.into()),
            _ => usage(),
        }
    }

    let (output, report) = match c1_path {
        Some(path) => {
            let (Some(prover_id), Some(sector_id)) = (prover_id, sector_id) else { usage() };
            let c1 = porep_c2::read_c1_json(&path).unwrap_or_else(|e| fail(e));
            eprintln!("proving {} ({:?})", path.display(), c1.registered_proof);
            prove_porep_c2_with_report(&c1, prover_id, sector_id.into(), &config).unwrap_or_else(|e| fail(e))
        }
        None => {
            // The built-in default: a tiny real StackedDrg sector.
            let tiny = demo::TinyConfig::default();
            eprintln!(
                "no C1 given: proving a built-in tiny StackedDrg sector ({} nodes, {} layer(s), {} challenge(s), {} partitions)",
                tiny.nodes, tiny.layers, tiny.challenges, tiny.partitions
            );
            let t = Instant::now();
            let instance = demo::tiny_instance(&tiny).unwrap_or_else(|e| fail(e));
            eprintln!("sealed tiny sector and computed vanilla proofs in {:.2?}", t.elapsed());
            // The tests' set (`target/tmp/test-params`, the same seed): one
            // generation serves this command and `cargo test --release`.
            let params_dir = demo::tiny_params_dir();
            let t = Instant::now();
            let (params, generated) =
                demo::ensure_parameters(&instance, &params_dir, demo::TINY_PARAMS_SEED).unwrap_or_else(|e| fail(e));
            eprintln!(
                "parameters {} in {:.2?} ({})",
                if generated { "generated" } else { "loaded" },
                t.elapsed(),
                params_dir.display()
            );
            let partitions = porep_c2::ProofInstance::num_partitions(&instance);
            let blinding = porep_c2::blinding_pairs(&config.randomness, partitions).unwrap_or_else(|e| fail(e));
            let (bytes, report) = prove_instance(&instance, &params, &blinding, &config).unwrap_or_else(|e| fail(e));
            (porep_c2::SealCommitPhase2Output { proof: bytes }, report)
        }
    };
    print_report(&report);
    eprintln!(
        "proof: {} bytes ({} partitions){}",
        output.proof.len(),
        output.proof.len() / porep_c2::SINGLE_PARTITION_PROOF_LEN,
        if config.verify { ", verified" } else { ", NOT verified (--no-verify)" }
    );
    if let Some(out) = out {
        let json = serde_json::to_vec(&output).expect("proof serializes");
        std::fs::write(&out, json).unwrap_or_else(|e| fail(format!("writing {}: {e}", out.display())));
        eprintln!("wrote {}", out.display());
    }
}
