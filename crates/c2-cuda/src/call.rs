//! Checked driver calls (feature `cuda`): a `CUresult` becomes a
//! [`GpuError::Driver`] naming the call and the driver's error.

use std::ffi::CStr;

use cuda_driver_sys as sys;

use crate::GpuError;

/// `Ok` for `CUDA_SUCCESS`, else the call `op`'s typed error.
pub(crate) fn check(op: &'static str, r: sys::CUresult) -> Result<(), GpuError> {
    if r == sys::cudaError_enum::CUDA_SUCCESS {
        return Ok(());
    }
    let mut p: *const std::os::raw::c_char = std::ptr::null();
    // SAFETY: cuGetErrorName writes a pointer to a static string or fails.
    let name = unsafe {
        if sys::cuGetErrorName(r, &mut p) == sys::cudaError_enum::CUDA_SUCCESS && !p.is_null() {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        } else {
            format!("{r:?}")
        }
    };
    Err(GpuError::Driver { op, code: r as i32, name })
}
