//! CUDA device runtime for porep-c2: device discovery, one context per device
//! (the device's primary context), streams, events, device buffers, pinned
//! host ranges and the kernel module compiled from `cuda-kernels/` and
//! embedded in the binary (loaded lazily, once per device).
//!
//! One module per job: `device` (discovery, `Gpu`, the module), `kernel`
//! (launches), `stream` (`Stream`, `Event`), `memory` (`DeviceBuffer`,
//! `DeviceMemory`, `DeviceArena`), `pinned` (`PinnedBuffer`,
//! `PinnedRange`), `staging` (`Stager`: the one pinned path for host vectors),
//! `plain` ([`DeviceCopy`], what buffers may hold); all but
//! `plain` need the `cuda` feature.
//!
//! Built without the `cuda` feature, the crate still compiles and
//! [`devices`] reports [`GpuError::NotCompiled`], so callers handle "no GPU"
//! the same way on every build. With the feature but without a driver or a
//! device, [`devices`] reports [`GpuError::NoDevice`] or the driver's error.
//!
//! There is no global "current device": every operation binds its
//! `Gpu`'s context on the calling thread first.
#![deny(missing_docs)]

#[cfg(feature = "cuda")]
mod call;
#[cfg(feature = "cuda")]
mod device;
#[cfg(feature = "cuda")]
mod kernel;
#[cfg(feature = "cuda")]
mod memory;
#[cfg(feature = "cuda")]
mod pinned;
mod plain;
#[cfg(feature = "cuda")]
mod staging;
#[cfg(feature = "cuda")]
mod stream;

#[cfg(feature = "cuda")]
pub use device::{Gpu, KERNELS_FATBIN};
#[cfg(feature = "cuda")]
pub use kernel::{CurveId, CurveStep, FieldBackend, Kernel, KernelArg, KernelArgs, KernelId, Launch};
#[cfg(all(feature = "cuda", feature = "selftest"))]
pub use kernel::{SelftestField, SelftestKernel};
#[cfg(feature = "cuda")]
pub use memory::{DeviceArena, DeviceBuffer, DeviceMemory};
#[cfg(feature = "cuda")]
pub use pinned::{PinnedBuffer, PinnedRange, PinnedShared};
pub use plain::DeviceCopy;
#[cfg(feature = "cuda")]
pub use staging::Stager;
#[cfg(feature = "cuda")]
pub use stream::{Event, Stream};

/// Errors of the device runtime, with the operation that failed.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum GpuError {
    /// This build has no GPU support.
    #[error("no GPU: porep-c2 was built without the `cuda` feature")]
    NotCompiled,
    /// The driver reports no CUDA device (or no driver is installed).
    #[error("no GPU: {0}")]
    NoDevice(String),
    /// A driver call failed.
    #[error("CUDA {op} failed: {code} ({name})")]
    Driver {
        /// The driver call.
        op: &'static str,
        /// The CUresult value.
        code: i32,
        /// Its name, e.g. CUDA_ERROR_OUT_OF_MEMORY.
        name: String,
    },
    /// A kernel is not in the embedded module.
    #[error("kernel {0} not found in the embedded module")]
    MissingKernel(String),
    /// A request the runtime cannot serve (sizes, indices).
    #[error("{0}")]
    Invalid(String),
    /// A device memory reservation (an arena) cannot serve a request now.
    #[error(transparent)]
    OutOfBudget(#[from] OutOfBudget),
}

impl GpuError {
    /// True when the device ran out of memory: a pool's typed
    /// [`GpuError::OutOfBudget`], or the driver's `CUDA_ERROR_OUT_OF_MEMORY`
    /// (code 2). A scheduler backs off (fewer partitions in flight, a smaller
    /// cap) instead of retrying at once.
    pub fn is_out_of_memory(&self) -> bool {
        matches!(self, Self::OutOfBudget(_) | Self::Driver { code: 2, .. })
    }

    /// True when there is no GPU to use at all (a build without `cuda`, no
    /// driver, no device), as opposed to a device that failed.
    pub fn is_no_gpu(&self) -> bool {
        matches!(self, Self::NotCompiled | Self::NoDevice(_))
    }
}

/// What a device memory reservation lacked for a request: the error of a
/// VRAM pool that cannot serve it (a typed answer instead of a driver OOM).
#[derive(Debug, thiserror::Error, Clone, Copy, PartialEq, Eq)]
#[error("device memory budget exhausted: {requested} bytes requested, {largest_free} free in one piece ({free} in all) of a {budget}-byte budget")]
pub struct OutOfBudget {
    /// Bytes asked for (rounded up to the reservation's alignment).
    pub requested: usize,
    /// The largest free range.
    pub largest_free: usize,
    /// All free bytes.
    pub free: usize,
    /// The reservation's size.
    pub budget: usize,
}

/// What the driver says about one device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Driver ordinal.
    pub ordinal: usize,
    /// Marketing name, e.g. "NVIDIA H200".
    pub name: String,
    /// Total device memory in bytes.
    pub total_memory: usize,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
    /// Shared memory one block may use when it opts in, bytes (227 KB on
    /// sm_90, 99 KB on sm_86 / sm_89): the most a kernel may be allowed with
    /// `Kernel::set_max_dynamic_shared` (feature `cuda`).
    pub max_shared_per_block_optin: usize,
    /// Streaming multiprocessors (132 on an H200).
    pub multiprocessors: usize,
    /// Shared memory of one SM, bytes (228 KB on sm_90): what the blocks
    /// resident on it share.
    pub max_shared_per_sm: usize,
}

/// Lists the CUDA devices of this host.
pub fn devices() -> Result<Vec<DeviceInfo>, GpuError> {
    #[cfg(feature = "cuda")]
    {
        device::list_devices()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Err(GpuError::NotCompiled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without the feature, or on a machine without a GPU (CI), the API
    /// answers "no GPU" instead of failing to build, link or run.
    #[test]
    fn no_gpu_is_a_typed_answer() {
        match devices() {
            Ok(d) => {
                assert!(!d.is_empty());
                eprintln!("GPU present: {:?}", d[0]);
            }
            Err(e) => {
                eprintln!("no GPU here, as expected on CI: {e}");
                assert!(matches!(e, GpuError::NotCompiled | GpuError::NoDevice(_)), "{e:?}");
                assert!(e.to_string().starts_with("no GPU"), "{e}");
            }
        }
    }
}
