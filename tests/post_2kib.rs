//! WindowPoSt and WinningPoSt on real 2 KiB sectors: filecoin-proofs' seal
//! flow, then its challenge and vanilla-proof functions (what a node sends),
//! then our facade. The proofs are bellperson's bytes for the same r and s
//! on the circuit filecoin-proofs builds from the same vanilla proofs, and
//! filecoin-proofs' own verifiers accept them; bad input is a typed error
//! before any parameters are read.
//!
//! Random Groth16 parameters for the two PoSt circuits (11.5 MB and 47 MB)
//! are generated once into the tests' parameter folder, which this binary
//! also hands to filecoin-proofs (its verifiers read the verifying keys
//! from there).

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use bellperson::groth16::{create_proof_batch, Parameters, Proof};
use blstrs::{Bls12, Scalar};
use c2_testkit::demo::{self, SealedSector};
use common::test_params_dir;
use filecoin_hashers::Hasher;
use filecoin_proofs::{as_safe_commitment, FallbackPoStSectorProof, SectorShape2KiB, SectorShape8MiB};
use filecoin_proofs_api::post as api;
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, SectorId};
use porep_c2::{
    post_instance, prove_window_post, prove_winning_post, Error, ParamsSource, PoStInputError, PoStKind, ProofInstance,
    ProverConfig, Randomness, SynthesisPath,
};
use storage_proofs_core::{compound_proof::CompoundProof, merkle::MerkleTreeTrait, proof::ProofScheme};
use storage_proofs_post::fallback::{self, FallbackPoSt, FallbackPoStCompound, PublicSector};

type Tree = SectorShape2KiB;
type DomainOf<T> = <<T as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// Three sealed 2 KiB sectors of one prover: a WindowPoSt deadline of two
/// partitions (2 + 1 sectors: the second padded) and WinningPoSt's pick.
struct Fixture {
    _work: tempfile::TempDir,
    sectors: Vec<SealedSector>,
    prover_id: [u8; 32],
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        // filecoin-proofs reads its settings once per process: set the
        // folder before its first call.
        std::env::set_var(porep_c2::PARAMETER_CACHE_ENV, test_params_dir());
        let _ = env_logger::builder().is_test(true).try_init();
        let work = tempfile::tempdir().unwrap();
        // Actor id 1000 as filecoin-ffi derives the prover id.
        let mut prover_id = [0u8; 32];
        prover_id[..2].copy_from_slice(&[0xe8, 0x07]);
        let sectors = (0..3u64)
            .map(|i| {
                let dir = work.path().join(format!("s{i}"));
                demo::seal_registered_for(
                    RegisteredSealProof::StackedDrg2KiBV1_1,
                    &dir,
                    40 + i,
                    Some(prover_id),
                    Some(100 + i),
                )
                .unwrap()
            })
            .collect();
        Fixture { _work: work, sectors, prover_id }
    })
}

/// A canonical field element (as the chain's randomness is, once masked).
fn randomness(byte: u8) -> [u8; 32] {
    let mut r = [byte; 32];
    r[31] &= 0x3f;
    r
}

/// The circuit's parameters, generated once per circuit (tests in this
/// binary run concurrently).
fn params(instance: &dyn ProofInstance) -> Arc<Parameters<Bls12>> {
    static LOCK: Mutex<()> = Mutex::new(());
    let _one_at_a_time = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let t = std::time::Instant::now();
    let (params, generated) = demo::ensure_parameters(instance, &test_params_dir(), 11).unwrap();
    eprintln!(
        "{} parameters {} in {:.1?}",
        instance.parameter_id(),
        if generated { "generated" } else { "read" },
        t.elapsed()
    );
    params
}

fn config(params: &Arc<Parameters<Bls12>>, r: u64, s: u64) -> ProverConfig {
    ProverConfig {
        params: ParamsSource::Loaded(params.clone()),
        randomness: Randomness::Explicit(vec![(Scalar::from(r), Scalar::from(s))]),
        ..ProverConfig::default()
    }
}

fn bytes(proofs: &[Proof<Bls12>]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in proofs {
        p.write(&mut out).unwrap();
    }
    out
}

fn decode<T: MerkleTreeTrait>(vanilla: &[Vec<u8>]) -> Vec<FallbackPoStSectorProof<T>> {
    vanilla.iter().map(|b| bincode::deserialize(b).unwrap()).collect()
}

fn public_inputs<T: MerkleTreeTrait>(
    randomness: &[u8; 32],
    prover_id: &[u8; 32],
    proofs: &[FallbackPoStSectorProof<T>],
    k: Option<usize>,
) -> fallback::PublicInputs<DomainOf<T>> {
    fallback::PublicInputs {
        randomness: as_safe_commitment(randomness, "randomness").unwrap(),
        prover_id: as_safe_commitment(prover_id, "prover_id").unwrap(),
        sectors: proofs.iter().map(|p| PublicSector { id: p.sector_id, comm_r: p.comm_r }).collect(),
        k,
    }
}

/// bellperson's proof of the partition circuit filecoin-proofs'
/// `generate_single_window_post_with_vanilla` builds, with r and s given.
fn bellperson_window<T: 'static + MerkleTreeTrait>(
    registered: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: &[u8; 32],
    vanilla: &[Vec<u8>],
    partition: usize,
    params: &Parameters<Bls12>,
    (r, s): (u64, u64),
) -> Vec<u8> {
    let config = registered.as_v1_config();
    let vanilla_params =
        FallbackPoSt::<T>::setup(&filecoin_proofs::parameters::window_post_setup_params(&config)).unwrap();
    let proofs = decode::<T>(vanilla);
    let inputs = public_inputs(randomness, prover_id, &proofs, Some(partition));
    let partition_proof =
        filecoin_proofs::single_partition_vanilla_proofs(&config, &vanilla_params, &inputs, &proofs).unwrap();
    let circuit = <FallbackPoStCompound<T> as CompoundProof<FallbackPoSt<'_, T>, _>>::circuit(
        &inputs,
        Default::default(),
        &partition_proof,
        &vanilla_params,
        Some(0),
    )
    .unwrap();
    bytes(&create_proof_batch(vec![circuit], params, vec![Scalar::from(r)], vec![Scalar::from(s)]).unwrap())
}

/// bellperson's proof of the circuit filecoin-proofs'
/// `generate_winning_post_with_vanilla` builds, with r and s given.
fn bellperson_winning<T: 'static + MerkleTreeTrait>(
    rp: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: &[u8; 32],
    vanilla: &[Vec<u8>],
    params: &Parameters<Bls12>,
    (r, s): (u64, u64),
) -> Vec<u8> {
    let config = rp.as_v1_config();
    let vanilla_params =
        FallbackPoSt::<T>::setup(&filecoin_proofs::parameters::winning_post_setup_params(&config).unwrap()).unwrap();
    let proofs = decode::<T>(vanilla);
    let inputs = public_inputs(randomness, prover_id, &proofs, None);
    let partitioned = filecoin_proofs::partition_vanilla_proofs(&config, &vanilla_params, &inputs, 1, &proofs).unwrap();
    let circuit = <FallbackPoStCompound<T> as CompoundProof<FallbackPoSt<'_, T>, _>>::circuit(
        &inputs,
        Default::default(),
        &partitioned[0],
        &vanilla_params,
        Some(0),
    )
    .unwrap();
    bytes(&create_proof_batch(vec![circuit], params, vec![Scalar::from(r)], vec![Scalar::from(s)]).unwrap())
}

#[test]
fn window_post_partitions_are_bellpersons_and_verify() {
    let f = fixture();
    let all: Vec<&SealedSector> = f.sectors.iter().collect();
    let replicas = |rp| -> BTreeMap<SectorId, _> { all.iter().map(|s| (s.sector_id, s.public_replica(rp))).collect() };
    // V1_2 (today's, filecoin-ffi's V1_1) draws each sector's challenges
    // from the challenge number alone; V1 from the sector's index in the
    // deadline too, so partition 1's public inputs depend on its index.
    for (rp, seed) in
        [(RegisteredPoStProof::StackedDrgWindow2KiBV1_2, 21), (RegisteredPoStProof::StackedDrgWindow2KiBV1, 22)]
    {
        let randomness = randomness(seed);
        let vanilla = demo::post_vanilla_proofs(rp, &all, &randomness).unwrap();
        let chunks = [&vanilla[..2], &vanilla[2..]];
        let instance =
            post_instance(rp, PoStKind::Window { partition_index: 0 }, &randomness, &f.prover_id, chunks[0]).unwrap();
        let params = params(instance.as_ref());

        let mut ours = Vec::new();
        for (k, chunk) in chunks.iter().enumerate() {
            let rs = (3 + k as u64, 5 + k as u64);
            let proof =
                prove_window_post(rp, &randomness, f.prover_id, chunk, k, &config(&params, rs.0, rs.1)).unwrap();
            assert_eq!(proof.len(), 192);
            let theirs = bellperson_window::<Tree>(rp, &randomness, &f.prover_id, chunk, k, &params, rs);
            assert_eq!(proof, theirs, "{rp:?} partition {k}: bellperson's bytes");

            // Partition k's public inputs as storage-proofs derives them
            // from the whole deadline.
            let instance =
                post_instance(rp, PoStKind::Window { partition_index: k }, &randomness, &f.prover_id, chunk).unwrap();
            // The instance's own bellperson path (peer-prove's) is the same.
            let (r, s) = (Scalar::from(rs.0), Scalar::from(rs.1));
            let peer = instance.bellperson_proofs(&params, &[0], &[r], &[s]).unwrap();
            assert_eq!(bytes(&peer), theirs, "{rp:?} partition {k}: the instance's bellperson_proofs");
            let deadline = public_inputs(&randomness, &f.prover_id, &decode::<Tree>(&vanilla), None);
            let vanilla_params =
                FallbackPoSt::<Tree>::setup(&filecoin_proofs::parameters::window_post_setup_params(&rp.as_v1_config()))
                    .unwrap();
            let expected =
                <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::generate_public_inputs(
                    &deadline,
                    &vanilla_params,
                    Some(k),
                )
                .unwrap();
            assert_eq!(instance.public_inputs(0).unwrap(), expected, "{rp:?} partition {k}: public inputs");
            ours.push(proof);
        }
        // filecoin-proofs' verifier on the whole deadline.
        let merged = ours.concat();
        let ok = api::verify_window_post(&randomness, &[(rp, &merged[..])], &replicas(rp), f.prover_id).unwrap();
        assert!(ok, "{rp:?}: verify_window_post accepts our partitions");

        // filecoin-proofs' own prover on partition 1 (its r, s are random):
        // its proof and ours are interchangeable.
        let theirs = api::generate_single_window_post_with_vanilla(rp, &randomness, f.prover_id, chunks[1], 1).unwrap();
        let mixed = [&ours[0][..], &theirs.0[..]].concat();
        assert!(api::verify_window_post(&randomness, &[(rp, &mixed[..])], &replicas(rp), f.prover_id).unwrap());

        // A proof of partition 0 does not pass as the deadline's proof
        // with partition 1's swapped in.
        let swapped = [&ours[1][..], &ours[0][..]].concat();
        assert!(
            !api::verify_window_post(&randomness, &[(rp, &swapped[..])], &replicas(rp), f.prover_id).unwrap_or(false)
        );
    }
}

#[test]
fn window_post_synthesis_paths_give_the_same_proof() {
    let f = fixture();
    let rp = RegisteredPoStProof::StackedDrgWindow2KiBV1_2;
    let randomness = randomness(23);
    let sectors: Vec<&SealedSector> = f.sectors.iter().take(2).collect();
    let vanilla = demo::post_vanilla_proofs(rp, &sectors, &randomness).unwrap();
    let instance =
        post_instance(rp, PoStKind::Window { partition_index: 0 }, &randomness, &f.prover_id, &vanilla).unwrap();
    let params = params(instance.as_ref());
    let prove = |synthesis| {
        let config = ProverConfig { synthesis, ..config(&params, 7, 9) };
        prove_window_post(rp, &randomness, f.prover_id, &vanilla, 0, &config).unwrap()
    };
    let circuit = prove(SynthesisPath::Circuit);
    assert_eq!(prove(SynthesisPath::Sequential), circuit, "sequential");
    assert_eq!(prove(SynthesisPath::Recorded), circuit, "witness only, a, b, c from the recorded matrices");
    assert_eq!(prove(SynthesisPath::Auto), circuit, "default");

    // The witness-only paths (native and through the gadgets) against the
    // constraint system's assignments.
    let full = instance.synthesize_partition(0).unwrap();
    let (inputs, aux) = instance.synthesize_witness(0).unwrap();
    assert_eq!((inputs, aux), (full.input_assignment.clone(), full.aux_assignment.clone()));
    let (inputs, aux) = instance.synthesize_witness_gadgets(0).unwrap();
    assert_eq!((inputs, aux), (full.input_assignment.clone(), full.aux_assignment.clone()));
    let (inputs, compact) = instance.synthesize_compact_witness(0).unwrap();
    assert_eq!((inputs, compact.expand()), (full.input_assignment, full.aux_assignment));
}

#[test]
fn winning_post_is_bellpersons_and_verifies() {
    let f = fixture();
    let rp = RegisteredPoStProof::StackedDrgWinning2KiBV1;
    let randomness = randomness(31);
    // The node's pick among its sectors, then that sector's 66 challenges.
    let picked =
        api::generate_winning_post_sector_challenge(rp, &randomness, f.sectors.len() as u64, f.prover_id).unwrap();
    let sector = &f.sectors[picked[0] as usize];
    let vanilla = demo::post_vanilla_proofs(rp, &[sector], &randomness).unwrap();
    let instance = post_instance(rp, PoStKind::Winning, &randomness, &f.prover_id, &vanilla).unwrap();
    let params = params(instance.as_ref());

    let ours = prove_winning_post(rp, &randomness, f.prover_id, &vanilla, &config(&params, 11, 13)).unwrap();
    assert_eq!(ours.len(), 192);

    // bellperson on the circuit generate_winning_post_with_vanilla builds.
    let theirs = bellperson_winning::<Tree>(rp, &randomness, &f.prover_id, &vanilla, &params, (11, 13));
    assert_eq!(ours, theirs, "bellperson's bytes");
    let peer = instance.bellperson_proofs(&params, &[0], &[Scalar::from(11u64)], &[Scalar::from(13u64)]).unwrap();
    assert_eq!(bytes(&peer), theirs, "the instance's bellperson_proofs");
    // Unequal blinding lengths and a partition it does not have are typed.
    assert!(instance.bellperson_proofs(&params, &[0], &[], &[]).is_err());
    assert!(instance.bellperson_proofs(&params, &[1], &[Scalar::from(1u64)], &[Scalar::from(1u64)]).is_err());

    let replicas: BTreeMap<SectorId, _> = [(sector.sector_id, sector.public_replica(rp))].into();
    assert!(api::verify_winning_post(&randomness, &ours, &replicas, f.prover_id).unwrap(), "verify_winning_post");
    let own = api::generate_winning_post_with_vanilla(rp, &randomness, f.prover_id, &vanilla).unwrap();
    assert!(api::verify_winning_post(&randomness, &own[0].1, &replicas, f.prover_id).unwrap());
    // Bound to its randomness.
    let other = randomness_other(&randomness);
    assert!(!api::verify_winning_post(&other, &ours, &replicas, f.prover_id).unwrap_or(false));
}

/// Test sectors made without sealing (`post_test_sectors`: sparse trees
/// over the challenged leaves) prove like sealed ones: a WindowPoSt
/// partition and a WinningPoSt, accepted by filecoin-proofs' verifiers with
/// the test sectors' comm_r.
#[test]
fn test_sectors_without_sealing_prove_and_verify() {
    let f = fixture();
    for (rp, ids, seed) in [
        (RegisteredPoStProof::StackedDrgWindow2KiBV1_2, vec![501u64, 502], 51u8),
        (RegisteredPoStProof::StackedDrgWinning2KiBV1, vec![503], 52),
    ] {
        let randomness = randomness(seed);
        let sectors = c2_synth::post_test_sectors(rp, &randomness, &f.prover_id, &ids, 8).unwrap();
        let vanilla: Vec<Vec<u8>> = sectors.iter().map(|s| s.vanilla_proof.clone()).collect();
        let replicas: BTreeMap<SectorId, _> = sectors
            .iter()
            .map(|s| (SectorId::from(s.sector_id), filecoin_proofs_api::PublicReplicaInfo::new(rp, s.comm_r)))
            .collect();
        let winning = ids.len() == 1;
        let kind = if winning { PoStKind::Winning } else { PoStKind::Window { partition_index: 0 } };
        let instance = post_instance(rp, kind, &randomness, &f.prover_id, &vanilla).unwrap();
        let params = params(instance.as_ref());
        let config = config(&params, 17, 19);
        let ok = if winning {
            let proof = prove_winning_post(rp, &randomness, f.prover_id, &vanilla, &config).unwrap();
            api::verify_winning_post(&randomness, &proof, &replicas, f.prover_id).unwrap()
        } else {
            let proof = prove_window_post(rp, &randomness, f.prover_id, &vanilla, 0, &config).unwrap();
            api::verify_window_post(&randomness, &[(rp, &proof[..])], &replicas, f.prover_id).unwrap()
        };
        assert!(ok, "{rp:?}: filecoin-proofs' verifier accepts a test sector's proof");
    }
}

fn randomness_other(r: &[u8; 32]) -> [u8; 32] {
    let mut o = *r;
    o[0] ^= 1;
    o
}

/// Every malformed request is a typed error found before parameters are
/// read (the parameter folder here does not exist).
#[test]
fn bad_post_input_is_a_typed_error_before_any_work() {
    let f = fixture();
    let window = RegisteredPoStProof::StackedDrgWindow2KiBV1;
    let winning = RegisteredPoStProof::StackedDrgWinning2KiBV1;
    let randomness = randomness(41);
    let all: Vec<&SealedSector> = f.sectors.iter().collect();
    let vanilla = demo::post_vanilla_proofs(window, &all, &randomness).unwrap();
    let config = ProverConfig {
        params: ParamsSource::CacheDir("/nonexistent/porep-c2-params".into()),
        ..ProverConfig::default()
    };
    let post_error = |r: Result<Vec<u8>, Error>| match r {
        Err(Error::Synthesis(c2_synth::SynthError::PoSt(e))) => e,
        other => panic!("expected a PoSt input error, got {other:?}"),
    };
    let window_proof = |v: &[Vec<u8>], k, rp, rand: &[u8; 32]| prove_window_post(rp, rand, f.prover_id, v, k, &config);

    // Three sectors in one 2 KiB partition (it takes two); none.
    assert!(matches!(
        post_error(window_proof(&vanilla, 0, window, &randomness)),
        PoStInputError::SectorCount { actual: 3, .. }
    ));
    assert!(matches!(
        post_error(window_proof(&[], 0, window, &randomness)),
        PoStInputError::SectorCount { actual: 0, .. }
    ));
    // Not bincode.
    let garbage = vec![vec![1u8, 2, 3]];
    assert!(matches!(
        post_error(window_proof(&garbage, 0, window, &randomness)),
        PoStInputError::Decode { index: 0, .. }
    ));
    // comm_c changed (it sits before comm_r_last at the end of the bytes):
    // H(comm_c, comm_r_last) is no longer comm_r.
    let mut tampered = vanilla[..2].to_vec();
    let at = tampered[1].len() - 64;
    tampered[1][at] ^= 1;
    assert!(matches!(
        post_error(window_proof(&tampered, 0, window, &randomness)),
        PoStInputError::InvalidVanillaProofs
    ));
    // comm_r_last changed: storage-proofs' vanilla verifier reads the
    // paths' root instead and would pass it; the circuit would not.
    let mut tampered = vanilla[..2].to_vec();
    let at = tampered[0].len() - 32;
    tampered[0][at] ^= 1;
    assert!(matches!(
        post_error(window_proof(&tampered, 0, window, &randomness)),
        PoStInputError::InvalidVanillaProofs
    ));
    // Partition 0's proofs sent as partition 1 (V1: the challenges depend
    // on the sectors' place in the deadline).
    assert!(matches!(
        post_error(window_proof(&vanilla[..2], 1, window, &randomness)),
        PoStInputError::InvalidVanillaProofs
    ));
    // Another randomness.
    assert!(matches!(
        post_error(window_proof(&vanilla[..2], 0, window, &randomness_other(&randomness))),
        PoStInputError::InvalidVanillaProofs
    ));
    // Not a field element.
    assert!(matches!(
        post_error(window_proof(&vanilla[..2], 0, window, &[0xff; 32])),
        PoStInputError::NonCanonical("randomness")
    ));
    // A WinningPoSt type in a WindowPoSt request, and the reverse.
    assert!(matches!(
        post_error(window_proof(&vanilla[..2], 0, winning, &randomness)),
        PoStInputError::ProofKind { expected: "WindowPoSt", .. }
    ));
    let wrong_kind = prove_winning_post(window, &randomness, f.prover_id, &vanilla[..1], &config);
    assert!(matches!(post_error(wrong_kind), PoStInputError::ProofKind { expected: "WinningPoSt", .. }));
    // WinningPoSt with two sectors, or with a WindowPoSt sector proof (10
    // challenged leaves instead of 66).
    let two = prove_winning_post(winning, &randomness, f.prover_id, &vanilla[..2], &config);
    assert!(matches!(post_error(two), PoStInputError::SectorCount { actual: 2, .. }));
    let short = prove_winning_post(winning, &randomness, f.prover_id, &vanilla[..1], &config);
    assert!(matches!(post_error(short), PoStInputError::Shape { index: 0, .. }));

    // And a good request with this config fails on the parameters only.
    match window_proof(&vanilla[..2], 0, window, &randomness) {
        Err(Error::Params(_)) => {}
        other => panic!("expected a parameter error, got {other:?}"),
    }
}

/// 8 MiB, the same oracle: three sealed 8 MiB sectors, a WindowPoSt
/// deadline of two partitions (2 + 1, padded) and a WinningPoSt, each ==
/// bellperson's bytes for the same r, s and accepted by filecoin-proofs'
/// verifiers.
#[test]
#[ignore = "seals three 8 MiB sectors and makes the 8 MiB PoSt circuits' parameters once (143 s with the 2 KiB tests on two cores); cargo test --release -p porep-c2 --test post_2kib -- --ignored --nocapture"]
fn post_8mib_is_bellpersons_and_verifies() {
    type T8 = SectorShape8MiB;
    let f = fixture();
    let work = tempfile::tempdir().unwrap();
    let t = std::time::Instant::now();
    let sectors: Vec<SealedSector> = (0..3u64)
        .map(|i| {
            let dir = work.path().join(format!("m{i}"));
            let rp = RegisteredSealProof::StackedDrg8MiBV1_1;
            demo::seal_registered_for(rp, &dir, 80 + i, Some(f.prover_id), Some(300 + i)).unwrap()
        })
        .collect();
    eprintln!("three 8 MiB sectors sealed in {:.1?}", t.elapsed());
    let all: Vec<&SealedSector> = sectors.iter().collect();

    let rp = RegisteredPoStProof::StackedDrgWindow8MiBV1_2;
    let window_rand = randomness(61);
    let vanilla = demo::post_vanilla_proofs(rp, &all, &window_rand).unwrap();
    let chunks = [&vanilla[..2], &vanilla[2..]];
    let instance =
        post_instance(rp, PoStKind::Window { partition_index: 0 }, &window_rand, &f.prover_id, chunks[0]).unwrap();
    let window_params = params(instance.as_ref());
    let mut ours = Vec::new();
    for (k, chunk) in chunks.iter().enumerate() {
        let rs = (21 + k as u64, 23 + k as u64);
        let t = std::time::Instant::now();
        let proof =
            prove_window_post(rp, &window_rand, f.prover_id, chunk, k, &config(&window_params, rs.0, rs.1)).unwrap();
        eprintln!("8 MiB WindowPoSt partition {k} proved (CPU) and verified in {:.1?}", t.elapsed());
        let theirs = bellperson_window::<T8>(rp, &window_rand, &f.prover_id, chunk, k, &window_params, rs);
        assert_eq!(proof, theirs, "partition {k}: bellperson's bytes");
        ours.push(proof);
    }
    let replicas: BTreeMap<SectorId, _> = all.iter().map(|s| (s.sector_id, s.public_replica(rp))).collect();
    let merged = ours.concat();
    assert!(api::verify_window_post(&window_rand, &[(rp, &merged[..])], &replicas, f.prover_id).unwrap());

    let rp = RegisteredPoStProof::StackedDrgWinning8MiBV1;
    let randomness = randomness(62);
    let picked =
        api::generate_winning_post_sector_challenge(rp, &randomness, sectors.len() as u64, f.prover_id).unwrap();
    let sector = &sectors[picked[0] as usize];
    let vanilla = demo::post_vanilla_proofs(rp, &[sector], &randomness).unwrap();
    let instance = post_instance(rp, PoStKind::Winning, &randomness, &f.prover_id, &vanilla).unwrap();
    let params = params(instance.as_ref());
    let t = std::time::Instant::now();
    let proof = prove_winning_post(rp, &randomness, f.prover_id, &vanilla, &config(&params, 25, 27)).unwrap();
    eprintln!("8 MiB WinningPoSt proved (CPU) and verified in {:.1?}", t.elapsed());
    assert_eq!(proof, bellperson_winning::<T8>(rp, &randomness, &f.prover_id, &vanilla, &params, (25, 27)));
    let replicas: BTreeMap<SectorId, _> = [(sector.sector_id, sector.public_replica(rp))].into();
    assert!(api::verify_winning_post(&randomness, &proof, &replicas, f.prover_id).unwrap());
}
