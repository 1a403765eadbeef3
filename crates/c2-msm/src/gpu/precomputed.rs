//! Precomputed multiples of fixed bases (the H query of a parameter set):
//! copy j of base i is 2^(j k c) * base i, k = [`copy_windows`]`(c, copies)`,
//! so an MSM over the copies needs k bucket sets instead of floor(255 / c) + 1:
//! window v of copy j takes the scalar's window j k + v into the same buckets.
//! The additions stay one per (scalar, window); what the copies buy is
//! buckets `copies` times fuller (fewer bucket ends per addition in the
//! accumulation, fewer buckets to write, fix and reduce), at `copies - 1`
//! more copies of the bases in device memory (2^27 G1 bases: 12.9 GB each).

use std::marker::PhantomData;

use c2_cuda::{DeviceBuffer, Launch};

use crate::config::BucketSum;
use crate::plan::{copy_windows, plan_windows, ScratchShape};
use crate::MsmError;

use super::curve::GpuCurve;
use super::inputs::{DeviceDensity, DeviceScalars};
use super::instance::{gpu_err, grid, poisoned, GpuMsm, CURVE_THREADS, MAX_BASES};
use super::pippenger::Copies;

/// Bases doubled per kernel launch while building copies: bounds the XYZZ
/// scratch (2^22 G1 points: 805 MB; G2 twice that).
const PRECOMPUTE_CHUNK: usize = 1 << 22;

/// Fixed bases on the device with `copies` precomputed copies for `c`-bit
/// windows, built by [`GpuMsm::precompute`], summed by
/// [`GpuMsm::msm_precomputed`].
pub struct PrecomputedBases<C: GpuCurve> {
    points: DeviceBuffer<C::Affine>,
    len: usize,
    c: u32,
    copies: u32,
    curve: PhantomData<C>,
}

impl<C: GpuCurve> PrecomputedBases<C> {
    /// Bases per copy.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No bases.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The window width the copies were built for.
    pub fn window_bits(&self) -> u32 {
        self.c
    }

    /// Copies, the bases themselves included.
    pub fn copies(&self) -> u32 {
        self.copies
    }

    /// Device bytes of all copies.
    pub fn device_bytes(&self) -> usize {
        self.points.len() * std::mem::size_of::<C::Affine>()
    }
}

/// Checks a request for `copies` copies of `n` bases at width `c`.
fn check_copies(c: u32, copies: u32, n: usize) -> Result<(), MsmError> {
    let bad = |reason| Err(MsmError::BadCopies { c, copies, bases: n, reason });
    if let Some(reason) = crate::plan::copies_problem(c, copies) {
        return bad(reason);
    }
    if n.checked_mul(copies as usize).is_none_or(|t| t > MAX_BASES) {
        return bad("more than 2^31 points in all");
    }
    Ok(())
}

impl GpuMsm {
    /// Builds `copies` copies of the resident `bases` for `c`-bit windows
    /// (copy 0: the bases; copy j: each base doubled j k c times, k =
    /// [`copy_windows`]`(c, copies)`) in one new device buffer of
    /// `copies * bases.len()` points from this instance's memory source.
    /// Once per parameter set: it costs k c doublings and one inversion per
    /// base and copy.
    pub fn precompute<C: GpuCurve>(
        &self,
        bases: &DeviceBuffer<C::Affine>,
        c: u32,
        copies: u32,
    ) -> Result<PrecomputedBases<C>, MsmError> {
        let n = bases.len();
        check_copies(c, copies, n)?;
        let e = gpu_err;
        let point = std::mem::size_of::<C::Affine>();
        let xw = std::mem::size_of::<C::Xyzz>() / 8;
        let mut points = self.memory.alloc::<C::Affine>(n * copies as usize).map_err(e)?;
        let (streams, _) = &mut *self.state.lock().map_err(|_| poisoned())?;
        let s = &streams.compute;
        points.copy_range_from_async(0, bases, 0, n, s).map_err(e)?;
        let mut scratch = None;
        if copies > 1 && n > 0 {
            let kc = self.curve::<C>();
            let doublings = (copy_windows(c, copies) * c) as u64;
            let chunk = n.min(PRECOMPUTE_CHUNK);
            let xyzz = scratch.insert(self.memory.alloc::<u64>(chunk * xw).map_err(e)?);
            let base = points.device_ptr();
            for j in 1..copies as usize {
                for lo in (0..n).step_by(chunk) {
                    let len = chunk.min(n - lo);
                    let src = base + (((j - 1) * n + lo) * point) as u64;
                    let dst = base + ((j * n + lo) * point) as u64;
                    // SAFETY: `len` points read from copy j - 1 and written
                    // as XYZZ into the chunk scratch, then `len` affine
                    // points into copy j: all within `points` and `xyzz`.
                    unsafe {
                        kc.precompute.launch(
                            s,
                            Launch::new(grid(len, CURVE_THREADS), CURVE_THREADS),
                            (src, len as u64, doublings, xyzz.device_ptr()),
                        )
                    }
                    .map_err(e)?;
                    unsafe {
                        kc.to_affine.launch(
                            s,
                            Launch::new(grid(len, CURVE_THREADS), CURVE_THREADS),
                            (xyzz.device_ptr(), len as u64, dst),
                        )
                    }
                    .map_err(e)?;
                }
            }
        }
        // The scratch goes back only once the kernels are done.
        s.synchronize().map_err(e)?;
        drop(scratch);
        Ok(PrecomputedBases { points, len: n, c, copies, curve: PhantomData })
    }

    /// Whether an MSM of `m` full-width scalars over `bases` plans within
    /// this instance's per-pass budget (one window of buckets, its entries
    /// `copies` times as many as without copies, sorted by the global
    /// counters, the least scratch); else [`GpuMsm::msm_precomputed`] would
    /// fail with a typed error and the caller should sum over the bases
    /// themselves.
    pub fn plans_precomputed<C: GpuCurve>(&self, bases: &PrecomputedBases<C>, m: usize) -> Result<bool, MsmError> {
        let xyzz = std::mem::size_of::<C::Xyzz>();
        let sum = self.config.bucket_sum.unwrap_or(BucketSum::measured_default(xyzz, m));
        let shape =
            ScratchShape::for_bucket_sum(sum, xyzz, self.config.target_threads).with_copies(bases.copies as usize);
        Ok(plan_windows(m, Some(bases.c), self.budget()?, &shape).is_ok())
    }

    /// MSM over precomputed bases (see [`GpuMsm::msm_device`] for the
    /// scalars, the mask and the stream): the same result as over the bases
    /// themselves, in windows of the copies' width.
    pub fn msm_precomputed<C: GpuCurve>(
        &self,
        bases: &PrecomputedBases<C>,
        scalars: DeviceScalars<'_>,
        mask: Option<&DeviceDensity>,
    ) -> Result<C::Projective, MsmError> {
        let copies = Copies { c: bases.c, copies: bases.copies, stride: bases.len };
        self.msm_resident::<C>(bases.points.device_ptr(), 0, bases.len, Some(copies), scalars.into(), mask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_copies_are_typed_errors() {
        assert!(check_copies(16, 3, 1 << 27).is_ok());
        assert!(check_copies(20, 13, 10).is_ok());
        for (c, copies, n) in [(1, 2, 10), (25, 2, 10), (16, 0, 10), (16, 17, 10), (16, 16, 1 << 28)] {
            match check_copies(c, copies, n) {
                Err(MsmError::BadCopies { c: cc, copies: k, bases, .. }) => assert_eq!((cc, k, bases), (c, copies, n)),
                other => panic!("{c} {copies} {n}: {other:?}"),
            }
        }
    }
}
