//! The satisfaction check: `a_i · b_i = c_i` for every constraint of a
//! synthesized partition, where `a`, `b`, `c` are the constraint
//! evaluations synthesis returns (input constraints included). The
//! full-size correctness oracle where no Groth16 parameters exist (a 32 GiB
//! partition has 130.3 M constraints: ~0.3 s on 16 cores); a proof of an
//! unsatisfied partition would not verify.

use rayon::prelude::*;

use crate::{SynthError, Synthesized};

/// The first constraint whose evaluations break `a · b = c` (`None`: all
/// hold). Runs in parallel; the index is the smallest failing one, whatever
/// the thread count. A length mismatch between `a`, `b` and `c` fails at
/// the shortest length (the constraints beyond cannot hold).
pub fn first_unsatisfied(s: &Synthesized) -> Option<usize> {
    let n = s.a.len().min(s.b.len()).min(s.c.len());
    let first = (0..n).into_par_iter().find_first(|&i| s.a[i] * s.b[i] != s.c[i]);
    let ragged = s.a.len().max(s.b.len()).max(s.c.len()) > n;
    first.or(ragged.then_some(n))
}

/// [`first_unsatisfied`] as a typed error ([`SynthError::Unsatisfied`]).
pub fn check_satisfied(s: &Synthesized) -> Result<(), SynthError> {
    match first_unsatisfied(s) {
        None => Ok(()),
        Some(constraint) => Err(SynthError::Unsatisfied { constraint, constraints: s.a.len() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Density;
    use blstrs::Scalar;
    use ff::Field;

    /// `n` constraints with a_i = i + 2, b_i = 3, c_i = 3 (i + 2).
    fn partition(n: usize) -> Synthesized {
        let a: Vec<Scalar> = (0..n as u64).map(|i| Scalar::from(i + 2)).collect();
        let b = vec![Scalar::from(3u64); n];
        let c = a.iter().map(|x| *x * Scalar::from(3u64)).collect();
        Synthesized {
            a,
            b,
            c,
            input_assignment: vec![Scalar::ONE],
            aux_assignment: vec![],
            a_aux_density: Density::with_len(0),
            b_input_density: Density::with_len(1),
            b_aux_density: Density::with_len(0),
        }
    }

    #[test]
    fn reports_the_first_failing_constraint() {
        let mut s = partition(100_000);
        assert_eq!(first_unsatisfied(&s), None);
        assert!(check_satisfied(&s).is_ok());
        // Two broken constraints: the smaller index is reported, always.
        s.c[77_777] += Scalar::ONE;
        s.c[31_415] = Scalar::ZERO;
        for _ in 0..5 {
            assert_eq!(first_unsatisfied(&s), Some(31_415));
        }
        match check_satisfied(&s) {
            Err(SynthError::Unsatisfied { constraint, constraints }) => {
                assert_eq!((constraint, constraints), (31_415, 100_000))
            }
            other => panic!("{other:?}"),
        }
        // Edge cases: the first and the last constraint; zero constraints.
        let mut s = partition(10);
        s.a[0] = -Scalar::ONE;
        assert_eq!(first_unsatisfied(&s), Some(0));
        let mut s = partition(10);
        s.b[9] = Scalar::ZERO;
        assert_eq!(first_unsatisfied(&s), Some(9));
        assert_eq!(first_unsatisfied(&partition(0)), None);
        // a ragged partition fails where the shortest vector ends.
        let mut s = partition(10);
        s.c.truncate(7);
        assert_eq!(first_unsatisfied(&s), Some(7));
    }
}
