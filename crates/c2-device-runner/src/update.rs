//! SnapDeals updates at full size on the GPU workers (issue 40): test
//! updates made without a sector (`c2_synth::update_test_sector`: every
//! partition passes storage-proofs-update's verifier), the circuit's a·b = c
//! at full size on partition 0, Groth16 test parameters generated for the
//! circuit on the GPU (`crate::setup::params_for`; every proof verified by
//! the facade), the whole update proved
//! by the witness path (a, b, c on the device from the recorded matrices)
//! and by the circuit path, bytes equal for the same r, s; then the witness
//! path's end-to-end time over several proofs.

use std::sync::Arc;
use std::time::Instant;

use blstrs::Scalar;
use c2_synth::{check_satisfied, update_instance, update_test_sector, ProofInstance};
use filecoin_proofs_api::RegisteredUpdateProof;
use porep_c2::gpu::{gpu_backend, GpuBackendConfig};
use porep_c2::{prove_instance, MatrixStore, SynthesisPath};

use crate::post::{verified_config, witness_vs_circuit};
use crate::Report;
use rayon::prelude::*;

/// The registered update proofs of `--update-sizes` (2k, 8m, 512m, 32g, 64g).
/// Above this many constraints per partition the runner leaves out
/// storage-proofs' one-pass circuit (minutes per partition on one thread
/// at 32 GiB's 82 M): tests hold the split circuit equal to it at 2 KiB
/// and 8 MiB (~11 M).
const ONE_PASS_MAX: usize = 20_000_000;

pub fn proofs_of(sizes: &[&str]) -> Result<Vec<RegisteredUpdateProof>, String> {
    use RegisteredUpdateProof::*;
    sizes
        .iter()
        .map(|s| match *s {
            "2k" => Ok(StackedDrg2KiBV1),
            "8m" => Ok(StackedDrg8MiBV1),
            "512m" => Ok(StackedDrg512MiBV1),
            "32g" => Ok(StackedDrg32GiBV1),
            "64g" => Ok(StackedDrg64GiBV1),
            other => Err(format!("--update-sizes: unknown size {other} (2k, 8m, 512m, 32g, 64g)")),
        })
        .collect()
}

/// Runs the checks and timings for each registered update proof, `proofs`
/// end-to-end proofs each. With `proof_dir`, the witness path's proof
/// bytes are written there as `ours-update-<size>.proof`; with
/// `bellperson`, partition 0 is proved by bellperson too and the bytes
/// compared (`crate::post::versus_bellperson`).
pub fn bench(
    gpu: Arc<c2_cuda::Gpu>,
    r: &mut Report,
    types: &[RegisteredUpdateProof],
    proofs: usize,
    proof_dir: Option<&std::path::Path>,
    bellperson: bool,
) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    for &rp in types {
        // One backend per size: dropped before bellperson's prover runs.
        let backend = gpu_backend(&GpuBackendConfig::default()).map_err(|x| e(&x))?;
        let t = Instant::now();
        let u = update_test_sector(rp, 7).map_err(|x| e(&x))?;
        let make = |u: &c2_synth::UpdateTestSector| {
            update_instance(rp, &u.vanilla_proofs, &u.comm_r_old, &u.comm_r_new, &u.comm_d_new).map_err(|x| e(&x))
        };
        let instance: Arc<dyn ProofInstance> = Arc::from(make(&u)?);
        let made_in = t.elapsed();
        let t = Instant::now();
        let vanilla_ok = instance.check_vanilla_proofs().is_ok();
        let partitions = instance.num_partitions();
        println!(
            "update {rp:?}: test update of {partitions} partitions made in {made_in:.1?}, vanilla verifier in {:.1?}",
            t.elapsed()
        );
        r.check(
            format!("update {rp:?}: the test update passes the vanilla verifier ({partitions} partitions)"),
            vanilla_ok,
        );

        let store = Arc::new(MatrixStore::default());
        let params = crate::setup::params_for(gpu.clone(), r, &store, instance.as_ref(), &format!("update {rp:?}"))?;
        let m = store.get(instance.as_ref(), None).map_err(|x| e(&x))?;
        let constraints = m.matrices.constraints();

        // Partition 0: the witness (hashes native, challenges concurrently),
        // a·b = c over the recorded matrices, and at small sizes the one-pass
        // circuit record compared with both.
        let t = Instant::now();
        let (inputs, aux) = instance.synthesize_witness(0).map_err(|x| e(&x))?;
        let witness_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let (a, b, c) = c2_abc::evaluate(&m.matrices.view(), &inputs, &aux).map_err(|x| e(&x))?;
        let evaluate_s = t.elapsed().as_secs_f64();
        let satisfied = a.par_iter().zip(&b).zip(&c).all(|((a, b), c)| *a * b == *c);
        r.check(format!("update {rp:?}: partition 0's a·b = c over {constraints} constraints"), satisfied);
        let mut line = format!(
            "update {rp:?}: {constraints} constraints per partition; witness (native, challenges concurrently) {witness_s:.2} s, A·z, B·z, C·z {evaluate_s:.2} s"
        );
        let one_pass = constraints <= ONE_PASS_MAX;
        if one_pass {
            let t = Instant::now();
            let full = instance.synthesize_partition(0).map_err(|x| e(&x))?;
            line += &format!(", circuit record {:.2} s", t.elapsed().as_secs_f64());
            r.check(format!("update {rp:?}: the circuit record is satisfied"), check_satisfied(&full).is_ok());
            r.check(
                format!("update {rp:?}: the witness and A·z, B·z, C·z == the circuit record's"),
                full.aux_assignment == aux && full.a == a && full.b == b && full.c == c,
            );
        }
        drop((inputs, aux, a, b, c));
        println!("{line} per partition");
        r.bench.push(line);

        let t = Instant::now();
        let resident = backend.preload(instance.parameter_id(), &params).map_err(|x| e(&x))?;
        println!("update {rp:?}: parameters preloaded on {resident} worker(s) in {:.1?}", t.elapsed());
        let pairs = vec![(Scalar::from(3u64), Scalar::from(5u64)); partitions];
        let config = |synthesis| verified_config(&backend, &store, synthesis);
        let ours =
            witness_vs_circuit(r, &format!("update {rp:?}"), instance.as_ref(), &params, &pairs, &config, one_pass)?;
        if let Some(dir) = proof_dir {
            let size = crate::post::size_name(instance.sector_size());
            std::fs::write(dir.join(format!("ours-update-{size}.proof")), &ours).map_err(|x| e(&x))?;
        }
        let mut walls = Vec::new();
        for _ in 0..proofs {
            let t = Instant::now();
            let instance = make(&u)?;
            instance.check_vanilla_proofs().map_err(|x| e(&x))?;
            prove_instance(instance.as_ref(), &params, &pairs, &config(SynthesisPath::Matrices { cache_dir: None }))
                .map_err(|x| e(&x))?;
            walls.push(t.elapsed().as_secs_f64());
        }
        if !walls.is_empty() {
            let line = format!(
                "update {rp:?}: end to end, {partitions} partitions (decode, vanilla check, witness, GPU, assembly, verification) {} s per proof",
                walls.iter().map(|w| format!("{w:.2}")).collect::<Vec<_>>().join(" / ")
            );
            println!("{line}");
            r.bench.push(line);
        }
        backend.evict(instance.parameter_id(), &params);
        drop(backend);
        if bellperson {
            crate::post::versus_bellperson(r, &format!("update {rp:?}"), instance.as_ref(), &params, pairs[0], &ours)?;
        }
    }
    Ok(())
}
