//! GPU field arithmetic, both backends of `cuda-kernels/ff/field.cuh`
//! (ec-gpu-gen's generated code and sppark's `mont_t`), through the
//! self-test kernel module: the operations against the CPU (blstrs for Fr,
//! blst for Fp) and the throughput of products and of the MSM's bucket step
//! per backend, so the module can be built with the faster one.
//!
//! Fp values travel as raw Montgomery limbs (`[u64; 6]`, blst's `blst_fp`
//! layout): blstrs does not export its Fp type, blst's functions compute the
//! reference on the same limbs.

use std::sync::Arc;

use blstrs::{G1Affine, G2Affine, Scalar};
use c2_cuda::{
    CurveId, DeviceBuffer, DeviceCopy, FieldBackend, Gpu, GpuError, Kernel, KernelArgs, Launch, SelftestField,
    SelftestKernel,
};
use ff::Field;

/// One Fp element as blst stores it: six little-endian 64-bit limbs of the
/// Montgomery form, fully reduced.
pub type FpLimbs = [u64; 6];

/// The BLS12-381 base-field modulus p, little-endian limbs.
pub const P: FpLimbs = [
    0xb9fe_ffff_ffff_aaab,
    0x1eab_fffe_b153_ffff,
    0x6730_d2a0_f6b0_f624,
    0x6477_4b84_f385_12bf,
    0x4b1b_a7b6_434b_acd7,
    0x1a01_11ea_397f_e69a,
];

/// 1 in Montgomery form (2^384 mod p).
pub const FP_ONE: FpLimbs = [
    0x7609_0000_0002_fffd,
    0xebf4_000b_c40c_0002,
    0x5f48_9857_53c7_58ba,
    0x77ce_5853_7052_5745,
    0x5c07_1a97_a256_ec6d,
    0x15f6_5ec3_fa80_e493,
];

/// Per input pair, what a field's operations give: `[a * b, a^2, a + b,
/// a - b, 2a]`.
pub type FieldResults<T> = Vec<[T; 5]>;

/// The CPU reference of [`FieldResults`] for Fr (blstrs).
pub fn fr_reference(a: &[Scalar], b: &[Scalar]) -> FieldResults<Scalar> {
    a.iter().zip(b).map(|(x, y)| [x * y, x.square(), x + y, x - y, x.double()]).collect()
}

/// The CPU reference of [`FieldResults`] for Fp (blst, on raw limbs).
pub fn fp_reference(a: &[FpLimbs], b: &[FpLimbs]) -> FieldResults<FpLimbs> {
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            let (x, y) = (blst::blst_fp { l: *x }, blst::blst_fp { l: *y });
            let mut out = [blst::blst_fp::default(); 5];
            // SAFETY: blst's field functions on valid, distinct out-pointers
            // and inputs of the right type.
            unsafe {
                blst::blst_fp_mul(&mut out[0], &x, &y);
                blst::blst_fp_sqr(&mut out[1], &x);
                blst::blst_fp_add(&mut out[2], &x, &y);
                blst::blst_fp_sub(&mut out[3], &x, &y);
                blst::blst_fp_lshift(&mut out[4], &x, 1);
            }
            out.map(|f| f.l)
        })
        .collect()
}

/// A fully reduced Fp element from 384 random bits (the top limb masked
/// below p's, so every value is < p; Montgomery form of some element).
pub fn random_fp(rng: &mut impl rand::RngCore) -> FpLimbs {
    let mut l = [0u64; 6];
    for x in &mut l {
        *x = rng.next_u64();
    }
    l[5] &= 0x0fff_ffff_ffff_ffff;
    l
}

/// The edge values of Fp: 0, 1 (Montgomery), p - 1, and the raw limb
/// patterns 1 and 2^383-ish below p (all reduced).
pub fn fp_edges() -> Vec<FpLimbs> {
    let mut p_minus_1 = P;
    p_minus_1[0] -= 1;
    let mut top = P;
    top[0] -= 2;
    vec![[0; 6], FP_ONE, p_minus_1, [1, 0, 0, 0, 0, 0], top]
}

/// Runs the field self-test kernels on one device.
pub struct GpuFieldCheck {
    gpu: Arc<Gpu>,
}

/// A kernel's result and its time on the device (CUDA events around the
/// launch alone).
pub struct Timed<T> {
    /// What the kernel wrote.
    pub out: Vec<T>,
    /// Milliseconds between the events before and after the launch.
    pub ms: f64,
}

impl GpuFieldCheck {
    /// On `gpu` (the self-test module loads on first use).
    pub fn new(gpu: Arc<Gpu>) -> Self {
        Self { gpu }
    }

    /// Fr: see [`FieldResults`], computed by `backend`.
    pub fn fr_ops(&self, backend: FieldBackend, a: &[Scalar], b: &[Scalar]) -> Result<FieldResults<Scalar>, GpuError> {
        self.ops(SelftestField::Fr, backend, a, b)
    }

    /// Fp: see [`FieldResults`], computed by `backend`.
    pub fn fp_ops(
        &self,
        backend: FieldBackend,
        a: &[FpLimbs],
        b: &[FpLimbs],
    ) -> Result<FieldResults<FpLimbs>, GpuError> {
        self.ops(SelftestField::Fp, backend, a, b)
    }

    fn ops<T: DeviceCopy + Default>(
        &self,
        field: SelftestField,
        backend: FieldBackend,
        a: &[T],
        b: &[T],
    ) -> Result<FieldResults<T>, GpuError> {
        let n = same_len(a, b)?;
        let k = self.gpu.selftest_kernel(SelftestKernel::FieldOps(field, backend))?;
        let (da, db) = (self.upload(a)?, self.upload(b)?);
        let out = self.gpu.alloc::<T>(5 * n)?;
        // c2_fX_ops_*(const F* a, const F* b, F* out, uint64_t n)
        let args = (da.device_ptr(), db.device_ptr(), out.device_ptr(), n as u64);
        // SAFETY: the kernel reads n elements of a and b and writes 5n to out.
        let host = unsafe { self.run(&k, Launch::new(n.div_ceil(128) as u32, 128), args, &out, 5 * n)? };
        Ok(host.out.chunks_exact(5).map(|c| [c[0], c[1], c[2], c[3], c[4]]).collect())
    }

    /// `a[i] * b[i]` by the Fr product on the FP64 pipe
    /// (`cuda-kernels/ff/fr_fp64.cuh`).
    pub fn fr_mul_fp64(&self, a: &[Scalar], b: &[Scalar]) -> Result<Vec<Scalar>, GpuError> {
        let n = same_len(a, b)?;
        let k = self.gpu.selftest_kernel(SelftestKernel::FrMulFp64)?;
        let (da, db) = (self.upload(a)?, self.upload(b)?);
        let out = self.gpu.alloc::<Scalar>(n)?;
        // c2_fr_mul_fp64(const fr_t* a, const fr_t* b, fr_t* out, uint64_t n)
        let args = (da.device_ptr(), db.device_ptr(), out.device_ptr(), n as u64);
        // SAFETY: the kernel reads n elements of a and b and writes n.
        Ok(unsafe { self.run(&k, Launch::new(n.div_ceil(128) as u32, 128), args, &out, n)? }.out)
    }

    /// [`GpuFieldCheck::mul_chain`] of Fr with the FP64-pipe product.
    pub fn fr_mul_chain_fp64(&self, x: &[Scalar], y: &[Scalar], iters: u32) -> Result<Timed<Scalar>, GpuError> {
        self.chain(SelftestKernel::FrMulChainFp64, x, y, iters)
    }

    /// Two independent product chains per thread: `x[i] * y[i]^iters` (out
    /// `[..n]`) and `y[i]^(iters + 1)` (out `[n..]`); `mixed` runs the second
    /// on the FP64 pipe, else both run on sppark's integer product.
    pub fn fr_mul_chain_pair(
        &self,
        x: &[Scalar],
        y: &[Scalar],
        iters: u32,
        mixed: bool,
    ) -> Result<Timed<Scalar>, GpuError> {
        let kernel = if mixed { SelftestKernel::FrMulChainPairMixed } else { SelftestKernel::FrMulChainPairInteger };
        self.chain_outputs(kernel, x, y, iters, 2)
    }

    /// Throughput of products: thread i computes `x[i] * y[i]^iters` as a
    /// chain of `iters` dependent products (`x`, `y` of one length, Fr
    /// scalars or Fp limbs).
    pub fn mul_chain<T: DeviceCopy + Default>(
        &self,
        field: SelftestField,
        backend: FieldBackend,
        x: &[T],
        y: &[T],
        iters: u32,
    ) -> Result<Timed<T>, GpuError> {
        self.chain(SelftestKernel::MulChain(field, backend), x, y, iters)
    }

    fn chain<T: DeviceCopy + Default>(
        &self,
        kernel: SelftestKernel,
        x: &[T],
        y: &[T],
        iters: u32,
    ) -> Result<Timed<T>, GpuError> {
        self.chain_outputs(kernel, x, y, iters, 1)
    }

    /// A chain kernel that writes `chains` results per thread (`chains * n`).
    fn chain_outputs<T: DeviceCopy + Default>(
        &self,
        kernel: SelftestKernel,
        x: &[T],
        y: &[T],
        iters: u32,
        chains: usize,
    ) -> Result<Timed<T>, GpuError> {
        let n = same_len(x, y)?;
        let k = self.gpu.selftest_kernel(kernel)?;
        let xy: Vec<T> = x.iter().chain(y).copied().collect();
        let din = self.upload(&xy)?;
        let out = self.gpu.alloc::<T>(chains * n)?;
        // c2_fX_mul_chain*(const F* in, F* out, uint64_t n, uint32_t iters)
        let args = (din.device_ptr(), out.device_ptr(), n as u64, iters);
        // SAFETY: the kernel reads 2n elements and writes chains * n.
        unsafe { self.run(&k, Launch::new(n.div_ceil(128) as u32, 128), args, &out, chains * n) }
    }

    /// Throughput of the MSM's bucket step in G1: thread i computes
    /// `a[i] + iters * b[i]` by `iters` inlined mixed additions.
    pub fn g1_add_chain(
        &self,
        backend: FieldBackend,
        a: &[G1Affine],
        b: &[G1Affine],
        iters: u32,
    ) -> Result<Timed<G1Affine>, GpuError> {
        self.add_chain(CurveId::G1, backend, a, b, iters)
    }

    /// The same in G2.
    pub fn g2_add_chain(
        &self,
        backend: FieldBackend,
        a: &[G2Affine],
        b: &[G2Affine],
        iters: u32,
    ) -> Result<Timed<G2Affine>, GpuError> {
        self.add_chain(CurveId::G2, backend, a, b, iters)
    }

    fn add_chain<A: DeviceCopy + Default>(
        &self,
        curve: CurveId,
        backend: FieldBackend,
        a: &[A],
        b: &[A],
        iters: u32,
    ) -> Result<Timed<A>, GpuError> {
        let n = same_len(a, b)?;
        let k = self.gpu.selftest_kernel(SelftestKernel::AddChain(curve, backend))?;
        let (da, db) = (self.upload(a)?, self.upload(b)?);
        let out = self.gpu.alloc::<A>(n)?;
        // c2_gX_add_chain_*(const affine* a, const affine* b, affine* out, uint64_t n, uint32_t iters)
        let args = (da.device_ptr(), db.device_ptr(), out.device_ptr(), n as u64, iters);
        // SAFETY: the kernel reads n points of a and b and writes n.
        unsafe { self.run(&k, Launch::new(n.div_ceil(64) as u32, 64), args, &out, n) }
    }

    fn upload<T: DeviceCopy>(&self, v: &[T]) -> Result<DeviceBuffer<T>, GpuError> {
        let stream = self.gpu.stream()?;
        let mut d = self.gpu.alloc::<T>(v.len())?;
        d.upload(0, v, &stream)?;
        stream.synchronize()?;
        Ok(d)
    }

    /// Launches `k` between two events and downloads `len` elements of `out`.
    ///
    /// # Safety
    /// `args` must be what `k` expects, and `k` must stay within the buffers.
    unsafe fn run<T: DeviceCopy + Default, A: KernelArgs>(
        &self,
        k: &Kernel,
        launch: Launch,
        args: A,
        out: &DeviceBuffer<T>,
        len: usize,
    ) -> Result<Timed<T>, GpuError> {
        let stream = self.gpu.stream()?;
        let (start, stop) = (self.gpu.event()?, self.gpu.event()?);
        start.record(&stream)?;
        // SAFETY: the caller's contract.
        unsafe { k.launch(&stream, launch, args) }?;
        stop.record(&stream)?;
        let mut host = vec![T::default(); len];
        out.download(0, &mut host, &stream)?;
        stream.synchronize()?;
        let ms = f64::from(stop.elapsed_ms(&start)?);
        Ok(Timed { out: host, ms })
    }
}

fn same_len<T>(a: &[T], b: &[T]) -> Result<usize, GpuError> {
    if a.len() != b.len() {
        return Err(GpuError::Invalid("the two inputs differ in length".into()));
    }
    Ok(a.len())
}
