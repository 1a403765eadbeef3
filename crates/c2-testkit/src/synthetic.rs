//! Synthetic partitions of a real circuit's shape, for timing the prover at
//! scales whose parameters cannot be made here (a 32 GiB sector's ~47 GB).
//!
//! The shape is the 32 GiB StackedDrg partition's (ARCHITECTURE.md, "Facts we rely on"): 130,278,869
//! constraints, 130,169,893 aux variables, 328 public inputs, 99.7 % of aux
//! variables in A and 25.4 % in B. Aux values follow the measured mix (about
//! half zeros, half ones, a few percent full-width: see BENCHMARKS.md).
//! [`SyntheticPorep::new`] draws the vectors directly (a, b, c random: fast,
//! for timing the prover); [`SyntheticPorep::shaped_circuits`] synthesizes
//! [`ShapedCircuit`]s (the same work peer provers do; for side-by-side
//! runs). The shape, the circuit and the random parameters come from the
//! `c2-shapes` crate. Parameters are random points (a pool of distinct
//! points, tiled), so **the proofs do not verify**: this is for timing only,
//! and [`SyntheticPorep::parameter_id`] says so. [`SyntheticShape::scaled`]
//! divides every size for smaller cards.

use bellperson::groth16::Parameters;
use blstrs::{Bls12, Scalar};
use c2_core::Density;
pub use c2_shapes::{
    mix64, random_parameters, random_parameters_with_lengths, random_points, ShapedCircuit, SyntheticShape, ValueClass,
};
use c2_synth::{ProofInstance, SynthError, Synthesized};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// Asks Linux to back `v`'s memory with 2 MiB pages (`MADV_HUGEPAGE`) before
/// it is first written. A fresh 32 GiB partition is ~17 GB: with 4 KiB pages
/// (the H200 hosts run transparent huge pages in `madvise` mode) it costs
/// ~4 M page faults to fill and a long `munmap` to free, which holds the
/// address-space lock every other generator thread's faults wait on. On the
/// dev box a fresh 2 GB buffer freed in 126 ms with 4 KiB pages, 5 ms with
/// 2 MiB pages. Advice only: a no-op where unsupported.
fn advise_huge_pages<T>(v: &mut [T]) {
    #[cfg(not(target_os = "linux"))]
    let _ = v;
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 1 << 21;
        let start = v.as_mut_ptr() as usize;
        let end = start + std::mem::size_of_val(v);
        let (lo, hi) = ((start + HUGE - 1) & !(HUGE - 1), end & !(HUGE - 1));
        if hi > lo {
            // SAFETY: [lo, hi) lies inside `v`'s allocation, which we borrow
            // mutably; MADV_HUGEPAGE changes how the kernel backs the pages,
            // never their contents or validity.
            unsafe {
                libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
            }
        }
    }
}

/// `n` full-width pseudo-random scalars from `seed`, on all cores: per chunk
/// of 2^14 an arithmetic progression with a random start and step (one
/// field addition per value; drawing each value from ChaCha made a 32 GiB
/// partition take 15-18 s to generate on 16 cores, starving the GPU).
fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    const CHUNK: usize = 1 << 14;
    // Uninitialised, so the advice comes before the first touch.
    let mut v: Vec<Scalar> = Vec::with_capacity(n);
    let spare = &mut v.spare_capacity_mut()[..n];
    advise_huge_pages(spare);
    spare.par_chunks_mut(CHUNK).enumerate().for_each(|(i, c)| {
        let mut rng = ChaCha8Rng::seed_from_u64(mix64(seed ^ (i as u64).rotate_left(24)));
        let (mut x, step) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        for y in c.iter_mut() {
            y.write(x);
            x += step;
        }
    });
    // SAFETY: the chunks cover [0, n) and every element was written above.
    unsafe { v.set_len(n) };
    v
}

/// The parameter id of a timing-only instance: says what it is, so no report
/// can pass it off as a real sector.
fn timing_only_id(shape: &SyntheticShape, kind: &str) -> String {
    format!("{kind}-timing-only-{}c-{}aux (random parameters: proofs do not verify)", shape.constraints, shape.aux)
}

/// `partitions` synthetic partitions of one shape (same densities, different
/// values per partition), as a [`ProofInstance`]; timing only.
pub struct SyntheticPorep {
    shape: SyntheticShape,
    partitions: usize,
    id: String,
    values: Values,
}

/// How a partition's vectors are made.
enum Values {
    /// Drawn directly (fast): masks fixed per shape, a, b, c random.
    Drawn { a_aux: Density, b_input: Density, b_aux: Density },
    /// Synthesized from [`ShapedCircuit`]s (a real synthesis's cost).
    Circuits,
}

impl SyntheticPorep {
    /// Partitions drawn directly: ~1.4 s for a full 32 GiB-shaped partition
    /// on 16 cores. Densities are fixed per shape (as a real circuit's are).
    pub fn new(shape: SyntheticShape, partitions: usize) -> Self {
        let a_aux = Density::from_bools((0..shape.aux).map(|i| shape.in_a(i)));
        let b_aux = Density::from_bools((0..shape.aux).map(|i| shape.in_b(i)));
        let b_input = Density::from_bools((0..shape.inputs).map(|i| shape.input_in_b(i)));
        let id = timing_only_id(&shape, "synthetic");
        Self { shape, partitions, id, values: Values::Drawn { a_aux, b_input, b_aux } }
    }

    /// Partitions that are real circuit syntheses: [`ShapedCircuit`]s (seed
    /// `k + 1` for partition `k`, see [`Self::circuit`]) run through
    /// `c2_synth::synthesize`: the circuits bellperson's and SupraSeal's
    /// provers synthesize in the peer benchmark. Single-threaded per
    /// partition, like a real circuit (~1.7 M constraints/s per core).
    pub fn shaped_circuits(shape: SyntheticShape, partitions: usize) -> Self {
        let id = timing_only_id(&shape, "shaped-circuit");
        Self { shape, partitions, id, values: Values::Circuits }
    }

    /// Partition `k`'s circuit (what [`Self::shaped_circuits`] synthesizes).
    pub fn circuit(&self, k: usize) -> ShapedCircuit {
        ShapedCircuit { shape: self.shape.clone(), seed: k as u64 + 1 }
    }

    /// The shape.
    pub fn shape(&self) -> &SyntheticShape {
        &self.shape
    }

    /// Random parameters of the right lengths ([`random_parameters`]).
    pub fn parameters(&self, seed: u64) -> Parameters<Bls12> {
        random_parameters(&self.shape, seed)
    }
}

impl ProofInstance for SyntheticPorep {
    fn num_partitions(&self) -> usize {
        self.partitions
    }

    fn sector_size(&self) -> u64 {
        0
    }

    fn parameter_id(&self) -> &str {
        &self.id
    }

    fn check_vanilla_proofs(&self) -> Result<(), SynthError> {
        Ok(())
    }

    fn synthesize_partition(&self, k: usize) -> Result<Synthesized, SynthError> {
        if k >= self.partitions {
            return Err(SynthError::NoSuchPartition { k, count: self.partitions });
        }
        let Values::Drawn { a_aux, b_input, b_aux } = &self.values else {
            return c2_synth::synthesize(self.circuit(k))
                .map_err(|source| SynthError::Synthesis { partition: k, source });
        };
        let s = &self.shape;
        let seed = mix64(k as u64 + 1);
        let mut aux = random_scalars(s.aux, seed ^ 4);
        aux.par_iter_mut().enumerate().for_each(|(i, x)| match s.value_class(i, seed) {
            ValueClass::Zero => *x = Scalar::ZERO,
            ValueClass::One => *x = Scalar::ONE,
            ValueClass::Full => {}
        });
        let mut inputs = random_scalars(s.inputs, seed ^ 5);
        inputs[0] = Scalar::ONE;
        Ok(Synthesized {
            a: random_scalars(s.constraints, seed ^ 1),
            b: random_scalars(s.constraints, seed ^ 2),
            c: random_scalars(s.constraints, seed ^ 3),
            input_assignment: inputs,
            aux_assignment: aux,
            a_aux_density: a_aux.clone(),
            b_input_density: b_input.clone(),
            b_aux_density: b_aux.clone(),
        })
    }

    fn public_inputs(&self, k: usize) -> Result<Vec<Scalar>, SynthError> {
        Ok(self.synthesize_partition(k)?.input_assignment[1..].to_vec())
    }

    fn generate_parameters(&self, _rng: &mut dyn rand::RngCore) -> Result<Parameters<Bls12>, SynthError> {
        Ok(self.parameters(7))
    }

    /// Bellperson proves [`Self::circuit`]'s shaped circuits: a drawn
    /// instance's partitions are not circuits, so it is refused (typed).
    fn bellperson_proofs(
        &self,
        params: &Parameters<Bls12>,
        partitions: &[usize],
        r: &[Scalar],
        s: &[Scalar],
    ) -> Result<Vec<bellperson::groth16::Proof<Bls12>>, SynthError> {
        if !matches!(self.values, Values::Circuits) {
            return Err(SynthError::Unsupported("drawn partitions are not circuits: use shaped_circuits".into()));
        }
        let circuits = partitions
            .iter()
            .map(|&k| {
                if k < self.partitions {
                    Ok(self.circuit(k))
                } else {
                    Err(SynthError::NoSuchPartition { k, count: self.partitions })
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        c2_synth::prove_with_bellperson(circuits, params, r, s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scaled_shape_has_the_densities_and_mix_asked_for() {
        let shape = SyntheticShape::porep_32gib().scaled(4096);
        assert_eq!(shape.constraints, 130_278_869 / 4096);
        let inst = SyntheticPorep::new(shape.clone(), 2);
        let p = inst.synthesize_partition(1).unwrap();
        assert_eq!((p.a.len(), p.aux_assignment.len(), p.input_assignment.len()), (shape.constraints, shape.aux, 328));
        let pct = |n: usize| 100.0 * n as f64 / shape.aux as f64;
        let zeros = p.aux_assignment.iter().filter(|x| bool::from(x.is_zero())).count();
        let ones = p.aux_assignment.iter().filter(|&&x| x == Scalar::ONE).count();
        assert!((pct(zeros) - 50.0).abs() < 2.0 && (pct(ones) - 46.0).abs() < 2.0, "{zeros} {ones}");
        assert!((pct(p.a_aux_density.count_ones()) - 99.7).abs() < 0.5);
        assert!((pct(p.b_aux_density.count_ones()) - 25.4).abs() < 2.0);
        // Parameters fit the circuit (the prover's own check), and partitions differ.
        let params = inst.parameters(1);
        porep_c2::check_parameters(&p, &params).unwrap();
        assert_ne!(inst.synthesize_partition(0).unwrap().aux_assignment, p.aux_assignment);
        assert!(matches!(inst.synthesize_partition(2), Err(SynthError::NoSuchPartition { .. })));
    }

    #[test]
    fn a_shaped_circuit_synthesizes_to_its_shape() {
        let shape = SyntheticShape::porep_32gib().scaled(8192);
        let inst = SyntheticPorep::shaped_circuits(shape.clone(), 1);
        let p = inst.synthesize_partition(0).unwrap();
        assert_eq!((p.a.len(), p.aux_assignment.len(), p.input_assignment.len()), (shape.constraints, shape.aux, 328));
        // Densities are exactly the shape's masks, as for SyntheticPorep.
        let synthetic = SyntheticPorep::new(shape.clone(), 1).synthesize_partition(0).unwrap();
        assert_eq!(p.a_aux_density, synthetic.a_aux_density);
        assert_eq!(p.b_aux_density, synthetic.b_aux_density);
        assert_eq!(p.b_input_density, synthetic.b_input_density);
        let full = p.aux_assignment.iter().filter(|&&x| x != Scalar::ZERO && x != Scalar::ONE).count();
        assert!((100.0 * full as f64 / shape.aux as f64 - 4.0).abs() < 1.5, "{full}");
        porep_c2::check_parameters(&p, &random_parameters(&shape, 1)).unwrap();
        assert!(matches!(inst.synthesize_partition(1), Err(SynthError::NoSuchPartition { .. })));
    }
}
