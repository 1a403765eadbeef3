//! WindowPoSt and WinningPoSt: the FallbackPoSt circuit as a
//! [`ProofInstance`], built from the vanilla proofs a node sends exactly as
//! filecoin-proofs' `generate_single_window_post_with_vanilla` and
//! `generate_winning_post_with_vanilla` build it, so the engine's proof is
//! bellperson's for the same r and s.
//!
//! A request is one Groth16 proof: a WindowPoSt partition (up to the proof
//! type's sector count, 2349 at 32 GiB, each with 10 challenged leaves), or
//! a WinningPoSt (one sector, 66 challenged leaves). The circuit has no
//! shared prefix: each sector is an independent sub-circuit (comm_r =
//! H(comm_c, comm_r_last), then one Merkle inclusion path per challenge), and
//! storage-proofs synthesizes groups of sectors concurrently on constraint
//! systems that can be extended (ours can).

use bellperson::groth16;
use blstrs::{Bls12, Scalar};
use ff::Field;
use filecoin_hashers::Hasher;
use filecoin_proofs::{
    as_safe_commitment,
    parameters::{window_post_setup_params, winning_post_setup_params},
    FallbackPoStSectorProof, PoStConfig, PoStType, SectorShape2KiB, SectorShape32GiB, SectorShape512MiB,
    SectorShape64GiB, SectorShape8MiB, SECTOR_SIZE_2_KIB, SECTOR_SIZE_32_GIB, SECTOR_SIZE_512_MIB, SECTOR_SIZE_64_GIB,
    SECTOR_SIZE_8_MIB,
};
use filecoin_proofs_api::RegisteredPoStProof;
use rand_core::RngCore;
use rayon::prelude::*;
use storage_proofs_core::{
    compound_proof::CompoundProof,
    gadgets::por::PoRCompound,
    merkle::{MerkleProofTrait, MerkleTreeTrait},
    parameter_cache::CacheableParameters,
    por,
    proof::ProofScheme,
    util::NODE_SIZE,
};
use storage_proofs_post::fallback::{
    self, generate_leaf_challenge, get_challenge_index, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound,
    PublicSector, SectorProof,
};

use crate::instance::{no_panic, prove_with_bellperson};
use crate::{
    synthesize, AssignmentCs, CompactCs, CompactWitness, ConstraintMatrices, MatrixError, ProofInstance, SynthError,
    Synthesized,
};

type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// Which Proof-of-Spacetime a request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoStKind {
    /// WinningPoSt: one sector, one proof, inside a block's epoch.
    Winning,
    /// One WindowPoSt partition.
    Window {
        /// The partition's index in the deadline (decides its challenges).
        partition_index: usize,
    },
}

/// Why a PoSt request's input cannot be proved. Every one is found before
/// any synthesis.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PoStInputError {
    /// The registered proof is not of the kind asked for (a WindowPoSt type
    /// in a WinningPoSt request, or the reverse).
    #[error("{registered_proof} is not a {expected} proof type")]
    ProofKind {
        /// The registered proof named by the request.
        registered_proof: String,
        /// `"WinningPoSt"` or `"WindowPoSt"`.
        expected: &'static str,
    },
    /// No vanilla proofs, or more sectors than one proof takes.
    #[error("{actual} sector vanilla proofs; {kind} takes {expected}")]
    SectorCount {
        /// `"WinningPoSt"` or `"a WindowPoSt partition"`.
        kind: &'static str,
        /// What the proof type takes (`"1"`, `"1 to 2349"`).
        expected: String,
        /// Vanilla proofs given.
        actual: usize,
    },
    /// A vanilla proof's bytes are not a bincode `FallbackPoStSectorProof`
    /// of the proof type's tree shape.
    #[error("vanilla proof {index} cannot be decoded as a FallbackPoStSectorProof: {reason}")]
    Decode {
        /// Position in the request.
        index: usize,
        /// bincode's message.
        reason: String,
    },
    /// A vanilla proof decodes but has the wrong shape for its proof type.
    #[error("vanilla proof {index}: {reason}")]
    Shape {
        /// Position in the request.
        index: usize,
        /// What did not match.
        reason: String,
    },
    /// The randomness or the prover id is not a canonical field element.
    #[error("{0} is not a canonical field element")]
    NonCanonical(&'static str),
    /// The vanilla proofs do not verify for this randomness, partition,
    /// sector ids and comm_r's: tampered, for another challenge, or for
    /// another partition.
    #[error("the vanilla proofs do not verify against the randomness, partition index, sector ids and comm_r's")]
    InvalidVanillaProofs,
}

fn input_error(e: PoStInputError) -> SynthError {
    SynthError::PoSt(e)
}

/// A WindowPoSt partition or a WinningPoSt for the Merkle tree shape `Tree`.
pub struct FallbackPoStInstance<Tree: 'static + MerkleTreeTrait> {
    kind: PoStKind,
    vanilla_params: fallback::PublicParams,
    /// What filecoin-proofs builds the circuit from: the partition's sectors
    /// (read as the first chunk), with the partition index.
    circuit_inputs: fallback::PublicInputs<TreeDomain<Tree>>,
    /// What the verifier checks the proof against: the partition's sectors
    /// with its index (WindowPoSt), or the one sector repeated for every
    /// challenge (WinningPoSt, as `verify_winning_post` builds them).
    verifier_inputs: fallback::PublicInputs<TreeDomain<Tree>>,
    /// The circuit's vanilla proof: one `SectorProof` per circuit sector
    /// (padded with the last one, as filecoin-proofs pads).
    partition_proof: fallback::Proof<Tree::Proof>,
    parameter_id: String,
    sector_size: u64,
}

impl<Tree: 'static + MerkleTreeTrait> FallbackPoStInstance<Tree> {
    /// The instance for `config` (a registered proof's `PoStConfig`), as
    /// filecoin-proofs' `generate_single_window_post_with_vanilla`
    /// (`kind` = [`PoStKind::Window`]) or `generate_winning_post_with_vanilla`
    /// prove it. Cheap: the vanilla proofs are checked by
    /// [`ProofInstance::check_vanilla_proofs`].
    pub fn new(
        config: &PoStConfig,
        kind: PoStKind,
        randomness: &[u8; 32],
        prover_id: &[u8; 32],
        vanilla_proofs: Vec<FallbackPoStSectorProof<Tree>>,
    ) -> Result<Self, SynthError> {
        let (name, typ) = match kind {
            PoStKind::Winning => ("WinningPoSt", PoStType::Winning),
            PoStKind::Window { .. } => ("WindowPoSt", PoStType::Window),
        };
        if config.typ != typ {
            return Err(input_error(PoStInputError::ProofKind {
                registered_proof: format!("{:?}", config.typ),
                expected: name,
            }));
        }
        let randomness: TreeDomain<Tree> = as_safe_commitment(randomness, "randomness")
            .map_err(|_| input_error(PoStInputError::NonCanonical("randomness")))?;
        let prover_id: TreeDomain<Tree> = as_safe_commitment(prover_id, "prover_id")
            .map_err(|_| input_error(PoStInputError::NonCanonical("prover id")))?;
        let setup = match kind {
            PoStKind::Winning => {
                winning_post_setup_params(config).map_err(|e| SynthError::Unsupported(e.to_string()))?
            }
            PoStKind::Window { .. } => window_post_setup_params(config),
        };
        let vanilla_params = FallbackPoSt::<Tree>::setup(&setup).map_err(|e| SynthError::Unsupported(e.to_string()))?;
        let per_chunk = vanilla_params.sector_count;
        let sectors: Vec<PublicSector<TreeDomain<Tree>>> =
            vanilla_proofs.iter().map(|p| PublicSector { id: p.sector_id, comm_r: p.comm_r }).collect();
        let inputs = |sectors, k| fallback::PublicInputs { randomness, prover_id, sectors, k };
        let (circuit_inputs, verifier_inputs, partition_proof) = match kind {
            PoStKind::Window { partition_index } => {
                if vanilla_proofs.is_empty() || vanilla_proofs.len() > per_chunk {
                    return Err(input_error(PoStInputError::SectorCount {
                        kind: "a WindowPoSt partition",
                        expected: format!("1 to {per_chunk}"),
                        actual: vanilla_proofs.len(),
                    }));
                }
                let proof = window_partition_proof(&sectors, &vanilla_proofs, per_chunk);
                let inputs = inputs(sectors, Some(partition_index));
                (inputs.clone(), inputs, proof)
            }
            PoStKind::Winning => {
                if vanilla_proofs.len() != config.sector_count {
                    return Err(input_error(PoStInputError::SectorCount {
                        kind: "WinningPoSt",
                        expected: config.sector_count.to_string(),
                        actual: vanilla_proofs.len(),
                    }));
                }
                let proof = winning_partition_proof(&vanilla_proofs, config.challenge_count)?;
                // verify_winning_post repeats the sector once per challenge.
                let repeated = sectors.iter().cycle().take(per_chunk * sectors.len()).cloned().collect();
                (inputs(sectors, Some(0)), inputs(repeated, Some(0)), proof)
            }
        };
        let parameter_id =
            <FallbackPoStCompound<Tree> as CacheableParameters<FallbackPoStCircuit<Tree>, _>>::cache_identifier(
                &vanilla_params,
            );
        Ok(Self {
            kind,
            sector_size: vanilla_params.sector_size,
            vanilla_params,
            circuit_inputs,
            verifier_inputs,
            partition_proof,
            parameter_id,
        })
    }

    /// Which PoSt this is.
    pub fn kind(&self) -> PoStKind {
        self.kind
    }

    /// The circuit, built exactly as filecoin-proofs builds it (for callers
    /// that want to run it through another prover, e.g. as an oracle).
    pub fn circuit(&self) -> Result<FallbackPoStCircuit<Tree>, SynthError> {
        no_panic(0, || {
            <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::circuit(
                &self.circuit_inputs,
                Default::default(),
                &self.partition_proof,
                &self.vanilla_params,
                Some(0),
            )
            .map_err(|e| SynthError::Circuit { partition: 0, message: e.to_string() })
        })
    }

    fn blank_circuit(&self) -> FallbackPoStCircuit<Tree> {
        <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::blank_circuit(&self.vanilla_params)
    }

    /// The circuit's sectors as field elements, in the circuit's order:
    /// sector proof `i` with the public sector `circuit()` pairs it with
    /// (the partition's `i`-th, or its last when the proof is padding).
    fn sector_witnesses(&self) -> Result<Vec<SectorValues>, SynthError> {
        let public = &self.circuit_inputs.sectors;
        let count = public.len().min(self.vanilla_params.sector_count);
        let last = count.checked_sub(1).ok_or(SynthError::NoVanillaProofs)?;
        Ok(self
            .partition_proof
            .sectors
            .iter()
            .enumerate()
            .map(|(i, proof)| SectorValues {
                comm_r: public[i.min(last)].comm_r.into(),
                comm_c: proof.comm_c.into(),
                comm_r_last: proof.comm_r_last.into(),
                leafs: proof.leafs().into_iter().map(Into::into).collect(),
                paths: proof.as_options(),
            })
            .collect())
    }

    /// The witness natively ([`crate::native::post`]): every circuit sector
    /// concurrently into its own part `W`, the parts in order.
    fn native_parts<W: crate::native::Assignments + Default + Send>(&self) -> Result<Vec<W>, SynthError> {
        let sectors = self.sector_witnesses()?;
        sectors
            .par_iter()
            .map(|s| {
                let mut cs = W::default();
                let witness = crate::native::post::SectorWitness {
                    comm_r: s.comm_r,
                    comm_c: s.comm_c,
                    comm_r_last: s.comm_r_last,
                    leafs: &s.leafs,
                    paths: &s.paths,
                };
                no_panic(0, || {
                    crate::native::post::sector(&mut cs, &witness)
                        .map_err(|source| SynthError::Synthesis { partition: 0, source })
                })?;
                Ok(cs)
            })
            .collect()
    }

    /// The one partition this instance has.
    fn only_partition(&self, k: usize) -> Result<(), SynthError> {
        if k == 0 {
            Ok(())
        } else {
            Err(SynthError::NoSuchPartition { k, count: 1 })
        }
    }
}

/// One circuit sector's values (see [`crate::native::post::SectorWitness`]).
struct SectorValues {
    comm_r: Scalar,
    comm_c: Scalar,
    comm_r_last: Scalar,
    leafs: Vec<Scalar>,
    paths: Vec<crate::native::stacked::PathOptions>,
}

/// A WindowPoSt partition's vanilla proof as filecoin-proofs'
/// `single_partition_vanilla_proofs` assembles it: each public sector's
/// proof (the first one with its id) in order, padded to `per_chunk`
/// sectors with the last one.
fn window_partition_proof<Tree: MerkleTreeTrait>(
    sectors: &[PublicSector<TreeDomain<Tree>>],
    vanilla_proofs: &[FallbackPoStSectorProof<Tree>],
    per_chunk: usize,
) -> fallback::Proof<Tree::Proof> {
    let mut proofs: Vec<SectorProof<Tree::Proof>> = Vec::with_capacity(per_chunk);
    for sector in sectors {
        // Found: the public sectors are the vanilla proofs' own.
        if let Some(p) = vanilla_proofs.iter().find(|p| p.sector_id == sector.id) {
            proofs.extend(p.vanilla_proof.sectors.iter().cloned());
        }
    }
    while let (true, Some(last)) = (proofs.len() < per_chunk, proofs.last().cloned()) {
        proofs.push(last);
    }
    fallback::Proof { sectors: proofs }
}

/// WinningPoSt's vanilla proof as filecoin-proofs assembles it: the one
/// sector's inclusion proofs unrolled into one circuit sector each.
fn winning_partition_proof<Tree: MerkleTreeTrait>(
    vanilla_proofs: &[FallbackPoStSectorProof<Tree>],
    challenge_count: usize,
) -> Result<fallback::Proof<Tree::Proof>, SynthError> {
    let shape = |index, reason: String| input_error(PoStInputError::Shape { index, reason });
    let sector = match vanilla_proofs {
        [one] => one,
        _ => return Err(shape(0, format!("{} sectors; WinningPoSt takes one", vanilla_proofs.len()))),
    };
    let [proof] = sector.vanilla_proof.sectors.as_slice() else {
        return Err(shape(0, format!("{} sector proofs; WinningPoSt takes one", sector.vanilla_proof.sectors.len())));
    };
    if proof.inclusion_proofs.len() != challenge_count {
        return Err(shape(
            0,
            format!(
                "{} inclusion proofs; WinningPoSt challenges {challenge_count} leaves",
                proof.inclusion_proofs.len()
            ),
        ));
    }
    let sectors = proof
        .inclusion_proofs
        .iter()
        .map(|inclusion| SectorProof {
            inclusion_proofs: vec![inclusion.clone()],
            comm_c: proof.comm_c,
            comm_r_last: proof.comm_r_last,
        })
        .collect();
    Ok(fallback::Proof { sectors })
}

/// WindowPoSt partition `partition`'s public inputs, as storage-proofs'
/// `FallbackPoStCompound::generate_public_inputs` derives them from a whole
/// deadline's sectors (chunk `partition`), from the partition's own sectors:
/// per sector comm_r, then each challenged leaf's path bits (the challenge
/// drawn from the randomness, the sector id and the sector's index in the
/// deadline); the last sector's inputs repeated up to the sector count.
/// storage-proofs would need the deadline's earlier partitions too (~40 B
/// per sector before ours: 94 MB at partition 1000 of 32 GiB sectors);
/// equal to it on every partition index tested.
fn window_public_inputs<Tree: 'static + MerkleTreeTrait>(
    inputs: &fallback::PublicInputs<TreeDomain<Tree>>,
    params: &fallback::PublicParams,
    partition: usize,
) -> anyhow::Result<Vec<Scalar>> {
    let per_chunk = params.sector_count;
    anyhow::ensure!(
        !inputs.sectors.is_empty() && inputs.sectors.len() <= per_chunk,
        "{} sectors in a partition of {per_chunk}",
        inputs.sectors.len()
    );
    let por_params = por::PublicParams { leaves: params.sector_size as usize / NODE_SIZE, private: true };
    let mut out = Vec::new();
    let mut per_sector = 0;
    for (i, sector) in inputs.sectors.iter().enumerate() {
        let start = out.len();
        out.push(sector.comm_r.into());
        let sector_index = partition * per_chunk + i;
        for n in 0..params.challenge_count {
            let challenge_index = get_challenge_index(params.api_version, sector_index, params.challenge_count, n);
            let leaf = generate_leaf_challenge(params, inputs.randomness, u64::from(sector.id), challenge_index);
            let por_inputs = por::PublicInputs { commitment: None, challenge: leaf as usize };
            out.extend(PoRCompound::<Tree>::generate_public_inputs(&por_inputs, &por_params, Some(partition))?);
        }
        per_sector = out.len() - start;
    }
    let last = out.len() - per_sector;
    for _ in inputs.sectors.len()..per_chunk {
        out.extend_from_within(last..last + per_sector);
    }
    Ok(out)
}

impl<Tree: 'static + MerkleTreeTrait> ProofInstance for FallbackPoStInstance<Tree> {
    fn num_partitions(&self) -> usize {
        1
    }

    fn sector_size(&self) -> u64 {
        self.sector_size
    }

    fn parameter_id(&self) -> &str {
        &self.parameter_id
    }

    /// storage-proofs' vanilla verifier on the circuit's sector proofs with
    /// the inputs the SNARK verifier uses: for WinningPoSt every one of the
    /// 66 challenges (filecoin-proofs' own prover checks the first).
    fn check_vanilla_proofs(&self) -> Result<(), SynthError> {
        // storage-proofs' verifier takes comm_r_last from the paths' root;
        // the circuit takes the sector proof's own field. Proofs where the
        // two differ would pass the first and never verify: refused here.
        let roots_agree = self
            .partition_proof
            .sectors
            .iter()
            .all(|p| p.inclusion_proofs.iter().all(|path| path.root() == p.comm_r_last));
        if !roots_agree {
            return Err(input_error(PoStInputError::InvalidVanillaProofs));
        }
        no_panic(0, || {
            match FallbackPoSt::<Tree>::verify(&self.vanilla_params, &self.verifier_inputs, &self.partition_proof) {
                Ok(true) => Ok(()),
                _ => Err(input_error(PoStInputError::InvalidVanillaProofs)),
            }
        })
    }

    /// The circuit on an extensible constraint system: storage-proofs
    /// synthesizes groups of sectors concurrently and appends them in order
    /// (bellperson's prover takes the same path).
    fn synthesize_partition(&self, k: usize) -> Result<Synthesized, SynthError> {
        self.only_partition(k)?;
        let circuit = self.circuit()?;
        no_panic(k, || synthesize(circuit).map_err(|source| SynthError::Synthesis { partition: k, source }))
    }

    /// Natively, sectors concurrently (`native/post.rs`); equal to
    /// [`ProofInstance::synthesize_witness_gadgets`] (tested).
    fn synthesize_witness(&self, k: usize) -> Result<(Vec<Scalar>, Vec<Scalar>), SynthError> {
        self.only_partition(k)?;
        let parts: Vec<AssignmentCs> = self.native_parts()?;
        let mut inputs = Vec::with_capacity(1 + parts.iter().map(|p| p.inputs.len()).sum::<usize>());
        inputs.push(Scalar::ONE);
        let mut aux = Vec::with_capacity(parts.iter().map(|p| p.aux.len()).sum());
        for part in &parts {
            inputs.extend_from_slice(&part.inputs);
            aux.extend_from_slice(&part.aux);
        }
        Ok((inputs, aux))
    }

    /// Natively into compact parts, appended in order.
    fn synthesize_compact_witness(&self, k: usize) -> Result<(Vec<Scalar>, CompactWitness), SynthError> {
        self.only_partition(k)?;
        let parts: Vec<CompactCs> = self.native_parts()?;
        let mut inputs = vec![Scalar::ONE];
        let mut aux = CompactWitness::from_scalars(&[]);
        aux.reserve(parts.iter().map(|p| p.aux.len()).sum(), parts.iter().map(|p| p.aux.full_count()).sum());
        for part in &parts {
            inputs.extend_from_slice(&part.inputs);
            aux.append(&part.aux);
        }
        Ok((inputs, aux))
    }

    /// The circuit's gadgets on a witness-only constraint system (storage-
    /// proofs' sector groups concurrently).
    fn synthesize_witness_gadgets(&self, k: usize) -> Result<(Vec<Scalar>, Vec<Scalar>), SynthError> {
        self.only_partition(k)?;
        let circuit = self.circuit()?;
        let cs = no_panic(k, || {
            crate::cs::witness_of(circuit, AssignmentCs::default())
                .map_err(|source| SynthError::Synthesis { partition: k, source })
        })?;
        Ok((cs.inputs, cs.aux))
    }

    /// The blank circuit on the extensible recorder: storage-proofs-post
    /// records groups of sectors concurrently (one per core,
    /// `window_post_synthesis_num_cpus`) and appends them in order, as for
    /// bellperson's prover. One pass took > 7 min for a 32 GiB WindowPoSt
    /// partition (125 M constraints) on the H200 host.
    fn record_matrices(&self) -> Result<ConstraintMatrices, MatrixError> {
        no_panic(0, || Ok(ConstraintMatrices::record(self.blank_circuit())))
            .map_err(|e| MatrixError::Circuit(e.to_string()))?
    }

    /// The blank circuit's sectors recorded one after the other on one
    /// constraint system (storage-proofs-post's non-extensible path).
    fn record_matrices_sequential(&self) -> Result<ConstraintMatrices, MatrixError> {
        /// The sectors in order, on whatever constraint system.
        struct OnePass<Tree: MerkleTreeTrait>(FallbackPoStCircuit<Tree>);
        impl<Tree: 'static + MerkleTreeTrait> bellperson::Circuit<Scalar> for OnePass<Tree> {
            fn synthesize<CS: bellperson::ConstraintSystem<Scalar>>(
                self,
                cs: &mut CS,
            ) -> Result<(), bellperson::SynthesisError> {
                self.0.sectors.iter().try_for_each(|sector| sector.synthesize(cs))
            }
        }
        no_panic(0, || Ok(ConstraintMatrices::record(OnePass(self.blank_circuit()))))
            .map_err(|e| MatrixError::Circuit(e.to_string()))?
    }

    fn public_inputs(&self, k: usize) -> Result<Vec<Scalar>, SynthError> {
        self.only_partition(k)?;
        let circuit_err = |e: anyhow::Error| SynthError::Circuit { partition: k, message: e.to_string() };
        no_panic(k, || match self.kind {
            PoStKind::Window { partition_index } => {
                window_public_inputs::<Tree>(&self.verifier_inputs, &self.vanilla_params, partition_index)
                    .map_err(circuit_err)
            }
            PoStKind::Winning => {
                <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::generate_public_inputs(
                    &self.verifier_inputs,
                    &self.vanilla_params,
                    Some(0),
                )
                .map_err(circuit_err)
            }
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
        let circuits = partitions
            .iter()
            .map(|&k| self.only_partition(k).and_then(|_| self.circuit()))
            .collect::<Result<_, _>>()?;
        prove_with_bellperson(circuits, params, r, s)
    }
}

/// Decodes a request's vanilla proofs (each a bincode
/// `FallbackPoStSectorProof`, as filecoin-proofs-api's
/// `generate_single_vanilla_proof` writes them and Curio sends them) and
/// builds the instance for `registered_proof`'s sector size. `kind` must
/// match the registered proof's type.
pub fn post_instance(
    registered_proof: RegisteredPoStProof,
    kind: PoStKind,
    randomness: &[u8; 32],
    prover_id: &[u8; 32],
    vanilla_proofs: &[Vec<u8>],
) -> Result<Box<dyn ProofInstance>, SynthError> {
    let config = registered_proof.as_v1_config();
    let expected = match kind {
        PoStKind::Winning => ("WinningPoSt", PoStType::Winning),
        PoStKind::Window { .. } => ("WindowPoSt", PoStType::Window),
    };
    if config.typ != expected.1 {
        return Err(input_error(PoStInputError::ProofKind {
            registered_proof: format!("{registered_proof:?}"),
            expected: expected.0,
        }));
    }
    fn boxed<Tree: 'static + MerkleTreeTrait>(
        config: &PoStConfig,
        kind: PoStKind,
        randomness: &[u8; 32],
        prover_id: &[u8; 32],
        vanilla_proofs: &[Vec<u8>],
    ) -> Result<Box<dyn ProofInstance>, SynthError> {
        let proofs = vanilla_proofs
            .iter()
            .enumerate()
            .map(|(index, bytes)| {
                bincode::deserialize::<FallbackPoStSectorProof<Tree>>(bytes)
                    .map_err(|e| input_error(PoStInputError::Decode { index, reason: e.to_string() }))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Box::new(FallbackPoStInstance::<Tree>::new(config, kind, randomness, prover_id, proofs)?))
    }
    match u64::from(config.sector_size) {
        SECTOR_SIZE_2_KIB => boxed::<SectorShape2KiB>(&config, kind, randomness, prover_id, vanilla_proofs),
        SECTOR_SIZE_8_MIB => boxed::<SectorShape8MiB>(&config, kind, randomness, prover_id, vanilla_proofs),
        SECTOR_SIZE_512_MIB => boxed::<SectorShape512MiB>(&config, kind, randomness, prover_id, vanilla_proofs),
        SECTOR_SIZE_32_GIB => boxed::<SectorShape32GiB>(&config, kind, randomness, prover_id, vanilla_proofs),
        SECTOR_SIZE_64_GIB => boxed::<SectorShape64GiB>(&config, kind, randomness, prover_id, vanilla_proofs),
        other => Err(SynthError::Unsupported(format!("sector size {other}"))),
    }
}
