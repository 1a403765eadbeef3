//! CUDA device runtime for porep-c2: device discovery, one context per device
//! (the device's primary context), streams, events, device buffers, pinned
//! host ranges and the kernel module compiled from `cuda-kernels/` and
//! embedded in the binary (loaded lazily, once per device).
//!
//! One module per job: `device` (discovery, `Gpu`, the module), `kernel`
//! (launches), `stream` (`Stream`, `Event`), `memory` (`DeviceBuffer`,
//! `DeviceMemory`, `DeviceArena`), `pinned` (`PinnedBuffer`,
//! `PinnedRange`), `staging` (`Stager`: the one pinned path for host vectors),
//! `plain` ([`DeviceCopy`], what buffers may hold), `driver` (the driver
//! library, loaded at run time, every result read as an integer) and
//! `codes` ([`DriverError`]); all but `plain` and `codes` need the `cuda`
//! feature.
//!
//! Built without the `cuda` feature, the crate still compiles and
//! [`devices`] reports [`GpuError::NotCompiled`], so callers handle "no GPU"
//! the same way on every build. With the feature but without a driver or a
//! device, [`devices`] reports [`GpuError::NoDevice`] with the reason
//! ([`NoGpu`]): the library cannot be loaded, `cuInit` failed (with the
//! driver's code), or there is no device.
//!
//! There is no global "current device": every operation binds its
//! `Gpu`'s context on the calling thread first. Every `unsafe` block states
//! its invariant (`clippy::undocumented_unsafe_blocks` is denied here);
//! ARCHITECTURE.md lists them by file.
#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]
// The runtime modules are built for this crate's own tests on every build
// (the driver-stub tests run without nvcc); without `cuda` nothing exports
// them, so parts only the kernels' users call are unused there.
#![cfg_attr(all(test, not(feature = "cuda")), allow(dead_code, unused_imports))]

mod codes;
#[cfg(any(feature = "cuda", test))]
mod device;
#[cfg(any(feature = "cuda", test))]
mod driver;
#[cfg(any(feature = "cuda", test))]
mod kernel;
#[cfg(any(feature = "cuda", test))]
mod memory;
#[cfg(any(feature = "cuda", test))]
mod pinned;
mod plain;
#[cfg(any(feature = "cuda", test))]
mod staging;
#[cfg(any(feature = "cuda", test))]
mod stream;
#[cfg(test)]
mod stub_tests;

pub use codes::DriverError;
#[cfg(feature = "cuda")]
pub use device::{Gpu, KERNELS_FATBIN};
#[cfg(feature = "cuda")]
pub use driver::{Driver, DRIVER_LIBRARY};
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
pub use stream::{Event, Stream, StreamPriority};

/// Errors of the device runtime, with the operation that failed.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum GpuError {
    /// This build has no GPU support.
    #[error("no GPU: porep-c2 was built without the `cuda` feature")]
    NotCompiled,
    /// No GPU can be used: no driver library, a driver that does not
    /// start, or no device ([`NoGpu`] says which).
    #[error("no GPU: {0}")]
    NoDevice(NoGpu),
    /// A driver call failed.
    #[error("CUDA {op} failed: {error}{}", in_kernel(.kernel))]
    Driver {
        /// The driver call.
        op: &'static str,
        /// The driver's answer, e.g. [`DriverError::OutOfMemory`].
        error: DriverError,
        /// The kernel, for a launch.
        kernel: Option<&'static str>,
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
        matches!(self, Self::OutOfBudget(_) | Self::Driver { error: DriverError::OutOfMemory, .. })
    }

    /// The driver's answer, when a driver call failed (at start-up too).
    pub fn driver_error(&self) -> Option<DriverError> {
        match self {
            Self::Driver { error, .. } | Self::NoDevice(NoGpu::Driver { error, .. }) => Some(*error),
            _ => None,
        }
    }

    /// True when there is no GPU to use at all (a build without `cuda`, no
    /// driver, no device), as opposed to a device that failed.
    pub fn is_no_gpu(&self) -> bool {
        matches!(self, Self::NotCompiled | Self::NoDevice(_))
    }
}

/// " in kernel NAME" for a launch's error.
fn in_kernel(kernel: &Option<&'static str>) -> String {
    kernel.map(|k| format!(" in kernel {k}")).unwrap_or_default()
}

/// Why no GPU can be used ([`GpuError::NoDevice`]).
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum NoGpu {
    /// The driver library cannot be loaded (no NVIDIA driver installed) or
    /// lacks an entry point this crate calls (a driver older than CUDA 11).
    #[error("the CUDA driver library {path} cannot be used: {detail}")]
    Library {
        /// The library asked for (`libcuda.so.1`).
        path: String,
        /// The loader's answer.
        detail: String,
    },
    /// The driver does not start (`cuInit`) or cannot count its devices:
    /// e.g. [`DriverError::NoDevice`] (100), [`DriverError::StubLibrary`]
    /// (34, a link stub loaded instead of the driver),
    /// [`DriverError::SystemDriverMismatch`] (803).
    #[error("CUDA {op} failed: {error}")]
    Driver {
        /// The driver call.
        op: &'static str,
        /// Its answer.
        error: DriverError,
    },
    /// The driver starts and reports no device.
    #[error("the driver reports 0 CUDA devices")]
    NoDevices,
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
        let driver = Driver::system()?;
        device::list_devices(&driver)
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
                // Without the feature exactly NotCompiled; with it on a host
                // without a GPU, NoDevice (any other error is a failure).
                if cfg!(feature = "cuda") {
                    assert!(matches!(e, GpuError::NoDevice(_)), "{e:?}");
                } else {
                    assert_eq!(e, GpuError::NotCompiled);
                }
                assert!(e.to_string().starts_with("no GPU"), "{e}");
            }
        }
    }
}
