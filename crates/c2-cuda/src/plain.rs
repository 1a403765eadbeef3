//! [`DeviceCopy`]: the plain data that device and pinned buffers hold.

use blstrs::{G1Affine, G2Affine, Scalar};

/// Plain data that device buffers and pinned host buffers hold, copied as
/// bytes and read by kernels as bytes: no padding, no pointers, and every
/// bit pattern (the all-zero one included) a valid value. A pinned buffer
/// starts out all zeros, so reading it before a copy is defined.
///
/// Implemented for the `bytemuck::Pod` primitives the kernels use (the
/// bound is checked at compile time) and for blstrs' field and curve types,
/// whose layouts are blst's C structs of `u64` limbs (sizes asserted
/// below). bytemuck's own traits cannot be implemented for blstrs' types
/// here (both are foreign to this crate), hence this one.
///
/// # Safety
/// Implement only for `Copy` types of plain bytes as above.
pub unsafe trait DeviceCopy: Copy + Send + Sync + 'static {}

/// Compile-time proof that `T` is `bytemuck::Pod`.
const fn pod<T: bytemuck::Pod>() {}

macro_rules! pod_device_copy {
    ($($t:ty),* $(,)?) => {$(
        const _: () = pod::<$t>();
        // SAFETY: `Pod` (checked above): plain bytes, any bit pattern valid.
        unsafe impl DeviceCopy for $t {}
    )*};
}

pod_device_copy!(u8, u16, u32, u64, i32, i64, f32, f64, [u64; 4], [u64; 6], [u32; 8]);

macro_rules! limb_device_copy {
    ($($t:ty = $limbs:expr),* $(,)?) => {$(
        const _: () = assert!(std::mem::size_of::<$t>() == 8 * $limbs && std::mem::align_of::<$t>() == 8);
        // SAFETY: a `#[repr(transparent)]` wrapper of blst's `#[repr(C)]`
        // struct of `$limbs` u64 limbs (size and alignment asserted): no
        // padding, no pointers. Non-canonical limbs are not undefined
        // behaviour, only wrong values, and the kernels write canonical ones;
        // all zeros is zero (and the point at infinity in affine form).
        unsafe impl DeviceCopy for $t {}
    )*};
}

limb_device_copy!(Scalar = 4, G1Affine = 12, G2Affine = 24);

/// `v` as bytes (sound: `DeviceCopy` types are plain bytes without padding).
#[cfg(any(feature = "cuda", test))]
pub(crate) fn bytes_of<T: DeviceCopy>(v: &[T]) -> &[u8] {
    // SAFETY: same allocation and length in bytes; DeviceCopy has no padding.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v)) }
}

/// `v` as mutable bytes (sound both ways: every byte pattern is a valid
/// `DeviceCopy` value).
#[cfg(any(feature = "cuda", test))]
pub(crate) fn bytes_of_mut<T: DeviceCopy>(v: &mut [T]) -> &mut [u8] {
    // SAFETY: as above; any bytes written leave valid `T`s.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), std::mem::size_of_val(v)) }
}
