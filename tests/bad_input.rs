//! Bad input gets a typed error naming the problem: never a panic, never a
//! proof that fails verification.

mod common;

use std::path::Path;
use std::sync::Arc;

use bellperson::groth16::generate_random_parameters;
use blstrs::Bls12;
use c2_synth::{StackedInstance, SynthError};
use c2_testkit::demo;
use common::*;
use filecoin_proofs_api::RegisteredSealProof;
use porep_c2::{
    parse_c1_json, prove_instance, prove_porep_c2, Error, ParamsError, ParamsSource, ProverConfig, Randomness,
    SealCommitPhase1Output,
};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

struct Sealed2KiB {
    json: Vec<u8>,
    c1: SealCommitPhase1Output,
    prover_id: [u8; 32],
    sector_id: porep_c2::SectorId,
    _dir: tempfile::TempDir,
}

/// A registered 2 KiB C1 (sealing takes milliseconds; no parameters needed).
fn sealed() -> Sealed2KiB {
    let dir = tempfile::tempdir().unwrap();
    let s = demo::seal_registered(RegisteredSealProof::StackedDrg2KiBV1_1, dir.path(), 3).unwrap();
    Sealed2KiB {
        json: serde_json::to_vec(&s.c1).unwrap(),
        c1: s.c1,
        prover_id: s.prover_id,
        sector_id: s.sector_id,
        _dir: dir,
    }
}

/// A config whose parameter folder is empty: any test that got as far as
/// loading parameters would fail with `Missing`, so the checks under test
/// must fire before that.
fn config_without_params(dir: &Path) -> ProverConfig {
    ProverConfig {
        params: ParamsSource::CacheDir(dir.into()),
        randomness: Randomness::Seed([1; 32]),
        ..ProverConfig::default()
    }
}

fn prove_json(json: &[u8], s: &Sealed2KiB, config: &ProverConfig) -> Result<Vec<u8>, Error> {
    let c1 = parse_c1_json(json)?;
    prove_porep_c2(&c1, s.prover_id, s.sector_id, config).map(|o| o.proof)
}

fn tamper(json: &[u8], f: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_slice(json).unwrap();
    f(&mut v);
    serde_json::to_vec(&v).unwrap()
}

#[test]
fn truncated_and_garbled_json_are_invalid_c1() {
    let s = sealed();
    let empty = tempfile::tempdir().unwrap();
    let cfg = config_without_params(empty.path());
    for (name, json) in [
        ("truncated", s.json[..s.json.len() / 2].to_vec()),
        ("garbled", b"{\"registered_proof\": 17, \"comm_r\": \"xyz\"}".to_vec()),
        ("empty", Vec::new()),
        ("unknown proof type", tamper(&s.json, |v| v["registered_proof"] = "StackedDrg3KiBV1".into())),
        ("short commitment", tamper(&s.json, |v| v["comm_r"] = serde_json::json!([1, 2, 3]))),
    ] {
        let err = prove_json(&json, &s, &cfg).unwrap_err();
        assert!(matches!(err, Error::InvalidC1 { .. }), "{name}: {err}");
    }
}

#[test]
fn inconsistent_c1_is_rejected_before_parameters_are_read() {
    let s = sealed();
    let empty = tempfile::tempdir().unwrap();
    let cfg = config_without_params(empty.path());

    // Wrong prover id or sector id: the replica id no longer derives from them.
    let mut other_prover = s.prover_id;
    other_prover[0] ^= 1;
    let err = prove_porep_c2(&s.c1, other_prover, s.sector_id, &cfg).unwrap_err();
    assert!(matches!(err, Error::Synthesis(SynthError::ReplicaIdMismatch)), "{err}");
    let err = prove_porep_c2(&s.c1, s.prover_id, (u64::from(s.sector_id) + 1).into(), &cfg).unwrap_err();
    assert!(matches!(err, Error::Synthesis(SynthError::ReplicaIdMismatch)), "{err}");

    // Zero commitments and seed.
    for field in ["comm_d", "comm_r", "seed"] {
        let json = tamper(&s.json, |v| v[field] = serde_json::json!(vec![0u8; 32]));
        let err = prove_json(&json, &s, &cfg).unwrap_err();
        assert!(matches!(err, Error::Synthesis(SynthError::ZeroCommitment(f)) if f == field), "{field}: {err}");
    }

    // A tampered comm_r (still a valid field element) or seed: vanilla
    // proofs no longer verify.
    for field in ["comm_r", "seed"] {
        let json = tamper(&s.json, |v| {
            let b = v[field][0].as_u64().unwrap();
            v[field][0] = (b ^ 1).into();
        });
        let err = prove_json(&json, &s, &cfg).unwrap_err();
        assert!(matches!(err, Error::Synthesis(SynthError::InvalidVanillaProofs)), "{field}: {err}");
    }

    // A tampered vanilla proof (one byte of a labelling parent).
    let json = tamper(&s.json, |v| {
        let p = &mut v["vanilla_proofs"]["StackedDrg2KiBV1"][0][0]["labeling_proofs"][0]["parents"][0][0];
        *p = (p.as_u64().unwrap() ^ 1).into();
    });
    let err = prove_json(&json, &s, &cfg).unwrap_err();
    assert!(matches!(err, Error::Synthesis(SynthError::InvalidVanillaProofs)), "{err}");

    // A C1 claiming another sector size than its vanilla proofs. 32 GiB has
    // another Merkle tree shape: the proofs do not even convert.
    let json = tamper(&s.json, |v| v["registered_proof"] = "StackedDrg32GiBV1_1".into());
    let err = prove_json(&json, &s, &cfg).unwrap_err();
    assert!(matches!(err, Error::Synthesis(SynthError::VanillaProofShape { .. })), "{err}");
    // 8 MiB shares 2 KiB's tree shape, but its porep id (part of the replica
    // id) differs.
    let json = tamper(&s.json, |v| v["registered_proof"] = "StackedDrg8MiBV1_1".into());
    let err = prove_json(&json, &s, &cfg).unwrap_err();
    assert!(matches!(err, Error::Synthesis(SynthError::ReplicaIdMismatch)), "{err}");

    // No vanilla proofs at all.
    let json = tamper(&s.json, |v| v["vanilla_proofs"]["StackedDrg2KiBV1"] = serde_json::json!([]));
    let err = prove_json(&json, &s, &cfg).unwrap_err();
    assert!(matches!(err, Error::Synthesis(SynthError::NoVanillaProofs)), "{err}");

    // Non-interactive PoRep (an aggregated proof) is refused by name.
    let mut ni = s.c1.clone();
    ni.registered_proof = RegisteredSealProof::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep;
    let err = prove_porep_c2(&ni, s.prover_id, s.sector_id, &cfg).unwrap_err();
    assert!(matches!(err, Error::Synthesis(SynthError::Unsupported(_))), "{err}");

    // Explicit randomness of the wrong length.
    let cfg2 = ProverConfig { randomness: Randomness::Explicit(vec![]), ..cfg.clone() };
    let err = prove_porep_c2(&s.c1, s.prover_id, s.sector_id, &cfg2).unwrap_err();
    assert!(matches!(err, Error::Randomness { given: 0, partitions: 1 }), "{err}");
}

#[test]
fn missing_truncated_and_corrupt_parameter_files_are_typed_errors() {
    let s = sealed();
    let empty = tempfile::tempdir().unwrap();
    // Missing: the valid C1 gets as far as looking for its parameters.
    let err = prove_porep_c2(&s.c1, s.prover_id, s.sector_id, &config_without_params(empty.path())).unwrap_err();
    assert!(matches!(err, Error::Params(ParamsError::Missing { .. })), "{err}");
    assert!(err.to_string().contains("v28-stacked-proof-of-replication"), "names the file: {err}");

    // A real (small) parameter file, then damaged copies of it.
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let params = generate_random_parameters::<Bls12, _, _>(Synthetic { x: None, rounds: 50 }, &mut rng).unwrap();
    let good = empty.path().join("good.params");
    porep_c2::write_parameters(&params, &good, None).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    let read_back = porep_c2::read_parameters(&good).unwrap();
    assert!(read_back == params, "round trip");

    for cut in [0, 10, 500, bytes.len() / 2, bytes.len() - 1] {
        let p = empty.path().join(format!("cut{cut}.params"));
        std::fs::write(&p, &bytes[..cut]).unwrap();
        let err = porep_c2::read_parameters(&p).err().expect("an error");
        assert!(matches!(err, ParamsError::Truncated { .. }), "cut at {cut}: {err}");
        let cfg = ProverConfig { params: ParamsSource::File(p), ..config_without_params(empty.path()) };
        let err = prove_porep_c2(&s.c1, s.prover_id, s.sector_id, &cfg).unwrap_err();
        assert!(matches!(err, Error::Params(ParamsError::Truncated { .. })), "cut at {cut}: {err}");
    }

    // A garbled point in the H section (right after the vk).
    let mut bad = bytes.clone();
    let vk_len = 3 * 96 + 3 * 192 + 4 + 96 * params.vk.ic.len();
    for b in &mut bad[vk_len + 4..vk_len + 4 + 96] {
        *b = 0xff;
    }
    let p = empty.path().join("garbled.params");
    std::fs::write(&p, &bad).unwrap();
    let err = porep_c2::read_parameters(&p).err().expect("an error");
    assert!(matches!(err, ParamsError::InvalidPoint { section: "h", index: 0, .. }), "{err}");
}

#[test]
fn parameters_of_another_circuit_are_a_mismatch() {
    // The registered 2 KiB C1 against parameters of a different circuit:
    // a typed mismatch, found before any MSM runs.
    let s = sealed();
    let mut rng = ChaCha20Rng::seed_from_u64(6);
    let params = generate_random_parameters::<Bls12, _, _>(Synthetic { x: None, rounds: 50 }, &mut rng).unwrap();
    let cfg = ProverConfig { params: ParamsSource::Loaded(Arc::new(params)), ..ProverConfig::default() };
    let err = prove_porep_c2(&s.c1, s.prover_id, s.sector_id, &cfg).unwrap_err();
    assert!(matches!(err, Error::ParamsMismatch { .. }), "{err}");
}

#[test]
fn a_proof_that_does_not_verify_is_never_returned() {
    // Tiny sector whose public comm_r is altered after the vanilla proofs
    // were made: with the vanilla check off, synthesis runs on an
    // unsatisfied witness and the Groth16 proof fails verification.
    let params = tiny_params();
    let parts = demo::tiny_parts(&tiny_config()).unwrap();
    let mut public_inputs = parts.public_inputs.clone();
    let tau = public_inputs.tau.as_mut().unwrap();
    tau.comm_r = blstrs::Scalar::from(12345u64).into();
    let instance = StackedInstance::new(parts.vanilla_params, public_inputs, parts.vanilla_proofs).unwrap();
    let pairs = porep_c2::blinding_pairs(&Randomness::Seed([9; 32]), 2).unwrap();

    let cfg = ProverConfig { check_vanilla_proofs: false, ..ProverConfig::default() };
    let err = prove_instance(&instance, &params, &pairs, &cfg).unwrap_err();
    assert!(matches!(err, Error::VerificationFailed { ref partitions } if partitions == &vec![0, 1]), "{err}");

    // With the vanilla check on (the default) it is caught up front.
    let err = prove_instance(&instance, &params, &pairs, &ProverConfig::default()).unwrap_err();
    assert!(matches!(err, Error::Synthesis(SynthError::InvalidVanillaProofs)), "{err}");
}
