//! The GPU NTT (feature `cuda`): kernels in `cuda-kernels/ntt/`, launched on
//! explicit streams; twiddles cached on the device per domain size. Device
//! buffers come from the [`DeviceMemory`] given at construction (the
//! device's pool in the prover).

use std::mem::MaybeUninit;
use std::sync::{Arc, Mutex};

use blstrs::Scalar;
use c2_cuda::{DeviceBuffer, DeviceMemory, Gpu, GpuError, Kernel, KernelId, Launch, Stager, Stream};
use ff::{Field, PrimeField};

use crate::{Domain, Ntt, NttError};

/// Power tables split the exponent at this bit: x^i = hi[i >> 12] * lo[i & 4095].
const LO_BITS: u32 = 12;
/// Elements one block transforms in shared memory (32 KB of Fr).
const BLOCK_ELEMS_LOG: u32 = 10;
/// Words of padding per limb plane in a pass's shared memory (the kernels'
/// `PLANE_PAD`: conflict-free 16-byte chunk moves).
const PLANE_PAD: u32 = 4;
/// Threads per block for the shared-memory passes.
const PASS_THREADS: u32 = 256;
/// Threads per block for element-wise kernels.
const EW_THREADS: u32 = 256;
/// Bytes per staging slot: 2^22 scalars x 32 B = 128 MB, two slots. Large
/// enough that each DMA runs near PCIe speed, small enough to keep host
/// copies and DMA overlapped.
const STAGING_BYTES: usize = 128 << 20;

/// Which transform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NttKind {
    /// Coefficients to evaluations on the domain.
    Forward,
    /// Evaluations to coefficients.
    Inverse,
    /// Coefficients to evaluations on the coset g·domain.
    CosetForward,
    /// Evaluations on the coset to coefficients.
    CosetInverse,
}

fn gpu_err(e: GpuError) -> NttError {
    NttError::Gpu(e)
}

struct Kernels {
    bit_reverse: Kernel,
    pass: Kernel,
    pass_inverse: Kernel,
    pass_combine: Kernel,
    powers: Kernel,
    scale_by_powers: Kernel,
    mul: Kernel,
    sub_scale: Kernel,
}

/// The (hi, lo) tables of one power sequence c·x^i on the device:
/// c·x^i = hi[i >> LO_BITS] · lo[i & (2^LO_BITS − 1)].
type PowerTables = (DeviceBuffer<Scalar>, DeviceBuffer<Scalar>);

/// Device-resident tables for one domain size.
struct Tables {
    log_n: u32,
    /// omega^k, k < n/2.
    twiddles: DeviceBuffer<Scalar>,
    /// (hi, lo) tables of g^i and n^-1 g^i (coset after inverse), of
    /// n^-1 g^-i (inverse coset) and of n^-1 (plain inverse); the inverse
    /// passes read the last three at bit-reversed indices.
    coset: PowerTables,
    ninv_coset: PowerTables,
    ninv_icoset: PowerTables,
    ninv: PowerTables,
    zinv: DeviceBuffer<Scalar>,
}

/// NTTs and `compute_h` on one GPU.
pub struct GpuNtt {
    gpu: Arc<Gpu>,
    memory: DeviceMemory,
    kernels: Kernels,
    /// One entry per domain size used, kept for the instance's lifetime: a
    /// table range freed while another worker's queued kernels still read
    /// it could be handed out again at once by a pool (one size per sector
    /// size: 2 GB of twiddles at 2^27).
    tables: Mutex<Vec<Arc<Tables>>>,
    /// Streams and staging for the host-level API: copies overlap compute.
    io: Mutex<HostIo>,
}

/// The host-level API's compute stream and the pinned staging path (its
/// copy stream carries the uploads).
struct HostIo {
    compute: Stream,
    stager: Stager,
}

impl HostIo {
    /// Queues `src` into `dst` on the copy stream; returns when the last
    /// chunk is queued.
    fn upload(&mut self, dst: &mut DeviceBuffer<Scalar>, src: &[Scalar]) -> Result<(), GpuError> {
        self.stager.upload(dst, 0, src)
    }

    /// The copy stream the uploads run on.
    fn copy(&self) -> &Stream {
        self.stager.stream()
    }

    /// Copies `dst.len()` elements of `src` into `dst` after the work queued
    /// on the compute stream; every element is written when this returns
    /// `Ok`.
    fn download(&mut self, src: &DeviceBuffer<Scalar>, dst: &mut [MaybeUninit<Scalar>]) -> Result<(), GpuError> {
        self.stager.download(src, 0, dst, &self.compute)
    }
}

/// An initialised slice viewed as possibly uninitialised (sound: writing
/// initialised values keeps it initialised).
fn as_uninit(v: &mut [Scalar]) -> &mut [MaybeUninit<Scalar>] {
    // SAFETY: MaybeUninit<T> has T's layout; we only ever write whole values.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), v.len()) }
}

impl std::fmt::Debug for GpuNtt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuNtt({})", self.gpu.info().name)
    }
}

/// Host-side power tables: hi[j] = x^(j * 2^LO_BITS), lo[k] = c * x^k.
fn power_tables(x: Scalar, c: Scalar, n: usize) -> (Vec<Scalar>, Vec<Scalar>) {
    let lo_len = n.clamp(1, 1 << LO_BITS);
    let hi_len = n.div_ceil(1 << LO_BITS).max(1);
    let mut lo = Vec::with_capacity(lo_len);
    let mut p = c;
    for _ in 0..lo_len {
        lo.push(p);
        p *= x;
    }
    let step = x.pow_vartime([1u64 << LO_BITS]);
    let mut hi = Vec::with_capacity(hi_len);
    let mut q = Scalar::ONE;
    for _ in 0..hi_len {
        hi.push(q);
        q *= step;
    }
    (hi, lo)
}

impl GpuNtt {
    /// Loads the NTT kernels on `gpu`; buffers from the driver.
    pub fn new(gpu: Arc<Gpu>) -> Result<Self, NttError> {
        Self::with_memory(DeviceMemory::driver(gpu))
    }

    /// Loads the NTT kernels on `memory`'s device; every device buffer
    /// (tables, the host-level API's buffers) comes from `memory`.
    pub fn with_memory(memory: DeviceMemory) -> Result<Self, NttError> {
        let gpu = memory.gpu().clone();
        let k = |id| gpu.kernel(id).map_err(gpu_err);
        let kernels = Kernels {
            bit_reverse: k(KernelId::NttBitReverse)?,
            pass: k(KernelId::NttPass)?,
            pass_inverse: k(KernelId::NttPassInverse)?,
            pass_combine: k(KernelId::NttPassCombine)?,
            powers: k(KernelId::Powers)?,
            scale_by_powers: k(KernelId::ScaleByPowers)?,
            mul: k(KernelId::MulPointwise)?,
            sub_scale: k(KernelId::SubScale)?,
        };
        let io = HostIo {
            compute: gpu.stream().map_err(gpu_err)?,
            stager: Stager::new(&gpu, STAGING_BYTES).map_err(gpu_err)?,
        };
        Ok(Self { gpu, memory, kernels, tables: Mutex::new(Vec::new()), io: Mutex::new(io) })
    }

    /// The device.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// Where this instance's device buffers come from.
    pub fn memory(&self) -> &DeviceMemory {
        &self.memory
    }

    fn upload_small(&self, v: &[Scalar], stream: &Stream) -> Result<DeviceBuffer<Scalar>, GpuError> {
        let mut b = self.memory.alloc::<Scalar>(v.len())?;
        // Waits for the copy, so `v` may be dropped.
        b.upload(0, v, stream)?;
        Ok(b)
    }

    /// The tables for `2^log_n`, built on first use (twiddles: n/2 elements,
    /// 2 GB at 2^27, computed on the device from two small tables).
    fn tables(&self, log_n: u32, stream: &Stream) -> Result<Arc<Tables>, NttError> {
        let mut cache = self.tables.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = cache.iter().find(|t| t.log_n == log_n) {
            return Ok(t.clone());
        }
        let d = Domain::new(log_n)?;
        let n = d.size();
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let g_inv = g.invert().unwrap();
        let n_inv = Scalar::from(n as u64).invert().unwrap();
        let up = |(hi, lo): (Vec<Scalar>, Vec<Scalar>)| -> Result<_, NttError> {
            Ok((self.upload_small(&hi, stream).map_err(gpu_err)?, self.upload_small(&lo, stream).map_err(gpu_err)?))
        };
        let half = (n / 2).max(1);
        let tw_tables = up(power_tables(d.omega(), Scalar::ONE, half))?;
        let twiddles = self.memory.alloc::<Scalar>(half).map_err(gpu_err)?;
        // c2_powers(fr_t* out, const fr_t* hi, const fr_t* lo, uint64_t n, uint32_t lo_bits)
        let args = (twiddles.device_ptr(), tw_tables.0.device_ptr(), tw_tables.1.device_ptr(), half as u64, LO_BITS);
        // SAFETY: buffers sized for `n` and the tables' index ranges.
        unsafe { self.kernels.powers.launch(stream, Launch::new(grid_for(half), EW_THREADS), args) }
            .map_err(gpu_err)?;
        stream.synchronize().map_err(gpu_err)?;
        drop(tw_tables);
        let tables = Tables {
            log_n,
            twiddles,
            coset: up(power_tables(g, Scalar::ONE, n))?,
            ninv_coset: up(power_tables(g, n_inv, n))?,
            ninv_icoset: up(power_tables(g_inv, n_inv, n))?,
            ninv: up(power_tables(Scalar::ONE, n_inv, n))?,
            zinv: self.upload_small(&[d.z_on_coset_inverse()], stream).map_err(gpu_err)?,
        };
        let t = Arc::new(tables);
        cache.push(t.clone());
        Ok(t)
    }

    /// Builds the tables of a `2^log_n` domain now (they are kept for the
    /// instance's lifetime; [`crate::table_bytes`] says how large), so that
    /// a caller planning device memory places them before anything else.
    pub fn prepare(&self, log_n: u32) -> Result<(), NttError> {
        let stream = self.gpu.stream().map_err(gpu_err)?;
        self.tables(log_n, &stream)?;
        stream.synchronize().map_err(gpu_err)
    }

    /// `x = NTT(x)` in place on `stream` (`2^log_n` elements on the device).
    pub fn ntt_in_place(
        &self,
        x: &mut DeviceBuffer<Scalar>,
        log_n: u32,
        kind: NttKind,
        stream: &Stream,
    ) -> Result<(), NttError> {
        check_len(x, log_n)?;
        let t = self.tables(log_n, stream)?;
        match kind {
            NttKind::Forward => self.forward(x, &t, log_n, stream),
            NttKind::Inverse => self.inverse(x, &t, &t.ninv, log_n, stream),
            NttKind::CosetForward => {
                self.scale_by(x, &t.coset, 1 << log_n, stream)?;
                self.forward(x, &t, log_n, stream)
            }
            NttKind::CosetInverse => self.inverse(x, &t, &t.ninv_icoset, log_n, stream),
        }
    }

    /// `out = NTT(input)` on `stream`, both `2^log_n` elements on the device;
    /// `input` is left untouched (a device copy, then [`GpuNtt::ntt_in_place`]).
    pub fn ntt_device(
        &self,
        input: &DeviceBuffer<Scalar>,
        out: &mut DeviceBuffer<Scalar>,
        log_n: u32,
        kind: NttKind,
        stream: &Stream,
    ) -> Result<(), NttError> {
        check_len(input, log_n)?;
        check_len(out, log_n)?;
        out.copy_range_from_async(0, input, 0, 1 << log_n, stream).map_err(gpu_err)?;
        self.ntt_in_place(out, log_n, kind, stream)
    }

    /// H on the device with three full vectors: `a`, `b`, `c` hold the
    /// evaluations padded with zeros to `2^log_n`; afterwards the
    /// `2^log_n − 1` coefficients of H are in `a` (its last element is
    /// scratch) and `b`, `c` are overwritten. The same steps as
    /// [`GpuNtt::h_coset_evaluations`], [`GpuNtt::h_coset_mul`],
    /// [`GpuNtt::h_coset_finish`], which a caller with room for two vectors
    /// only runs itself, uploading `c` into `b`'s buffer after
    /// `h_coset_mul`.
    pub fn compute_h_device(
        &self,
        a: &mut DeviceBuffer<Scalar>,
        b: &mut DeviceBuffer<Scalar>,
        c: &mut DeviceBuffer<Scalar>,
        log_n: u32,
        stream: &Stream,
    ) -> Result<(), NttError> {
        self.h_coset_evaluations(a, log_n, stream)?;
        self.h_coset_mul(a, b, log_n, stream)?;
        self.h_coset_finish(a, c, log_n, stream)
    }

    /// compute_h, step 1 (for a): `x <- coset_fft(ifft(x))` in place, the
    /// evaluations at the constraint points to evaluations on the coset.
    /// The inverse passes leave the coefficients in bit-reversed order, the
    /// order the forward passes take: no permutation.
    pub fn h_coset_evaluations(
        &self,
        x: &mut DeviceBuffer<Scalar>,
        log_n: u32,
        stream: &Stream,
    ) -> Result<(), NttError> {
        self.h_coset_into(x, log_n, stream, None)
    }

    /// compute_h, step 2: `a <- a · coset_fft(ifft(b))`, with `a` on the
    /// coset (step 1). The product happens in `b`'s last forward pass, which
    /// writes into `a` instead of `b`: `b`'s buffer is left in an
    /// intermediate state, free for `c`.
    pub fn h_coset_mul(
        &self,
        a: &mut DeviceBuffer<Scalar>,
        b: &mut DeviceBuffer<Scalar>,
        log_n: u32,
        stream: &Stream,
    ) -> Result<(), NttError> {
        check_len(a, log_n)?;
        self.h_coset_into(b, log_n, stream, Some(Fold { acc: a, zinv: None }))
    }

    /// compute_h, step 3: `a <- icoset_fft((a − coset_fft(ifft(c))) / Z)`,
    /// with `a` holding a·b on the coset (step 2): the `2^log_n − 1`
    /// coefficients of H are in `a`. The subtraction and the division by Z
    /// happen in `c`'s last forward pass (`c`'s buffer is left in an
    /// intermediate state).
    pub fn h_coset_finish(
        &self,
        a: &mut DeviceBuffer<Scalar>,
        c: &mut DeviceBuffer<Scalar>,
        log_n: u32,
        stream: &Stream,
    ) -> Result<(), NttError> {
        check_len(a, log_n)?;
        let t = self.tables(log_n, stream)?;
        self.h_coset_into(c, log_n, stream, Some(Fold { acc: a, zinv: Some(&t.zinv) }))?;
        // compute_h's one permutation (seven before session 16) is this
        // inverse's.
        self.inverse(a, &t, &t.ninv_icoset, log_n, stream)
    }

    /// `x <- coset_fft(ifft(x))`, the last forward pass folded into `fold`
    /// when there is one: 1/n and the coset shift g^i in the inverse's last
    /// pass, no permutation in between (bit-reversed coefficients are the
    /// order the forward passes take).
    fn h_coset_into(
        &self,
        x: &mut DeviceBuffer<Scalar>,
        log_n: u32,
        stream: &Stream,
        fold: Option<Fold<'_>>,
    ) -> Result<(), NttError> {
        check_len(x, log_n)?;
        let t = self.tables(log_n, stream)?;
        self.inverse_to_bit_reversed(x, &t, &t.ninv_coset, log_n, stream)?;
        self.passes_folded(x, &t, log_n, stream, fold)
    }

    /// The forward transform in place: permutation, then the passes.
    fn forward(&self, x: &mut DeviceBuffer<Scalar>, t: &Tables, log_n: u32, stream: &Stream) -> Result<(), NttError> {
        self.bit_reverse(x, log_n, stream)?;
        self.passes(x, t, log_n, stream)
    }

    /// `x <- scale ⊙ (n · ifft(x))` in place, natural order: the inverse
    /// passes, then the permutation.
    fn inverse(
        &self,
        x: &mut DeviceBuffer<Scalar>,
        t: &Tables,
        scale: &PowerTables,
        log_n: u32,
        stream: &Stream,
    ) -> Result<(), NttError> {
        self.inverse_to_bit_reversed(x, t, scale, log_n, stream)?;
        self.bit_reverse(x, log_n, stream)
    }

    /// The bit-reversal permutation of `2^log_n` elements in place on
    /// `stream` (the one permutation of a forward transform or compute_h).
    pub fn bit_reverse(&self, x: &mut DeviceBuffer<Scalar>, log_n: u32, stream: &Stream) -> Result<(), NttError> {
        check_len(x, log_n)?;
        // c2_ntt_bit_reverse(fr_t* data, uint32_t log_n): from 2^8 one block
        // of 256 threads per 16 x 16 tile, exactly; below, any grid.
        let dims = if log_n >= 8 { Launch::new(1 << (log_n - 8), 256) } else { Launch::new(1, EW_THREADS) };
        let args = (x.device_ptr(), log_n);
        // SAFETY: x holds 2^log_n elements (checked); the grid is the one
        // the kernel's tile path indexes by.
        unsafe { self.kernels.bit_reverse.launch(stream, dims, args) }.map_err(gpu_err)
    }

    /// `x <- bitrev(scale ⊙ (n · ifft(x)))` in place: the forward passes'
    /// exact inverses in reverse order, natural-order evaluations to
    /// bit-reversed coefficients, the last pass multiplying coefficient i
    /// by the power table `scale` (the 1/n and any coset shift).
    fn inverse_to_bit_reversed(
        &self,
        x: &mut DeviceBuffer<Scalar>,
        t: &Tables,
        scale: &PowerTables,
        log_n: u32,
        stream: &Stream,
    ) -> Result<(), NttError> {
        for pass in pass_plan(log_n).into_iter().rev() {
            let (hi, lo) = if pass.s0 == 0 { (scale.0.device_ptr(), scale.1.device_ptr()) } else { (0, 0) };
            // c2_ntt_pass_inverse(fr_t* data, const fr_t* tw, uint32_t log_n, uint32_t s0, uint32_t k,
            //                     uint32_t c_bits, const fr_t* scale_hi, const fr_t* scale_lo, uint32_t lo_bits)
            let args = (x.device_ptr(), t.twiddles.device_ptr(), log_n, pass.s0, pass.k, pass.c_bits, hi, lo, LO_BITS);
            // SAFETY: as in `passes`; the scale tables cover indices < n
            // (null: no scaling in that pass).
            unsafe { self.kernels.pass_inverse.launch(stream, pass.launch(log_n), args) }.map_err(gpu_err)?;
        }
        // A size-1 transform has no pass: its scaling (1/1 * x^0) is 1.
        Ok(())
    }

    /// All butterfly stages, grouped into shared-memory passes.
    fn passes(&self, data: &mut DeviceBuffer<Scalar>, t: &Tables, log_n: u32, stream: &Stream) -> Result<(), NttError> {
        self.passes_folded(data, t, log_n, stream, None)
    }

    /// [`GpuNtt::passes`], the last pass folded into `fold` when there is
    /// one (`data` then keeps its last pass's input).
    fn passes_folded(
        &self,
        data: &mut DeviceBuffer<Scalar>,
        t: &Tables,
        log_n: u32,
        stream: &Stream,
        fold: Option<Fold<'_>>,
    ) -> Result<(), NttError> {
        let plan = pass_plan(log_n);
        let (acc, zinv) = match &fold {
            Some(f) => (f.acc.device_ptr(), f.zinv.map_or(0, |z| z.device_ptr())),
            None => (0, 0),
        };
        for (i, pass) in plan.iter().enumerate() {
            let (s0, k, c_bits) = (pass.s0, pass.k, pass.c_bits);
            // SAFETY (both launches): data holds 2^log_n elements, twiddles
            // n/2; the pass touches indices below 2^log_n only, and so in
            // `acc` (checked by the callers to hold 2^log_n); zinv is one
            // element or null.
            if fold.is_some() && i + 1 == plan.len() {
                // c2_ntt_pass_combine(fr_t* data, const fr_t* tw, uint32_t log_n, uint32_t s0, uint32_t k,
                //                     uint32_t c_bits, fr_t* acc, const fr_t* zinv)
                let args = (data.device_ptr(), t.twiddles.device_ptr(), log_n, s0, k, c_bits, acc, zinv);
                unsafe { self.kernels.pass_combine.launch(stream, pass.launch(log_n), args) }.map_err(gpu_err)?;
            } else {
                // c2_ntt_pass(fr_t* data, const fr_t* tw, uint32_t log_n, uint32_t s0, uint32_t k, uint32_t c_bits)
                let args = (data.device_ptr(), t.twiddles.device_ptr(), log_n, s0, k, c_bits);
                unsafe { self.kernels.pass.launch(stream, pass.launch(log_n), args) }.map_err(gpu_err)?;
            }
        }
        match fold {
            // A size-1 transform has no pass to fold into: the element-wise
            // kernels.
            Some(f) if plan.is_empty() => self.fold_elementwise(f, data, log_n, stream),
            _ => Ok(()),
        }
    }

    /// `fold` applied to `x` by the element-wise kernels (no pass).
    fn fold_elementwise(
        &self,
        fold: Fold<'_>,
        x: &DeviceBuffer<Scalar>,
        log_n: u32,
        stream: &Stream,
    ) -> Result<(), NttError> {
        let n = 1u64 << log_n;
        let dims = Launch::new(grid_for(n as usize), EW_THREADS);
        match fold.zinv {
            // c2_mul_pointwise(fr_t* a, const fr_t* b, uint64_t n)
            // SAFETY: both hold n elements (checked).
            None => unsafe { self.kernels.mul.launch(stream, dims, (fold.acc.device_ptr(), x.device_ptr(), n)) },
            // c2_sub_scale(fr_t* a, const fr_t* c, const fr_t* zinv, uint64_t n)
            // SAFETY: both hold n elements (checked); zinv one.
            Some(z) => unsafe {
                self.kernels.sub_scale.launch(stream, dims, (fold.acc.device_ptr(), x.device_ptr(), z.device_ptr(), n))
            },
        }
        .map_err(gpu_err)
    }

    fn scale_by(
        &self,
        data: &mut DeviceBuffer<Scalar>,
        tables: &PowerTables,
        n: usize,
        stream: &Stream,
    ) -> Result<(), NttError> {
        // c2_scale_by_powers(fr_t* data, const fr_t* hi, const fr_t* lo, uint64_t n, uint32_t lo_bits)
        let args = (data.device_ptr(), tables.0.device_ptr(), tables.1.device_ptr(), n as u64, LO_BITS);
        // SAFETY: tables cover indices < n.
        unsafe { self.kernels.scale_by_powers.launch(stream, Launch::new(grid_for(n), EW_THREADS), args) }
            .map_err(gpu_err)
    }

    /// Host-level transform of `v` (length a power of two) in place.
    pub fn ntt(&self, v: &mut [Scalar], kind: NttKind) -> Result<(), NttError> {
        let log_n = v.len().max(1).next_power_of_two().trailing_zeros();
        if v.len() != 1 << log_n {
            return Err(NttError::Backend { backend: "cuda", message: "length must be a power of two".into() });
        }
        let mut io = self.io.lock().unwrap_or_else(|p| p.into_inner());
        let mut x = self.memory.alloc::<Scalar>(v.len()).map_err(gpu_err)?;
        io.upload(&mut x, v).map_err(gpu_err)?;
        let uploaded = self.gpu.event().map_err(gpu_err)?;
        uploaded.record(io.copy()).map_err(gpu_err)?;
        io.compute.wait(&uploaded).map_err(gpu_err)?;
        self.ntt_in_place(&mut x, log_n, kind, &io.compute)?;
        io.download(&x, as_uninit(v)).map_err(gpu_err)?;
        drop(x);
        Ok(())
    }
}

/// Where a transform's last pass goes instead of back into its vector:
/// `acc *= result`, or `acc = (acc − result) · zinv` with `zinv` (compute_h's
/// a·b and (a·b − c)/Z).
struct Fold<'a> {
    acc: &'a DeviceBuffer<Scalar>,
    zinv: Option<&'a DeviceBuffer<Scalar>>,
}

/// One shared-memory pass: stages `s0 + 1 ..= s0 + k` of `2^c_bits`
/// adjacent columns per block.
#[derive(Clone, Copy, Debug)]
struct Pass {
    s0: u32,
    k: u32,
    c_bits: u32,
}

impl Pass {
    /// Grid, block and shared memory of the pass at `2^log_n`.
    fn launch(self, log_n: u32) -> Launch {
        let elems = 1u32 << (self.k + self.c_bits);
        let blocks = (1u64 << log_n) / elems as u64;
        let threads = (elems / 2).clamp(1, PASS_THREADS);
        // 8 limb planes of elems + PLANE_PAD words (cuda-kernels/ntt/ntt.cuh).
        Launch::new(blocks as u32, threads).shared((elems + PLANE_PAD) * std::mem::size_of::<Scalar>() as u32)
    }
}

/// The passes of a `2^log_n` transform: the first takes up to 10 stages of
/// 1024 contiguous elements, later ones up to 9 stages over as many adjacent
/// columns as fill the 1024-element block (2^27: 10 + 9 + 8 stages).
fn pass_plan(log_n: u32) -> Vec<Pass> {
    let mut plan = Vec::new();
    let mut s0 = 0u32;
    while s0 < log_n {
        let (k, c_bits) = if s0 == 0 {
            (log_n.min(BLOCK_ELEMS_LOG), 0)
        } else {
            let k = (log_n - s0).min(BLOCK_ELEMS_LOG - 1);
            (k, s0.min(BLOCK_ELEMS_LOG - k))
        };
        plan.push(Pass { s0, k, c_bits });
        s0 += k;
    }
    plan
}

/// A buffer too short for a `2^log_n` transform.
fn check_len(x: &DeviceBuffer<Scalar>, log_n: u32) -> Result<(), NttError> {
    if x.len() < 1usize << log_n {
        return Err(NttError::Backend {
            backend: "cuda",
            message: format!("a buffer of {} elements for a 2^{log_n} transform", x.len()),
        });
    }
    Ok(())
}

fn grid_for(n: usize) -> u32 {
    (n.div_ceil(EW_THREADS as usize)).clamp(1, 1 << 20) as u32
}

impl Ntt for GpuNtt {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn compute_h(&self, a: Vec<Scalar>, b: Vec<Scalar>, c: Vec<Scalar>) -> Result<Vec<Scalar>, NttError> {
        if a.len() != b.len() || a.len() != c.len() {
            return Err(NttError::LengthMismatch { a: a.len(), b: b.len(), c: c.len() });
        }
        let domain_log = Domain::for_len(a.len())?.log_size();
        let m = 1usize << domain_log;
        let n = a.len();
        // Two full vectors (a, then c in b's buffer) plus the tables.
        let need = 2 * m * std::mem::size_of::<Scalar>() + crate::table_bytes(domain_log);
        let free = self.memory.available().map_err(gpu_err)?;
        if need > free {
            return Err(NttError::Backend {
                backend: "cuda",
                message: format!("compute_h at 2^{domain_log} needs {need} bytes of device memory, {free} free"),
            });
        }
        let mut io = self.io.lock().unwrap_or_else(|p| p.into_inner());
        let event = || self.gpu.event().map_err(gpu_err);
        let (a_up, b_up, mul_done, c_up) = (event()?, event()?, event()?, event()?);
        // Uploads on the copy stream, one event each, so the transform of a
        // starts while b is still crossing PCIe.
        let mut da = self.memory.alloc::<Scalar>(m).map_err(gpu_err)?;
        let mut db = self.memory.alloc::<Scalar>(m).map_err(gpu_err)?;
        for (d, v, e) in [(&mut da, &a, &a_up), (&mut db, &b, &b_up)] {
            io.upload(d, v).map_err(gpu_err)?;
            d.zero_tail_async(n, io.copy()).map_err(gpu_err)?;
            e.record(io.copy()).map_err(gpu_err)?;
        }
        drop((a, b));
        let compute = &io.compute;
        compute.wait(&a_up).map_err(gpu_err)?;
        self.h_coset_evaluations(&mut da, domain_log, compute)?;
        compute.wait(&b_up).map_err(gpu_err)?;
        self.h_coset_mul(&mut da, &mut db, domain_log, compute)?;
        mul_done.record(compute).map_err(gpu_err)?;
        // c into b's buffer once a·b has read it.
        io.copy().wait(&mul_done).map_err(gpu_err)?;
        io.upload(&mut db, &c).map_err(gpu_err)?;
        db.zero_tail_async(n, io.copy()).map_err(gpu_err)?;
        c_up.record(io.copy()).map_err(gpu_err)?;
        drop(c);
        let compute = &io.compute;
        compute.wait(&c_up).map_err(gpu_err)?;
        self.h_coset_finish(&mut da, &mut db, domain_log, compute)?;
        let mut out: Vec<Scalar> = Vec::with_capacity(m - 1);
        io.download(&da, &mut out.spare_capacity_mut()[..m - 1]).map_err(gpu_err)?;
        // SAFETY: download() wrote all m - 1 elements.
        unsafe { out.set_len(m - 1) };
        // Device buffers are released only after the stream has finished
        // with them (download() waited for the last chunk).
        drop((da, db));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small GPU-vs-CPU check for `cargo test --features cuda` on a GPU host;
    /// the full differential suite is the device runner. Without a device it
    /// says so and checks nothing else (the runner exits 2 in that case).
    #[test]
    fn small_sizes_match_cpu_or_skip_loudly() {
        let gpu = match Gpu::open(0) {
            Ok(g) => g,
            Err(e) => {
                eprintln!("SKIP small_sizes_match_cpu: {e}");
                return;
            }
        };
        let ntt = GpuNtt::new(gpu).unwrap();
        let mut rng = <rand_chacha::ChaCha20Rng as rand::SeedableRng>::seed_from_u64(1);
        for log_n in [1u32, 4, 11] {
            let d = Domain::new(log_n).unwrap();
            let v: Vec<Scalar> = (0..d.size()).map(|_| Scalar::random(&mut rng)).collect();
            let mut want = v.clone();
            d.fft(&mut want);
            let mut got = v;
            ntt.ntt(&mut got, NttKind::Forward).unwrap();
            assert_eq!(got, want, "2^{log_n}");
        }
    }
}
