use super::*;
use bellperson::domain::EvaluationDomain;
use ec_gpu_gen::threadpool::Worker;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn random_vec(rng: &mut ChaCha20Rng, n: usize) -> Vec<Scalar> {
    (0..n).map(|_| Scalar::random(&mut *rng)).collect()
}

/// Evaluates a polynomial at x (Horner), the definition of the forward NTT.
fn eval(coeffs: &[Scalar], x: Scalar) -> Scalar {
    coeffs.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c)
}

#[test]
fn fft_is_evaluation_at_powers_of_omega() {
    let mut rng = ChaCha20Rng::seed_from_u64(10);
    for log_n in 0..=6 {
        let d = Domain::new(log_n).unwrap();
        let coeffs = random_vec(&mut rng, d.size());
        let mut v = coeffs.clone();
        d.fft(&mut v);
        for (i, y) in v.iter().enumerate() {
            assert_eq!(*y, eval(&coeffs, d.omega().pow_vartime([i as u64])), "log_n={log_n} i={i}");
        }
    }
}

#[test]
fn round_trips() {
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    for log_n in [0u32, 1, 2, 5, 10, 13, 16] {
        let d = Domain::new(log_n).unwrap();
        let orig = random_vec(&mut rng, d.size());
        let mut v = orig.clone();
        d.fft(&mut v);
        d.ifft(&mut v);
        assert_eq!(v, orig, "fft/ifft log_n={log_n}");
        d.coset_fft(&mut v);
        d.icoset_fft(&mut v);
        assert_eq!(v, orig, "coset log_n={log_n}");
    }
}

#[test]
fn matches_bellperson_domain() {
    let mut rng = ChaCha20Rng::seed_from_u64(12);
    let worker = Worker::new();
    for log_n in [1u32, 4, 9, 14, 17] {
        let d = Domain::new(log_n).unwrap();
        let orig = random_vec(&mut rng, d.size());

        let mut ours = orig.clone();
        d.fft(&mut ours);
        let mut theirs = EvaluationDomain::from_coeffs(orig.clone()).unwrap();
        theirs.fft(&worker, &mut None).unwrap();
        assert_eq!(ours, theirs.as_ref(), "fft log_n={log_n}");

        let mut ours = orig.clone();
        d.coset_fft(&mut ours);
        let mut theirs = EvaluationDomain::from_coeffs(orig.clone()).unwrap();
        theirs.coset_fft(&worker, &mut None).unwrap();
        assert_eq!(ours, theirs.as_ref(), "coset_fft log_n={log_n}");

        let mut ours = orig.clone();
        d.icoset_fft(&mut ours);
        let mut theirs = EvaluationDomain::from_coeffs(orig.clone()).unwrap();
        theirs.icoset_fft(&worker, &mut None).unwrap();
        assert_eq!(ours, theirs.as_ref(), "icoset_fft log_n={log_n}");
    }
}

/// bellperson's prover `execute_fft`, verbatim in steps: the oracle for H.
fn bellperson_h(a: Vec<Scalar>, b: Vec<Scalar>, c: Vec<Scalar>) -> Vec<Scalar> {
    let worker = Worker::new();
    let mut a = EvaluationDomain::from_coeffs(a).unwrap();
    let mut b = EvaluationDomain::from_coeffs(b).unwrap();
    let mut c = EvaluationDomain::from_coeffs(c).unwrap();
    for d in [&mut a, &mut b, &mut c] {
        d.ifft(&worker, &mut None).unwrap();
        d.coset_fft(&worker, &mut None).unwrap();
    }
    a.mul_assign(&worker, &b);
    a.sub_assign(&worker, &c);
    a.divide_by_z_on_coset(&worker);
    a.icoset_fft(&worker, &mut None).unwrap();
    let mut a = a.into_coeffs();
    a.truncate(a.len() - 1);
    a
}

#[test]
fn compute_h_matches_bellperson_for_odd_sizes_and_edge_values() {
    let mut rng = ChaCha20Rng::seed_from_u64(13);
    let minus_one = -Scalar::ONE;
    for n in [1usize, 2, 3, 7, 100, 1000, 4097] {
        let cases: Vec<(&str, [Vec<Scalar>; 3])> = vec![
            ("random", [random_vec(&mut rng, n), random_vec(&mut rng, n), random_vec(&mut rng, n)]),
            ("zero", [vec![Scalar::ZERO; n], vec![Scalar::ZERO; n], vec![Scalar::ZERO; n]]),
            ("r-1", [vec![minus_one; n], vec![minus_one; n], vec![minus_one; n]]),
            ("one", [vec![Scalar::ONE; n], vec![Scalar::ONE; n], vec![Scalar::ONE; n]]),
        ];
        for (name, [a, b, c]) in cases {
            let want = bellperson_h(a.clone(), b.clone(), c.clone());
            let got = CpuNtt.compute_h(a, b, c).unwrap();
            assert_eq!(got, want, "n={n} {name}");
        }
    }
}

#[test]
fn satisfied_constraints_give_an_exact_quotient() {
    // If a·b = c at every point, A·B − C vanishes on the domain, so H·Z
    // reproduces it: check at a random point off the domain.
    let mut rng = ChaCha20Rng::seed_from_u64(14);
    let n = 64;
    let a = random_vec(&mut rng, n);
    let b = random_vec(&mut rng, n);
    let c: Vec<Scalar> = a.iter().zip(&b).map(|(x, y)| *x * y).collect();
    let d = Domain::for_len(n).unwrap();
    let poly = |mut v: Vec<Scalar>| {
        d.ifft(&mut v);
        v
    };
    let (pa, pb, pc) = (poly(a.clone()), poly(b.clone()), poly(c.clone()));
    let h = CpuNtt.compute_h(a, b, c).unwrap();
    let x = Scalar::random(&mut rng);
    let z = x.pow_vartime([n as u64]) - Scalar::ONE;
    assert_eq!(eval(&pa, x) * eval(&pb, x) - eval(&pc, x), eval(&h, x) * z);
}

#[test]
fn errors_are_typed() {
    assert!(matches!(Domain::new(40), Err(NttError::DomainTooLarge { .. })));
    assert!(matches!(
        CpuNtt.compute_h(vec![Scalar::ONE; 2], vec![Scalar::ONE; 3], vec![Scalar::ONE; 2]),
        Err(NttError::LengthMismatch { .. })
    ));
}
