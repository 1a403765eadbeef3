//! One sector's C2 work: the C1 output with its typed StackedDrg context.

use bellperson::groth16;
use blstrs::{Bls12, Scalar};
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{
    as_safe_commitment, parameters::setup_params, DefaultPieceDomain, DefaultPieceHasher, PoRepConfig, SectorShape2KiB,
    SectorShape32GiB, SectorShape512MiB, SectorShape64GiB, SectorShape8MiB, SECTOR_SIZE_2_KIB, SECTOR_SIZE_32_GIB,
    SECTOR_SIZE_512_MIB, SECTOR_SIZE_64_GIB, SECTOR_SIZE_8_MIB,
};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use rand_core::RngCore;
use rayon::prelude::*;
use storage_proofs_core::{
    api_version::ApiFeature,
    compound_proof::{self, CompoundProof},
    drgraph::Graph,
    merkle::MerkleTreeTrait,
    parameter_cache::CacheableParameters,
    proof::ProofScheme,
};
use storage_proofs_porep::stacked::{self, generate_replica_id, StackedCircuit, StackedCompound, StackedDrg, Tau};

use crate::cs::SliceCs;
use crate::instance::{no_panic, prove_with_bellperson};
use crate::matrices::MatrixCs;
use crate::native::stacked as native;
use crate::{
    synthesize, AssignmentCs, CompactCs, CompactWitness, ConstraintMatrices, Density, MatrixError, ProofInstance,
    SynthError, Synthesized, WitnessCs,
};
use bellperson::ConstraintSystem;
use ff::Field;

type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;
type PieceDomain = <DefaultPieceHasher as Hasher>::Domain;

/// A StackedDrg PoRep instance for the Merkle tree shape `Tree`.
pub struct StackedInstance<Tree: 'static + MerkleTreeTrait> {
    vanilla_params: stacked::PublicParams<Tree>,
    public_inputs: stacked::PublicInputs<TreeDomain<Tree>, PieceDomain>,
    vanilla_proofs: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>>,
    parameter_id: String,
    sector_size: u64,
    /// Aux variables one challenge allocates, learned from the first
    /// native witness (the same for every challenge of the shape).
    challenge_shape: std::sync::OnceLock<usize>,
}

type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;

impl<Tree: 'static + MerkleTreeTrait> StackedInstance<Tree> {
    /// An instance from its parts, for set-ups that are not registered proof
    /// types (tests, demos). `vanilla_proofs[k]` are partition `k`'s
    /// challenge proofs.
    pub fn new(
        vanilla_params: stacked::PublicParams<Tree>,
        public_inputs: stacked::PublicInputs<TreeDomain<Tree>, PieceDomain>,
        vanilla_proofs: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>>,
    ) -> Result<Self, SynthError> {
        if vanilla_proofs.is_empty() || vanilla_proofs.iter().any(|p| p.is_empty()) {
            return Err(SynthError::NoVanillaProofs);
        }
        let parameter_id =
            <Compound<Tree> as CacheableParameters<StackedCircuit<Tree, DefaultPieceHasher>, _>>::cache_identifier(
                &vanilla_params,
            );
        let sector_size = (vanilla_params.graph.size() * 32) as u64;
        Ok(Self {
            vanilla_params,
            public_inputs,
            vanilla_proofs,
            parameter_id,
            sector_size,
            challenge_shape: std::sync::OnceLock::new(),
        })
    }

    /// Builds the instance for a registered proof's C1 output, with the same
    /// checks and set-up as `filecoin_proofs::seal_commit_phase2`, plus a check
    /// that the replica id derives from `prover_id` and `sector_id` (the
    /// verifier recomputes it; a mismatch could never verify).
    fn from_c1(
        c1: &SealCommitPhase1Output,
        config: &PoRepConfig,
        prover_id: [u8; 32],
        sector_id: u64,
    ) -> Result<Self, SynthError> {
        if c1.comm_d == [0; 32] {
            return Err(SynthError::ZeroCommitment("comm_d"));
        }
        if c1.comm_r == [0; 32] {
            return Err(SynthError::ZeroCommitment("comm_r"));
        }
        if c1.seed == [0; 32] {
            return Err(SynthError::ZeroCommitment("seed"));
        }
        let vanilla_proofs: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>> =
            c1.vanilla_proofs.clone().try_into().map_err(|e: anyhow::Error| SynthError::VanillaProofShape {
                registered_proof: format!("{:?}", c1.registered_proof),
                reason: e.to_string(),
            })?;
        if vanilla_proofs.is_empty() || vanilla_proofs.iter().any(|p| p.is_empty()) {
            return Err(SynthError::NoVanillaProofs);
        }
        let partitions = usize::from(config.partitions);
        if vanilla_proofs.len() != partitions {
            return Err(SynthError::PartitionCount { expected: partitions, actual: vanilla_proofs.len() });
        }
        let comm_r: TreeDomain<Tree> =
            as_safe_commitment(&c1.comm_r, "comm_r").map_err(|_| SynthError::InvalidCommitment("comm_r"))?;
        let comm_d =
            DefaultPieceDomain::try_from_bytes(&c1.comm_d).map_err(|_| SynthError::InvalidCommitment("comm_d"))?;

        let expected_replica_id =
            generate_replica_id::<Tree::Hasher, _>(&prover_id, sector_id, &c1.ticket, comm_d, &config.porep_id);
        let c1_replica_id: Scalar = c1.replica_id.into();
        let c1_replica_id: TreeDomain<Tree> = c1_replica_id.into();
        if c1_replica_id != expected_replica_id {
            return Err(SynthError::ReplicaIdMismatch);
        }

        let setup = compound_proof::SetupParams {
            vanilla_params: setup_params(config).map_err(|e| SynthError::Unsupported(e.to_string()))?,
            partitions: Some(partitions),
            priority: false,
        };
        let public_params =
            <Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::setup(&setup)
                .map_err(|e| SynthError::Unsupported(e.to_string()))?;

        let public_inputs = stacked::PublicInputs {
            replica_id: c1_replica_id,
            tau: Some(Tau { comm_d, comm_r }),
            k: None,
            seed: Some(c1.seed),
        };
        Self::new(public_params.vanilla_params, public_inputs, vanilla_proofs)
    }
}

impl<Tree: 'static + MerkleTreeTrait> StackedInstance<Tree> {
    /// Partition `k`'s circuit, built exactly as filecoin-proofs builds it
    /// (for callers that want to run it through another prover, e.g. as an
    /// oracle).
    pub fn circuit(&self, k: usize) -> Result<StackedCircuit<Tree, DefaultPieceHasher>, SynthError> {
        let proof =
            self.vanilla_proofs.get(k).ok_or(SynthError::NoSuchPartition { k, count: self.vanilla_proofs.len() })?;
        no_panic(k, || {
            <Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::circuit(
                &self.public_inputs,
                (),
                proof,
                &self.vanilla_params,
                Some(k),
            )
            .map_err(|e| SynthError::Circuit { partition: k, message: e.to_string() })
        })
    }
}

impl<Tree: 'static + MerkleTreeTrait> StackedInstance<Tree> {
    /// Partition `k` with its challenges synthesized concurrently. The
    /// StackedDrg circuit is a prefix (replica id and its bits, the
    /// commitments, comm_r = H(comm_c, comm_r_last)) followed by one
    /// independent sub-circuit per challenge that reads only prefix
    /// variables. So each challenge is synthesized on its own behind a copy
    /// of the prefix (a few hundred constraints), and the parts are joined
    /// in challenge order: assignments, a/b/c and the density bits of the
    /// challenge variables appended, the bits of prefix variables OR-ed,
    /// then bellperson's `input · 0 = 0` constraints. The same record as one
    /// sequential pass (tested against it), in 1/18 of the wall time on 18
    /// cores for a 32 GiB partition.
    fn synthesize_challenges_in_parallel(&self, k: usize) -> Result<Synthesized, SynthError> {
        if self.challenges(k)?.len() < 2 {
            return self.synthesize_partition_sequential(k);
        }
        let (prefix, parts) = self.challenge_parts::<WitnessCs>(k)?;
        let parts = parts.into_iter().map(WitnessCs::into_synthesized).collect();
        join_challenges(k, &prefix.into_synthesized(), parts)
    }

    /// Partition `k`'s witness (inputs, aux) with the SHA-256 parts
    /// generated natively ([`crate::native`]): the prefix, then every
    /// challenge concurrently into its own assignment vectors, appended in
    /// challenge order. Equal to [`Self::witness_of_challenges`] (tested).
    fn native_witness(&self, k: usize) -> Result<(Vec<Scalar>, Vec<Scalar>), SynthError> {
        let proofs = self.challenges(k)?;
        let synth_err = |source| SynthError::Synthesis { partition: k, source };
        let first = proofs.first().ok_or(SynthError::NoVanillaProofs)?;
        let prefix = self.native_prefix(k)?;
        let layers = self.vanilla_params.num_layers;
        let one_challenge = |cs: &mut AssignmentCs, p| {
            no_panic(k, || native::challenge::<Tree, _>(cs, &prefix, p, layers).map_err(synth_err))
        };
        // Every challenge of a shape allocates alike (the circuit's structure
        // is fixed): the first one generated learns how much, once per
        // instance, and from then on each challenge writes into its place.
        let mut learned = None;
        let per_challenge = match self.challenge_shape.get() {
            Some(&n) => n,
            None => {
                let mut cs = AssignmentCs::new();
                one_challenge(&mut cs, first)?;
                let n = cs.aux.len();
                let _ = self.challenge_shape.set(n);
                learned = Some(cs);
                n
            }
        };
        let p_aux = prefix.cs.aux.len();
        let mut aux = Vec::with_capacity(p_aux + per_challenge * proofs.len());
        aux.extend_from_slice(&prefix.cs.aux);
        // Zeroed (and its pages faulted in) on every core at once.
        aux.par_extend(rayon::iter::repeat_n(Scalar::ZERO, per_challenge * proofs.len()));
        let skip = usize::from(learned.is_some());
        let slots = aux[p_aux..].par_chunks_mut(per_challenge.max(1));
        let inputs = slots
            .zip(proofs.par_iter())
            .enumerate()
            .map(|(j, (slot, p))| {
                if j < skip {
                    let cs = learned.as_ref().ok_or(SynthError::NoVanillaProofs)?;
                    slot.copy_from_slice(&cs.aux);
                    return Ok(cs.inputs.clone());
                }
                let mut cs = SliceCs::new(slot);
                no_panic(k, || native::challenge::<Tree, _>(&mut cs, &prefix, p, layers).map_err(synth_err))?;
                if !cs.filled() {
                    return Err(SynthError::Circuit {
                        partition: k,
                        message: format!(
                            "challenge {j} allocated {} aux variables; challenge 0 allocated {per_challenge}",
                            cs.allocated()
                        ),
                    });
                }
                Ok(cs.inputs)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut all_inputs = prefix.cs.inputs.clone();
        for part in inputs {
            all_inputs.extend_from_slice(&part);
        }
        Ok((all_inputs, aux))
    }

    /// Partition `k`'s witness with compact aux: the prefix, then every
    /// challenge concurrently into its own [`CompactCs`], appended in
    /// challenge order (bits shifted into place; a few MB per challenge).
    fn native_compact_witness(&self, k: usize) -> Result<(Vec<Scalar>, CompactWitness), SynthError> {
        let proofs = self.challenges(k)?;
        let prefix = self.native_prefix(k)?;
        let synth_err = |source| SynthError::Synthesis { partition: k, source };
        let layers = self.vanilla_params.num_layers;
        let parts = proofs
            .par_iter()
            .map(|p| {
                let mut cs = CompactCs::default();
                no_panic(k, || native::challenge::<Tree, _>(&mut cs, &prefix, p, layers).map_err(synth_err))?;
                Ok(cs)
            })
            .collect::<Result<Vec<_>, SynthError>>()?;
        let mut inputs = prefix.cs.inputs.clone();
        let mut aux = CompactWitness::from_scalars(&prefix.cs.aux);
        aux.reserve(parts.iter().map(|p| p.aux.len()).sum(), parts.iter().map(|p| p.aux.full_count()).sum());
        for part in &parts {
            inputs.extend_from_slice(&part.inputs);
            aux.append(&part.aux);
        }
        Ok((inputs, aux))
    }

    /// The native witness' prefix for partition `k`.
    fn native_prefix(&self, k: usize) -> Result<native::Prefix, SynthError> {
        let proofs = self.challenges(k)?;
        let first = proofs.first().ok_or(SynthError::NoVanillaProofs)?;
        let tau = self
            .public_inputs
            .tau
            .as_ref()
            .ok_or(SynthError::Synthesis { partition: k, source: bellperson::SynthesisError::AssignmentMissing })?;
        no_panic(k, || {
            native::Prefix::synthesize::<Tree>(
                self.public_inputs.replica_id.into(),
                tau.comm_d.into(),
                tau.comm_r.into(),
                first.comm_r_last().into(),
                first.comm_c().into(),
            )
            .map_err(|source| SynthError::Synthesis { partition: k, source })
        })
    }

    /// Partition `k`'s witness (inputs, aux) only, every gadget of the
    /// circuit run on a witness-only constraint system, its challenges
    /// synthesized concurrently behind copies of the prefix, as
    /// `synthesize_challenges_in_parallel` does with constraints.
    fn witness_of_challenges(&self, k: usize) -> Result<(Vec<Scalar>, Vec<Scalar>), SynthError> {
        let (prefix, parts) = self.challenge_parts::<AssignmentCs>(k)?;
        let (p_in, p_aux) = (prefix.inputs.len(), prefix.aux.len());
        let (mut inputs, mut aux) = (prefix.inputs, prefix.aux);
        for part in parts {
            if part.inputs.get(..p_in) != Some(&inputs[..p_in]) || part.aux.get(..p_aux) != Some(&aux[..p_aux]) {
                return Err(SynthError::Circuit { partition: k, message: "challenge part: another prefix".into() });
            }
            inputs.extend_from_slice(&part.inputs[p_in..]);
            aux.extend_from_slice(&part.aux[p_aux..]);
        }
        Ok((inputs, aux))
    }

    /// Partition `k`'s vanilla proofs, one per challenge.
    fn challenges(&self, k: usize) -> Result<&[stacked::Proof<Tree, DefaultPieceHasher>], SynthError> {
        self.vanilla_proofs
            .get(k)
            .map(Vec::as_slice)
            .ok_or(SynthError::NoSuchPartition { k, count: self.vanilla_proofs.len() })
    }

    /// The circuit's prefix alone (no challenges), and each challenge
    /// synthesized behind its own copy of the prefix, concurrently, into
    /// constraint systems `CS` that start with the ONE input.
    fn challenge_parts<CS>(&self, k: usize) -> Result<(CS, Vec<CS>), SynthError>
    where
        CS: ConstraintSystem<Scalar, Root = CS> + Send,
    {
        let proofs = self.challenges(k)?;
        let synth_err = |source| SynthError::Synthesis { partition: k, source };
        let fresh = || -> Result<CS, SynthError> {
            let mut cs = CS::new();
            cs.alloc_input(|| "one", || Ok(Scalar::ONE)).map_err(synth_err)?;
            Ok(cs)
        };
        let first = proofs.first().ok_or(SynthError::NoVanillaProofs)?;
        let tau = self.public_inputs.tau.as_ref();
        let mut prefix = fresh()?;
        no_panic(k, || {
            StackedCircuit::<Tree, DefaultPieceHasher>::synthesize(
                &mut prefix,
                Some(self.public_inputs.replica_id),
                tau.map(|t| t.comm_d),
                tau.map(|t| t.comm_r),
                Some(first.comm_r_last()),
                Some(first.comm_c()),
                Vec::new(),
            )
            .map_err(synth_err)
        })?;
        let parts = proofs
            .par_iter()
            .map(|p| {
                let circuit = no_panic(k, || {
                    <Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::circuit(
                        &self.public_inputs,
                        (),
                        &vec![p.clone()],
                        &self.vanilla_params,
                        Some(k),
                    )
                    .map_err(|e| SynthError::Circuit { partition: k, message: e.to_string() })
                })?;
                let mut cs = fresh()?;
                no_panic(k, || bellperson::Circuit::synthesize(circuit, &mut cs).map_err(synth_err))?;
                Ok(cs)
            })
            .collect::<Result<_, SynthError>>()?;
        Ok((prefix, parts))
    }
}

/// Joins challenge parts that each begin with `prefix` (see
/// `synthesize_challenges_in_parallel`), then adds bellperson's input
/// constraints.
fn join_challenges(k: usize, prefix: &Synthesized, parts: Vec<Synthesized>) -> Result<Synthesized, SynthError> {
    let (p_aux, p_in, p_con) = (prefix.aux_assignment.len(), prefix.input_assignment.len(), prefix.a.len());
    let shape_err = |what: &str| SynthError::Circuit { partition: k, message: format!("challenge part: {what}") };
    let total = |f: fn(&Synthesized) -> usize, p: usize| parts.iter().map(|x| f(x) - p).sum::<usize>() + p;
    let n_aux = total(|x| x.aux_assignment.len(), p_aux);
    let n_in = total(|x| x.input_assignment.len(), p_in);
    let n_con = total(|x| x.a.len(), p_con) + n_in;
    let mut out = Synthesized {
        a: Vec::with_capacity(n_con),
        b: Vec::with_capacity(n_con),
        c: Vec::with_capacity(n_con),
        input_assignment: Vec::with_capacity(n_in),
        aux_assignment: Vec::with_capacity(n_aux),
        a_aux_density: Density::new(),
        b_input_density: Density::new(),
        b_aux_density: Density::new(),
    };
    for (j, part) in parts.into_iter().enumerate() {
        // Every part starts with the very prefix.
        let same = part.aux_assignment.get(..p_aux) == Some(&prefix.aux_assignment[..])
            && part.input_assignment.get(..p_in) == Some(&prefix.input_assignment[..])
            && part.a.get(..p_con) == Some(&prefix.a[..]);
        if !same {
            return Err(shape_err("does not begin with the circuit's prefix"));
        }
        // Part 0 brings the prefix; later parts only their challenge.
        let (from_aux, from_in, from_con) = if j == 0 { (0, 0, 0) } else { (p_aux, p_in, p_con) };
        out.a.extend_from_slice(&part.a[from_con..]);
        out.b.extend_from_slice(&part.b[from_con..]);
        out.c.extend_from_slice(&part.c[from_con..]);
        out.aux_assignment.extend_from_slice(&part.aux_assignment[from_aux..]);
        out.input_assignment.extend_from_slice(&part.input_assignment[from_in..]);
        for (into, from, skip) in [
            (&mut out.a_aux_density, &part.a_aux_density, from_aux),
            (&mut out.b_aux_density, &part.b_aux_density, from_aux),
            (&mut out.b_input_density, &part.b_input_density, from_in),
        ] {
            // Prefix variables a challenge uses: OR into their bits.
            for i in 0..skip {
                if from.get(i) {
                    into.set(i);
                }
            }
            for i in skip..from.len() {
                into.push(from.get(i));
            }
        }
    }
    // bellperson's `input_i · 0 = 0` for every input.
    for i in 0..out.input_assignment.len() {
        let x = out.input_assignment[i];
        out.a.push(x);
        out.b.push(Scalar::ZERO);
        out.c.push(Scalar::ZERO);
    }
    Ok(out)
}

impl<Tree: 'static + MerkleTreeTrait> ProofInstance for StackedInstance<Tree> {
    fn num_partitions(&self) -> usize {
        self.vanilla_proofs.len()
    }

    fn sector_size(&self) -> u64 {
        self.sector_size
    }

    fn parameter_id(&self) -> &str {
        &self.parameter_id
    }

    fn check_vanilla_proofs(&self) -> Result<(), SynthError> {
        no_panic(0, || {
            match StackedDrg::<Tree, DefaultPieceHasher>::verify_all_partitions(
                &self.vanilla_params,
                &self.public_inputs,
                &self.vanilla_proofs,
            ) {
                Ok(true) => Ok(()),
                _ => Err(SynthError::InvalidVanillaProofs),
            }
        })
    }

    fn synthesize_partition(&self, k: usize) -> Result<Synthesized, SynthError> {
        self.synthesize_challenges_in_parallel(k)
    }

    fn synthesize_witness(&self, k: usize) -> Result<(Vec<Scalar>, Vec<Scalar>), SynthError> {
        self.native_witness(k)
    }

    fn synthesize_witness_gadgets(&self, k: usize) -> Result<(Vec<Scalar>, Vec<Scalar>), SynthError> {
        self.witness_of_challenges(k)
    }

    fn synthesize_compact_witness(&self, k: usize) -> Result<(Vec<Scalar>, CompactWitness), SynthError> {
        self.native_compact_witness(k)
    }

    fn synthesize_partition_sequential(&self, k: usize) -> Result<Synthesized, SynthError> {
        let circuit = self.circuit(k)?;
        no_panic(k, || synthesize(circuit).map_err(|source| SynthError::Synthesis { partition: k, source }))
    }

    /// The challenges of partition 0 recorded concurrently, each behind its
    /// own copy of the prefix, and joined (the structure is the same for
    /// every partition and every witness; values are never read). 190 s in
    /// one pass for a 32 GiB partition on the H200 host.
    fn record_matrices(&self) -> Result<ConstraintMatrices, MatrixError> {
        if self.challenges(0).map_err(|e| MatrixError::Circuit(e.to_string()))?.len() < 2 {
            return self.record_matrices_sequential();
        }
        let (prefix, parts) = self.challenge_parts::<MatrixCs>(0).map_err(|e| MatrixError::Circuit(e.to_string()))?;
        ConstraintMatrices::join_parts(prefix, parts)
    }

    fn record_matrices_sequential(&self) -> Result<ConstraintMatrices, MatrixError> {
        let blank = <Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::blank_circuit(
            &self.vanilla_params,
        );
        ConstraintMatrices::record(blank)
    }

    fn public_inputs(&self, k: usize) -> Result<Vec<Scalar>, SynthError> {
        if k >= self.vanilla_proofs.len() {
            return Err(SynthError::NoSuchPartition { k, count: self.vanilla_proofs.len() });
        }
        no_panic(k, || {
            <Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::generate_public_inputs(
                &self.public_inputs,
                &self.vanilla_params,
                Some(k),
            )
            .map_err(|e| SynthError::Circuit { partition: k, message: e.to_string() })
        })
    }

    fn generate_parameters(&self, mut rng: &mut dyn RngCore) -> Result<groth16::Parameters<Bls12>, SynthError> {
        let blank = <Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::blank_circuit(
            &self.vanilla_params,
        );
        groth16::generate_random_parameters::<Bls12, _, _>(blank, &mut rng)
            .map_err(|source| SynthError::Synthesis { partition: 0, source })
    }

    fn bellperson_proofs(
        &self,
        params: &groth16::Parameters<Bls12>,
        partitions: &[usize],
        r: &[Scalar],
        s: &[Scalar],
    ) -> Result<Vec<groth16::Proof<Bls12>>, SynthError> {
        let circuits = partitions.iter().map(|&k| self.circuit(k)).collect::<Result<_, _>>()?;
        prove_with_bellperson(circuits, params, r, s)
    }
}

/// Builds the instance for a filecoin-proofs-api C1 output (the JSON that
/// Lotus and Curio write), dispatching on its registered proof type.
pub fn instance_from_c1(
    c1: &SealCommitPhase1Output,
    prover_id: [u8; 32],
    sector_id: u64,
) -> Result<Box<dyn ProofInstance>, SynthError> {
    let rp = c1.registered_proof;
    if rp.major_version() != 1 {
        return Err(SynthError::Unsupported(format!("{rp:?}: major version {}", rp.major_version())));
    }
    let config = rp.as_v1_config();
    if config.api_features.contains(&ApiFeature::NonInteractivePoRep) {
        // NI-PoRep's C2 output is an aggregate (SnarkPack) proof: not ours yet.
        return Err(SynthError::Unsupported(format!("{rp:?}: non-interactive PoRep (aggregated output)")));
    }
    let size = u64::from(config.sector_size);
    fn boxed<Tree: 'static + MerkleTreeTrait>(
        c1: &SealCommitPhase1Output,
        config: &PoRepConfig,
        prover_id: [u8; 32],
        sector_id: u64,
    ) -> Result<Box<dyn ProofInstance>, SynthError> {
        Ok(Box::new(StackedInstance::<Tree>::from_c1(c1, config, prover_id, sector_id)?))
    }
    match size {
        SECTOR_SIZE_2_KIB => boxed::<SectorShape2KiB>(c1, &config, prover_id, sector_id),
        SECTOR_SIZE_8_MIB => boxed::<SectorShape8MiB>(c1, &config, prover_id, sector_id),
        SECTOR_SIZE_512_MIB => boxed::<SectorShape512MiB>(c1, &config, prover_id, sector_id),
        SECTOR_SIZE_32_GIB => boxed::<SectorShape32GiB>(c1, &config, prover_id, sector_id),
        SECTOR_SIZE_64_GIB => boxed::<SectorShape64GiB>(c1, &config, prover_id, sector_id),
        other => Err(SynthError::Unsupported(format!("sector size {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{cc_sector, CcSectorConfig};
    use filecoin_proofs::SectorShape32GiB;
    use filecoin_proofs_api::RegisteredSealProof;

    /// The position of the first difference, for a readable failure.
    fn first_difference(a: &[Scalar], b: &[Scalar]) -> Option<usize> {
        (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i))
    }

    /// Native SHA-256 witnesses == the gadgets' witness, input for input and
    /// aux for aux, on real 2 KiB and 8 MiB circuits (CC sectors).
    #[test]
    fn native_witness_equals_the_gadgets_witness() {
        for rp in [RegisteredSealProof::StackedDrg2KiBV1_1, RegisteredSealProof::StackedDrg8MiBV1_1] {
            let s = cc_sector(rp, &CcSectorConfig::default()).unwrap();
            let instance = instance_from_c1(&s.c1, s.prover_id, s.sector_id).unwrap();
            let t = std::time::Instant::now();
            let (inputs, aux) = instance.synthesize_witness(0).unwrap();
            let t_native = t.elapsed();
            let t = std::time::Instant::now();
            let (g_inputs, g_aux) = instance.synthesize_witness_gadgets(0).unwrap();
            eprintln!("{rp:?}: native witness {t_native:.2?}, gadgets {:.2?}", t.elapsed());
            assert_eq!(first_difference(&inputs, &g_inputs), None, "{rp:?}: inputs");
            assert_eq!(first_difference(&aux, &g_aux), None, "{rp:?}: aux ({} vs {})", aux.len(), g_aux.len());
            // Later partitions write every challenge in place (the first one
            // learned the challenge's size): the same vectors.
            let again = instance.synthesize_witness(0).unwrap();
            assert!(again == (inputs, aux), "{rp:?}: the in-place path");
            // The compact witness: the same values, bits for the 0/1 ones.
            let (c_inputs, compact) = instance.synthesize_compact_witness(0).unwrap();
            assert!(c_inputs == again.0 && compact.expand() == again.1, "{rp:?}: compact witness");
            assert!(compact == CompactWitness::from_scalars(&again.1), "{rp:?}: compact form");
            eprintln!(
                "{rp:?}: compact witness {:.1} MB for {:.1} MB of scalars ({} full values of {})",
                compact.bytes() as f64 / 1e6,
                again.1.len() as f64 * 32e-6,
                compact.full_value().len(),
                compact.len()
            );
        }
    }

    /// One challenge of a 32 GiB partition (11 layers, 37-parent labels,
    /// the 30-level comm_d path, arity-11 column hashes): native == gadgets.
    #[test]
    fn native_witness_of_a_32_gib_challenge_equals_the_gadgets() {
        let s = cc_sector(RegisteredSealProof::StackedDrg32GiBV1_1, &CcSectorConfig::default()).unwrap();
        let config = RegisteredSealProof::StackedDrg32GiBV1_1.as_v1_config();
        let instance = StackedInstance::<SectorShape32GiB>::from_c1(&s.c1, &config, s.prover_id, s.sector_id).unwrap();
        let proof = &instance.challenges(0).unwrap()[0];
        let tau = instance.public_inputs.tau.as_ref().unwrap();
        let t = std::time::Instant::now();
        let prefix = native::Prefix::synthesize::<SectorShape32GiB>(
            instance.public_inputs.replica_id.into(),
            tau.comm_d.into(),
            tau.comm_r.into(),
            proof.comm_r_last().into(),
            proof.comm_c().into(),
        )
        .unwrap();
        let mut part = AssignmentCs::new();
        native::challenge::<SectorShape32GiB, _>(&mut part, &prefix, proof, instance.vanilla_params.num_layers)
            .unwrap();
        let t_native = t.elapsed();

        // The gadgets: the circuit with this one challenge.
        let t = std::time::Instant::now();
        let circuit = <Compound<SectorShape32GiB> as CompoundProof<StackedDrg<'_, _, _>, _>>::circuit(
            &instance.public_inputs,
            (),
            &vec![proof.clone()],
            &instance.vanilla_params,
            Some(0),
        )
        .unwrap();
        let mut gadgets = AssignmentCs::new();
        gadgets.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
        bellperson::Circuit::synthesize(circuit, &mut gadgets).unwrap();
        eprintln!("32 GiB challenge: native {t_native:.2?}, gadgets {:.2?}, {} aux", t.elapsed(), gadgets.aux.len());
        let mut compact = CompactCs::default();
        native::challenge::<SectorShape32GiB, _>(&mut compact, &prefix, proof, instance.vanilla_params.num_layers)
            .unwrap();
        assert!(compact.inputs == part.inputs && compact.aux.expand() == part.aux, "compact challenge");
        let native_aux: Vec<Scalar> = prefix.cs.aux.iter().chain(&part.aux).copied().collect();
        let native_inputs: Vec<Scalar> = prefix.cs.inputs.iter().chain(&part.inputs).copied().collect();
        assert_eq!(first_difference(&native_inputs, &gadgets.inputs), None, "inputs");
        assert_eq!(
            first_difference(&native_aux, &gadgets.aux),
            None,
            "aux ({} vs {})",
            native_aux.len(),
            gadgets.aux.len()
        );
    }
}
