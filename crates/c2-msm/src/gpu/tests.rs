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
            // Only "no GPU" (no driver library, cuInit's answer, no device)
            // passes: a driver error from a device that is there fails.
            assert!(matches!(e, GpuError::NoDevice(_)), "{e:?}");
            assert!(e.is_no_gpu(), "{e:?}");
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

/// The two-level sort's placement fits its shared memory: on an H200 (132
/// SMs, 228 KB per SM, 227 KB per block) one block per SM stages 16384
/// entries in 136 KB and two stage 12288 in 108 KB each; an sm_89 card
/// (100 KB per SM, 99 KB per block) fits one block of 10240; a device that
/// gives a block no more than 48 KB sorts by global counters.
#[test]
fn the_placement_tile_fits_the_shared_memory() {
    use super::instance::PlaceLaunch;
    let h200 = |blocks| PlaceLaunch::new(blocks, 132, 228 << 10, 227 << 10);
    assert_eq!(h200(1), Some(PlaceLaunch { tile: 16384, shared: 139_392, max_grid: 132 }));
    assert_eq!(h200(2), Some(PlaceLaunch { tile: 12288, shared: 110_720, max_grid: 264 }));
    assert_eq!(h200(0), h200(1), "other values mean one block");
    let ada = |blocks| PlaceLaunch::new(blocks, 76, 100 << 10, 99 << 10);
    assert_eq!(ada(1).map(|p| p.tile), Some(10240));
    assert_eq!(ada(2), None);
    assert_eq!(PlaceLaunch::new(1, 80, 64 << 10, 48 << 10), None);
    for (sms, per_sm, optin) in [(132, 228 << 10, 227 << 10), (76, 100 << 10, 99 << 10), (108, 164 << 10, 163 << 10)] {
        for blocks in [1, 2] {
            if let Some(p) = PlaceLaunch::new(blocks, sms, per_sm, optin) {
                assert!(p.shared as usize <= optin && blocks as usize * (p.shared as usize + 1024) <= per_sm);
                assert!(p.tile.is_multiple_of(1024) && (4096..=16384).contains(&p.tile), "{p:?}");
                assert_eq!(p.shared as usize, 3 * 4 * 2048 + 4 * 32 + 7 * p.tile as usize);
            }
        }
    }
}
