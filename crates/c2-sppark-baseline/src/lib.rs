//! Benchmark baseline only: sppark's BLS12-381 G1 Pippenger (the MSM inside
//! SupraSeal C2) behind a safe wrapper, so the device runner can time our GPU
//! MSM against it on the same data in one run. Not a dependency of any
//! library crate.
#![deny(missing_docs)]

use std::ffi::{c_char, c_void, CStr};

// sppark's own static library (device selection, `select_gpu`, `gpu_props`)
// links only when the crate is referenced.
extern crate sppark;

use blst::blst_p1;
use blstrs::{G1Affine, G1Projective, Scalar};

#[repr(C)]
struct RustError {
    code: i32,
    message: *mut c_char,
}

extern "C" {
    fn c2_sppark_g1_msm(out: *mut blst_p1, points: *const G1Affine, n: usize, scalars: *const Scalar) -> RustError;
    fn c2_sppark_g1_prepare(points: *const G1Affine, n: usize) -> *mut c_void;
    fn c2_sppark_g1_invoke(ctx: *mut c_void, out: *mut blst_p1, scalars: *const Scalar, n: usize) -> RustError;
    fn c2_sppark_g1_free(ctx: *mut c_void);
}

fn check(e: RustError) -> Result<(), String> {
    if e.code == 0 {
        return Ok(());
    }
    let msg = if e.message.is_null() {
        String::new()
    } else {
        // SAFETY: sppark returns a strdup'ed C string; we own it now.
        let s = unsafe { CStr::from_ptr(e.message) }.to_string_lossy().into_owned();
        unsafe { libc_free(e.message.cast()) };
        s
    };
    Err(format!("sppark error {}: {msg}", e.code))
}

extern "C" {
    #[link_name = "free"]
    fn libc_free(p: *mut c_void);
}

fn to_projective(p: blst_p1) -> G1Projective {
    // SAFETY: G1Projective is repr(transparent) over blst_p1 (Jacobian,
    // Montgomery), the layout sppark's jacobian_t<fp_t> writes.
    unsafe { std::mem::transmute::<blst_p1, G1Projective>(p) }
}

/// `sum scalars[i] * points[i]`, uploading everything (sppark's
/// `mult_pippenger`).
pub fn g1_msm(points: &[G1Affine], scalars: &[Scalar]) -> Result<G1Projective, String> {
    let n = points.len().min(scalars.len());
    let mut out = blst_p1::default();
    // SAFETY: n points and scalars readable; out writable.
    check(unsafe { c2_sppark_g1_msm(&mut out, points.as_ptr(), n, scalars.as_ptr()) })?;
    Ok(to_projective(out))
}

/// sppark's MSM context with the points uploaded once.
pub struct PreparedG1 {
    ctx: *mut c_void,
    n: usize,
}

impl PreparedG1 {
    /// Uploads `points` to the device.
    pub fn new(points: &[G1Affine]) -> Result<Self, String> {
        // SAFETY: points readable for its length.
        let ctx = unsafe { c2_sppark_g1_prepare(points.as_ptr(), points.len()) };
        if ctx.is_null() {
            return Err("sppark: cannot prepare the points (no device or out of memory)".into());
        }
        Ok(Self { ctx, n: points.len() })
    }

    /// MSM over the prepared points (sppark uploads the scalars).
    pub fn msm(&self, scalars: &[Scalar]) -> Result<G1Projective, String> {
        let mut out = blst_p1::default();
        // SAFETY: ctx live; at most n scalars read.
        check(unsafe { c2_sppark_g1_invoke(self.ctx, &mut out, scalars.as_ptr(), scalars.len().min(self.n)) })?;
        Ok(to_projective(out))
    }
}

impl Drop for PreparedG1 {
    fn drop(&mut self) {
        // SAFETY: created by c2_sppark_g1_prepare, freed once.
        unsafe { c2_sppark_g1_free(self.ctx) }
    }
}
