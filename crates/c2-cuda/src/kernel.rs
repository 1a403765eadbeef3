//! Kernels of the embedded module and their launches (feature `cuda`).

use std::ffi::c_void;

use cuda_driver_sys as sys;

use crate::device::check;
use crate::stream::Stream;
use crate::GpuError;

/// A kernel of the embedded module.
pub struct Kernel {
    f: sys::CUfunction,
    name: String,
}

impl Kernel {
    pub(crate) fn new(f: sys::CUfunction, name: &str) -> Self {
        Self { f, name: name.to_string() }
    }
}

// SAFETY: CUfunction handles are valid in any thread with the context current.
unsafe impl Send for Kernel {}
unsafe impl Sync for Kernel {}

impl Kernel {
    /// Allows `bytes` of dynamic shared memory per block (needed above 48 KB).
    pub fn set_max_dynamic_shared(&self, bytes: u32) -> Result<(), GpuError> {
        // SAFETY: valid function handle;
        // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8.
        check("cuFuncSetAttribute", unsafe {
            sys::cuFuncSetAttribute(self.f, std::mem::transmute::<i32, sys::CUfunction_attribute>(8), bytes as i32)
        })
    }

    /// Launches on `stream` with a 1-D grid.
    ///
    /// # Safety
    /// `args` must point to values matching the kernel's parameter list, and
    /// every device pointer among them must be valid for what the kernel does.
    pub unsafe fn launch(
        &self,
        stream: &Stream,
        grid: u32,
        block: u32,
        shared_bytes: u32,
        args: &mut [*mut c_void],
    ) -> Result<(), GpuError> {
        stream.gpu().bind()?;
        let r = sys::cuLaunchKernel(
            self.f,
            grid.max(1),
            1,
            1,
            block,
            1,
            1,
            shared_bytes,
            stream.raw(),
            args.as_mut_ptr(),
            std::ptr::null_mut(),
        );
        check("cuLaunchKernel", r).map_err(|e| match e {
            GpuError::Driver { code, name, .. } => {
                GpuError::Driver { op: "cuLaunchKernel", code, name: format!("{name} in kernel {}", self.name) }
            }
            other => other,
        })
    }
}

impl Kernel {
    /// Launches a kernel whose parameters are all 64 bits wide (device
    /// pointers and `uint64_t`), passing `args` in order. Our MSM kernels
    /// keep to that rule so a launch is one line.
    ///
    /// # Safety
    /// As [`Kernel::launch`]: `args` must match the kernel's parameter list
    /// and every device pointer among them must be valid for what it does.
    pub unsafe fn launch_u64(&self, stream: &Stream, grid: u32, block: u32, args: &[u64]) -> Result<(), GpuError> {
        let mut values = args.to_vec();
        let mut ptrs: Vec<*mut c_void> = values.iter_mut().map(|v| (v as *mut u64).cast()).collect();
        self.launch(stream, grid, block, 0, &mut ptrs)
    }
}
