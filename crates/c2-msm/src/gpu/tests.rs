//! Host-side logic of the GPU MSM (window plans, budgets) and its no-GPU
//! answer; the differential tests on a device are in the device runner.

use blstrs::{G1Affine, G1Projective, Scalar};
use c2_cuda::{Gpu, GpuError};

use super::*;
use crate::{CpuMsm, Msm};
use group::Curve;

/// Without a device (CI) the constructor path reports "no GPU" as a typed
/// error; on a GPU host the MSM must agree with blst.
#[test]
fn no_device_is_a_typed_error_else_matches_cpu() {
    use group::Group;
    match Gpu::open(0) {
        Err(e) => {
            eprintln!("no GPU here (expected on CI): {e}");
            assert!(matches!(e, GpuError::NoDevice(_) | GpuError::Driver { .. }), "{e:?}");
        }
        Ok(gpu) => {
            let m = GpuMsm::new(gpu).expect("kernels load");
            let bases: Vec<G1Affine> =
                (1..=1000u64).map(|i| (G1Projective::generator() * Scalar::from(i)).to_affine()).collect();
            let s: Vec<Scalar> = (0..1000u64).map(|i| Scalar::from(i * i + 7) * Scalar::from(u64::MAX)).collect();
            assert_eq!(m.msm_g1(&bases, &s, None).unwrap(), CpuMsm.msm_g1(&bases, &s, None).unwrap());
        }
    }
}
