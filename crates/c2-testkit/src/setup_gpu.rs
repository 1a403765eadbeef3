//! [`FixedBase`] on a GPU (feature `cuda`): the Groth16 test set-up's point
//! multiplications, for parameters of full-size circuits (a 32 GiB PoRep
//! partition's ~460 M points would take hours on a host's cores).
//!
//! The host's comb tables (8,160 affine points per generator) are
//! uploaded once; each query's scalars go in chunks through the pinned
//! [`Stager`] as canonical limbs; `c2_g1_comb_mul` / `c2_g2_comb_mul` (the
//! self-test module, which production binaries do not carry) compute one
//! point per thread, at most 32 mixed additions and one inversion; the
//! affine points come back through the stager. Group arithmetic is exact,
//! so the points are [`CpuCombs`](super::CpuCombs)' (and bellperson's) bit
//! for bit: the device runner's `--only setup` compares the bytes.

use std::sync::{Arc, Mutex};

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use c2_cuda::{CurveId, DeviceBuffer, DeviceCopy, Gpu, GpuError, Kernel, Launch, SelftestKernel, Stager};
use group::prime::PrimeCurve;
use rayon::prelude::*;

use super::{canonical_limbs, Comb, FixedBase, SetupError};

/// Scalars per launch: 128 MB of limbs in, 384 MB of G1 points (768 MB of
/// G2) out, ~0.1-0.2 s of kernel at the rates the H200's integer pipe
/// allows (~25 M G1 points/s predicted), so the per-chunk copies and the
/// launch are a few percent.
const CHUNK: usize = 1 << 22;

/// Threads per block: the formulas are calls (`__noinline__`), ~170
/// registers per thread in G1.
const BLOCK: u32 = 128;

/// Staging slot size (two slots, page-locked).
const SLOT_BYTES: usize = 64 << 20;

/// One generator's comb table on the device and the kernel that reads it.
struct DeviceComb<A: DeviceCopy> {
    kernel: Kernel,
    table: DeviceBuffer<A>,
}

/// [`FixedBase`] on one GPU: the set-up's two generators as comb tables in
/// device memory.
pub struct GpuCombs {
    gpu: Arc<Gpu>,
    g1: DeviceComb<G1Affine>,
    g2: DeviceComb<G2Affine>,
    /// The copies of every query go through one pair of slots, one query
    /// at a time.
    stager: Mutex<Stager>,
}

impl GpuCombs {
    /// The comb tables of `g1` and `g2` built on the host and uploaded to
    /// `gpu`, and the self-test module's comb kernels loaded.
    pub fn new(gpu: Arc<Gpu>, g1: G1Projective, g2: G2Projective) -> Result<Self, SetupError> {
        let (c1, c2) = rayon::join(|| Comb::new(g1), || Comb::new(g2));
        let stream = gpu.stream()?;
        fn upload<P: PrimeCurve>(
            gpu: &Arc<Gpu>,
            comb: &Comb<P>,
            id: CurveId,
            stream: &c2_cuda::Stream,
        ) -> Result<DeviceComb<P::Affine>, GpuError>
        where
            P::Affine: DeviceCopy,
        {
            let kernel = gpu.selftest_kernel(SelftestKernel::CombMul(id))?;
            let mut table = gpu.alloc::<P::Affine>(comb.table.len())?;
            table.upload(0, &comb.table, stream)?;
            Ok(DeviceComb { kernel, table })
        }
        let g1 = upload(&gpu, &c1, CurveId::G1, &stream)?;
        let g2 = upload(&gpu, &c2, CurveId::G2, &stream)?;
        let stager = Mutex::new(Stager::new(&gpu, SLOT_BYTES)?);
        Ok(Self { gpu, g1, g2, stager })
    }

    /// `s · g` for every scalar by `comb`'s kernel, in chunks of [`CHUNK`].
    fn run<A: DeviceCopy>(
        &self,
        comb: &DeviceComb<A>,
        scalars: &[Scalar],
        done: &(dyn Fn(u64) + Sync),
    ) -> Result<Vec<A>, SetupError> {
        let n = scalars.len();
        let mut out: Vec<A> = Vec::with_capacity(n);
        if n == 0 {
            return Ok(out);
        }
        let chunk = CHUNK.min(n);
        let mut limbs_dev = self.gpu.alloc::<[u64; 4]>(chunk)?;
        let points_dev = self.gpu.alloc::<A>(chunk)?;
        let mut limbs = vec![[0u64; 4]; chunk];
        let compute = self.gpu.stream()?;
        let uploaded = self.gpu.marker()?;
        let mut stager =
            self.stager.lock().map_err(|_| GpuError::Invalid("a set-up copy panicked on another thread".into()))?;
        for part in scalars.chunks(chunk) {
            let limbs = &mut limbs[..part.len()];
            limbs.par_iter_mut().zip(part.par_iter()).for_each(|(l, s)| *l = canonical_limbs(s));
            stager.upload(&mut limbs_dev, 0, limbs)?;
            uploaded.record(stager.stream())?;
            compute.wait(&uploaded)?;
            let grid = part.len().div_ceil(BLOCK as usize) as u32;
            // c2_gX_comb_mul(const affine* table, const uint64_t* scalars, uint64_t n, affine* out)
            let args = (comb.table.device_ptr(), limbs_dev.device_ptr(), part.len() as u64, points_dev.device_ptr());
            // SAFETY: the table holds 32 × 255 points (Comb's layout, the
            // kernel's), limbs_dev and points_dev hold at least part.len()
            // elements, and every buffer outlives the download below, which
            // waits for the kernel (queued on `compute` before it).
            unsafe { comb.kernel.launch(&compute, Launch::new(grid, BLOCK), args) }?;
            let start = out.len();
            stager.download(&points_dev, 0, &mut out.spare_capacity_mut()[..part.len()], &compute)?;
            // SAFETY: download returned Ok, so it wrote all part.len()
            // elements after the first `start` (DeviceCopy: plain bytes).
            unsafe { out.set_len(start + part.len()) };
            done(part.len() as u64);
        }
        Ok(out)
    }
}

impl FixedBase for GpuCombs {
    fn g1(&self, scalars: &[Scalar], done: &(dyn Fn(u64) + Sync)) -> Result<Vec<G1Affine>, SetupError> {
        self.run(&self.g1, scalars, done)
    }
    fn g2(&self, scalars: &[Scalar], done: &(dyn Fn(u64) + Sync)) -> Result<Vec<G2Affine>, SetupError> {
        self.run(&self.g2, scalars, done)
    }
}
