//! GPU curve arithmetic (feature `cuda`): the XYZZ bucket formulas of
//! `cuda-kernels/ec/xyzz.cuh` for G1 (over Fp) and G2 (over Fp2), run by
//! the self-test kernels (`cuda-kernels/c2_selftest.cu`, a module of their
//! own that production binaries do not carry) for differential testing
//! against blstrs. The GPU Pippenger (`c2_msm::gpu`) is built on these
//! formulas.

use std::sync::Arc;

use blstrs::{G1Affine, G2Affine};
use c2_cuda::{CurveId, DeviceBuffer, DeviceCopy, Gpu, GpuError, Kernel, Launch, SelftestKernel};
use group::prime::PrimeCurveAffine;

/// Per input pair `(a, b)`, what the GPU formulas compute, in affine form:
/// `[a + b (mixed), a + b (xyzz + xyzz), 2a, 2a + b]`.
pub type CurveResults<A> = Vec<[A; 4]>;

/// Runs the curve self-test kernels on one device.
pub struct GpuCurveCheck {
    gpu: Arc<Gpu>,
    g1: Kernel,
    g2: Kernel,
}

impl GpuCurveCheck {
    /// Loads the kernels.
    pub fn new(gpu: Arc<Gpu>) -> Result<Self, GpuError> {
        let g1 = gpu.selftest_kernel(SelftestKernel::Curve(CurveId::G1))?;
        let g2 = gpu.selftest_kernel(SelftestKernel::Curve(CurveId::G2))?;
        Ok(Self { gpu, g1, g2 })
    }

    /// G1: see [`CurveResults`]. Points upload as raw bytes (blst's affine
    /// layout; infinity is all zeros).
    pub fn g1(&self, a: &[G1Affine], b: &[G1Affine]) -> Result<CurveResults<G1Affine>, GpuError> {
        self.run(&self.g1, a, b)
    }

    /// G2: see [`CurveResults`].
    pub fn g2(&self, a: &[G2Affine], b: &[G2Affine]) -> Result<CurveResults<G2Affine>, GpuError> {
        self.run(&self.g2, a, b)
    }

    fn run<A: PrimeCurveAffine + DeviceCopy>(&self, k: &Kernel, a: &[A], b: &[A]) -> Result<CurveResults<A>, GpuError> {
        if a.len() != b.len() {
            return Err(GpuError::Invalid("a and b differ in length".into()));
        }
        let n = a.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let stream = self.gpu.stream()?;
        let upload = |v: &[A]| -> Result<DeviceBuffer<A>, GpuError> {
            let mut d = self.gpu.alloc::<A>(v.len())?;
            d.upload(0, v, &stream)?;
            Ok(d)
        };
        let (da, db) = (upload(a)?, upload(b)?);
        let out = self.gpu.alloc::<A>(4 * n)?;
        // c2_gX_selftest(const affine* a, const affine* b, affine* out, uint64_t n)
        let args = (da.device_ptr(), db.device_ptr(), out.device_ptr(), n as u64);
        // SAFETY: the kernel reads n points from a and b and writes 4n to out.
        unsafe { k.launch(&stream, Launch::new(n.div_ceil(64) as u32, 64), args) }?;
        let mut host = vec![A::identity(); 4 * n];
        out.download(0, &mut host, &stream)?;
        stream.synchronize()?;
        drop((da, db, out));
        Ok(host.chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]]).collect())
    }
}
