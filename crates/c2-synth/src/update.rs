//! SnapDeals (empty sector update): the EmptySectorUpdate circuit as a
//! [`ProofInstance`], built from the partition vanilla proofs a node sends
//! exactly as filecoin-proofs' `generate_empty_sector_update_proof_with_vanilla`
//! builds it, so the engine's proof is bellperson's for the same r and s.
//!
//! A request is one proof of `partition_count` partitions (1 at 2 KiB, 4 at
//! 8 MiB, 16 from 512 MiB up), each with its challenges (10 up to 16 MiB,
//! 86 above) proving that the new replica's label is the old one plus the
//! new data times rho, with inclusion paths in TreeROld, TreeDNew and
//! TreeRNew. filecoin-proofs proves without checking the vanilla proofs;
//! this instance checks them first (storage-proofs' own verifier), so a
//! tampered or mismatched request fails before any synthesis.

use bellperson::{groth16, ConstraintSystem};
use blstrs::{Bls12, Scalar};
use filecoin_hashers::Domain;
use filecoin_proofs::{
    as_safe_commitment, SectorShape2KiB, SectorShape32GiB, SectorShape512MiB, SectorShape64GiB, SectorShape8MiB,
    SectorUpdateConfig, SECTOR_SIZE_2_KIB, SECTOR_SIZE_32_GIB, SECTOR_SIZE_512_MIB, SECTOR_SIZE_64_GIB,
    SECTOR_SIZE_8_MIB,
};
use filecoin_proofs_api::RegisteredUpdateProof;
use rand_core::RngCore;
use rayon::prelude::*;
use storage_proofs_core::{
    compound_proof::CompoundProof, merkle::MerkleTreeTrait, parameter_cache::CacheableParameters, proof::ProofScheme,
};
use storage_proofs_update::{
    constants::{TreeDDomain, TreeRDomain, TreeRHasher},
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof, PublicInputs, PublicParams,
};

use crate::instance::{no_panic, prove_with_bellperson};
use crate::matrices::MatrixCs;
use crate::update_circuit::{Gadgets, Hashes, Native};
use crate::{
    synthesize, AssignmentCs, CompactCs, CompactWitness, ConstraintMatrices, MatrixError, ProofInstance, SynthError,
    Synthesized,
};

/// Why an update request's input cannot be proved. Every one is found
/// before any synthesis.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpdateInputError {
    /// Not one vanilla proof per partition.
    #[error("{actual} partition vanilla proofs; a {sector_size} B sector update takes {expected}")]
    PartitionCount {
        /// The proof type's sector size.
        sector_size: u64,
        /// Its partition count.
        expected: usize,
        /// Vanilla proofs given.
        actual: usize,
    },
    /// A vanilla proof's bytes are not a bincode `PartitionProof` of the
    /// proof type's tree shape.
    #[error("vanilla proof {index} cannot be decoded as a sector update PartitionProof: {reason}")]
    Decode {
        /// Position in the request.
        index: usize,
        /// bincode's message.
        reason: String,
    },
    /// A partition proof decodes but has the wrong shape for its proof type.
    #[error("vanilla proof {index}: {reason}")]
    Shape {
        /// Position in the request.
        index: usize,
        /// What did not match.
        reason: String,
    },
    /// comm_r_old, comm_r_new or comm_d_new is not a canonical field element.
    #[error("{0} is not a canonical field element")]
    NonCanonical(&'static str),
    /// The vanilla proofs do not verify against the commitments: tampered,
    /// for another sector or update, or in the wrong order.
    #[error(
        "the vanilla proof of partition {partition} does not verify against comm_r_old, comm_r_new and comm_d_new"
    )]
    InvalidVanillaProofs {
        /// The first partition that fails.
        partition: usize,
    },
}

fn input_error(e: UpdateInputError) -> SynthError {
    SynthError::Update(e)
}

/// A sector update proof for the TreeR shape `TreeR`.
pub struct EmptySectorUpdateInstance<TreeR: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    params: PublicParams,
    /// The inputs of every partition (`k` set per partition).
    inputs: PublicInputs,
    proofs: Vec<PartitionProof<TreeR>>,
    parameter_id: String,
}

impl<TreeR: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> EmptySectorUpdateInstance<TreeR> {
    /// The instance for `config` (a registered update proof's), as
    /// `generate_empty_sector_update_proof_with_vanilla` proves it: the
    /// partition count and each proof's shape are checked here (cheap); the
    /// proofs themselves by [`ProofInstance::check_vanilla_proofs`].
    pub fn new(
        config: &SectorUpdateConfig,
        proofs: Vec<PartitionProof<TreeR>>,
        comm_r_old: &[u8; 32],
        comm_r_new: &[u8; 32],
        comm_d_new: &[u8; 32],
    ) -> Result<Self, SynthError> {
        // As filecoin-proofs' `as_safe_commitment`: the domains' own
        // `try_from_bytes` accepts any 32 bytes, the circuit only field
        // elements.
        fn canonical<D: Domain>(bytes: &[u8; 32], name: &'static str) -> Result<D, SynthError> {
            as_safe_commitment(bytes, name).map_err(|_| input_error(UpdateInputError::NonCanonical(name)))
        }
        let comm_r_old: TreeRDomain = canonical(comm_r_old, "comm_r_old")?;
        let comm_r_new: TreeRDomain = canonical(comm_r_new, "comm_r_new")?;
        let comm_d_new: TreeDDomain = canonical(comm_d_new, "comm_d_new")?;
        let sector_size = u64::from(config.sector_size);
        let params = PublicParams::from_sector_size(sector_size);
        let partitions = usize::from(config.update_partitions);
        if proofs.len() != partitions || params.partition_count != partitions {
            return Err(input_error(UpdateInputError::PartitionCount {
                sector_size,
                expected: partitions,
                actual: proofs.len(),
            }));
        }
        for (index, p) in proofs.iter().enumerate() {
            let shape = |reason| input_error(UpdateInputError::Shape { index, reason });
            if p.apex_leafs.len() != params.apex_leaf_count {
                return Err(shape(format!(
                    "{} apex leafs; the proof type has {}",
                    p.apex_leafs.len(),
                    params.apex_leaf_count
                )));
            }
            if p.challenge_proofs.len() != params.challenge_count {
                return Err(shape(format!(
                    "{} challenge proofs; the proof type challenges {}",
                    p.challenge_proofs.len(),
                    params.challenge_count
                )));
            }
        }
        let inputs = PublicInputs { k: 0, comm_r_old, comm_d_new, comm_r_new, h: config.h };
        let parameter_id = <EmptySectorUpdateCompound<TreeR> as CacheableParameters<
            EmptySectorUpdateCircuit<TreeR>,
            _,
        >>::cache_identifier(&params);
        Ok(Self { params, inputs, proofs, parameter_id })
    }

    /// Partition `k`'s circuit, built exactly as filecoin-proofs builds it
    /// (for callers that run it through another prover, e.g. as an oracle).
    pub fn circuit(&self, k: usize) -> Result<EmptySectorUpdateCircuit<TreeR>, SynthError> {
        let proof = self.proofs.get(k).ok_or(SynthError::NoSuchPartition { k, count: self.proofs.len() })?;
        no_panic(k, || {
            <EmptySectorUpdateCompound<TreeR> as CompoundProof<EmptySectorUpdate<TreeR>, _>>::circuit(
                &self.inputs,
                (),
                proof,
                &self.params,
                Some(k),
            )
            .map_err(|e| SynthError::Circuit { partition: k, message: e.to_string() })
        })
    }

    fn blank_circuit(&self) -> EmptySectorUpdateCircuit<TreeR> {
        <EmptySectorUpdateCompound<TreeR> as CompoundProof<EmptySectorUpdate<TreeR>, _>>::blank_circuit(&self.params)
    }
}

impl<TreeR: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> ProofInstance for EmptySectorUpdateInstance<TreeR> {
    fn num_partitions(&self) -> usize {
        self.proofs.len()
    }

    fn sector_size(&self) -> u64 {
        (self.params.sector_nodes as u64) << 5
    }

    fn parameter_id(&self) -> &str {
        &self.parameter_id
    }

    /// storage-proofs-update's verifier on every partition (challenges
    /// concurrently inside it), stopping at the first that fails.
    fn check_vanilla_proofs(&self) -> Result<(), SynthError> {
        for (k, proof) in self.proofs.iter().enumerate() {
            let inputs = PublicInputs { k, ..self.inputs.clone() };
            no_panic(k, || match EmptySectorUpdate::<TreeR>::verify(&self.params, &inputs, proof) {
                Ok(true) => Ok(()),
                _ => Err(input_error(UpdateInputError::InvalidVanillaProofs { partition: k })),
            })?;
        }
        Ok(())
    }

    fn synthesize_partition(&self, k: usize) -> Result<Synthesized, SynthError> {
        let circuit = self.circuit(k)?;
        no_panic(k, || synthesize(circuit).map_err(|source| SynthError::Synthesis { partition: k, source }))
    }

    /// The circuit's gadgets on witness-only constraint systems, the
    /// challenges concurrently (`update_circuit.rs`), values appended
    /// in the circuit's order.
    fn synthesize_witness(&self, k: usize) -> Result<(Vec<Scalar>, Vec<Scalar>), SynthError> {
        let circuit = self.circuit(k)?;
        let (prefix, parts) = split_synthesis::<Native, _, _>(k, &circuit, one_input(AssignmentCs::default()), |_| {
            AssignmentCs::default()
        })?;
        let mut aux = Vec::with_capacity(prefix.aux.len() + parts.iter().map(|p| p.aux.len()).sum::<usize>());
        aux.extend_from_slice(&prefix.aux);
        let mut inputs = prefix.inputs;
        for part in parts {
            inputs.extend_from_slice(&part.inputs);
            aux.extend_from_slice(&part.aux);
        }
        Ok((inputs, aux))
    }

    /// As [`ProofInstance::synthesize_witness`], into compact parts (0/1
    /// as bits: most of the witness is SHA-256's bits), appended in order.
    fn synthesize_compact_witness(&self, k: usize) -> Result<(Vec<Scalar>, CompactWitness), SynthError> {
        let circuit = self.circuit(k)?;
        let (prefix, parts) =
            split_synthesis::<Native, _, _>(k, &circuit, one_input(CompactCs::default()), |_| CompactCs::default())?;
        let mut aux = prefix.aux;
        aux.reserve(parts.iter().map(|p| p.aux.len()).sum(), parts.iter().map(|p| p.aux.full_count()).sum());
        let mut inputs = prefix.inputs;
        for part in &parts {
            inputs.extend_from_slice(&part.inputs);
            aux.append(&part.aux);
        }
        Ok((inputs, aux))
    }

    /// The reference for [`ProofInstance::synthesize_witness`]: the circuit
    /// as storage-proofs-update runs it, on one witness-only system.
    fn synthesize_witness_gadgets(&self, k: usize) -> Result<(Vec<Scalar>, Vec<Scalar>), SynthError> {
        let circuit = self.circuit(k)?;
        let cs = no_panic(k, || {
            crate::cs::witness_of(circuit, AssignmentCs::default())
                .map_err(|source| SynthError::Synthesis { partition: k, source })
        })?;
        Ok((cs.inputs, cs.aux))
    }

    /// The blank circuit's prefix, then its challenges concurrently on
    /// systems that continue the prefix's numbering, joined. One pass took
    /// minutes per shape at 32 GiB (82 M constraints, one thread).
    fn record_matrices(&self) -> Result<ConstraintMatrices, MatrixError> {
        let blank = self.blank_circuit();
        let (prefix, parts) =
            split_synthesis::<Gadgets, _, _>(0, &blank, one_input(MatrixCs::new()), MatrixCs::continuing)
                .map_err(|e| MatrixError::Circuit(e.to_string()))?;
        ConstraintMatrices::join_continuations(prefix, parts)
    }

    /// storage-proofs-update's blank circuit recorded in one pass.
    fn record_matrices_sequential(&self) -> Result<ConstraintMatrices, MatrixError> {
        no_panic(0, || Ok(ConstraintMatrices::record(self.blank_circuit())))
            .map_err(|e| MatrixError::Circuit(e.to_string()))?
    }

    fn public_inputs(&self, k: usize) -> Result<Vec<Scalar>, SynthError> {
        if k >= self.proofs.len() {
            return Err(SynthError::NoSuchPartition { k, count: self.proofs.len() });
        }
        no_panic(k, || {
            <EmptySectorUpdateCompound<TreeR> as CompoundProof<EmptySectorUpdate<TreeR>, _>>::generate_public_inputs(
                &self.inputs,
                &self.params,
                Some(k),
            )
            .map_err(|e| SynthError::Circuit { partition: k, message: e.to_string() })
        })
    }

    fn generate_parameters(&self, mut rng: &mut dyn RngCore) -> Result<groth16::Parameters<Bls12>, SynthError> {
        groth16::generate_random_parameters::<Bls12, _, _>(self.blank_circuit(), &mut rng)
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

/// `cs` with the ONE input allocated, as a prover's system begins.
fn one_input<CS: ConstraintSystem<Scalar>>(mut cs: CS) -> CS {
    // Allocating an input on an empty system cannot fail on these systems.
    let _ = cs.alloc_input(|| "one", || Ok(<Scalar as ff::Field>::ONE));
    cs
}

/// Partition `k`'s `circuit` split ([`crate::update_circuit`]): the prefix
/// on `cs`, then each challenge on its own system made by `continuing`
/// from the prefix's, concurrently; the systems in the circuit's order.
fn split_synthesis<H, TreeR, CS>(
    k: usize,
    circuit: &EmptySectorUpdateCircuit<TreeR>,
    mut cs: CS,
    continuing: impl Fn(&CS) -> CS + Sync,
) -> Result<(CS, Vec<CS>), SynthError>
where
    H: Hashes<CS>,
    TreeR: 'static + MerkleTreeTrait<Hasher = TreeRHasher>,
    CS: ConstraintSystem<Scalar> + Send + Sync,
{
    let err = |source| SynthError::Synthesis { partition: k, source };
    let prefix = no_panic(k, || crate::update_circuit::prefix::<H, _, _>(&mut cs, circuit).map_err(err))?;
    let proofs = &circuit.priv_inputs.challenge_proofs;
    if proofs.len() != prefix.challenges() {
        return Err(err(bellperson::SynthesisError::Unsatisfiable));
    }
    let parts = proofs
        .par_iter()
        .enumerate()
        .map(|(c, proof)| {
            let mut part = continuing(&cs);
            no_panic(k, || crate::update_circuit::challenge::<H, _, _>(&mut part, &prefix, c, proof).map_err(err))?;
            Ok(part)
        })
        .collect::<Result<Vec<_>, SynthError>>()?;
    Ok((cs, parts))
}

/// Decodes a request's vanilla proofs (each a bincode `PartitionProof`, as
/// filecoin-proofs-api's `generate_partition_proofs` writes them and Curio
/// sends them) and builds the instance for `registered_proof`'s sector
/// size. The commitments are the raw 32 bytes (Curio's `comm_r_old`,
/// `comm_r_new`, `comm_d_new`).
pub fn update_instance(
    registered_proof: RegisteredUpdateProof,
    vanilla_proofs: &[Vec<u8>],
    comm_r_old: &[u8; 32],
    comm_r_new: &[u8; 32],
    comm_d_new: &[u8; 32],
) -> Result<Box<dyn ProofInstance>, SynthError> {
    let config = SectorUpdateConfig::from_porep_config(&registered_proof.as_v1_config());
    let expected = usize::from(config.update_partitions);
    if vanilla_proofs.len() != expected {
        return Err(input_error(UpdateInputError::PartitionCount {
            sector_size: u64::from(config.sector_size),
            expected,
            actual: vanilla_proofs.len(),
        }));
    }
    fn boxed<TreeR: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
        config: &SectorUpdateConfig,
        vanilla_proofs: &[Vec<u8>],
        commitments: [&[u8; 32]; 3],
    ) -> Result<Box<dyn ProofInstance>, SynthError> {
        let proofs = vanilla_proofs
            .iter()
            .enumerate()
            .map(|(index, bytes)| {
                bincode::deserialize::<PartitionProof<TreeR>>(bytes)
                    .map_err(|e| input_error(UpdateInputError::Decode { index, reason: e.to_string() }))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let [old, new, d] = commitments;
        Ok(Box::new(EmptySectorUpdateInstance::<TreeR>::new(config, proofs, old, new, d)?))
    }
    let commitments = [comm_r_old, comm_r_new, comm_d_new];
    match u64::from(config.sector_size) {
        SECTOR_SIZE_2_KIB => boxed::<SectorShape2KiB>(&config, vanilla_proofs, commitments),
        SECTOR_SIZE_8_MIB => boxed::<SectorShape8MiB>(&config, vanilla_proofs, commitments),
        SECTOR_SIZE_512_MIB => boxed::<SectorShape512MiB>(&config, vanilla_proofs, commitments),
        SECTOR_SIZE_32_GIB => boxed::<SectorShape32GiB>(&config, vanilla_proofs, commitments),
        SECTOR_SIZE_64_GIB => boxed::<SectorShape64GiB>(&config, vanilla_proofs, commitments),
        other => Err(SynthError::Unsupported(format!("sector size {other}"))),
    }
}
