//! The `porep-c2` command as a user runs it: exit codes, reports, files.
//! (`prove` and `bench` with registered parameters run on the GPU machine:
//! generating 2 KiB parameters takes ~2.5 min on CI's two cores.)

use std::process::{Command, Output};

fn porep_c2(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_porep-c2")).args(args).env("RUST_LOG", "warn").output().expect("runs")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn every_subcommand_answers_help() {
    for sub in
        ["prove", "bench", "make-c1", "check-params", "serve", "prove-post", "make-post", "prove-update", "make-update"]
    {
        let o = porep_c2(&[sub, "--help"]);
        assert!(o.status.success(), "{sub}: {}", text(&o));
        assert!(text(&o).contains("Usage: porep-c2"), "{sub}: {}", text(&o));
    }
    // Bad arguments: clap's exit status 2 and a usage line.
    let o = porep_c2(&["bench", "-c", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn check_params_reports_missing_mismatched_and_unknown_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    // An empty folder: every file missing; an error only when sizes are named.
    let o = porep_c2(&["check-params", "--params-dir", d]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("\n0 valid, ") && text(&o).contains("MISSING"), "{}", text(&o));
    let o = porep_c2(&["check-params", "--params-dir", d, "--sector-size", "32GiB", "--porep-only"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("2 missing"), "{}", text(&o));
    // A production name with other bytes (as random test parameters would
    // be), and a file parameters.json does not know.
    let manifest = porep_c2::params_check::ParameterManifest::production();
    let vk = manifest
        .entries()
        .find(|e| e.sector_size == 2048 && e.name.contains("stacked-proof-of-replication") && e.name.ends_with(".vk"))
        .expect("the 2 KiB PoRep verifying key is in parameters.json");
    std::fs::write(dir.path().join(&vk.name), b"not the production key").unwrap();
    std::fs::write(dir.path().join("v28-something-else.params"), b"").unwrap();
    let o = porep_c2(&["check-params", "--params-dir", d, "--sector-size", "2KiB"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains(&format!("MISMATCH  {}", vk.name)) && out.contains(&vk.digest), "{out}");
    assert!(out.contains("unknown  v28-something-else.params"), "{out}");
    assert!(out.contains("do not match filecoin-proofs' digests"), "{out}");
    // A folder that does not exist: a typed error, exit 1.
    let o = porep_c2(&["check-params", "--params-dir", &format!("{d}/nope")]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("not found"), "{}", text(&o));
}

#[test]
fn make_c1_writes_a_cc_sector_for_a_miner() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c1.json");
    let o = porep_c2(&[
        "make-c1",
        "--cc",
        "--sector-size",
        "2KiB",
        "--miner",
        "f01000",
        "--sector-id",
        "9",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "--miner f01000 --sector-id 9");
    let c1 = porep_c2::read_c1_json(&out).unwrap();
    // The vanilla proofs check for the prover id the miner's actor id gives.
    let prover_id = porep_c2_service::prover_id_from_actor(1000);
    porep_c2::instance_from_c1(&c1, prover_id, 9).unwrap().check_vanilla_proofs().unwrap();
    // Another miner's prover id does not fit them.
    let other = porep_c2_service::prover_id_from_actor(1001);
    assert!(porep_c2::instance_from_c1(&c1, other, 9).and_then(|i| i.check_vanilla_proofs()).is_err());
    // prove reads it, and says what is missing before any work.
    let o = porep_c2(&["prove", out.to_str().unwrap(), "--miner", "f01000", "--backend", "cpu"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("give --sector-id"), "{}", text(&o));
}

/// A registered 2 KiB sector end to end through the command, as an operator
/// runs it: `make-c1` seals it (PC1, PC2, C1) and generates random Groth16
/// parameters for its circuit, `prove` proves the raw C1 output and the
/// same sector as lotus-bench's `Commit2In` (Curio's envelope; the sector
/// number comes from it), and `verify` accepts both proofs and refuses one
/// for another sector.
#[test]
#[ignore = "generates the 2 KiB circuit's parameters once into target/tmp/params-2k (~2.5 min on two cores); .ci/run runs it"]
fn prove_and_verify_a_registered_sector_from_raw_c1_and_commit2in() {
    let params = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("params-2k");
    let params = params.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (raw, wrapped) = (path("c1.json"), path("commit2in.json"));
    let make = |out: &str, extra: &[&str]| {
        let mut args = vec!["make-c1", "--sector-size", "2KiB", "--miner", "f01000", "--sector-id", "7", "--out", out];
        args.extend_from_slice(extra);
        let o = porep_c2(&args);
        assert!(o.status.success(), "{}", text(&o));
    };
    let t = std::time::Instant::now();
    make(&raw, &["--gen-params", params]);
    eprintln!("sealed and made parameters in {:.0} s", t.elapsed().as_secs_f64());
    make(&wrapped, &["--commit2in"]);
    let body = std::fs::read_to_string(&wrapped).unwrap();
    assert!(body.starts_with(r#"{"SectorNum":7,"Phase1Out":""#) && body.ends_with(r#"","SectorSize":2048}"#));

    let prove = |input: &str, out: &str, extra: &[&str]| {
        let mut args =
            vec!["prove", input, "--miner", "f01000", "--backend", "cpu", "--params-dir", params, "--out", out];
        args.extend_from_slice(extra);
        let t = std::time::Instant::now();
        let o = porep_c2(&args);
        assert!(o.status.success(), "{}", text(&o));
        eprintln!("proved {input} in {:.1} s", t.elapsed().as_secs_f64());
    };
    let verify = |input: &str, proof: &str, extra: &[&str]| {
        let mut args = vec!["verify", input, proof, "--miner", "f01000", "--params-dir", params];
        args.extend_from_slice(extra);
        porep_c2(&args)
    };
    let (p1, p2) = (path("proof.json"), path("proof.hex"));
    prove(&raw, &p1, &["--sector-id", "7"]);
    prove(&wrapped, &p2, &["--format", "hex"]);
    for (input, proof) in [(&raw, &p1), (&wrapped, &p2), (&raw, &p2)] {
        let o = verify(input, proof, &["--sector-id", "7"]);
        assert!(o.status.success() && text(&o).contains("verified: 1 partition"), "{input} {proof}: {}", text(&o));
    }
    // Another sector number: refused (by the envelope's SectorNum, or by the proof).
    let o = verify(&wrapped, &p1, &["--sector-id", "8"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("SectorNum"), "{}", text(&o));
    let o = verify(&raw, &p1, &["--sector-id", "8"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

/// `make-post` seals 2 KiB sectors and writes a PoSt request file (Curio's
/// request fields); `prove-post` proves it on the CPU; filecoin-proofs'
/// chain verifiers, run here, accept the proofs. A tampered vanilla proof
/// is refused with the reason. The PoSt parameters (seconds at 2 KiB) are
/// the tests' shared set in `target/tmp/test-params`.
#[test]
fn make_post_and_prove_post_window_and_winning() {
    use base64::Engine as _;
    use filecoin_proofs_api::post as api;

    let params = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("test-params");
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &params);
    let params = params.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    // WindowPoSt 2 KiB V1_1 (Lotus' 10) over two sectors; WinningPoSt 2 KiB
    // (0), the sector the randomness picks among three.
    for (registered, sectors) in [("10", "2"), ("0", "3")] {
        let (request, proof) = (path(&format!("post-{registered}.json")), path(&format!("proof-{registered}.hex")));
        let o = porep_c2(&[
            "make-post",
            "--registered-proof",
            registered,
            "--sectors",
            sectors,
            "--miner",
            "f01000",
            "--seed",
            "5",
            "--out",
            &request,
            "--gen-params",
            params,
        ]);
        assert!(o.status.success(), "{}", text(&o));
        let o = porep_c2(&["prove-post", &request, "--backend", "cpu", "--params-dir", params, "--out", &proof]);
        assert!(o.status.success(), "{}", text(&o));

        let file: serde_json::Value = serde_json::from_slice(&std::fs::read(&request).unwrap()).unwrap();
        let hex32 =
            |v: &serde_json::Value| -> [u8; 32] { hex::decode(v.as_str().unwrap()).unwrap().try_into().unwrap() };
        let randomness = hex32(&file["randomness"]);
        let rp = porep_c2_service::registered_post_proof(registered.parse().unwrap()).unwrap();
        let replicas: std::collections::BTreeMap<_, _> = file["sectors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let id = filecoin_proofs_api::SectorId::from(s["sector_id"].as_u64().unwrap());
                (id, filecoin_proofs_api::PublicReplicaInfo::new(rp, hex32(&s["comm_r"])))
            })
            .collect();
        let prover_id = porep_c2_service::prover_id_from_actor(1000);
        let bytes = hex::decode(std::fs::read_to_string(&proof).unwrap().trim()).unwrap();
        assert_eq!(bytes.len(), 192);
        let ok = if registered == "0" {
            api::verify_winning_post(&randomness, &bytes, &replicas, prover_id).unwrap()
        } else {
            api::verify_window_post(&randomness, &[(rp, &bytes[..])], &replicas, prover_id).unwrap()
        };
        assert!(ok, "{rp:?}: filecoin-proofs' verifier accepts the proof");

        // comm_c of the first sector changed (64 bytes from the end).
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut tampered = file.clone();
        let mut v = b64.decode(tampered["vanilla_proofs"][0].as_str().unwrap()).unwrap();
        let at = v.len() - 64;
        v[at] ^= 1;
        tampered["vanilla_proofs"][0] = b64.encode(&v).into();
        let bad = path("tampered.json");
        std::fs::write(&bad, serde_json::to_vec(&tampered).unwrap()).unwrap();
        let o = porep_c2(&["prove-post", &bad, "--backend", "cpu", "--params-dir", params]);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(text(&o).contains("do not verify"), "{}", text(&o));
    }
}

/// `make-update` seals and updates a 2 KiB sector and writes Curio's
/// SnapDeals fields; `prove-update` proves them on the CPU and
/// filecoin-proofs' verifier accepts the proof; swapped commitments are
/// refused with the reason. The update circuit's parameters (~2 minutes at
/// 2 KiB) are the tests' shared set in `target/tmp/test-params`.
#[test]
fn make_update_and_prove_update() {
    let params = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("test-params");
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &params);
    let params = params.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (request, proof) = (path("update.json"), path("update.hex"));
    let o = porep_c2(&["make-update", "--sector", "9", "--seed", "11", "--out", &request, "--gen-params", params]);
    assert!(o.status.success(), "{}", text(&o));
    let o = porep_c2(&["prove-update", &request, "--backend", "cpu", "--params-dir", params, "--out", &proof]);
    assert!(o.status.success(), "{}", text(&o));

    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(&request).unwrap()).unwrap();
    let hex32 = |v: &serde_json::Value| -> [u8; 32] { hex::decode(v.as_str().unwrap()).unwrap().try_into().unwrap() };
    let bytes = hex::decode(std::fs::read_to_string(&proof).unwrap().trim()).unwrap();
    assert_eq!(bytes.len(), 192);
    let ok = filecoin_proofs_api::update::verify_empty_sector_update_proof(
        filecoin_proofs_api::RegisteredUpdateProof::StackedDrg2KiBV1,
        &bytes,
        hex32(&file["comm_r_old"]),
        hex32(&file["comm_r_new"]),
        hex32(&file["comm_d_new"]),
    )
    .unwrap();
    assert!(ok, "filecoin-proofs' verifier accepts the proof");

    let mut swapped = file.clone();
    swapped["comm_r_old"] = file["comm_r_new"].clone();
    swapped["comm_r_new"] = file["comm_r_old"].clone();
    let bad = path("swapped.json");
    std::fs::write(&bad, serde_json::to_vec(&swapped).unwrap()).unwrap();
    let o = porep_c2(&["prove-update", &bad, "--backend", "cpu", "--params-dir", params]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("does not verify against comm_r_old"), "{}", text(&o));
}
