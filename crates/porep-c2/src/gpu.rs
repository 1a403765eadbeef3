//! The whole GPU path for one partition (feature `cuda`), composed at device
//! level: a, b, c, aux and inputs page-locked and uploaded once, H computed
//! and left on the device, every MSM over parameters kept resident per
//! device ([`c2_vram::SrsCache`]) or, when they cannot fit, streamed from
//! host memory in chunks. Blinding and assembly are the CPU path's
//! (`groth16`), so proofs are bit-identical for the same `r`, `s`.
//!
//! Device memory: [`gpu_backend`] reserves one [`VramPool`] per device (free
//! memory minus a margin, or a cap: [`GpuBackendConfig::vram`]); the NTT
//! tables, resident parameters, every worker's partition buffers and MSM
//! scratch are ranges of it. No cuMemAlloc/cuMemFree (and no implicit device
//! synchronisation) happens per partition, and a shortage is a typed
//! `OutOfBudget` after a bounded wait for the device's other worker.
//!
//! [`gpu_backend`] makes `workers_per_device` [`GpuProver`]s on every device
//! (sharing that device's pool, NTT tables and parameter cache); the facade's
//! pipeline gives each its own consumer thread, so one worker's uploads and
//! host work overlap another's kernels, and partitions spread over devices.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use bellperson::groth16::{Parameters, Proof};
use blstrs::{Bls12, G1Projective, G2Projective, Scalar};
use c2_core::Synthesized;
use c2_cuda::{DeviceBuffer, DeviceMemory, Event, Gpu, GpuError, Stager, Stream};
use c2_msm::gpu::{DeviceDensity, DeviceScalars, GpuCurve, GpuMsm, GpuMsmConfig, G1, G2};
use c2_ntt::GpuNtt;
use c2_vram::{ResidentSrs, SrsCache, SrsSource, VramConfig, VramPool};

use crate::backend::{Backend, PartitionJob, PartitionProver, Workers};
use crate::error::Error;
use crate::groth16::{assemble, check_parameters, run_msms, G1Query, Mask, MsmStep, PartitionMsms, Scalars};
use crate::report::{timed, GpuTimes, ProveTimings};

/// A device error of the GPU worker (uploads, events, the pool).
fn dev(e: impl Into<GpuError>) -> Error {
    Error::gpu("worker", e)
}

/// How [`gpu_backend`] sets up the devices.
#[derive(Clone, Debug)]
pub struct GpuBackendConfig {
    /// Device ordinals; empty = every device the driver lists.
    pub devices: Vec<usize>,
    /// Provers per device: two let one partition's uploads and host work
    /// overlap another's kernels (ARCHITECTURE.md, "Lessons from prior art").
    pub workers_per_device: usize,
    /// Keep parameter sets on the devices between partitions and proofs
    /// (when they fit beside the workers' buffers).
    pub resident_params: bool,
    /// MSM tuning for every worker.
    pub msm: GpuMsmConfig,
    /// The per-device memory reservation: by default the driver's free
    /// memory minus 2 GiB, held while the backend lives. Set a cap (e.g.
    /// 16 GiB) when other GPU work (PoSt) shares the device.
    pub vram: VramConfig,
}

impl Default for GpuBackendConfig {
    fn default() -> Self {
        Self {
            devices: Vec::new(),
            workers_per_device: 2,
            resident_params: true,
            msm: GpuMsmConfig::default(),
            vram: VramConfig::default(),
        }
    }
}

/// A [`Backend::Workers`] of [`GpuProver`]s on the configured devices.
/// Logs the devices in one line; an error ([`Error::Gpu`], e.g.
/// [`GpuError::is_no_gpu`]) when no device can be used.
pub fn gpu_backend(config: &GpuBackendConfig) -> Result<Backend, Error> {
    let ordinals = if config.devices.is_empty() {
        (0..c2_cuda::devices().map_err(backend_err)?.len()).collect()
    } else {
        config.devices.clone()
    };
    if ordinals.is_empty() {
        return Err(backend_err(GpuError::NoDevice("no CUDA device".into())));
    }
    let mut workers: Vec<Arc<dyn PartitionProver>> = Vec::new();
    let mut names = Vec::new();
    for &d in &ordinals {
        let gpu = Gpu::open(d).map_err(backend_err)?;
        let pool = VramPool::new(&gpu, &config.vram).map_err(backend_err)?;
        let memory = pool.memory();
        let ntt = Arc::new(GpuNtt::with_memory(memory.clone())?);
        let srs = SrsCache::new(memory.clone());
        let epoch = device_epoch(&gpu).map_err(backend_err)?;
        for w in 0..config.workers_per_device.max(1) {
            let p = GpuProver::new(d, w, ntt.clone(), srs.clone(), epoch.clone(), config)?;
            workers.push(Arc::new(p));
        }
        names.push(format!("{d}: {}, {:.1} GB reserved", gpu.info().name, pool.budget() as f64 / 1e9));
    }
    log::info!(
        "porep-c2: proving on {} GPU(s) [{}], {} worker(s) each, parameters {}",
        ordinals.len(),
        names.join("; "),
        config.workers_per_device.max(1),
        if config.resident_params { "resident when they fit" } else { "streamed" }
    );
    Ok(Backend::Workers(Workers::new(workers)))
}

/// A device error while the backend starts.
fn backend_err(e: impl Into<GpuError>) -> Error {
    Error::gpu("backend", e)
}

/// An event recorded (and completed) once per device: the time origin of
/// every worker's kernel spans there ([`GpuTimes::spans_ms`]).
fn device_epoch(gpu: &Arc<Gpu>) -> Result<Arc<Event>, GpuError> {
    let (stream, epoch) = (gpu.stream()?, gpu.event()?);
    epoch.record(&stream)?;
    epoch.synchronize()?;
    Ok(Arc::new(epoch))
}

/// Bytes one worker needs on the device for a partition with a `2^k = m`
/// domain and `aux` aux variables: the peak of compute_h (a, b, c, h and
/// half-size twiddles: 4.5 m scalars) or of the H MSM (h, its split copy,
/// sort entries of 16 windows: ~5.5 m scalars' worth), plus the aux vector.
/// The parameter cache leaves this much free per worker on the device.
pub fn working_set_bytes(m: usize, aux: usize) -> usize {
    (6 * m + aux) * std::mem::size_of::<Scalar>() + (1 << 30)
}

/// One GPU worker: the whole partition on one device.
pub struct GpuProver {
    device: usize,
    worker: usize,
    workers_on_device: usize,
    gpu: Arc<Gpu>,
    /// The device's pool (shared with its other workers).
    memory: DeviceMemory,
    ntt: Arc<GpuNtt>,
    msm: GpuMsm,
    srs: Arc<SrsCache>,
    resident: bool,
    stream: Stream,
    /// Pinned staging slots and copy stream for the partition's vectors.
    /// Held for a whole partition: one partition at a time per worker, also
    /// when several proofs share the backend (the stream, events and MSM
    /// scratch are the worker's).
    stager: Mutex<Stager>,
    marks: [Event; 5],
    /// The device's time origin (shared by its workers).
    epoch: Arc<Event>,
}

/// Bytes per staging slot (128 MiB, 2^22 scalars): large enough that
/// per-chunk overheads vanish, small enough to pin once per worker.
const STAGING_BYTES: usize = 128 << 20;

impl GpuProver {
    /// Worker `worker` of device `device`, sharing the device's memory (the
    /// NTT's: its pool), NTT tables, parameter cache and `epoch` (a
    /// completed event on that device: the origin of [`GpuTimes::spans_ms`]).
    pub fn new(
        device: usize,
        worker: usize,
        ntt: Arc<GpuNtt>,
        srs: Arc<SrsCache>,
        epoch: Arc<Event>,
        config: &GpuBackendConfig,
    ) -> Result<Self, Error> {
        let memory = ntt.memory().clone();
        let gpu = memory.gpu().clone();
        // Kernel time per MSM comes from the MSM's stage events.
        let msm_config = GpuMsmConfig { stage_timing: true, ..config.msm.clone() };
        let msm = GpuMsm::with_memory(memory.clone(), msm_config)?;
        let stream = gpu.stream().map_err(dev)?;
        let stager = Mutex::new(Stager::new(&gpu, STAGING_BYTES).map_err(dev)?);
        let marks = [(); 5].map(|_| gpu.event());
        let marks = marks.into_iter().collect::<Result<Vec<_>, _>>().map_err(dev)?;
        let marks: [Event; 5] = marks.try_into().map_err(|_| dev(GpuError::Invalid("five events".into())))?;
        Ok(Self {
            device,
            worker,
            workers_on_device: config.workers_per_device.max(1),
            gpu,
            memory,
            ntt,
            msm,
            srs,
            resident: config.resident_params,
            stream,
            stager,
            marks,
            epoch,
        })
    }

    /// `v` into `d` (zeros after `v`), through the staging slots on the
    /// copy stream.
    fn stage(stager: &mut Stager, d: &mut DeviceBuffer<Scalar>, v: &[Scalar]) -> Result<(), GpuError> {
        stager.upload(d, 0, v)?;
        d.zero_tail_async(v.len(), stager.stream())
    }

    /// `params` on this device (uploaded now when they are not yet and fit
    /// beside every worker's working set), or `None`: streamed.
    fn resident_params(&self, params: &Parameters<Bls12>, key: &str) -> Result<Option<Arc<ResidentSrs>>, Error> {
        if !self.resident {
            return Ok(None);
        }
        // The circuit's sizes from the parameters: H has m - 1 points, L one
        // per aux variable (check_parameters holds them to the circuit).
        let reserve = self.workers_on_device * working_set_bytes(params.h.len() + 1, params.l.len());
        let src = || SrsSource { h: &params.h, l: &params.l, a: &params.a, b_g1: &params.b_g1, b_g2: &params.b_g2 };
        self.srs.get_or_upload(key, reserve, src).map_err(dev)
    }

    /// Kernel milliseconds of the MSM stages of this worker's last MSM.
    fn msm_ms(&self) -> f32 {
        self.msm.last_stage_times().iter().map(|(_, t)| t).sum()
    }
}

/// On an early return (an error) from a partition's kernel sequence, waits
/// for the whole device before the buffers declared ahead of it go back to
/// the pool: queued copies or kernels may still use them, and the device's
/// other worker could be handed the same range at once. Disarmed on success,
/// where every buffer is freed only after its stream was synchronised.
struct SettleOnError<'a> {
    gpu: &'a Gpu,
    armed: bool,
}

impl Drop for SettleOnError<'_> {
    fn drop(&mut self) {
        if self.armed {
            if let Err(e) = self.gpu.synchronize() {
                log::warn!("porep-c2: device sync after a failed partition: {e}");
            }
        }
    }
}

/// Where an MSM's bases are.
#[derive(Clone, Copy)]
enum Bases<'a, A> {
    Device(&'a DeviceBuffer<A>),
    Host(&'a [A]),
}

/// The MSMs of one partition on a GPU worker: scalars, H and masks on the
/// device, bases resident ([`ResidentSrs`]) or on the host (streamed).
struct DeviceMsms<'a> {
    /// Declared before `h`, so on an error path it waits for the device
    /// before `h` goes back to the pool (fields drop in order).
    settle: SettleOnError<'a>,
    prover: &'a GpuProver,
    params: &'a Parameters<Bls12>,
    srs: Option<&'a ResidentSrs>,
    /// H's coefficients; `None` once the H MSM is done.
    h: Option<DeviceBuffer<Scalar>>,
    /// m - 1: the H MSM's length.
    h_len: usize,
    inputs: DeviceScalars<'a>,
    aux: DeviceScalars<'a>,
    masks: [&'a DeviceDensity; 3],
    /// Kernel time per query, into the partition's [`GpuTimes`].
    times: &'a mut GpuTimes,
}

impl<'a> DeviceMsms<'a> {
    fn scalars(&self, s: Scalars) -> Result<DeviceScalars<'_>, Error> {
        Ok(match s {
            Scalars::H => {
                let h = self.h.as_ref().ok_or_else(|| dev(GpuError::Invalid("H was released".into())))?;
                DeviceScalars::montgomery(h).prefix(self.h_len)
            }
            Scalars::Inputs => self.inputs,
            Scalars::Aux => self.aux,
        })
    }

    fn mask(&self, m: Mask) -> Option<&DeviceDensity> {
        m.select(self.masks)
    }

    /// One MSM over resident bases from `step.first_base` on, or over the
    /// host's (streamed); its kernel time is added to `ms`.
    fn run<C: GpuCurve>(&mut self, bases: Bases<'_, C::Affine>, step: MsmStep) -> Result<(C::Projective, f32), Error> {
        let (scalars, mask) = (self.scalars(step.scalars)?, self.mask(step.mask));
        let msm = &self.prover.msm;
        let p = match bases {
            Bases::Device(b) => msm.msm_device_from::<C>(b, step.first_base, scalars, mask)?,
            Bases::Host(h) => msm.msm_host_bases::<C>(h.get(step.first_base..).unwrap_or(&[]), scalars, mask)?,
        };
        Ok((p, self.prover.msm_ms()))
    }
}

/// The resident copy when there is one, else the host vector.
fn bases<'a, A>(device: Option<&'a DeviceBuffer<A>>, host: &'a [A]) -> Bases<'a, A> {
    device.map_or(Bases::Host(host), Bases::Device)
}

impl PartitionMsms for DeviceMsms<'_> {
    fn g1(&mut self, query: G1Query, step: MsmStep) -> Result<G1Projective, Error> {
        let (p, srs) = (self.params, self.srs);
        let b = match query {
            G1Query::H => bases(srs.map(|x| &x.h), &p.h),
            G1Query::L => bases(srs.map(|x| &x.l), &p.l),
            G1Query::A => bases(srs.map(|x| &x.a), &p.a),
            G1Query::BG1 => bases(srs.map(|x| &x.b_g1), &p.b_g1),
        };
        let (sum, ms) = self.run::<G1>(b, step)?;
        let t = &mut *self.times;
        *match query {
            G1Query::H => &mut t.msm_h_ms,
            G1Query::L => &mut t.msm_l_ms,
            G1Query::A => &mut t.msm_a_ms,
            G1Query::BG1 => &mut t.msm_b_g1_ms,
        } += ms;
        Ok(sum)
    }

    fn g2(&mut self, step: MsmStep) -> Result<G2Projective, Error> {
        let b = bases(self.srs.map(|x| &x.b_g2), &self.params.b_g2);
        let (sum, ms) = self.run::<G2>(b, step)?;
        self.times.msm_b_g2_ms += ms;
        Ok(sum)
    }

    fn release_h(&mut self) {
        // Back to the pool: the H MSM's kernels have finished (msm_* waits).
        self.h = None;
    }
}

impl PartitionProver for GpuProver {
    fn name(&self) -> String {
        format!("cuda:{}/{}", self.device, self.worker)
    }

    fn preload(&self, params: &Parameters<Bls12>, params_key: &str) -> Result<bool, Error> {
        Ok(self.resident_params(params, params_key)?.is_some())
    }

    fn prove(&self, job: PartitionJob<'_>) -> Result<(Proof<Bls12>, ProveTimings), Error> {
        let PartitionJob { synthesized: s, host, params, params_key, r, s: s_blind, .. } = job;
        check_parameters(&s, params)?;
        let mut stager = self
            .stager
            .lock()
            .map_err(|_| Error::Worker { worker: self.name(), message: "poisoned by an earlier panic".into() })?;
        let mut t = ProveTimings::default();
        let mut g = GpuTimes { device: self.device, worker: self.worker, ..Default::default() };
        let Synthesized {
            a,
            b,
            c,
            input_assignment: inputs,
            aux_assignment: aux,
            a_aux_density,
            b_input_density,
            b_aux_density,
        } = s;
        let n = a.len();
        let log_m = n.max(1).next_power_of_two().trailing_zeros();
        let m = 1usize << log_m;
        let (n_in, b_in) = (inputs.len(), b_input_density.count_ones());

        // Parameters: resident (preloaded, or uploaded by the first
        // partition that needs them on this device), else None and the
        // MSMs stream them.
        let srs = timed(&mut g.params, || self.resident_params(params, params_key))?;
        g.params_resident = srs.is_some();

        // Every buffer of the partition from the pool before any copy is
        // queued: a shortage (after the pool's wait) fails here with
        // nothing in flight.
        let st = &self.stream;
        let e = |x: GpuError| dev(x);
        let alloc = |len: usize| self.memory.alloc::<Scalar>(len).map_err(e);
        let (mut d_a, mut d_b, mut d_c, mut d_h) = (alloc(m)?, alloc(m)?, alloc(m)?, alloc(m)?);
        let (mut d_aux, mut d_in) = (alloc(aux.len())?, alloc(inputs.len())?);
        // Declared after the buffers, so dropped before them: on an early
        // return the device finishes what is queued on them first (a pool
        // hands a freed range to the other worker at once).
        let mut settle = SettleOnError { gpu: &self.gpu, armed: true };

        // Uploads through the pinned staging slots on the copy stream
        // (pageable copies measured 6.3 vs 55 GB/s); events order them
        // before compute_h on this worker's stream.
        let [m0, m1, m2, m3, m4] = &self.marks;
        {
            let clock = Instant::now();
            m0.record(stager.stream()).map_err(e)?;
            Self::stage(&mut stager, &mut d_a, &a).map_err(e)?;
            Self::stage(&mut stager, &mut d_b, &b).map_err(e)?;
            Self::stage(&mut stager, &mut d_c, &c).map_err(e)?;
            Self::stage(&mut stager, &mut d_aux, &aux).map_err(e)?;
            Self::stage(&mut stager, &mut d_in, &inputs).map_err(e)?;
            m1.record(stager.stream()).map_err(e)?;
            g.stage = clock.elapsed();
            st.wait(m1).map_err(e)?;
        }
        let clock = Instant::now();
        self.ntt.compute_h_device(&mut d_a, &mut d_b, &mut d_c, &mut d_h, log_m, st)?;
        m2.record(st).map_err(e)?;
        // Freeing ~17 GB of host vectors (a 32 GiB partition) takes the OS
        // a while: do it while the kernels run, not before they are queued.
        drop((a, b, c, aux, inputs));
        // The partition's host memory is gone: admit the next one now.
        drop(host);
        // The MSMs run on the MSM's own stream: finish the uploads and H.
        st.synchronize().map_err(e)?;
        t.ntt = clock.elapsed();
        g.upload_ms = m1.elapsed_ms(m0).map_err(e)?;
        g.ntt_ms = m2.elapsed_ms(m1).map_err(e)?;
        g.spans_ms.push((m1.elapsed_ms(&self.epoch).map_err(e)?, m2.elapsed_ms(&self.epoch).map_err(e)?));
        drop((d_a, d_b, d_c));

        let a_mask = self.msm.upload_density(&a_aux_density)?;
        let b_in_mask = self.msm.upload_density(&b_input_density)?;
        let b_aux_mask = self.msm.upload_density(&b_aux_density)?;
        let mut settle_masks = SettleOnError { gpu: &self.gpu, armed: true };

        // The MSMs run back to back on the MSM's stream, each waited for by
        // the host; marks on this (idle) stream bracket the phase.
        m3.record(st).map_err(e)?;
        let mut msms = DeviceMsms {
            settle: SettleOnError { gpu: &self.gpu, armed: true },
            prover: self,
            params,
            srs: srs.as_deref(),
            h: Some(d_h),
            h_len: m - 1,
            inputs: DeviceScalars::montgomery(&d_in),
            aux: DeviceScalars::montgomery(&d_aux),
            masks: [&a_mask, &b_in_mask, &b_aux_mask],
            times: &mut g,
        };
        let sums = run_msms(&mut msms, n_in, b_in, &mut t)?;
        // Every MSM was waited for: H (if still held) can go back now.
        msms.settle.armed = false;
        drop(msms);
        m4.record(st).map_err(e)?;
        m4.synchronize().map_err(e)?;
        g.spans_ms.push((m3.elapsed_ms(&self.epoch).map_err(e)?, m4.elapsed_ms(&self.epoch).map_err(e)?));
        (settle.armed, settle_masks.armed) = (false, false);
        let proof = timed(&mut t.assemble, || assemble(&params.vk, r, s_blind, &sums));
        t.gpu = Some(g);
        Ok((proof, t))
    }
}
