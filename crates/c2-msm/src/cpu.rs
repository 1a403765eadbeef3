//! The CPU backend: blst's multi-threaded Pippenger on affine bases.

use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine, MultiPoint};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use group::{prime::PrimeCurveAffine, Curve, Group};
use rayon::prelude::*;

use crate::{check_shape, Density, Msm, MsmError};

/// blst's Pippenger (the library under blstrs), run on affine bases in place.
///
/// Scalars are converted to canonical little-endian bytes (blst's input form);
/// with a mask, only the set positions are converted, so the bases are used
/// as they lie in the parameter file, without a copy.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuMsm;

/// Canonical little-endian bytes of the scalars selected by `mask`.
fn selected_scalar_bytes(scalars: &[Scalar], mask: Option<&Density>) -> Vec<u8> {
    match mask {
        None => scalars.par_iter().flat_map_iter(|s| s.to_bytes_le()).collect(),
        Some(m) => scalars.iter().enumerate().filter(|(i, _)| m.get(*i)).flat_map(|(_, s)| s.to_bytes_le()).collect(),
    }
}

// blstrs' affine and projective types are `#[repr(transparent)]` wrappers of
// blst's structs, so a slice of one is a slice of the other. The assertions
// make a layout change in a future blstrs a compile error instead of UB.
const _: () = assert!(std::mem::size_of::<G1Affine>() == std::mem::size_of::<blst_p1_affine>());
const _: () = assert!(std::mem::size_of::<G2Affine>() == std::mem::size_of::<blst_p2_affine>());
const _: () = assert!(std::mem::size_of::<G1Projective>() == std::mem::size_of::<blst_p1>());
const _: () = assert!(std::mem::size_of::<G2Projective>() == std::mem::size_of::<blst_p2>());

fn as_blst_g1(bases: &[G1Affine]) -> &[blst_p1_affine] {
    // SAFETY: repr(transparent) over blst_p1_affine (see the assertions above).
    unsafe { std::slice::from_raw_parts(bases.as_ptr().cast(), bases.len()) }
}

fn as_blst_g2(bases: &[G2Affine]) -> &[blst_p2_affine] {
    // SAFETY: repr(transparent) over blst_p2_affine.
    unsafe { std::slice::from_raw_parts(bases.as_ptr().cast(), bases.len()) }
}

impl Msm for CpuMsm {
    fn name(&self) -> &'static str {
        "cpu-blst"
    }

    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Scalar], mask: Option<&Density>) -> Result<G1Projective, MsmError> {
        let n = check_shape("G1", bases.len(), scalars.len(), mask)?;
        if n == 0 {
            return Ok(G1Projective::identity());
        }
        let bytes = selected_scalar_bytes(scalars, mask);
        let p: blst_p1 = as_blst_g1(&bases[..n]).mult(&bytes, 255);
        // SAFETY: G1Projective is repr(transparent) over blst_p1.
        Ok(unsafe { std::mem::transmute::<blst_p1, G1Projective>(p) })
    }

    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Scalar], mask: Option<&Density>) -> Result<G2Projective, MsmError> {
        let n = check_shape("G2", bases.len(), scalars.len(), mask)?;
        if n == 0 {
            return Ok(G2Projective::identity());
        }
        let bytes = selected_scalar_bytes(scalars, mask);
        let p: blst_p2 = as_blst_g2(&bases[..n]).mult(&bytes, 255);
        // SAFETY: G2Projective is repr(transparent) over blst_p2.
        Ok(unsafe { std::mem::transmute::<blst_p2, G2Projective>(p) })
    }
}

/// The definition, one scalar multiplication at a time: the test oracle for
/// every backend (slow; for small inputs).
pub fn naive_msm<A>(bases: &[A], scalars: &[Scalar], mask: Option<&Density>) -> A::Curve
where
    A: PrimeCurveAffine<Scalar = Scalar>,
    A::Curve: Curve<AffineRepr = A>,
{
    let mut acc = A::Curve::identity();
    let mut next_base = 0;
    for (i, s) in scalars.iter().enumerate() {
        if mask.is_none_or(|m| m.get(i)) {
            acc += bases[next_base] * s;
            next_base += 1;
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    fn random_g1(rng: &mut impl Rng, n: usize) -> Vec<G1Affine> {
        (0..n).map(|_| G1Projective::random(&mut *rng).to_affine()).collect()
    }
    fn random_g2(rng: &mut impl Rng, n: usize) -> Vec<G2Affine> {
        (0..n).map(|_| G2Projective::random(&mut *rng).to_affine()).collect()
    }

    /// Scalar patterns that break MSMs: zeros, ones, r-1, a mix.
    fn scalar_cases(rng: &mut impl Rng, n: usize) -> Vec<(&'static str, Vec<Scalar>)> {
        let minus_one = -Scalar::ONE;
        vec![
            ("random", (0..n).map(|_| Scalar::random(&mut *rng)).collect()),
            ("zero", vec![Scalar::ZERO; n]),
            ("one", vec![Scalar::ONE; n]),
            ("r-1", vec![minus_one; n]),
            (
                "mixed",
                (0..n)
                    .map(|i| match i % 4 {
                        0 => Scalar::ZERO,
                        1 => Scalar::ONE,
                        2 => minus_one,
                        _ => Scalar::random(&mut *rng),
                    })
                    .collect(),
            ),
        ]
    }

    #[test]
    fn g1_matches_naive_on_edge_cases() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        for n in [0usize, 1, 2, 3, 31, 33, 100] {
            let mut bases = random_g1(&mut rng, n);
            if n > 2 {
                bases[1] = G1Affine::identity();
            }
            for (name, scalars) in scalar_cases(&mut rng, n) {
                let got = CpuMsm.msm_g1(&bases, &scalars, None).unwrap();
                assert_eq!(got, naive_msm(&bases, &scalars, None), "n={n} {name}");
            }
        }
    }

    #[test]
    fn g2_matches_naive_on_edge_cases() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        for n in [0usize, 1, 3, 40] {
            let mut bases = random_g2(&mut rng, n);
            if n > 2 {
                bases[2] = G2Affine::identity();
            }
            for (name, scalars) in scalar_cases(&mut rng, n) {
                let got = CpuMsm.msm_g2(&bases, &scalars, None).unwrap();
                assert_eq!(got, naive_msm(&bases, &scalars, None), "n={n} {name}");
            }
        }
    }

    #[test]
    fn masks_select_scalars_and_pair_them_with_leading_bases() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let n = 77;
        let scalars: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        for (name, mask) in [
            ("empty", Density::with_len(n)),
            ("full", Density::full(n)),
            ("sparse", Density::from_bools((0..n).map(|i| i % 5 == 2))),
        ] {
            let bases = random_g1(&mut rng, mask.count_ones() + 3);
            let got = CpuMsm.msm_g1(&bases, &scalars, Some(&mask)).unwrap();
            assert_eq!(got, naive_msm(&bases, &scalars, Some(&mask)), "{name}");
            let bases2 = random_g2(&mut rng, mask.count_ones());
            let got2 = CpuMsm.msm_g2(&bases2, &scalars, Some(&mask)).unwrap();
            assert_eq!(got2, naive_msm(&bases2, &scalars, Some(&mask)), "{name}");
        }
    }

    #[test]
    fn large_random_matches_naive() {
        // Large enough for blst's multi-threaded tiled Pippenger path.
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        let n = 3000;
        let bases = random_g1(&mut rng, n);
        let scalars: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        assert_eq!(CpuMsm.msm_g1(&bases, &scalars, None).unwrap(), naive_msm(&bases, &scalars, None));
    }

    #[test]
    fn shape_errors_are_typed() {
        let bases = vec![G1Affine::generator(); 2];
        let scalars = vec![Scalar::ONE; 3];
        assert!(matches!(
            CpuMsm.msm_g1(&bases, &scalars, None),
            Err(MsmError::TooFewBases { needed: 3, available: 2, .. })
        ));
        let mask = Density::full(2);
        assert!(matches!(
            CpuMsm.msm_g1(&bases, &scalars, Some(&mask)),
            Err(MsmError::MaskLength { mask: 2, scalars: 3, .. })
        ));
    }
}
