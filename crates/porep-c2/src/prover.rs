//! The C2 flow: C1 output -> instance -> pipelined synthesis and proving ->
//! verification -> bytes.

use std::time::{Duration, Instant};

use bellperson::groth16::{prepare_verifying_key, verify_proof, Parameters, Proof};
use blstrs::{Bls12, Scalar};
use c2_sched::{AdmissionError, HostPermit, Pipeline, PipelineConfig, SchedError};
use c2_synth::{instance_from_c1, PorepInstance};
use ff::Field;
use rand::SeedableRng;
use rand_core::{OsRng, RngCore};

use crate::groth16::{prove_synthesized, Backend, ProveTimings};
use crate::{
    Error, ProverConfig, ProverId, Randomness, SealCommitPhase1Output, SealCommitPhase2Output,
    SectorId, SINGLE_PARTITION_PROOF_LEN,
};

/// What one partition cost.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct PartitionReport {
    /// Partition index.
    pub partition: usize,
    /// Constraints (input constraints included).
    pub constraints: usize,
    /// Aux variables.
    pub aux: usize,
    /// Synthesis wall time.
    pub synthesis: Duration,
    /// Time the synthesized partition waited for the prover.
    pub queue_wait: Duration,
    /// Proving wall time (NTT + MSMs + assembly).
    pub prove: Duration,
    /// The proving time by step (of the run that produced the proof).
    pub steps: ProveTimings,
    /// When the primary backend failed and the partition was synthesized
    /// again and proved on `ProverConfig::retry_backend`: the failure.
    pub retried_after: Option<String>,
}

impl PartitionReport {
    /// One partition's timeline on one line: host stages, then (GPU workers)
    /// the CUDA-event times.
    pub fn timeline(&self) -> String {
        let p = self;
        let mut line = format!(
            "partition {:>2}: synth {:.2} s, queue {:.2} s, prove {:.2} s (ntt {:.2}, msm H {:.2} L {:.2} A {:.2} B1 {:.2} B2 {:.2}, assemble {:.3})",
            p.partition,
            p.synthesis.as_secs_f64(),
            p.queue_wait.as_secs_f64(),
            p.prove.as_secs_f64(),
            p.steps.ntt.as_secs_f64(),
            p.steps.msm_h.as_secs_f64(),
            p.steps.msm_l.as_secs_f64(),
            p.steps.msm_a.as_secs_f64(),
            p.steps.msm_b_g1.as_secs_f64(),
            p.steps.msm_b_g2.as_secs_f64(),
            p.steps.assemble.as_secs_f64()
        );
        if let Some(g) = &p.steps.gpu {
            line += &format!(
                " | cuda:{}/{}: staging {:.0} ms, parameters {:.0} ms | events ms: upload {:.1} ntt {:.1} H {:.1} L {:.1} A {:.1} B1 {:.1} B2 {:.1} = kernels {:.1}{}",
                g.device,
                g.worker,
                g.stage.as_secs_f64() * 1e3,
                g.params.as_secs_f64() * 1e3,
                g.upload_ms,
                g.ntt_ms,
                g.msm_h_ms,
                g.msm_l_ms,
                g.msm_a_ms,
                g.msm_b_g1_ms,
                g.msm_b_g2_ms,
                g.kernel_ms(),
                if g.params_resident { "" } else { " (parameters streamed)" }
            );
        }
        if let Some(why) = &p.retried_after {
            line += &format!(" | retried after: {why}");
        }
        line
    }
}

/// What a whole proof cost.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ProofReport {
    /// Backend description.
    pub backend: String,
    /// Reading the parameters.
    pub load_params: Duration,
    /// Verifying the C1 vanilla proofs.
    pub check_vanilla: Duration,
    /// Synthesis and proving of all partitions (pipelined).
    pub pipeline: Duration,
    /// Verifying the Groth16 proofs.
    pub verify: Duration,
    /// Everything.
    pub total: Duration,
    /// Per partition.
    pub partitions: Vec<PartitionReport>,
}

/// Draws `(r, s)` per partition the way bellperson's
/// `create_random_proof_batch` does: all `r` first, then all `s`. With the
/// same RNG state both give the same proof bytes.
fn draw_blinding(rng: &mut dyn RngCore, partitions: usize) -> Vec<(Scalar, Scalar)> {
    let r: Vec<Scalar> = (0..partitions).map(|_| Scalar::random(&mut *rng)).collect();
    let s: Vec<Scalar> = (0..partitions).map(|_| Scalar::random(&mut *rng)).collect();
    r.into_iter().zip(s).collect()
}

/// The `(r, s)` pairs `randomness` gives for `partitions` partitions (drawn
/// as bellperson draws them; see [`Randomness`]).
pub fn blinding_pairs(randomness: &Randomness, partitions: usize) -> Result<Vec<(Scalar, Scalar)>, Error> {
    match randomness {
        Randomness::Os => Ok(draw_blinding(&mut OsRng, partitions)),
        Randomness::Seed(seed) => {
            Ok(draw_blinding(&mut rand_chacha::ChaCha20Rng::from_seed(*seed), partitions))
        }
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
    prove_loaded(instance.as_ref(), &blinding, config)
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
    prove_loaded(instance.as_ref(), &blinding, config).map(|(out, _)| out)
}

fn prove_loaded(
    instance: &dyn PorepInstance,
    blinding: &[(Scalar, Scalar)],
    config: &ProverConfig,
) -> Result<(SealCommitPhase2Output, ProofReport), Error> {
    // Cheap checks first: a bad C1 is reported before gigabytes of
    // parameters are read.
    let t = Instant::now();
    if config.check_vanilla_proofs {
        instance.check_vanilla_proofs()?;
    }
    let check_vanilla = t.elapsed();
    let t = Instant::now();
    let params = config.params.load(instance.parameter_id())?;
    let load_params = t.elapsed();
    let config = ProverConfig { check_vanilla_proofs: false, ..config.clone() };
    let (proof, mut report) = prove_instance(instance, &params, blinding, &config)?;
    report.check_vanilla = check_vanilla;
    report.load_params = load_params;
    report.total += check_vanilla + load_params;
    Ok((SealCommitPhase2Output { proof }, report))
}

/// Proves every partition of `instance` with these parameters and blinding
/// pairs (one per partition), verifying the result unless
/// `config.verify` is off. Returns the concatenated 192-byte proofs.
pub fn prove_instance(
    instance: &dyn PorepInstance,
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

    if config.check_vanilla_proofs {
        let t = Instant::now();
        instance.check_vanilla_proofs()?;
        report.check_vanilla = t.elapsed();
    }

    let backend = &config.backend;
    let key = params_key(instance.parameter_id(), params);
    // One consumer per worker (GPU workers), or one for the staged stages.
    let consumers: Vec<_> = (0..backend.workers.len().max(1))
        .map(|w| {
            let key = key.as_str();
            move |k: usize, s: c2_synth::Synthesized, host: Option<HostPermit>| -> Result<_, Error> {
                let shape = (s.num_constraints(), s.num_aux());
                let (r, s_blind) = blinding[k];
                let done = || config.progress.as_ref().map(|p| p.partition_done(k));
                match prove_on(backend, w, s, host, params, key, r, s_blind, &config.pipeline) {
                    Ok((proof, steps)) => {
                        done();
                        Ok((proof, shape, steps, None))
                    }
                    Err(e) if e.is_backend_failure() && config.retry_backend.is_some() => {
                        let retry = config.retry_backend.as_ref().expect("checked");
                        log::warn!("porep-c2: partition {k}: {e}; synthesizing it again and proving on {retry:?}");
                        // Synthesis consumed its vectors in the failed run; it is
                        // deterministic, so a second run gives the same circuit.
                        // (Its memory is outside the budget: the failed run
                        // returned the permit. Retries are rare.)
                        let again = instance.synthesize_partition(k)?;
                        let (proof, steps) = prove_on(retry, w, again, None, params, key, r, s_blind, &config.pipeline)?;
                        done();
                        Ok((proof, shape, steps, Some(e.to_string())))
                    }
                    Err(e) => Err(e),
                }
            }
        })
        .collect();
    let item_bytes = config.pipeline.item_bytes;
    let out = Pipeline::new(config.pipeline.clone())
        .run_with_permits(partitions, |_| item_bytes, |k| instance.synthesize_partition(k).map_err(Error::from), consumers)
        .map_err(|e| match e {
            SchedError::Job { error, .. } => error,
            SchedError::Cancelled => Error::Cancelled,
            SchedError::Admission(a) => Error::HostMemory(a),
            other => Error::Pipeline(other.to_string()),
        })?;
    report.pipeline = out.wall;

    let mut proofs: Vec<Proof<Bls12>> = Vec::with_capacity(partitions);
    for (k, ((proof, (constraints, aux), steps, retried_after), timing)) in
        out.results.into_iter().zip(out.timings).enumerate()
    {
        report.partitions.push(PartitionReport {
            partition: k,
            constraints,
            aux,
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
        verify_partitions(instance, params, &proofs)?;
        report.verify = t.elapsed();
    }

    let mut bytes = Vec::with_capacity(SINGLE_PARTITION_PROOF_LEN * partitions);
    for p in &proofs {
        p.write(&mut bytes).map_err(|e| Error::Verifier(format!("serializing proof: {e}")))?;
    }
    report.total = start.elapsed();
    Ok((bytes, report))
}

/// Proves on `backend`: its worker `w` (modulo the workers it has), or its
/// host-level stages when it has none.
#[allow(clippy::too_many_arguments)]
fn prove_on(
    backend: &Backend,
    w: usize,
    s: c2_synth::Synthesized,
    host: Option<HostPermit>,
    params: &Parameters<Bls12>,
    key: &str,
    r: Scalar,
    s_blind: Scalar,
    pipeline: &PipelineConfig,
) -> Result<(Proof<Bls12>, ProveTimings), Error> {
    match backend.workers.len() {
        // The host-level stages hold the vectors to the end: so does `host`.
        0 => prove_synthesized(s, params, r, s_blind, backend),
        n => {
            // Proofs sharing the backend take turns at the worker by priority.
            let gate = backend.gates.gate(w % n);
            let _turn = gate.enter(pipeline.priority, pipeline.cancel.as_ref()).map_err(|e| match e {
                AdmissionError::Cancelled => Error::Cancelled,
                other => Error::Pipeline(other.to_string()),
            })?;
            backend.workers[w % n].prove(s, host, params, key, r, s_blind)
        }
    }
}

/// Names a parameter set for device caches: the file's cache identifier
/// and the start of its verifying key's delta (random per setup, so two
/// setups under one name never share a cache entry).
pub(crate) fn params_key(parameter_id: &str, params: &Parameters<Bls12>) -> String {
    let delta = params.vk.delta_g1.to_compressed();
    let hex: String = delta[..12].iter().map(|b| format!("{b:02x}")).collect();
    format!("{parameter_id}#{hex}")
}

/// Verifies each partition's proof against its public inputs with the
/// parameters' verifying key.
fn verify_partitions(
    instance: &dyn PorepInstance,
    params: &Parameters<Bls12>,
    proofs: &[Proof<Bls12>],
) -> Result<(), Error> {
    let pvk = prepare_verifying_key(&params.vk);
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
