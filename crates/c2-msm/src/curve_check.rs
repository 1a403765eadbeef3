//! GPU curve arithmetic (feature `cuda`): the XYZZ bucket formulas of
//! `cuda-kernels/ec/xyzz.cuh` for G1 (over Fp) and G2 (over Fp2), exposed
//! for differential testing against blstrs. The GPU Pippenger
//! ([`crate::gpu`]) is built on these formulas.

use std::ffi::c_void;
use std::sync::Arc;

use blstrs::{G1Affine, G2Affine};
use c2_cuda::{DeviceBuffer, Gpu, GpuError, Kernel};
use group::prime::PrimeCurveAffine;

use crate::MsmError;

fn gpu_err(e: GpuError) -> MsmError {
    MsmError::Gpu(e)
}

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
    pub fn new(gpu: Arc<Gpu>) -> Result<Self, MsmError> {
        let g1 = gpu.kernel("c2_g1_selftest").map_err(gpu_err)?;
        let g2 = gpu.kernel("c2_g2_selftest").map_err(gpu_err)?;
        Ok(Self { gpu, g1, g2 })
    }

    /// G1: see [`CurveResults`]. Points upload as raw bytes (blst's affine
    /// layout; infinity is all zeros).
    pub fn g1(&self, a: &[G1Affine], b: &[G1Affine]) -> Result<CurveResults<G1Affine>, MsmError> {
        self.run(&self.g1, a, b)
    }

    /// G2: see [`CurveResults`].
    pub fn g2(&self, a: &[G2Affine], b: &[G2Affine]) -> Result<CurveResults<G2Affine>, MsmError> {
        self.run(&self.g2, a, b)
    }

    fn run<A: PrimeCurveAffine + c2_cuda::DeviceCopy>(
        &self,
        k: &Kernel,
        a: &[A],
        b: &[A],
    ) -> Result<CurveResults<A>, MsmError> {
        if a.len() != b.len() {
            return Err(MsmError::Backend { backend: "cuda", message: "a and b differ in length".into() });
        }
        let n = a.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let stream = self.gpu.stream().map_err(gpu_err)?;
        let upload = |v: &[A]| -> Result<DeviceBuffer<A>, GpuError> {
            let mut d = self.gpu.alloc::<A>(v.len())?;
            d.upload_async(0, v, &stream)?;
            Ok(d)
        };
        let (da, db) = (upload(a).map_err(gpu_err)?, upload(b).map_err(gpu_err)?);
        let out = self.gpu.alloc::<A>(4 * n).map_err(gpu_err)?;
        let (mut pa, mut pb, mut po, mut count) = (da.device_ptr(), db.device_ptr(), out.device_ptr(), n as u64);
        let mut args: [*mut c_void; 4] = [
            (&mut pa as *mut u64).cast(),
            (&mut pb as *mut u64).cast(),
            (&mut po as *mut u64).cast(),
            (&mut count as *mut u64).cast(),
        ];
        // SAFETY: the kernel reads n points from a and b and writes 4n to out.
        unsafe { k.launch(&stream, n.div_ceil(64) as u32, 64, 0, &mut args) }.map_err(gpu_err)?;
        let mut host = vec![A::identity(); 4 * n];
        out.download_async(0, &mut host, &stream).map_err(gpu_err)?;
        stream.synchronize().map_err(gpu_err)?;
        drop((da, db, out));
        Ok(host.chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]]).collect())
    }
}
