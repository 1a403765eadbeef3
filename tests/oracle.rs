//! The main oracle: our proofs are byte-for-byte bellperson 0.27's for the
//! same circuit, parameters, r and s, and they verify.

mod common;

use bellperson::groth16::{create_proof_batch, generate_random_parameters, prepare_verifying_key, verify_proof, Proof};
use blstrs::{Bls12, Scalar};
use c2_synth::{synthesize, ProofInstance};
use c2_testkit::demo;
use common::*;
use ff::Field;
use porep_c2::{prove_instance, prove_synthesized, HostStages, ProverConfig};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn proof_bytes(proofs: &[Proof<Bls12>]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in proofs {
        p.write(&mut out).unwrap();
    }
    out
}

fn random_pairs(rng: &mut ChaCha20Rng, n: usize) -> Vec<(Scalar, Scalar)> {
    (0..n).map(|_| (Scalar::random(&mut *rng), Scalar::random(&mut *rng))).collect()
}

#[test]
fn synthetic_circuit_proofs_are_bellpersons() {
    let mut rng = ChaCha20Rng::seed_from_u64(100);
    let rounds = 300;
    let params = generate_random_parameters::<Bls12, _, _>(Synthetic { x: None, rounds }, &mut rng).unwrap();
    let pvk = prepare_verifying_key(&params.vk);
    let circuits: Vec<Synthetic> = (0..3).map(|_| Synthetic { x: Some(Scalar::random(&mut rng)), rounds }).collect();
    let mut pairs = random_pairs(&mut rng, 3);
    // Edge blinding values: zero and r-1.
    pairs[1] = (Scalar::ZERO, -Scalar::ONE);

    let (r_s, s_s): (Vec<_>, Vec<_>) = pairs.iter().copied().unzip();
    let theirs = create_proof_batch(circuits.clone(), &params, r_s, s_s).unwrap();

    let mut ours = Vec::new();
    for (c, (r, s)) in circuits.iter().zip(&pairs) {
        let synth = synthesize(c.clone()).unwrap();
        // Satisfied constraints: a·b = c at every row.
        assert!(synth.a.iter().zip(&synth.b).zip(&synth.c).all(|((a, b), c)| *a * b == *c));
        let (proof, _) = prove_synthesized(synth, &params, *r, *s, &HostStages::cpu()).unwrap();
        assert!(verify_proof(&pvk, &proof, &[c.output()]).unwrap(), "our proof verifies");
        ours.push(proof);
    }
    assert_eq!(proof_bytes(&ours), proof_bytes(&theirs));
    // And a wrong public input is rejected.
    assert!(!verify_proof(&pvk, &ours[0], &[circuits[0].output() + Scalar::ONE]).unwrap());
}

/// The peer benchmark's premise: the 32 GiB-shaped circuit (scaled far
/// down), with its random parameters and fixed r, s, proves to bellperson's
/// bytes through the facade (so on the GPU, the peer provers' bytes must
/// equal ours too; the device runner checks that).
#[test]
fn shaped_circuit_proofs_are_bellpersons() {
    use c2_testkit::synthetic::{random_parameters, SyntheticPorep, SyntheticShape};
    let shape = SyntheticShape::porep_32gib().scaled(16384);
    let instance = SyntheticPorep::shaped_circuits(shape.clone(), 2);
    let params = random_parameters(&shape, 7);
    let pairs = vec![(Scalar::from(3u64), Scalar::from(5u64)); 2];
    let (r_s, s_s): (Vec<_>, Vec<_>) = pairs.iter().copied().unzip();
    let theirs = create_proof_batch(vec![instance.circuit(0), instance.circuit(1)], &params, r_s, s_s).unwrap();
    let config = ProverConfig { verify: false, check_vanilla_proofs: false, ..ProverConfig::default() };
    let (ours, _) = prove_instance(&instance, &params, &pairs, &config).unwrap();
    assert_eq!(ours, proof_bytes(&theirs));
}

/// A seeded proof of 16 partitions (a sector update's count) draws r and s
/// as filecoin-proofs does: storage-proofs proves partitions in bellperson
/// batches of at most 10, and each `create_random_proof_batch` draws its
/// batch's r's, then its s's, from the one RNG.
#[test]
fn seeded_blinding_follows_filecoin_proofs_batches_of_ten() {
    use bellperson::groth16::create_random_proof_batch;
    use c2_testkit::synthetic::{random_parameters, SyntheticPorep, SyntheticShape};
    let shape = SyntheticShape::porep_32gib().scaled(1 << 17);
    let instance = SyntheticPorep::shaped_circuits(shape.clone(), 16);
    let params = random_parameters(&shape, 8);
    let seed = [42u8; 32];
    let mut rng = ChaCha20Rng::from_seed(seed);
    let mut theirs = Vec::new();
    for batch in [0..10, 10..16] {
        let circuits = batch.map(|k| instance.circuit(k)).collect();
        theirs.extend(create_random_proof_batch(circuits, &params, &mut rng).unwrap());
    }
    let pairs = porep_c2::blinding_pairs(&porep_c2::Randomness::Seed(seed), 16).unwrap();
    let config = ProverConfig { verify: false, check_vanilla_proofs: false, ..ProverConfig::default() };
    let (ours, _) = prove_instance(&instance, &params, &pairs, &config).unwrap();
    assert_eq!(ours, proof_bytes(&theirs));
}

#[test]
fn tiny_stacked_drg_proofs_are_bellpersons_and_verify() {
    let instance = demo::tiny_instance(&tiny_config()).unwrap();
    let params = tiny_params();
    let mut rng = ChaCha20Rng::seed_from_u64(101);
    let pairs = random_pairs(&mut rng, instance.num_partitions());

    let config = ProverConfig::default(); // verifies before returning
    let (ours, report) = prove_instance(&instance, &params, &pairs, &config).unwrap();
    assert_eq!(ours.len(), 192 * instance.num_partitions());
    eprintln!("tiny StackedDrg: {} constraints per partition", report.partitions[0].constraints);

    let circuits = (0..instance.num_partitions()).map(|k| instance.circuit(k).unwrap()).collect();
    let (r_s, s_s): (Vec<_>, Vec<_>) = pairs.iter().copied().unzip();
    let theirs = create_proof_batch(circuits, &*params, r_s, s_s).unwrap();
    assert_eq!(ours, proof_bytes(&theirs), "bit-identical to bellperson");

    // Independently verified with bellperson's verifier and the circuit's
    // public inputs as storage-proofs computes them.
    let pvk = prepare_verifying_key(&params.vk);
    for (k, p) in theirs.iter().enumerate() {
        let inputs = instance.public_inputs(k).unwrap();
        assert!(verify_proof(&pvk, p, &inputs).unwrap(), "partition {k} verifies");
    }
    // Partition proofs are bound to their partition's inputs.
    let inputs1 = instance.public_inputs(1).unwrap();
    assert!(!verify_proof(&pvk, &theirs[0], &inputs1).unwrap());
}

/// Every synthesis path gives the same proof bytes: the constraint system
/// with challenges concurrently, the sequential reference, and
/// witness-only synthesis with a, b, c from the recorded constraint
/// matrices (recorded once, then read from the disk cache by a new config).
/// One partition: every path proves each partition alike (the two-partition
/// sector is the bellperson test above), and five proofs of two partitions
/// took 221 s of CI's two cores.
#[test]
fn every_synthesis_path_gives_the_same_proof() {
    use porep_c2::SynthesisPath;
    let instance = demo::tiny_instance(&demo::TinyConfig { partitions: 1, ..tiny_config() }).unwrap();
    let params = tiny_params();
    let pairs = vec![(Scalar::from(7u64), Scalar::from(9u64)); instance.num_partitions()];
    let dir = tempfile::tempdir().unwrap();
    let with = |synthesis| ProverConfig { synthesis, ..ProverConfig::default() };
    // The default path (`Auto`) proves bellperson's bytes in the test above:
    // the constraint system is the reference here.
    let (circuit, _) = prove_instance(&instance, &params, &pairs, &with(SynthesisPath::Circuit)).unwrap();
    let (sequential, _) = prove_instance(&instance, &params, &pairs, &with(SynthesisPath::Sequential)).unwrap();
    assert_eq!(circuit, sequential, "sequential path");
    let matrices = SynthesisPath::Matrices { cache_dir: Some(dir.path().to_path_buf()) };
    let (recorded, _) = prove_instance(&instance, &params, &pairs, &with(matrices.clone())).unwrap();
    assert_eq!(circuit, recorded, "matrices path, recorded now");
    let files = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(files, 1, "the matrices were cached on disk");
    let (cached, _) = prove_instance(&instance, &params, &pairs, &with(matrices)).unwrap();
    assert_eq!(circuit, cached, "matrices path, read from the cache");
}

#[test]
fn tiny_stacked_drg_synthesis_is_satisfied_and_deterministic() {
    let instance = demo::tiny_instance(&tiny_config()).unwrap();
    let a = instance.synthesize_partition(0).unwrap();
    assert!(a.a.iter().zip(&a.b).zip(&a.c).all(|((x, y), z)| *x * y == *z), "a·b = c everywhere");
    // The library's check agrees, and finds a broken constraint by index.
    c2_synth::check_satisfied(&a).unwrap();
    let mut broken = a.clone();
    let k = broken.c.len() / 3;
    broken.c[k] += Scalar::ONE;
    assert_eq!(c2_synth::first_unsatisfied(&broken), Some(k));
    assert_eq!(a.a_aux_density.len(), a.num_aux());
    assert_eq!(a.b_input_density.len(), a.num_inputs());
    assert_eq!(a.input_assignment[0], Scalar::ONE);
    let b = instance.synthesize_partition(0).unwrap();
    assert!(a == b, "synthesis is deterministic");
    // The challenges synthesized concurrently (the default) give the
    // sequential pass's record, bit for bit.
    assert!(a == instance.synthesize_partition_sequential(0).unwrap(), "parallel == sequential");
    let parallel =
        c2_synth::synthesize_partitions(&instance, &[1, 0], &c2_synth::SynthConfig { max_parallel: 2 }).unwrap();
    assert!(parallel[1] == a, "parallel synthesis returns partitions in request order");
}
