//! WindowPoSt and WinningPoSt at full size on the GPU workers (issue 39):
//! test sectors made without sealing (`c2_synth::post_test_sectors`: a
//! WindowPoSt partition of the proof type's full sector count, 2349 at
//! 32 GiB, and a WinningPoSt sector), checked by storage-proofs-post's
//! vanilla verifier; the native witness against the gadgets' and the
//! circuit's a·b = c at full size; Groth16 test parameters generated for
//! the circuit on the GPU (`crate::setup::params_for`; every proof verified
//! by the facade); the proof by
//! the witness path (a, b, c on the device from the recorded matrices) and
//! by the circuit path, bytes equal for the same r, s; then the witness
//! path's end-to-end time over several proofs.

use std::sync::Arc;
use std::time::Instant;

use bellperson::groth16::Parameters;
use blstrs::{Bls12, Scalar};
use c2_synth::{check_satisfied, post_test_partition, PoStTestPartition, ProofInstance};
use filecoin_proofs_api::RegisteredPoStProof;
use porep_c2::gpu::{gpu_backend, GpuBackendConfig};
use porep_c2::plan::{PartitionShape, ProofFamily};
use porep_c2::{prove_instance, Backend, MatrixStore, PipelineConfig, ProverConfig, SynthesisPath};

use crate::real::summary;
use crate::Report;

/// The registered proofs of `--post-sizes` (2k, 8m, 512m, 32g, 64g):
/// WindowPoSt V1_2 and WinningPoSt of each size.
pub fn proofs_of(sizes: &[&str]) -> Result<Vec<RegisteredPoStProof>, String> {
    use RegisteredPoStProof::*;
    let mut out = Vec::new();
    for s in sizes {
        let pair = match *s {
            "2k" => [StackedDrgWindow2KiBV1_2, StackedDrgWinning2KiBV1],
            "8m" => [StackedDrgWindow8MiBV1_2, StackedDrgWinning8MiBV1],
            "512m" => [StackedDrgWindow512MiBV1_2, StackedDrgWinning512MiBV1],
            "32g" => [StackedDrgWindow32GiBV1_2, StackedDrgWinning32GiBV1],
            "64g" => [StackedDrgWindow64GiBV1_2, StackedDrgWinning64GiBV1],
            other => return Err(format!("--post-sizes: unknown size {other} (2k, 8m, 512m, 32g, 64g)")),
        };
        out.extend(pair);
    }
    Ok(out)
}

/// `2k`, `8m`, `32g`: a sector size as the runner's options name it.
pub fn size_name(bytes: u64) -> String {
    match bytes {
        s if s >= 1 << 30 => format!("{}g", s >> 30),
        s if s >= 1 << 20 => format!("{}m", s >> 20),
        s => format!("{}k", s >> 10),
    }
}

/// `window-32g`, `winning-2k`, ...: the names of `--proof-dir`'s files.
pub fn post_name(rp: RegisteredPoStProof) -> String {
    let kind = if rp.typ() == filecoin_proofs_api::PoStType::Winning { "winning" } else { "window" };
    format!("{kind}-{}", size_name(u64::from(rp.sector_size())))
}

/// A configuration over every worker of `backend`, matrices from `store`,
/// no vanilla check (done apart) and verification on: the parameters are
/// generated for the circuit ([`crate::setup::params_for`]), so the facade
/// checks every proof against their verifying key before it returns.
pub(crate) fn verified_config(backend: &Backend, store: &Arc<MatrixStore>, synthesis: SynthesisPath) -> ProverConfig {
    ProverConfig {
        backend: backend.clone(),
        retry_backend: None,
        verify: true,
        check_vanilla_proofs: false,
        synthesis,
        matrices: store.clone(),
        pipeline: PipelineConfig { synthesis_workers: backend.consumers(), ..Default::default() },
        ..ProverConfig::default()
    }
}

/// One end-to-end proof of `test` (instance decode, vanilla check, the
/// pipeline, verification) under `config`: its wall seconds and a line
/// that splits them (decode and vanilla check, synthesis and proving per
/// partition, verification, host-to-device bytes).
fn end_to_end(
    test: &PoStTestPartition,
    params: &Parameters<Bls12>,
    pairs: &[(Scalar, Scalar)],
    config: &ProverConfig,
) -> Result<(f64, String), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let t = Instant::now();
    let instance = test.instance().map_err(|x| e(&x))?;
    instance.check_vanilla_proofs().map_err(|x| e(&x))?;
    let checked = t.elapsed().as_secs_f64();
    let (_, rep) = prove_instance(instance.as_ref(), params, pairs, config).map_err(|x| e(&x))?;
    let wall = t.elapsed().as_secs_f64();
    let (synth, prove): (f64, f64) =
        rep.partitions.iter().fold((0.0, 0.0), |(a, b), p| (a + p.synthesis.as_secs_f64(), b + p.prove.as_secs_f64()));
    let h2d: u64 = rep.partitions.iter().filter_map(|p| p.steps.gpu.as_ref()).map(|g| g.h2d_bytes).sum();
    let timelines: Vec<String> = rep.partitions.iter().map(|p| p.timeline()).collect();
    let line = format!(
        "end to end {wall:.2} s: decode and vanilla check {checked:.2} s, pipeline {:.2} s (synthesis {synth:.2} s, proving {prove:.2} s), verification {:.2} s, {:.2} GB host-to-device [{}]",
        rep.pipeline.as_secs_f64(),
        rep.verify.as_secs_f64(),
        h2d as f64 / 1e9,
        timelines.join("; ")
    );
    Ok((wall, line))
}

/// Proves `instance` by the witness path (a, b, c on the device from the
/// recorded matrices) and by the circuit path with the same r, s, prints
/// both timings under `tag`, and checks the bytes are equal.
pub(crate) fn witness_vs_circuit(
    r: &mut Report,
    tag: &str,
    instance: &dyn ProofInstance,
    params: &Parameters<Bls12>,
    pairs: &[(Scalar, Scalar)],
    config: &dyn Fn(SynthesisPath) -> ProverConfig,
    circuit_path: bool,
) -> Result<Vec<u8>, String> {
    let mut results = Vec::new();
    let paths = [
        ("witness only, a, b, c on the device", SynthesisPath::Matrices { cache_dir: None }),
        ("circuit path, a, b, c from the host", SynthesisPath::Circuit),
    ];
    for (label, synthesis) in paths.into_iter().take(if circuit_path { 2 } else { 1 }) {
        let t = Instant::now();
        let (bytes, rep) = prove_instance(instance, params, pairs, &config(synthesis)).map_err(|x| x.to_string())?;
        let line = format!("{tag} {}", summary(label, t.elapsed().as_secs_f64(), &rep));
        println!("{line}");
        r.bench.push(line);
        results.push(bytes);
    }
    if circuit_path {
        r.check(
            format!(
                "{tag}: witness path's proof bytes == circuit path's (generated parameters, both verified, same r, s)"
            ),
            results.len() == 2 && results[0] == results[1] && results[0].len() == 192 * pairs.len(),
        );
    } else {
        println!("{tag}: circuit path not run at this size (tests hold the paths equal at 2 KiB and 8 MiB)");
    }
    Ok(results.swap_remove(0))
}

/// Partition 0 of `instance` proved by bellperson (its CUDA prover when the
/// runner is built with `bellperson-cuda`, else its CPU prover: minutes at
/// 32 GiB) with the same parameters and `(r, s)`: its bytes against the
/// first partition of our verified `proof`. Run it with no backend of ours
/// holding the device's memory.
pub(crate) fn versus_bellperson(
    r: &mut Report,
    tag: &str,
    instance: &dyn ProofInstance,
    params: &Parameters<Bls12>,
    (rr, ss): (Scalar, Scalar),
    proof: &[u8],
) -> Result<(), String> {
    let which = if cfg!(feature = "bellperson-cuda") { "bellperson 0.27 CUDA" } else { "bellperson 0.27 CPU" };
    let t = Instant::now();
    let theirs = instance.bellperson_proofs(params, &[0], &[rr], &[ss]).map_err(|x| x.to_string())?;
    let wall = t.elapsed().as_secs_f64();
    let mut bytes = Vec::new();
    for p in &theirs {
        p.write(&mut bytes).map_err(|x| x.to_string())?;
    }
    let ours = &proof[..porep_c2::SINGLE_PARTITION_PROOF_LEN.min(proof.len())];
    let line = format!(
        "{tag} partition 0, {which} (its synthesis + prover; same parameters, r, s): {wall:.2} s; bytes {} ours",
        if bytes == ours { "==" } else { "!=" }
    );
    println!("{line}");
    r.bench.push(line);
    r.check(format!("{tag} partition 0: {which}'s proof bytes == ours (generated parameters)"), bytes == ours);
    Ok(())
}

/// Runs the checks and timings for each registered PoSt proof, `proofs`
/// end-to-end proofs each.
/// With `proof_dir`, the witness path's proof bytes are written there as
/// `ours-<post_name>.proof`; with `bellperson`, partition 0 is proved by
/// bellperson too and the bytes compared ([`versus_bellperson`]).
pub fn bench(
    gpu: Arc<c2_cuda::Gpu>,
    r: &mut Report,
    types: &[RegisteredPoStProof],
    proofs: usize,
    proof_dir: Option<&std::path::Path>,
    bellperson: bool,
) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    for &rp in types {
        // Workers planned for this kind's partitions (a WindowPoSt
        // partition has 79x C2's public inputs at 32 GiB).
        let family = if rp.typ() == filecoin_proofs_api::PoStType::Winning {
            ProofFamily::WinningPost
        } else {
            ProofFamily::WindowPost
        };
        let size = u64::from(rp.sector_size());
        let plan_for = PartitionShape::for_proof(family, size).ok_or_else(|| format!("{rp:?}: no plan"))?;
        let backend = gpu_backend(&GpuBackendConfig { plan_for, ..GpuBackendConfig::default() }).map_err(|x| e(&x))?;
        // The test partition (the whole circuit of one PoSt proof).
        let t = Instant::now();
        let test = post_test_partition(rp).map_err(|x| e(&x))?;
        let sectors = test.vanilla_proofs.len();
        let bytes: usize = test.vanilla_proofs.iter().map(Vec::len).sum();
        let instance: Arc<dyn ProofInstance> = Arc::from(test.instance().map_err(|x| e(&x))?);
        let made_in = t.elapsed();
        let t = Instant::now();
        let vanilla_ok = instance.check_vanilla_proofs().is_ok();
        println!(
            "post {rp:?}: {sectors} test sector(s) made in {made_in:.1?} ({:.1} MB of vanilla proofs), vanilla verifier in {:.1?}",
            bytes as f64 / 1e6,
            t.elapsed()
        );
        r.check(format!("post {rp:?}: {sectors} test sector(s) pass the vanilla verifier"), vanilla_ok);

        // The witness: native == gadgets; the record satisfied.
        let t = Instant::now();
        let native = instance.synthesize_witness(0).map_err(|x| e(&x))?;
        let native_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let (_, compact) = instance.synthesize_compact_witness(0).map_err(|x| e(&x))?;
        let compact_s = t.elapsed().as_secs_f64();
        drop(compact);
        let t = Instant::now();
        let gadgets = instance.synthesize_witness_gadgets(0).map_err(|x| e(&x))?;
        let gadgets_s = t.elapsed().as_secs_f64();
        r.check(format!("post {rp:?}: native witness == the gadgets' ({} aux)", native.1.len()), native == gadgets);
        drop(gadgets);
        let t = Instant::now();
        let full = instance.synthesize_partition(0).map_err(|x| e(&x))?;
        let record_s = t.elapsed().as_secs_f64();
        let constraints = full.a.len();
        let t = Instant::now();
        let satisfied = check_satisfied(&full);
        let check_s = t.elapsed().as_secs_f64();
        r.check(format!("post {rp:?}: a·b = c over {constraints} constraints"), satisfied.is_ok());
        let aux_match = full.aux_assignment == native.1 && full.input_assignment == native.0;
        r.check(format!("post {rp:?}: the circuit record's witness == the native witness"), aux_match);
        drop(full);
        drop(native);
        let line = format!(
            "post {rp:?}: {constraints} constraints; witness native {native_s:.2} s (compact {compact_s:.2} s) vs gadgets {gadgets_s:.2} s ({:.1}x); circuit record {record_s:.2} s; a·b = c check {check_s:.2} s",
            gadgets_s / native_s.max(1e-9)
        );
        println!("{line}");
        r.bench.push(line);

        let store = Arc::new(MatrixStore::default());
        let params = crate::setup::params_for(gpu.clone(), r, &store, instance.as_ref(), &format!("post {rp:?}"))?;
        let t = Instant::now();
        let resident = backend.preload(instance.parameter_id(), &params).map_err(|x| e(&x))?;
        println!("post {rp:?}: parameters preloaded on {resident} worker(s) in {:.1?}", t.elapsed());
        let pairs = vec![(Scalar::from(3u64), Scalar::from(5u64))];
        let config = |synthesis| verified_config(&backend, &store, synthesis);
        let ours = witness_vs_circuit(r, &format!("post {rp:?}"), instance.as_ref(), &params, &pairs, &config, true)?;
        if let Some(dir) = proof_dir {
            std::fs::write(dir.join(format!("ours-{}.proof", post_name(rp))), &ours).map_err(|x| e(&x))?;
        }
        // End to end (instance decode and vanilla check included), one
        // proof at a time: what a request costs once the set is resident.
        let mut walls = Vec::new();
        for _ in 0..proofs {
            let (wall, line) =
                end_to_end(&test, &params, &pairs, &config(SynthesisPath::Matrices { cache_dir: None }))?;
            println!("post {rp:?}: {line}");
            walls.push(wall);
        }
        if !walls.is_empty() {
            let line = format!(
                "post {rp:?}: end to end (decode, vanilla check, witness, GPU, assembly, verification) {} s per proof",
                walls.iter().map(|w| format!("{w:.2}")).collect::<Vec<_>>().join(" / ")
            );
            println!("{line}");
            r.bench.push(line);
        }
        // The next size's set (or bellperson's prover) takes the device
        // memory.
        backend.evict(instance.parameter_id(), &params);
        drop(backend);
        // The same proof with the matrices kept whole (no repeated form):
        // what `GpuBackendConfig::repeated_matrices` changes end to end
        // (WindowPoSt 32 GiB was 4.5 s slower per partition on 2026-12-07
        // than on 12-06 with less PCIe; this names the part that moved).
        if proofs > 0 {
            let whole = GpuBackendConfig { plan_for, repeated_matrices: false, ..GpuBackendConfig::default() };
            let backend = gpu_backend(&whole).map_err(|x| e(&x))?;
            backend.preload(instance.parameter_id(), &params).map_err(|x| e(&x))?;
            let config = verified_config(&backend, &store, SynthesisPath::Matrices { cache_dir: None });
            let (_, line) = end_to_end(&test, &params, &pairs, &config)?;
            let line = format!("post {rp:?}: matrices whole (repeated_matrices off): {line}");
            println!("{line}");
            r.bench.push(line);
            backend.evict(instance.parameter_id(), &params);
        }
        if bellperson {
            versus_bellperson(r, &format!("post {rp:?}"), instance.as_ref(), &params, pairs[0], &ours)?;
        }
    }
    Ok(())
}
