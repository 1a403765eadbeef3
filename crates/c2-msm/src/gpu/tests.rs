//! Host-side logic of the GPU MSM (window plans, budgets) and its no-GPU
//! answer; the differential tests on a device are in the device runner.

use blstrs::{G1Affine, G1Projective, Scalar};
use c2_cuda::{Gpu, GpuError};

use super::plan::pass_bytes;
use super::*;
use crate::{CpuMsm, Msm};
use group::Curve;

const BIG: usize = 1 << 40;

#[test]
fn large_inputs_use_16_bit_windows_in_one_pass() {
    for xyzz in [192, 384] {
        let p = plan_windows(1 << 26, None, BIG, &ScratchShape::xyzz(xyzz, 1 << 17)).unwrap();
        assert_eq!((p.c, p.windows, p.per_pass), (16, 16, 16), "xyzz {xyzz}");
    }
}

#[test]
fn small_inputs_use_small_windows() {
    for m in [1usize, 2, 3, 100, 1000] {
        let p = plan_windows(m, None, BIG, &ScratchShape::xyzz(192, 1 << 17)).unwrap();
        assert!(p.c <= 8, "m = {m}: c = {}", p.c);
        assert_eq!(p.windows, 255 / p.c + 1);
    }
    // G2 buckets weigh more: narrower windows at 2^20 (measured faster).
    let g1 = plan_windows(1 << 20, None, BIG, &ScratchShape::xyzz(192, 1 << 17)).unwrap();
    let g2 = plan_windows(1 << 20, None, BIG, &ScratchShape::xyzz(384, 1 << 17)).unwrap();
    assert!(g2.c < g1.c, "{g1:?} {g2:?}");
}

#[test]
fn windows_split_into_passes_under_a_budget() {
    let (m, threads) = (1 << 20, 1 << 17);
    for shape in [
        ScratchShape::xyzz(192, threads),
        ScratchShape::for_bucket_sum(BucketSum::BatchedAffine { batch: 64, threads }, 192, threads),
    ] {
        let per = pass_bytes(m, 1 << 15, 1, &shape);
        let p = plan_windows(m, Some(16), 3 * per, &shape).unwrap();
        assert_eq!(p.per_pass, 3, "{shape:?}");
        let e = plan_windows(m, Some(16), per - 1, &shape).unwrap_err();
        assert!(e.to_string().contains("budget"), "{e}");
    }
    // Chain state counts: the batched-affine pass needs more scratch.
    let affine = ScratchShape::for_bucket_sum(BucketSum::BatchedAffine { batch: 64, threads }, 192, threads);
    assert!(pass_bytes(m, 1 << 15, 1, &affine) > pass_bytes(m, 1 << 15, 1, &ScratchShape::xyzz(192, threads)));
}

#[test]
fn window_widths_outside_2_to_24_are_rejected() {
    for c in [0, 1, 25, 64] {
        assert!(plan_windows(10, Some(c), BIG, &ScratchShape::xyzz(192, 1 << 17)).is_err(), "c = {c}");
    }
    for c in [2, 16, 24] {
        assert_eq!(plan_windows(10, Some(c), BIG, &ScratchShape::xyzz(192, 1 << 17)).unwrap().c, c);
    }
}

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
