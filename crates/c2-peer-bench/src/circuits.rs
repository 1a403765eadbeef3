//! `--circuit window-32g|winning-32g|update-32g`: bellperson proving a real
//! Filecoin circuit on the device runner's test inputs (built here by the
//! same c2-synth functions: [`c2_synth::post_test_partition`] for
//! `--only post`, [`c2_synth::update_test_sector`] with seed 7 for
//! `--only update`), with random parameters of the circuit's lengths from
//! the same seed and the runner's r, s (3, 5), so the proof bytes compare
//! (timing only: random parameters, neither verifies).

use bellperson::groth16::{Parameters, Proof};
use blstrs::{Bls12, Scalar};
use c2_shapes::random_parameters_with_lengths;
use c2_synth::{post_test_partition, update_instance, update_test_sector, ProofInstance};
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredUpdateProof};

/// A real circuit's test instance and random parameters of its lengths.
pub struct CircuitJob {
    instance: Box<dyn ProofInstance>,
    /// Random parameters of the circuit's lengths.
    pub params: Parameters<Bls12>,
    /// What the job is, for the report lines.
    pub label: String,
}

/// The test instance of a `--circuit` name: `<window|winning|update>-<size>`
/// with size 2k, 8m, 512m, 32g or 64g.
fn instance(name: &str) -> Result<Box<dyn ProofInstance>, String> {
    let (kind, size) = name.split_once('-').ok_or_else(|| format!("--circuit {name}: expected KIND-SIZE"))?;
    let e = |x: c2_synth::SynthError| x.to_string();
    let post =
        |sizes: [RegisteredPoStProof; 5]| -> Result<RegisteredPoStProof, String> { Ok(sizes[size_index(size)?]) };
    use RegisteredPoStProof as P;
    use RegisteredUpdateProof as U;
    match kind {
        "window" => post([
            P::StackedDrgWindow2KiBV1_2,
            P::StackedDrgWindow8MiBV1_2,
            P::StackedDrgWindow512MiBV1_2,
            P::StackedDrgWindow32GiBV1_2,
            P::StackedDrgWindow64GiBV1_2,
        ])
        .and_then(|rp| post_test_partition(rp).and_then(|p| p.instance()).map_err(e)),
        "winning" => post([
            P::StackedDrgWinning2KiBV1,
            P::StackedDrgWinning8MiBV1,
            P::StackedDrgWinning512MiBV1,
            P::StackedDrgWinning32GiBV1,
            P::StackedDrgWinning64GiBV1,
        ])
        .and_then(|rp| post_test_partition(rp).and_then(|p| p.instance()).map_err(e)),
        "update" => {
            let rp = [
                U::StackedDrg2KiBV1,
                U::StackedDrg8MiBV1,
                U::StackedDrg512MiBV1,
                U::StackedDrg32GiBV1,
                U::StackedDrg64GiBV1,
            ][size_index(size)?];
            let u = update_test_sector(rp, 7).map_err(e)?;
            update_instance(rp, &u.vanilla_proofs, &u.comm_r_old, &u.comm_r_new, &u.comm_d_new).map_err(e)
        }
        other => Err(format!("--circuit: unknown kind {other} (window, winning, update)")),
    }
}

fn size_index(size: &str) -> Result<usize, String> {
    ["2k", "8m", "512m", "32g", "64g"]
        .iter()
        .position(|s| *s == size)
        .ok_or_else(|| format!("--circuit: unknown size {size} (2k, 8m, 512m, 32g, 64g)"))
}

impl CircuitJob {
    /// The test instance of `name` and random parameters of its lengths
    /// from `seed` (the runner's `--only post` and `--only update` use 9).
    pub fn new(name: &str, seed: u64) -> Result<Self, String> {
        let instance = instance(name)?;
        let n = instance.record_matrices().map_err(|e| e.to_string())?.parameter_lengths();
        let params = random_parameters_with_lengths(n.domain, n.inputs, n.aux, n.a, n.b, seed);
        let label = format!(
            "{name}: {} partition(s) of {} constraints, {} aux, domain 2^{}",
            instance.num_partitions(),
            n.constraints,
            n.aux,
            n.domain.trailing_zeros()
        );
        Ok(Self { instance, params, label })
    }

    /// Partitions `0..partitions` proved by bellperson (its CUDA prover in
    /// this build), r and s for each.
    pub fn prove(&self, partitions: usize, r: Scalar, s: Scalar) -> Result<Vec<Proof<Bls12>>, String> {
        let ks: Vec<usize> = (0..partitions).collect();
        self.instance
            .bellperson_proofs(&self.params, &ks, &vec![r; partitions], &vec![s; partitions])
            .map_err(|e| e.to_string())
    }
}
