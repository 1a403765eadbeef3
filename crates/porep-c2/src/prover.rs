//! The C2 flow: C1 output -> instance -> pipelined synthesis and proving ->
//! verification -> bytes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use bellperson::groth16::{prepare_verifying_key, verify_proof, Parameters, Proof, VerifyingKey};
use blstrs::{Bls12, Scalar};
use c2_sched::{on_host_pool, Pipeline, Ready, SchedError};
use c2_synth::{instance_from_c1, ProofInstance};
use ff::Field;
use filecoin_proofs_api::seal::{SealCommitPhase1Output, SealCommitPhase2Output};
use filecoin_proofs_api::{ProverId, SectorId};
use rand::SeedableRng;
use rand_core::{OsRng, RngCore};

use crate::backend::{compact_witness_estimate, Backend, Partition, PartitionJob, Witness};
use crate::config::{PartitionEvent, ProverConfig, Randomness, SynthesisPath};
use crate::error::Error;
use crate::params::{params_key, read_verifying_key, verifying_key_path, ParamsSource};
use crate::report::{PartitionReport, ProofReport};

/// Size of one partition's proof: A (G1, 48) || B (G2, 96) || C (G1, 48).
pub const SINGLE_PARTITION_PROOF_LEN: usize = 192;

/// Partitions per bellperson batch in storage-proofs' `circuit_proofs`
/// (`MAX_GROTH16_BATCH_SIZE`): a sector update's 16 partitions are proved
/// as a batch of 10, then one of 6.
const GROTH16_BATCH: usize = 10;

/// Draws `(r, s)` per partition the way filecoin-proofs does: partitions in
/// batches of [`GROTH16_BATCH`], and per batch bellperson's
/// `create_random_proof_batch` draws all its `r` first, then all its `s`.
/// With the same RNG state both give the same proof bytes.
fn draw_blinding(rng: &mut dyn RngCore, partitions: usize) -> Vec<(Scalar, Scalar)> {
    let mut pairs = Vec::with_capacity(partitions);
    let mut left = partitions;
    while left > 0 {
        let batch = left.min(GROTH16_BATCH);
        let r: Vec<Scalar> = (0..batch).map(|_| Scalar::random(&mut *rng)).collect();
        let s: Vec<Scalar> = (0..batch).map(|_| Scalar::random(&mut *rng)).collect();
        pairs.extend(r.into_iter().zip(s));
        left -= batch;
    }
    pairs
}

/// The `(r, s)` pairs `randomness` gives for `partitions` partitions (drawn
/// as bellperson draws them; see [`Randomness`]).
pub fn blinding_pairs(randomness: &Randomness, partitions: usize) -> Result<Vec<(Scalar, Scalar)>, Error> {
    match randomness {
        Randomness::Os => Ok(draw_blinding(&mut OsRng, partitions)),
        Randomness::Seed(seed) => Ok(draw_blinding(&mut rand_chacha::ChaCha20Rng::from_seed(*seed), partitions)),
        Randomness::Explicit(pairs) if pairs.len() == partitions => Ok(pairs.clone()),
        Randomness::Explicit(pairs) => Err(Error::Randomness { given: pairs.len(), partitions }),
    }
}

/// Proves a sector: `filecoin_proofs_api::seal::seal_commit_phase2`'s
/// contract (same inputs, same output bytes for the same randomness), with
/// the stages and randomness chosen by `config`.
pub fn prove_porep_c2(
    c1: &SealCommitPhase1Output,
    prover_id: ProverId,
    sector_id: SectorId,
    config: &ProverConfig,
) -> Result<SealCommitPhase2Output, Error> {
    prove_porep_c2_with_report(c1, prover_id, sector_id, config).map(|(out, _)| out)
}

/// [`prove_porep_c2`], also returning where the time went.
pub fn prove_porep_c2_with_report(
    c1: &SealCommitPhase1Output,
    prover_id: ProverId,
    sector_id: SectorId,
    config: &ProverConfig,
) -> Result<(SealCommitPhase2Output, ProofReport), Error> {
    let instance = instance_from_c1(c1, prover_id, u64::from(sector_id))?;
    let blinding = blinding_pairs(&config.randomness, instance.num_partitions())?;
    let (proof, report) = prove_loaded(instance.as_ref(), &blinding, config)?;
    Ok((SealCommitPhase2Output { proof }, report))
}

/// [`prove_porep_c2`] with the caller's RNG for `r`, `s` (drawn as bellperson
/// draws them; `config.randomness` is ignored).
pub fn prove_porep_c2_with_rng(
    c1: &SealCommitPhase1Output,
    prover_id: ProverId,
    sector_id: SectorId,
    config: &ProverConfig,
    rng: &mut dyn RngCore,
) -> Result<SealCommitPhase2Output, Error> {
    let instance = instance_from_c1(c1, prover_id, u64::from(sector_id))?;
    let blinding = draw_blinding(rng, instance.num_partitions());
    prove_loaded(instance.as_ref(), &blinding, config).map(|(proof, _)| SealCommitPhase2Output { proof })
}

/// Any proof kind's flow once its instance is built: the vanilla check,
/// the parameters (from the shared cache), then [`prove_instance`]. Returns
/// the partitions' proofs, concatenated.
pub(crate) fn prove_loaded(
    instance: &dyn ProofInstance,
    blinding: &[(Scalar, Scalar)],
    config: &ProverConfig,
) -> Result<(Vec<u8>, ProofReport), Error> {
    // Cheap checks first: bad input is reported before gigabytes of
    // parameters are read.
    let t = Instant::now();
    if config.check_vanilla_proofs {
        on_host_pool(config.pipeline.host_pool.as_deref(), || instance.check_vanilla_proofs())?;
    }
    let check_vanilla = t.elapsed();
    let t = Instant::now();
    // Read once per process (per shared cache), not once per proof.
    let params = config.params_cache.load(&config.params, instance.parameter_id())?;
    let load_params = t.elapsed();
    let config = ProverConfig { check_vanilla_proofs: false, ..config.clone() };
    let (proof, mut report) = prove_instance(instance, &params, blinding, &config)?;
    report.check_vanilla = check_vanilla;
    report.load_params = load_params;
    report.total += check_vanilla + load_params;
    Ok((proof, report))
}

/// Proves every partition of `instance` with these parameters and blinding
/// pairs (one per partition), verifying the result unless
/// `config.verify` is off. Returns the concatenated 192-byte proofs.
pub fn prove_instance(
    instance: &dyn ProofInstance,
    params: &Parameters<Bls12>,
    blinding: &[(Scalar, Scalar)],
    config: &ProverConfig,
) -> Result<(Vec<u8>, ProofReport), Error> {
    let start = Instant::now();
    let partitions = instance.num_partitions();
    if blinding.len() != partitions {
        return Err(Error::Randomness { given: blinding.len(), partitions });
    }
    let mut report = ProofReport { backend: format!("{:?}", config.backend), ..Default::default() };

    // Host work on the proof's host pool (urgent proofs' ahead of the
    // rest, where a service set one up), as its synthesis in the pipeline.
    let host_pool = config.pipeline.host_pool.as_deref();
    if config.check_vanilla_proofs {
        let t = Instant::now();
        on_host_pool(host_pool, || instance.check_vanilla_proofs())?;
        report.check_vanilla = t.elapsed();
    }

    // The synthesis path (every one gives the same record).
    let matrices = match &config.synthesis {
        SynthesisPath::Matrices { cache_dir } => Some(config.matrices.get(instance, cache_dir.as_deref())?),
        SynthesisPath::Recorded => recorded(config.matrices.get(instance, None))?,
        SynthesisPath::Auto if partitions > 1 || config.matrices.holds(instance.parameter_id()) => {
            recorded(config.matrices.get(instance, None))?
        }
        _ => None,
    };
    // With matrices, only the witness: the prover computes a, b, c (on its
    // device, or on the host).
    let synthesize = |k: usize| -> Result<Partition, Error> {
        Ok(match (&config.synthesis, &matrices) {
            (SynthesisPath::Sequential, _) => Partition::Synthesized(instance.synthesize_partition_sequential(k)?),
            (_, Some(m)) => {
                let (inputs, aux) = instance.synthesize_compact_witness(k)?;
                Partition::Witness(Witness { inputs, aux, matrices: m.clone() })
            }
            _ => Partition::Synthesized(instance.synthesize_partition(k)?),
        })
    };
    let synthesize = &synthesize;
    let key = params_key(instance.parameter_id(), params);
    let pipeline = &config.pipeline;
    // One consumer per worker (GPU workers), or one for host-level stages.
    // A consumer takes every partition already waiting, up to what its
    // worker proves together (`Backend::max_batch`: a GPU worker that
    // streams its parameters runs their MSMs in one pass), never waiting
    // for more.
    let max_batch = config.backend.max_batch();
    let consumers: Vec<_> = (0..config.backend.consumers())
        .map(|w| {
            let key = key.as_str();
            move |batch: Vec<Ready<Partition>>| -> Result<Vec<_>, (usize, Error)> {
                let job = |k: usize, partition_data, host| {
                    let (r, s_blind) = blinding[k];
                    PartitionJob { partition: k, partition_data, host, params, params_key: key, r, s: s_blind }
                };
                let event = |e| config.progress.as_ref().map(|p| p.event(e));
                let started = |k: usize, device| {
                    event(PartitionEvent::Started { partition: k, device });
                };
                let prove = |backend: &Backend, job: PartitionJob<'_>| {
                    let k = job.partition;
                    backend.prove(w, job, pipeline.priority, pipeline.cancel.as_ref(), &|device| started(k, device))
                };
                // Done, on a retry with its cause (`None`: first time).
                let done = |k: usize, shape, proof, steps, cause: Option<String>| {
                    event(PartitionEvent::Done { partition: k });
                    Ok((proof, shape, steps, cause))
                };
                let shapes: Vec<_> = batch.iter().map(|r| (r.index, (r.item.shape(), r.item.host_bytes()))).collect();
                // Every worker fenced (a dead device): these partitions go
                // to the retry backend as they are, without a failed try or
                // a second synthesis.
                if let (true, Some(retry)) = (config.backend.is_fenced_out(), &config.retry_backend) {
                    let cause = Error::NoHealthyWorker { workers: config.backend.consumers() }.to_string();
                    return batch
                        .into_iter()
                        .zip(&shapes)
                        .map(|(Ready { index: k, item, permit }, &(_, shape))| {
                            let (proof, steps) = prove(retry, job(k, item, permit)).map_err(|e| (k, e))?;
                            done(k, shape, proof, steps, Some(cause.clone())).map_err(|e| (k, e))
                        })
                        .collect();
                }
                let jobs = batch.into_iter().map(|Ready { index, item, permit }| job(index, item, permit)).collect();
                let firsts = config.backend.prove_batch(w, jobs, pipeline.priority, pipeline.cancel.as_ref(), &started);
                let mut out = Vec::with_capacity(shapes.len());
                for (&(k, shape), first) in shapes.iter().zip(firsts) {
                    let first = match first {
                        Ok((proof, steps)) => {
                            out.push(done(k, shape, proof, steps, None).map_err(|e| (k, e))?);
                            continue;
                        }
                        Err(e) => e,
                    };
                    // A device fault: the partition again on a healthy
                    // worker of the backend (the failed one's device is
                    // fenced now: on a multi-GPU host, another GPU) while
                    // such workers remain (each fault fences one more
                    // device; at most one try per worker), then once on
                    // the retry backend. Running out of device memory
                    // fences nothing: straight to the retry backend.
                    // Synthesis consumed its vectors in the failed run; it
                    // is deterministic, so a second run gives the same
                    // circuit. (Its memory is outside the budget: the
                    // failed run returned the permit. Retries are rare.)
                    let retried = (|| {
                        let cause = first.to_string();
                        let mut error = first;
                        let on_workers = |e: &Error| {
                            e.is_backend_failure()
                                && !e.is_device_out_of_memory()
                                && config.backend.healthy_workers() > 0
                        };
                        for _ in 0..config.backend.consumers() {
                            if !on_workers(&error) {
                                break;
                            }
                            log::warn!("porep-c2: partition {k}: {error}; synthesizing it again for a healthy worker");
                            match prove(&config.backend, job(k, synthesize(k)?, None)) {
                                Ok((proof, steps)) => return done(k, shape, proof, steps, Some(cause)),
                                Err(e) => error = e,
                            }
                        }
                        match &config.retry_backend {
                            Some(retry) if error.is_backend_failure() => {
                                log::warn!(
                                    "porep-c2: partition {k}: {error}; synthesizing it again and proving on {retry:?}"
                                );
                                let (proof, steps) = prove(retry, job(k, synthesize(k)?, None))?;
                                done(k, shape, proof, steps, Some(cause))
                            }
                            _ => Err(error),
                        }
                    })();
                    out.push(retried.map_err(|e| (k, e))?);
                }
                Ok(out)
            }
        })
        .collect();
    // Admission: an estimate before a partition exists, settled to the
    // partition's real size once it does. The caller's `item_bytes` when
    // set; else twice the largest partition seen in this run (synthesis
    // holds the challenges' parts and the joined result at once), or before
    // any, the shape's compact-witness estimate (slack included).
    let largest_seen = AtomicUsize::new(0);
    let explicit = config.pipeline.item_bytes;
    let shape_estimate = matrices.as_ref().map_or(0, |m| compact_witness_estimate(m.matrices.inputs, m.matrices.aux));
    let estimate = |_k: usize| match (explicit, largest_seen.load(Ordering::Relaxed)) {
        (0, 0) => shape_estimate,
        (0, seen) => 2 * seen,
        (explicit, _) => explicit,
    };
    let held = |p: &Partition| {
        let bytes = p.host_bytes();
        largest_seen.fetch_max(bytes, Ordering::Relaxed);
        Some(bytes)
    };
    // The queue holds a whole batch of finished partitions (each still
    // holds its host permit: admission by memory is unchanged).
    let mut pipeline_config = config.pipeline.clone();
    pipeline_config.queue_depth = pipeline_config.queue_depth.max(max_batch);
    let out = Pipeline::new(pipeline_config)
        .run_batched(partitions, estimate, synthesize, held, max_batch, consumers)
        .map_err(|e| match e {
            SchedError::Job { error, .. } => error,
            SchedError::Cancelled => Error::Cancelled,
            SchedError::Admission(a) => Error::HostMemory(a),
            other => Error::Pipeline(other.to_string()),
        })?;
    report.pipeline = out.wall;

    let mut proofs: Vec<Proof<Bls12>> = Vec::with_capacity(partitions);
    for (k, ((proof, ((constraints, aux), host_bytes), steps, retried_after), timing)) in
        out.results.into_iter().zip(out.timings).enumerate()
    {
        report.partitions.push(PartitionReport {
            partition: k,
            constraints,
            aux,
            host_bytes,
            synthesis: timing.produce,
            queue_wait: timing.queue_wait,
            prove: timing.consume,
            steps,
            retried_after,
        });
        proofs.push(proof);
    }

    if config.verify {
        let t = Instant::now();
        on_host_pool(host_pool, || verify_partitions(instance, &params.vk, &proofs))?;
        report.verify = t.elapsed();
    }

    let mut bytes = Vec::with_capacity(SINGLE_PARTITION_PROOF_LEN * partitions);
    for p in &proofs {
        p.write(&mut bytes).map_err(|e| Error::Verifier(format!("serializing proof: {e}")))?;
    }
    report.total = start.elapsed();
    Ok((bytes, report))
}

/// Checks a C2 proof (`proof`: 192 bytes per partition, as
/// [`prove_porep_c2`] returns it) for the sector of `c1`, with the verifying
/// key from `params` (a cache folder's `.vk` file, the verifying key at the
/// head of a `.params` file, or loaded parameters): what a client of a
/// remote prover runs on the bytes it received. `Ok(())` when every
/// partition verifies; [`Error::VerificationFailed`] names those that do not.
pub fn verify_porep_c2(
    c1: &SealCommitPhase1Output,
    prover_id: ProverId,
    sector_id: SectorId,
    proof: &[u8],
    params: &ParamsSource,
) -> Result<(), Error> {
    let instance = instance_from_c1(c1, prover_id, u64::from(sector_id))?;
    let partitions = instance.num_partitions();
    if proof.len() != partitions * SINGLE_PARTITION_PROOF_LEN {
        return Err(Error::Verifier(format!(
            "{} proof bytes for {partitions} partitions ({SINGLE_PARTITION_PROOF_LEN} each)",
            proof.len()
        )));
    }
    let vk = match params {
        ParamsSource::CacheDir(dir) => read_verifying_key(&verifying_key_path(dir, instance.parameter_id()))?,
        // A .params file begins with its verifying key.
        ParamsSource::File(path) => read_verifying_key(path)?,
        ParamsSource::Loaded(_) | ParamsSource::ById(_) => params.load(instance.parameter_id())?.vk.clone(),
    };
    let proofs = proof
        .chunks(SINGLE_PARTITION_PROOF_LEN)
        .enumerate()
        .map(|(k, bytes)| Proof::read(bytes).map_err(|e| Error::Verifier(format!("partition {k}'s proof: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    verify_partitions(instance.as_ref(), &vk, &proofs)
}

/// Verifies each partition's proof against its public inputs with the
/// verifying key.
fn verify_partitions(
    instance: &dyn ProofInstance,
    vk: &VerifyingKey<Bls12>,
    proofs: &[Proof<Bls12>],
) -> Result<(), Error> {
    let pvk = prepare_verifying_key(vk);
    let mut failed = Vec::new();
    for (k, proof) in proofs.iter().enumerate() {
        let inputs = instance.public_inputs(k)?;
        match verify_proof(&pvk, proof, &inputs) {
            Ok(true) => {}
            Ok(false) => failed.push(k),
            Err(e) => return Err(Error::Verifier(format!("partition {k}: {e}"))),
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::VerificationFailed { partitions: failed })
    }
}

/// A shape's matrices, or `None` for instances without a recordable shape
/// (synthetic circuits): they take the circuit path.
fn recorded(
    m: Result<std::sync::Arc<crate::config::ShapeMatrices>, c2_synth::MatrixError>,
) -> Result<Option<std::sync::Arc<crate::config::ShapeMatrices>>, Error> {
    match m {
        Ok(m) => Ok(Some(m)),
        Err(c2_synth::MatrixError::Unsupported(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}
