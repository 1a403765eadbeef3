//! MSMs over bases already on the device (a resident parameter set).

use c2_cuda::DeviceBuffer;

use crate::MsmError;

use super::curve::GpuCurve;
use super::inputs::{DeviceDensity, MsmScalars};
use super::instance::{check_shape_device, poisoned, GpuMsm};
use super::pippenger::{BaseRange, Copies};

impl GpuMsm {
    /// MSM with bases already on the device: `sum_i s_i * bases[j(i)]`
    /// (see [`crate::Msm`] for the mask rule). `scalars` holds `n` scalars, or
    /// `mask.len()` with a mask. The MSM runs on this instance's own stream:
    /// uploads or kernels that write `bases` or `scalars` on another stream
    /// must be complete (synchronised) before the call. The scalars are
    /// field elements ([`super::DeviceScalars`]) or a compact witness
    /// ([`super::DeviceCompact`]).
    pub fn msm_device<'a, C: GpuCurve>(
        &self,
        bases: &DeviceBuffer<C::Affine>,
        scalars: impl Into<MsmScalars<'a>>,
        mask: Option<&DeviceDensity>,
    ) -> Result<C::Projective, MsmError> {
        self.msm_device_from::<C>(bases, 0, scalars, mask)
    }

    /// [`GpuMsm::msm_device`] over the bases from index `first` on (e.g. the
    /// aux part of a resident A query whose first entries serve the public
    /// inputs).
    pub fn msm_device_from<'a, C: GpuCurve>(
        &self,
        bases: &DeviceBuffer<C::Affine>,
        first: usize,
        scalars: impl Into<MsmScalars<'a>>,
        mask: Option<&DeviceDensity>,
    ) -> Result<C::Projective, MsmError> {
        let available = bases.len().saturating_sub(first);
        self.msm_resident::<C>(bases.device_ptr(), first, available, None, scalars.into(), mask)
    }

    /// The MSM over `available` resident bases from index `first` at
    /// `ptr`, with their precomputed copies (`copies`) where there are any.
    pub(super) fn msm_resident<C: GpuCurve>(
        &self,
        ptr: u64,
        first: usize,
        available: usize,
        copies: Option<Copies>,
        scalars: MsmScalars<'_>,
        mask: Option<&DeviceDensity>,
    ) -> Result<C::Projective, MsmError> {
        let needed = check_shape_device(C::PREFIX, available, scalars.len(), mask)?;
        let (streams, scratch) = &mut *self.state.lock().map_err(|_| poisoned())?;
        self.before_msm()?;
        let point = std::mem::size_of::<C::Affine>();
        // Runs of at most `max_run` bases (bounded split scratch), their
        // buckets summed into one set (`pippenger::RunSum`).
        let run = self.config.max_run.unwrap_or(needed).max(1);
        let result = (|| {
            let mut sum = self.begin::<C>(streams, scratch, needed.div_ceil(run), 0, None, false)?;
            for lo in (0..needed).step_by(run) {
                let ptr = ptr + ((first + lo) * point) as u64;
                let range = BaseRange { ptr, lo, hi: (lo + run).min(needed), copies };
                self.run_part::<C>(streams, scratch, &range, scalars, mask, &mut sum)?;
            }
            self.finish::<C>(streams, scratch, sum)
        })();
        self.after_msm(streams, scratch)?;
        result
    }
}
