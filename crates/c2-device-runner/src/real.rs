//! The real StackedDrg circuit at full size on the GPU workers (issue 14,
//! step 8; verified since issue 41): a valid CC test sector
//! (`c2_synth::cc_sector`; 32 GiB by default), Groth16 test parameters for
//! its circuit generated on the GPU from the recorded matrices
//! ([`crate::setup::generate`], toxic waste from a printed seed: TEST ONLY),
//! so every proof here verifies. Then:
//! 1. the first K partitions proved twice with the same r, s: witness-only
//!    synthesis with a, b, c computed on the device from the recorded
//!    matrices, and the circuit path (a, b, c evaluated on the host and
//!    uploaded); same bytes, both verified by the facade;
//! 2. one whole-sector proof, verified by the facade (every partition
//!    against the generated verifying key and filecoin-proofs' StackedDrg
//!    public inputs) and by filecoin-proofs' own `verify_seal` (the
//!    verifying key written under its production name into a private
//!    parameter folder);
//! 3. optionally whole-sector proofs at several concurrencies (verified),
//!    bellperson on partition 0 with the same parameters, r and s (bytes
//!    compared; its CUDA prover when built with `bellperson-cuda`), and the
//!    capped suite.
//!
//! Reports s/partition, synthesis per partition, GPU kernel-busy and
//! host-to-device bytes.

use std::sync::Arc;
use std::time::Instant;

use blstrs::Scalar;
use c2_cuda::Gpu;
use c2_synth::CcSector;
use c2_synth::{cc_sector, CcSectorConfig, ConstraintMatrices, MatrixError, SynthError, Synthesized};
use filecoin_proofs_api::{RegisteredSealProof, SectorId};
use porep_c2::gpu::{gpu_backend, GpuBackendConfig};
use porep_c2::{
    prove_instance, HostBudget, MatrixStore, PipelineConfig, ProofInstance, ProofReport, ProverConfig, SynthesisPath,
};

use crate::Report;

/// The first `n` partitions of a sector: a whole sector's work would take
/// minutes per path.
struct FirstPartitions {
    inner: Arc<dyn ProofInstance>,
    n: usize,
}

impl ProofInstance for FirstPartitions {
    fn num_partitions(&self) -> usize {
        self.n.min(self.inner.num_partitions())
    }
    fn sector_size(&self) -> u64 {
        self.inner.sector_size()
    }
    fn parameter_id(&self) -> &str {
        self.inner.parameter_id()
    }
    fn check_vanilla_proofs(&self) -> Result<(), SynthError> {
        self.inner.check_vanilla_proofs()
    }
    fn synthesize_partition(&self, k: usize) -> Result<Synthesized, SynthError> {
        self.inner.synthesize_partition(k)
    }
    fn synthesize_witness(&self, k: usize) -> Result<(Vec<Scalar>, Vec<Scalar>), SynthError> {
        self.inner.synthesize_witness(k)
    }

    fn synthesize_compact_witness(&self, k: usize) -> Result<(Vec<Scalar>, c2_synth::CompactWitness), SynthError> {
        self.inner.synthesize_compact_witness(k)
    }
    fn record_matrices(&self) -> Result<ConstraintMatrices, MatrixError> {
        self.inner.record_matrices()
    }
    fn public_inputs(&self, k: usize) -> Result<Vec<Scalar>, SynthError> {
        self.inner.public_inputs(k)
    }
    fn generate_parameters(
        &self,
        rng: &mut dyn rand_core::RngCore,
    ) -> Result<bellperson::groth16::Parameters<blstrs::Bls12>, SynthError> {
        self.inner.generate_parameters(rng)
    }
    fn bellperson_proofs(
        &self,
        params: &bellperson::groth16::Parameters<blstrs::Bls12>,
        partitions: &[usize],
        r: &[Scalar],
        s: &[Scalar],
    ) -> Result<Vec<bellperson::groth16::Proof<blstrs::Bls12>>, SynthError> {
        self.inner.bellperson_proofs(params, partitions, r, s)
    }
}

pub(crate) fn summary(label: &str, wall: f64, rep: &ProofReport) -> String {
    let n = rep.partitions.len().max(1);
    let times: Vec<_> = rep.partitions.iter().filter_map(|p| p.steps.gpu.clone()).collect();
    let union: f64 = porep_c2::device_busy_ms(&times).iter().map(|(_, ms)| ms).sum();
    let kernels: f64 = times.iter().map(|g| g.kernel_ms() as f64).sum();
    let abc: f64 = times.iter().map(|g| g.abc_ms as f64).sum();
    let h2d: u64 = times.iter().map(|g| g.h2d_bytes).sum();
    let synth: f64 = rep.partitions.iter().map(|p| p.synthesis.as_secs_f64()).sum();
    format!(
        "real {label}: {n} partitions in {wall:.1} s = {:.2} s/partition; synthesis {:.2} s/partition; kernels {:.2} s/partition (a, b, c {:.1} ms); GPU busy (union of kernel spans) / wall = {:.0} %; {:.2} GB host-to-device per partition",
        wall / n as f64,
        synth / n as f64,
        kernels / 1e3 / n as f64,
        abc / n as f64,
        100.0 * union / 1e3 / wall,
        h2d as f64 / 1e9 / n as f64,
    )
}

/// What `--only real` runs.
pub struct RealBench {
    /// The CC test sector's registered proof (`--real-sector`).
    pub sector: RegisteredSealProof,
    /// Partitions proved both ways for the byte comparison
    /// (`--real-partitions`; the circuit path takes ~36 s per 32 GiB
    /// partition; 0: no comparison).
    pub partitions: usize,
    /// Whole-sector proofs per concurrency level through the default
    /// witness path (`--real-proofs`; 0: none), as `c2-bench -j`.
    pub proofs: usize,
    /// Proofs in flight (`--real-concurrency`), as `c2-bench -c`.
    pub concurrency: Vec<usize>,
    /// Partition 0 proved by bellperson too, with the same parameters, r
    /// and s (`--bellperson`): bytes compared with ours.
    pub bellperson: bool,
    /// Device pool caps in GiB (`--real-vram-caps`; empty: none): the
    /// witness path's partitions again on a backend capped like a 16 or
    /// 24 GB card, streamed parameters page-locked and staged, bytes
    /// compared with the uncapped proof.
    pub caps: Vec<usize>,
    /// Partitions each capped run proves (`--real-cap-partitions`; default
    /// `partitions`): the first of the whole sector, compared with the
    /// whole verified proof's bytes. Batched passes need several.
    pub cap_partitions: usize,
    /// Which capped variants run (`--real-cap-variants`, names of
    /// [`CAP_VARIANTS`]; empty: all).
    pub cap_variants: Vec<String>,
    /// Whole-sector proofs per cap and worker count with batched passes
    /// (`--real-cap-proofs`; 0: none): issue 42's table.
    pub cap_proofs: usize,
    /// Workers per device asked for in that table (`--real-cap-workers`).
    pub cap_workers: Vec<usize>,
}

/// One capped run's backend: how the streamed parameters and a, b, c
/// travel, and how many partitions share a pass.
pub struct CapVariant {
    /// Its name for `--real-cap-variants`.
    pub name: &'static str,
    /// Its label in the report.
    pub label: &'static str,
    /// Bytes of streamed parameters page-locked (0: staged).
    pub pin: usize,
    /// a, b, c from streamed matrices (else from the host).
    pub stream_matrices: bool,
    /// The repeated matrices kept on the device.
    pub repeated_matrices: bool,
    /// Partitions per batched pass (`None`: the plan's).
    pub max_batch: Option<usize>,
}

/// The capped runs' variants.
pub const CAP_VARIANTS: [CapVariant; 5] = {
    const fn v(
        name: &'static str,
        label: &'static str,
        pin: usize,
        stream_matrices: bool,
        repeated_matrices: bool,
        max_batch: Option<usize>,
    ) -> CapVariant {
        CapVariant { name, label, pin, stream_matrices, repeated_matrices, max_batch }
    }
    [
        v("streamed", "page-locked, a, b, c from streamed matrices", 64 << 30, true, false, Some(1)),
        v("repeated", "page-locked, a, b, c from resident repeated matrices", 64 << 30, true, true, Some(1)),
        v("host", "page-locked, a, b, c from the host", 64 << 30, false, false, Some(1)),
        v("staged", "staged, a, b, c from streamed matrices", 0, true, false, Some(1)),
        v("batched", "page-locked, repeated matrices, batched MSM passes", 64 << 30, true, true, None),
    ]
};

/// Runs both paths over the first `partitions` partitions of a CC test
/// sector, one verified whole-sector proof, then what `b` asks for.
pub fn bench(gpu: Arc<Gpu>, r: &mut Report, b: &RealBench) -> Result<(), String> {
    let (rp, partitions) = (b.sector, b.partitions);
    let e = |x: &dyn std::fmt::Display| x.to_string();
    // filecoin-proofs reads its parameter folder once per process: set it
    // before its first call. Only the generated verifying key goes there.
    let vk_dir = std::env::temp_dir().join("porep-c2-runner-real-vk");
    std::env::set_var(porep_c2::PARAMETER_CACHE_ENV, &vk_dir);
    let t = Instant::now();
    let s = cc_sector(rp, &CcSectorConfig::default()).map_err(|x| e(&x))?;
    let whole: Arc<dyn ProofInstance> =
        Arc::from(c2_synth::instance_from_c1(&s.c1, s.prover_id, s.sector_id).map_err(|x| e(&x))?);
    whole.check_vanilla_proofs().map_err(|x| e(&x))?;
    let instance = FirstPartitions { inner: whole.clone(), n: partitions.max(1) };
    println!("real {rp:?}: CC test sector made and verified in {:.1?}", t.elapsed());
    let store = Arc::new(MatrixStore::default());
    let t = Instant::now();
    let m = store.get(&instance, None).map_err(|x| e(&x))?;
    let (da, _, _) = &m.densities;
    println!("real {rp:?}: matrices recorded in {:.1?}", t.elapsed());
    let line = zero_blocks(&instance, da).map_err(|x| e(&x))?;
    println!("{line}");
    r.bench.push(line);
    repeated_rows(r, &instance, &m.matrices)?;
    let generated = crate::setup::generate(gpu, r, &m.matrices, &format!("real {rp:?} set-up"), 256)?;
    let params = generated.params;
    drop(generated.scalars);
    let vk_path = porep_c2::verifying_key_path(&vk_dir, instance.parameter_id());
    porep_c2::write_verifying_key(&params.vk, &vk_path).map_err(|x| e(&x))?;
    let backend = gpu_backend(&GpuBackendConfig::default()).map_err(|x| e(&x))?;
    let t = Instant::now();
    let resident = backend.preload(instance.parameter_id(), &params).map_err(|x| e(&x))?;
    println!("real {rp:?}: parameters preloaded on {resident} worker(s) in {:.1?}", t.elapsed());
    let pairs = vec![(Scalar::from(3u64), Scalar::from(5u64)); whole.num_partitions()];
    let n_workers = backend.consumers();
    let domain = m.matrices.constraints().next_power_of_two();
    let (inputs, aux) = (m.matrices.inputs, m.matrices.aux);
    let mut results = Vec::new();
    // `--real-partitions 0`: the two paths are not compared (the circuit
    // path alone takes ~30 s of a device call).
    let paths = if partitions == 0 { 0 } else { 2 };
    for (label, synthesis, item_bytes) in [
        // Host bytes to admit a partition on: the facade's compact-witness
        // estimate (0 here), or a, b, c and the witness (16.7 GB at 32 GiB,
        // twice that while joining); permits settle to the real size.
        ("witness only, a, b, c on the device", SynthesisPath::Matrices { cache_dir: None }, 0),
        ("circuit path, a, b, c from the host", SynthesisPath::Circuit, 2 * (3 * domain + inputs + aux) * 32),
    ]
    .into_iter()
    .take(paths)
    {
        // The host has 128 GB; parameters (~47 GB) and matrices (~9 GB) stay.
        let budget = HostBudget::new(40 << 30);
        let config = verified_config(&backend, &store, synthesis, n_workers, &budget, item_bytes.min(40 << 30));
        let t = Instant::now();
        let proved = prove_instance(&instance, &params, &pairs[..instance.num_partitions()], &config);
        let wall = t.elapsed().as_secs_f64();
        r.check(
            format!("real {rp:?}, first {partitions} partition(s), {label}: the facade's verifier accepts (generated parameters)"),
            proved.is_ok(),
        );
        let (bytes, rep) = proved.map_err(|x| e(&x))?;
        for p in &rep.partitions {
            println!("  {}", p.timeline());
        }
        let line = format!("{} ({})", summary(label, wall, &rep), host_memory(&budget, &rep.partitions));
        println!("{line}");
        r.bench.push(format!("{rp:?} {line}, verified in {:.2} s", rep.verify.as_secs_f64()));
        results.push(bytes);
    }
    if paths > 0 {
        r.check(
            format!(
                "real {rp:?}, {} partitions: witness-only path's proof bytes == circuit path's (same r, s)",
                instance.num_partitions()
            ),
            results.len() == 2 && results[0] == results[1] && !results[0].is_empty(),
        );
    }
    let proof = whole_verified(r, &s, whole.as_ref(), &params, &store, &backend, &pairs)?;
    if b.proofs > 0 {
        throughput(r, b, whole.as_ref(), &params, &store, &backend)?;
    }
    // The backend holds the device's memory: give it back to bellperson's
    // prover and the capped backends.
    drop(backend);
    if b.bellperson {
        crate::post::versus_bellperson(r, &format!("real {rp:?}"), whole.as_ref(), &params, pairs[0], &proof)?;
    }
    if !b.caps.is_empty() {
        // The first partitions of the whole verified proof (same r, s).
        let n = if b.cap_partitions == 0 { b.partitions } else { b.cap_partitions }.clamp(1, whole.num_partitions());
        let first = FirstPartitions { inner: whole.clone(), n };
        let uncapped = proof.get(..n * porep_c2::SINGLE_PARTITION_PROOF_LEN).unwrap_or_default().to_vec();
        capped(r, b, &first, &params, &store, &pairs[..n], &uncapped)?;
        if b.cap_proofs > 0 {
            for &cap in &b.caps {
                capped_table(r, b, whole.as_ref(), &params, &store, cap, &proof)?;
            }
        }
    }
    Ok(())
}

/// Issue 42's question: do the challenge blocks' rows repeat (c2-abc's
/// `find_repeat`), how small is the compact form, and does it give
/// partition 0's a, b, c exactly (CPU products, full against compact)?
fn repeated_rows(r: &mut Report, instance: &dyn ProofInstance, m: &c2_synth::ConstraintMatrices) -> Result<(), String> {
    let rp = instance.sector_size();
    let t = Instant::now();
    let Some(compact) = c2_abc::RepeatedMatrices::find(&m.view()) else {
        r.check(format!("{rp} B sector: the constraint matrices' challenge rows repeat"), false);
        return Ok(());
    };
    let found = t.elapsed();
    let rep = compact.repeat;
    let (inputs, aux) = instance.synthesize_compact_witness(0).map_err(|x| x.to_string())?;
    let aux = aux.expand();
    let t = Instant::now();
    let same = (0..3).all(|which| {
        let full = [&m.a, &m.b, &m.c][which].view();
        compact.product(which, &inputs, &aux) == c2_abc::product(&full, &m.coeffs, &inputs, &aux)
    });
    let line = format!(
        "{rp} B sector matrices: rows {}..{} are {} blocks of {} rows (inputs from {} by {}, aux from {} by {}), found in {found:.1?}; compact form {:.3} GB of {:.2} GB; products compared in {:.1?}",
        rep.first_row,
        rep.end_row(),
        rep.blocks,
        rep.block_rows,
        rep.input_from,
        rep.input_step,
        rep.aux_from,
        rep.aux_step,
        compact.bytes() as f64 / 1e9,
        m.bytes() as f64 / 1e9,
        t.elapsed()
    );
    println!("{line}");
    r.bench.push(line);
    r.check(format!("{rp} B sector: a, b, c from the repeated rows == from the full matrices (partition 0)"), same);
    Ok(())
}

/// [`crate::post::verified_config`] (verification on) with `synthesis_workers`
/// and partitions admitted on `budget` at `item_bytes` each (0: the
/// facade's estimate).
fn verified_config(
    backend: &porep_c2::Backend,
    store: &Arc<MatrixStore>,
    synthesis: SynthesisPath,
    synthesis_workers: usize,
    budget: &Arc<HostBudget>,
    item_bytes: usize,
) -> ProverConfig {
    ProverConfig {
        pipeline: PipelineConfig {
            synthesis_workers,
            host_budget: Some(budget.clone()),
            item_bytes,
            ..Default::default()
        },
        ..crate::post::verified_config(backend, store, synthesis)
    }
}

/// One whole-sector proof through the default witness path, verified by
/// the facade and then by filecoin-proofs' `verify_seal` against the
/// sector's commitments, ticket and seed. Returns the proof's bytes.
fn whole_verified(
    r: &mut Report,
    s: &CcSector,
    whole: &dyn ProofInstance,
    params: &bellperson::groth16::Parameters<blstrs::Bls12>,
    store: &Arc<MatrixStore>,
    backend: &porep_c2::Backend,
    pairs: &[(Scalar, Scalar)],
) -> Result<Vec<u8>, String> {
    let rp = s.c1.registered_proof;
    let budget = HostBudget::new(40 << 30);
    let config =
        verified_config(backend, store, SynthesisPath::Matrices { cache_dir: None }, backend.consumers(), &budget, 0);
    let t = Instant::now();
    let proved = prove_instance(whole, params, pairs, &config);
    let wall = t.elapsed().as_secs_f64();
    r.check(
        format!("real {rp:?}, whole sector: the facade's verifier accepts every partition (generated parameters)"),
        proved.is_ok(),
    );
    let (bytes, rep) = proved.map_err(|x| x.to_string())?;
    let t = Instant::now();
    let c1 = &s.c1;
    let sealed = filecoin_proofs_api::seal::verify_seal(
        rp,
        c1.comm_r,
        c1.comm_d,
        s.prover_id,
        SectorId::from(s.sector_id),
        c1.ticket,
        c1.seed,
        &bytes,
    );
    let verify_seal = t.elapsed().as_secs_f64();
    let line = format!(
        "{} ({}); facade verify {:.2} s, verify_seal {verify_seal:.2} s: {}",
        summary(&format!("{rp:?} whole sector, verified"), wall, &rep),
        host_memory(&budget, &rep.partitions),
        rep.verify.as_secs_f64(),
        match &sealed {
            Ok(true) => "ACCEPTED".to_string(),
            Ok(false) => "REJECTED".to_string(),
            Err(x) => format!("error: {x}"),
        }
    );
    println!("{line}");
    r.bench.push(line);
    r.check(
        format!("real {rp:?}, whole sector ({} bytes): filecoin-proofs verify_seal accepts it against the generated verifying key", bytes.len()),
        matches!(sealed, Ok(true)),
    );
    Ok(bytes)
}

/// How much of L's and A's streamed bases a zero-skipping copy could leave
/// behind: the share of blocks of B consecutive bases whose scalars (partition
/// 0's aux; A's only where A's density has them) are all zero, for B = 64 ..
/// 32768 (a block is one DMA of B x 96 bytes). A zero scalar's base is never
/// read, but a copy skips only whole blocks: a per-base skip would need a host
/// gather of the other bases (6 GB per vector at 32 GiB) or one DMA per run.
/// A CC sector's data are zeros, so its witness may cluster zeros more than a
/// sealed sector's.
fn zero_blocks(instance: &dyn ProofInstance, a_density: &c2_synth::Density) -> Result<String, SynthError> {
    let (_, w) = instance.synthesize_compact_witness(0)?;
    let bits = w.bits();
    let mut nonzero: Vec<bool> = (0..w.len()).map(|i| (bits[i / 64] >> (i % 64)) & 1 == 1).collect();
    for &i in w.full_index() {
        nonzero[i as usize] = true;
    }
    let zeros = nonzero.iter().filter(|&&x| !x).count();
    // A's bases: the aux variables A's density keeps, in order.
    let a: Vec<bool> = nonzero.iter().enumerate().filter(|&(i, _)| a_density.get(i)).map(|(_, &x)| x).collect();
    let share = |v: &[bool], b: usize| {
        let blocks = v.len().div_ceil(b).max(1);
        let empty = v.chunks(b).filter(|c| c.iter().all(|&x| !x)).count();
        100.0 * empty as f64 / blocks as f64
    };
    let cols: Vec<String> = [64usize, 512, 4096, 32768]
        .iter()
        .map(|&b| format!("{b}: L {:.1} % / A {:.1} %", share(&nonzero, b), share(&a, b)))
        .collect();
    Ok(format!(
        "real {:?} partition 0: {:.1} % of aux scalars zero; all-zero blocks of B bases (the most a zero-skipping copy saves) {}",
        instance.sector_size(),
        100.0 * zeros as f64 / nonzero.len().max(1) as f64,
        cols.join(", ")
    ))
}

/// The first partitions on backends capped at `b.caps` GiB, one worker,
/// the streamed parameters page-locked or staged, a, b, c from streamed
/// matrices or from the host (same run): wall, kernel
/// time and bytes host-to-device per partition, pinning time, and the proof
/// bytes against the uncapped run's.
#[allow(clippy::too_many_arguments)]
fn capped(
    r: &mut Report,
    b: &RealBench,
    instance: &dyn ProofInstance,
    params: &bellperson::groth16::Parameters<blstrs::Bls12>,
    store: &Arc<MatrixStore>,
    pairs: &[(Scalar, Scalar)],
    uncapped: &[u8],
) -> Result<(), String> {
    let rp = b.sector;
    let variants: Vec<&CapVariant> = CAP_VARIANTS
        .iter()
        .filter(|v| b.cap_variants.is_empty() || b.cap_variants.iter().any(|n| n == v.name))
        .collect();
    for &cap in &b.caps {
        for &&CapVariant { label, pin, stream_matrices, repeated_matrices, max_batch, .. } in &variants {
            let mut config = GpuBackendConfig {
                workers_per_device: 1,
                pin_streamed_params: pin,
                stream_matrices,
                repeated_matrices,
                max_batch,
                // The plan's whole batch: no urgent lane whose absence
                // would shorten it (`gpu::URGENT_TURN_BATCH`).
                urgent_lane: if max_batch.is_none() { None } else { GpuBackendConfig::default().urgent_lane },
                ..Default::default()
            };
            config.vram.cap = (cap > 0).then_some(cap << 30);
            let backend = match gpu_backend(&config) {
                Ok(x) => x,
                Err(x) => {
                    r.bench.push(format!("real {rp:?} cap {cap} GiB: refused: {x}"));
                    println!("{}", r.bench.last().expect("pushed"));
                    continue;
                }
            };
            if max_batch.is_none() {
                members_alone_and_together(r, &backend, instance, params, store, pairs, uncapped, cap)?;
            }
            // Four partitions synthesized at once, so partitions wait for
            // the worker and a batch can form (it never waits to fill).
            let budget = HostBudget::new(40 << 30);
            let synthesis = SynthesisPath::Matrices { cache_dir: None };
            let config = verified_config(&backend, store, synthesis, 4.min(instance.num_partitions()), &budget, 0);
            // Twice: the first proof pins (once per process) and plans; the
            // second is the steady state.
            let mut steady = None;
            let mut first_wall = 0.0;
            for round in 0..2 {
                let t = Instant::now();
                let (bytes, rep) = prove_instance(instance, params, pairs, &config).map_err(|x| x.to_string())?;
                let wall = t.elapsed().as_secs_f64();
                if round == 1 {
                    for p in &rep.partitions {
                        println!("  {}", p.timeline());
                    }
                } else {
                    first_wall = wall;
                }
                steady = Some((wall, rep, bytes));
            }
            let (wall, rep, bytes) = steady.expect("two rounds");
            let partitions = rep.partitions.len();
            let run = InFlight { proofs: vec![(wall, bytes, rep)], wall, host: String::new() };
            let (times, n) = (run.times(), run.n());
            let (kernels, h2d, d2h) = (run.kernels(), run.h2d_gb(), run.d2h_gb());
            let bytes = &run.proofs[0].1;
            let pinned = times.iter().map(|g| g.pinned_param_bytes).max().unwrap_or(0);
            let msm: Vec<String> = times
                .first()
                .map(|g| {
                    [
                        ("H", g.msm_h_ms),
                        ("L", g.msm_l_ms),
                        ("A", g.msm_a_ms),
                        ("B1", g.msm_b_g1_ms),
                        ("B2", g.msm_b_g2_ms),
                    ]
                    .iter()
                    .map(|(q, ms)| format!("{q} {ms:.0}"))
                    .collect()
                })
                .unwrap_or_default();
            let abc_ms: f64 = times.iter().map(|g| g.abc_ms as f64).sum::<f64>() / n;
            let batches: Vec<String> = times.iter().map(|g| g.batch.to_string()).collect();
            let line = format!(
                "real {rp:?} cap {cap} GiB, 1 worker, parameters {label}: {:.2} s/partition (steady, {} partitions; first proof {first_wall:.1} s), kernels {kernels:.2} s/partition (MSM ms: {}; a, b, c {abc_ms:.0} ms), {h2d:.1} GB host-to-device per partition, {:.1} GB of it from page-locked parameters; batches [{}], {d2h:.1} GB device-to-host per partition",
                wall / n,
                partitions,
                msm.join(", "),
                pinned as f64 / 1e9,
                batches.join(" ")
            );
            println!("{line}");
            r.bench.push(line);
            r.check(
                format!("real {rp:?} cap {cap} GiB ({label}): proof bytes == uncapped run's"),
                !bytes.is_empty() && bytes.as_slice() == uncapped,
            );
            // Every vector streams at 16 GiB: page-locked means all of them.
            r.check(
                format!("real {rp:?} cap {cap} GiB ({label}): streamed parameters page-locked only when asked"),
                (pin > 0) == (pinned > 0),
            );
        }
    }
    Ok(())
}

/// A batching worker's path straight, without the pipeline: partition 0
/// as a batch of one (its MSMs through the member path: H to the host and
/// back), then partitions 0 and 1 as a batch of two; each proof's bytes
/// against the uncapped run's. Says which of the two paths breaks when the
/// batched proofs do not verify (the facade's error names only the
/// partitions).
#[allow(clippy::too_many_arguments)]
fn members_alone_and_together(
    r: &mut Report,
    backend: &porep_c2::Backend,
    instance: &dyn ProofInstance,
    params: &bellperson::groth16::Parameters<blstrs::Bls12>,
    store: &Arc<MatrixStore>,
    pairs: &[(Scalar, Scalar)],
    uncapped: &[u8],
    cap: usize,
) -> Result<(), String> {
    let porep_c2::Backend::Workers(workers) = backend else { return Ok(()) };
    let Some(prover) = workers.provers.first() else { return Ok(()) };
    let matrices = store.get(instance, None).map_err(|x| x.to_string())?;
    let key = porep_c2::params_key(instance.parameter_id(), params);
    let job = |k: usize| -> Result<porep_c2::PartitionJob<'_>, String> {
        let (inputs, aux) = instance.synthesize_compact_witness(k).map_err(|x| x.to_string())?;
        let partition_data =
            porep_c2::Partition::Witness(porep_c2::Witness { inputs, aux, matrices: matrices.clone() });
        let (rk, sk) = pairs[k];
        Ok(porep_c2::PartitionJob { partition: k, partition_data, host: None, params, params_key: &key, r: rk, s: sk })
    };
    let want = |k: usize| uncapped.get(k * 192..(k + 1) * 192).map(<[u8]>::to_vec);
    let bytes = |out: &Result<(bellperson::groth16::Proof<blstrs::Bls12>, porep_c2::ProveTimings), porep_c2::Error>| {
        out.as_ref().ok().map(|(p, _)| {
            let mut v = Vec::new();
            p.write(&mut v).map(|_| v).unwrap_or_default()
        })
    };
    let n = pairs.len().min(2);
    for k in 1..=n {
        let jobs = (0..k).map(job).collect::<Result<Vec<_>, _>>()?;
        let t = Instant::now();
        let outs = prover.prove_batch(jobs);
        let wall = t.elapsed().as_secs_f64();
        for (j, out) in outs.iter().enumerate() {
            if let Err(x) = out {
                println!("  member {j} of {k}: {x}");
            }
            r.check(
                format!("real cap {cap} GiB: partition {j} proved in a batch of {k} (worker, no pipeline) == uncapped bytes"),
                bytes(out).is_some() && bytes(out) == want(j),
            );
        }
        println!("  batch of {k} straight on the worker: {wall:.2} s");
    }
    Ok(())
}

/// `b.proofs` whole-sector proofs (every partition) at each concurrency in
/// `b.concurrency`, through the default synthesis path, one backend and one
/// host budget shared by all proofs in flight: s/proof, GPU kernel-busy,
/// synthesis per partition, host-to-device bytes and host budget peak.
fn throughput(
    r: &mut Report,
    b: &RealBench,
    whole: &dyn ProofInstance,
    params: &bellperson::groth16::Parameters<blstrs::Bls12>,
    store: &Arc<MatrixStore>,
    backend: &porep_c2::Backend,
) -> Result<(), String> {
    for &c in &b.concurrency {
        let run = in_flight(whole, params, store, backend, b.proofs, c, backend.consumers())?;
        let line = format!(
            "real {:?} throughput: {} proofs, -c {c}: {:.1} s = {:.2} s/proof (latency {:.1} s); kernels {:.2} s/partition, GPU busy [{}]; synthesis {:.2} s/partition; {:.2} GB host-to-device per partition; {}",
            b.sector,
            run.proofs.len(),
            run.wall,
            run.wall / run.proofs.len().max(1) as f64,
            run.latency(),
            run.kernels(),
            run.busy(),
            run.synthesis(),
            run.h2d_gb(),
            run.host,
        );
        println!("{line}");
        r.bench.push(line);
        r.check(format!("real {:?}: {} proofs at -c {c} completed", b.sector, b.proofs), run.proofs.len() == b.proofs);
    }
    Ok(())
}

/// Whole-sector proofs run by [`in_flight`]: each proof's wall time,
/// bytes and report, the run's wall time and host memory line.
struct InFlight {
    proofs: Vec<(f64, Vec<u8>, ProofReport)>,
    wall: f64,
    host: String,
}

impl InFlight {
    fn parts(&self) -> impl Iterator<Item = &porep_c2::PartitionReport> {
        self.proofs.iter().flat_map(|(_, _, rep)| rep.partitions.iter())
    }

    fn times(&self) -> Vec<porep_c2::GpuTimes> {
        self.parts().filter_map(|p| p.steps.gpu.clone()).collect()
    }

    fn n(&self) -> f64 {
        self.parts().count().max(1) as f64
    }

    /// Mean wall time of one proof.
    fn latency(&self) -> f64 {
        self.proofs.iter().map(|(s, _, _)| s).sum::<f64>() / self.proofs.len().max(1) as f64
    }

    /// Kernel seconds per partition.
    fn kernels(&self) -> f64 {
        self.times().iter().map(|g| g.kernel_ms() as f64).sum::<f64>() / 1e3 / self.n()
    }

    /// Host-to-device GB per partition.
    fn h2d_gb(&self) -> f64 {
        self.times().iter().map(|g| g.h2d_bytes as f64).sum::<f64>() / self.n() / 1e9
    }

    /// Device-to-host GB per partition.
    fn d2h_gb(&self) -> f64 {
        self.times().iter().map(|g| g.d2h_bytes as f64).sum::<f64>() / self.n() / 1e9
    }

    /// Synthesis seconds per partition.
    fn synthesis(&self) -> f64 {
        self.parts().map(|p| p.synthesis.as_secs_f64()).sum::<f64>() / self.n()
    }

    /// Kernel-busy per device (the union of its kernel spans) over wall.
    fn busy(&self) -> String {
        porep_c2::device_busy_ms(&self.times())
            .iter()
            .map(|(d, ms)| format!("cuda:{d} {:.0} %", 100.0 * ms / 1e3 / self.wall))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// How many partitions ran in batches of each size: "size x count".
    fn batches(&self) -> String {
        let mut sizes = std::collections::BTreeMap::<usize, usize>::new();
        for g in self.times() {
            *sizes.entry(g.batch).or_default() += 1;
        }
        sizes.iter().map(|(k, n)| format!("{n} in batches of {k}")).collect::<Vec<_>>().join(", ")
    }
}

/// `proofs` whole-sector proofs (every partition, verified by the facade),
/// `concurrency` in flight on `backend`, each with `synthesis_workers`,
/// through the default synthesis path; one host budget of 40 GiB shared by
/// every proof in flight.
fn in_flight(
    whole: &dyn ProofInstance,
    params: &bellperson::groth16::Parameters<blstrs::Bls12>,
    store: &Arc<MatrixStore>,
    backend: &porep_c2::Backend,
    proofs: usize,
    concurrency: usize,
    synthesis_workers: usize,
) -> Result<InFlight, String> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let pairs = vec![(Scalar::from(3u64), Scalar::from(5u64)); whole.num_partitions()];
    // Witnesses (4.2 GB per 32 GiB partition) in flight for every proof
    // share 40 GiB: parameters and matrices hold ~57 GB of the 128 GB.
    let budget = HostBudget::new(40 << 30);
    // Item bytes 0: the facade's estimate, settled to each partition's size.
    let config = verified_config(backend, store, SynthesisPath::default(), synthesis_workers, &budget, 0);
    let next = AtomicUsize::new(0);
    let t = Instant::now();
    let outs = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..concurrency)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    while next.fetch_add(1, Ordering::Relaxed) < proofs {
                        let one = Instant::now();
                        let (bytes, rep) = prove_instance(whole, params, &pairs, &config).map_err(|x| x.to_string())?;
                        out.push((one.elapsed().as_secs_f64(), bytes, rep));
                    }
                    Ok::<_, String>(out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a proving thread panicked".into())))
            .collect::<Vec<_>>()
    });
    let wall = t.elapsed().as_secs_f64();
    let proofs: Vec<_> = outs.into_iter().collect::<Result<Vec<_>, _>>()?.into_iter().flatten().collect();
    let host = host_memory(&budget, proofs.iter().flat_map(|(_, _, rep)| rep.partitions.iter()));
    Ok(InFlight { proofs, wall, host })
}

/// Issue 42's table: `b.cap_proofs` whole-sector proofs at each cap with
/// 1 and 2 workers asked for (a 16-24 GB card holds one 32 GiB worker;
/// the plan says how many it got), batched passes on, two proofs in
/// flight so a worker finds the next proof's partitions ready: s/partition,
/// host-to-device and device-to-host bytes per partition, GPU busy, the
/// batches formed, every proof's bytes == the uncapped whole proof's; and
/// the s/partition projected at a 25 GB/s link: the measured wall per
/// partition less its kernel time (what the host and the ordering add),
/// plus the larger of the kernel time and the bytes at 25 GB/s (the link
/// and the kernels overlap: chunks are double-buffered).
#[allow(clippy::too_many_arguments)]
fn capped_table(
    r: &mut Report,
    b: &RealBench,
    whole: &dyn ProofInstance,
    params: &bellperson::groth16::Parameters<blstrs::Bls12>,
    store: &Arc<MatrixStore>,
    cap: usize,
    uncapped: &[u8],
) -> Result<(), String> {
    let rp = b.sector;
    let batched = CAP_VARIANTS.iter().find(|v| v.name == "batched").expect("a batched variant");
    // Planned worker counts already measured at this cap: a count the
    // plan cuts to one of them (2 asked at 16 GiB hold 1) is not run again.
    let mut measured: Vec<usize> = Vec::new();
    for &asked in &b.cap_workers {
        let mut config = GpuBackendConfig {
            workers_per_device: asked,
            pin_streamed_params: batched.pin,
            stream_matrices: batched.stream_matrices,
            repeated_matrices: batched.repeated_matrices,
            max_batch: batched.max_batch,
            // A device serving no WinningPoSt: the plan's whole batch
            // (with urgent proofs and no lane, `gpu::URGENT_TURN_BATCH`).
            // The 16 GiB run of 2026-12-07 had the lane asked for and
            // dropped, before that bound existed: the same batches.
            urgent_lane: None,
            ..Default::default()
        };
        config.vram.cap = Some(cap << 30);
        let backend = gpu_backend(&config).map_err(|x| x.to_string())?;
        let workers = backend.consumers();
        if measured.contains(&workers) {
            let line = format!(
                "real {rp:?} cap {cap} GiB, {asked} worker(s) asked, {workers} planned: the {workers}-worker row above"
            );
            println!("{line}");
            r.bench.push(line);
            continue;
        }
        measured.push(workers);
        // A warm-up proof: page-locking (once per process) and the
        // workers' page-locked H vectors.
        in_flight(whole, params, store, &backend, 1, 1, 4)?;
        let run = in_flight(whole, params, store, &backend, b.cap_proofs, 2, 4)?;
        let n = run.n();
        let per_partition = run.wall / n;
        let kernels = run.kernels();
        let projected = per_partition - kernels + kernels.max(run.h2d_gb() / 25.0);
        let line = format!(
            "real {rp:?} cap {cap} GiB, {asked} worker(s) asked, {workers} planned, batched passes: {} proofs (2 in flight) in {:.1} s = {per_partition:.2} s/partition; kernels {kernels:.2} s/partition, GPU busy [{}]; {:.1} GB host-to-device, {:.1} GB device-to-host per partition; {}; projected at 25 GB/s: {projected:.2} s/partition; {}",
            run.proofs.len(),
            run.wall,
            run.busy(),
            run.h2d_gb(),
            run.d2h_gb(),
            run.batches(),
            run.host,
        );
        println!("{line}");
        r.bench.push(line);
        let same = run.proofs.iter().all(|(_, bytes, _)| !bytes.is_empty() && bytes == uncapped);
        r.check(
            format!(
                "real {rp:?} cap {cap} GiB, {asked} worker(s), {} proofs batched: verified, bytes == uncapped whole proof's",
                b.cap_proofs
            ),
            same && run.proofs.len() == b.cap_proofs,
        );
    }
    Ok(())
}

/// Host memory of the partitions in flight: the largest partition's bytes,
/// the most held at once (settled permits), the admission peak (estimates
/// included) and the process' resident peak (parameters and matrices
/// included: ~57 GB at 32 GiB).
fn host_memory<'a>(budget: &HostBudget, parts: impl IntoIterator<Item = &'a porep_c2::PartitionReport>) -> String {
    let largest = parts.into_iter().map(|p| p.host_bytes).max().unwrap_or(0);
    format!(
        "host: {:.3} GB per partition (largest), {:.2} GB held at once, admission peak {:.2} GB, process peak RSS {}",
        largest as f64 / 1e9,
        budget.settled_peak() as f64 / 1e9,
        budget.peak() as f64 / 1e9,
        peak_rss().map_or("unknown".into(), |b| format!("{:.1} GB", b as f64 / 1e9)),
    )
}

/// The process' peak resident set (`VmHWM` in /proc/self/status), bytes.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
