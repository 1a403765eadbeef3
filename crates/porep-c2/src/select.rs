//! Which backend this build and host offer ([`Backend::auto`]): above the
//! GPU factory and the backend layer, so neither imports the other back.

use crate::backend::Backend;

impl Backend {
    /// The fastest backend this build and host offer: with the `cuda`
    /// feature and CUDA devices, GPU workers on every device
    /// (`gpu::GpuBackendConfig::default`: two workers per device,
    /// parameters resident); otherwise the CPU. Says which, and why, in one
    /// log line (warn level when falling back).
    pub fn auto() -> Self {
        #[cfg(feature = "cuda")]
        {
            match crate::gpu::gpu_backend(&crate::gpu::GpuBackendConfig::default()) {
                Ok(b) => return b,
                Err(e) => log::warn!("porep-c2: {e}; proving on the CPU"),
            }
        }
        #[cfg(not(feature = "cuda"))]
        log::warn!("porep-c2: {}; proving on the CPU", c2_cuda::GpuError::NotCompiled);
        Self::cpu()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `auto` always yields a working backend: GPU workers where a device
    /// answers, else the CPU stages (after one log line).
    #[test]
    fn auto_falls_back_to_the_cpu_without_a_gpu() {
        match (Backend::auto(), c2_cuda::devices()) {
            (Backend::Workers(w), Ok(d)) => assert_eq!(w.provers.len(), 2 * d.len()),
            (Backend::Stages(s), Err(_)) => {
                assert_eq!((s.ntt.name(), s.msm.name()), ("cpu", "cpu-blst"));
            }
            (b, d) => panic!("auto gave {b:?} with devices {d:?}"),
        }
    }
}
