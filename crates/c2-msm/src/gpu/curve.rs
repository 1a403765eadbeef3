//! The groups the GPU MSM serves.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use c2_cuda::CurveId;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};

/// A curve group the GPU MSM serves: G1 over Fp or G2 over Fp2.
pub trait GpuCurve: Send + Sync + 'static {
    /// Affine points as blst lays them out (what parameter files hold).
    type Affine: PrimeCurveAffine<Curve = Self::Projective> + c2_cuda::DeviceCopy;
    /// The group element returned.
    type Projective: Group + Curve<AffineRepr = Self::Affine> + Copy;
    /// An XYZZ point's bytes on the device (4 coordinates).
    type Xyzz: Copy + Send + Sync;
    /// The group's kernels in the module.
    const CURVE: CurveId;
    /// The group's name in messages ("g1" / "g2").
    const PREFIX: &'static str;
}

/// G1 (48-byte Fp coordinates).
pub enum G1 {}
/// G2 (96-byte Fp2 coordinates).
pub enum G2 {}

impl GpuCurve for G1 {
    type Affine = G1Affine;
    type Projective = G1Projective;
    type Xyzz = [u64; 24];
    const CURVE: CurveId = CurveId::G1;
    const PREFIX: &'static str = "g1";
}

impl GpuCurve for G2 {
    type Affine = G2Affine;
    type Projective = G2Projective;
    type Xyzz = [u64; 48];
    const CURVE: CurveId = CurveId::G2;
    const PREFIX: &'static str = "g2";
}
