//! Shared fixtures for the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use bellperson::groth16::Parameters;
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::{Bls12, Scalar};
use c2_testkit::demo::{self, TinyConfig};
use ff::Field;

/// Where tests cache generated parameters (under target/, so a fresh clone
/// or CI generates them once per build folder).
pub fn test_params_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("test-params")
}

/// The tiny StackedDrg sector used by the oracle tests.
pub fn tiny_config() -> TinyConfig {
    TinyConfig { partitions: 2, ..TinyConfig::default() }
}

/// The tiny sector's parameters (generated once, then read from the cache).
pub fn tiny_params() -> Arc<Parameters<Bls12>> {
    let instance = demo::tiny_instance(&tiny_config()).expect("tiny sector");
    let t = std::time::Instant::now();
    let (params, generated) =
        demo::ensure_parameters(&instance, &test_params_dir(), demo::TINY_PARAMS_SEED).expect("tiny parameters");
    eprintln!("tiny parameters {} in {:.1?}", if generated { "generated" } else { "read" }, t.elapsed());
    params
}

/// A small circuit exercising what synthesis must get right: inputs, aux
/// variables absent from B, zero and non-unit coefficients, 0 and 1 values.
#[derive(Clone)]
pub struct Synthetic {
    /// The witness (None for parameter generation).
    pub x: Option<Scalar>,
    /// Length of the multiplication chain.
    pub rounds: usize,
}

impl Synthetic {
    /// The public input: x^(rounds+1).
    pub fn output(&self) -> Scalar {
        self.x.unwrap().pow_vartime([self.rounds as u64 + 1])
    }
}

impl Circuit<Scalar> for Synthetic {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let xv = self.x;
        let x = cs.alloc(|| "x", || xv.ok_or(SynthesisError::AssignmentMissing))?;
        let mut cur = x;
        let mut cur_v = xv;
        for i in 0..self.rounds {
            let next_v = cur_v.zip(xv).map(|(a, b)| a * b);
            let next = cs.alloc(|| format!("p{i}"), || next_v.ok_or(SynthesisError::AssignmentMissing))?;
            cs.enforce(|| format!("mul{i}"), |lc| lc + cur, |lc| lc + x, |lc| lc + next);
            cur = next;
            cur_v = next_v;
        }
        // Zero-valued and one-valued aux, a zero coefficient (must not mark
        // density) and a non-unit coefficient.
        let zero = cs.alloc(|| "zero", || Ok(Scalar::ZERO))?;
        let one = cs.alloc(|| "one", || Ok(Scalar::ONE))?;
        let five = cs.alloc(|| "five", || Ok(Scalar::from(5u64)))?;
        cs.enforce(
            || "linear",
            |lc| lc + (Scalar::from(3u64), five) + (Scalar::ZERO, x) + zero,
            |lc| lc + one,
            |lc| lc + (Scalar::from(15u64), CS::one()),
        );
        cs.enforce(|| "zero", |lc| lc + zero, |lc| lc + x, |lc| lc);
        let out = cs.alloc_input(|| "out", || cur_v.ok_or(SynthesisError::AssignmentMissing))?;
        cs.enforce(|| "out", |lc| lc + cur, |lc| lc + CS::one(), |lc| lc + out);
        Ok(())
    }
}

/// A PoRep-shaped instance over [`Synthetic`] circuits: `partitions`
/// partitions with witnesses x = k + 2, parameters in about a second. For
/// tests of the flow (pipeline, retries) that do not need StackedDrg.
pub struct SyntheticInstance {
    /// Partitions.
    pub partitions: usize,
    /// Multiplication rounds per circuit.
    pub rounds: usize,
}

impl SyntheticInstance {
    fn circuit(&self, k: usize) -> Synthetic {
        Synthetic { x: Some(Scalar::from(k as u64 + 2)), rounds: self.rounds }
    }
}

impl porep_c2::ProofInstance for SyntheticInstance {
    fn num_partitions(&self) -> usize {
        self.partitions
    }
    fn sector_size(&self) -> u64 {
        0
    }
    fn parameter_id(&self) -> &str {
        "synthetic-test-circuit"
    }
    fn check_vanilla_proofs(&self) -> Result<(), c2_synth::SynthError> {
        Ok(())
    }
    fn synthesize_partition(&self, k: usize) -> Result<porep_c2::Synthesized, c2_synth::SynthError> {
        if k >= self.partitions {
            return Err(c2_synth::SynthError::NoSuchPartition { k, count: self.partitions });
        }
        c2_synth::synthesize(self.circuit(k)).map_err(|source| c2_synth::SynthError::Synthesis { partition: k, source })
    }
    fn public_inputs(&self, k: usize) -> Result<Vec<Scalar>, c2_synth::SynthError> {
        Ok(vec![self.circuit(k).output()])
    }
    fn generate_parameters(&self, mut rng: &mut dyn rand::RngCore) -> Result<Parameters<Bls12>, c2_synth::SynthError> {
        bellperson::groth16::generate_random_parameters::<Bls12, _, _>(
            Synthetic { x: None, rounds: self.rounds },
            &mut rng,
        )
        .map_err(|source| c2_synth::SynthError::Synthesis { partition: 0, source })
    }
    fn bellperson_proofs(
        &self,
        params: &Parameters<Bls12>,
        partitions: &[usize],
        r: &[Scalar],
        s: &[Scalar],
    ) -> Result<Vec<bellperson::groth16::Proof<Bls12>>, c2_synth::SynthError> {
        let circuits = partitions
            .iter()
            .map(|&k| {
                if k < self.partitions {
                    Ok(self.circuit(k))
                } else {
                    Err(c2_synth::SynthError::NoSuchPartition { k, count: self.partitions })
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        c2_synth::prove_with_bellperson(circuits, params, r, s)
    }
}
