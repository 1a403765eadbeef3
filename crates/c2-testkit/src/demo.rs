//! Sectors and parameters made on the spot, for examples, tests and
//! benchmarks: a tiny StackedDrg set-up that proves in seconds, the
//! registered seal flow (PC1, PC2, C1) for real C1 outputs, and random
//! Groth16 parameters written under filecoin-proofs' file names.
//!
//! Random parameters verify only against their own verifying key: keep them
//! in a folder of their own, never in a production parameter cache.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bellperson::groth16::Parameters;
use blstrs::{Bls12, Scalar};
use ff::Field;
use filecoin_hashers::{poseidon::PoseidonHasher, Hasher};
use filecoin_proofs::{DefaultPieceHasher, PaddedBytesAmount, UnpaddedBytesAmount};
use filecoin_proofs_api::post::{generate_fallback_sector_challenges, generate_single_vanilla_proof};
use filecoin_proofs_api::seal::{add_piece, seal_commit_phase1, seal_pre_commit_phase1, seal_pre_commit_phase2};
use filecoin_proofs_api::update::{empty_sector_update_encode_into, generate_partition_proofs};
use filecoin_proofs_api::{
    PrivateReplicaInfo, PublicReplicaInfo, RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof, SectorId,
};
use generic_array::typenum::{U0, U8};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use storage_proofs_core::{
    api_version::ApiVersion, compound_proof, compound_proof::CompoundProof, drgraph::BASE_DEGREE, merkle::DiskTree,
    proof::ProofScheme, test_helper::setup_replica,
};
use storage_proofs_porep::stacked::{
    self, Challenges, PrivateInputs, StackedCompound, StackedDrg, TemporaryAuxCache, EXP_DEGREE,
};

use c2_synth::{ProofInstance, StackedInstance};

use porep_c2::{params_path, read_parameters, verifying_key_path, write_parameters, Error, SealCommitPhase1Output};

/// The Merkle tree shape of the tiny sector (that of 2 KiB sectors).
pub type TinyTree = DiskTree<PoseidonHasher, U8, U0, U0>;

/// Shape of a tiny sector.
#[derive(Clone, Debug)]
pub struct TinyConfig {
    /// Nodes of 32 bytes; a power of 8 (the tree arity), at least 8.
    pub nodes: usize,
    /// Layers of labelling: 2 or 11 (the column-hash arities the circuit
    /// supports).
    pub layers: usize,
    /// Challenges per partition.
    pub challenges: usize,
    /// Partitions (Groth16 proofs).
    pub partitions: usize,
    /// Seed for data, replica id and challenge seed.
    pub seed: u64,
}

impl Default for TinyConfig {
    /// 64 nodes (2 KiB), 2 layers, 1 challenge, 1 partition: the smallest
    /// StackedDrg circuit storage-proofs accepts (~1.3 M constraints, half the
    /// registered 2 KiB circuit, whose cost is the SHA-256 labelling).
    fn default() -> Self {
        Self { nodes: 64, layers: 2, challenges: 1, partitions: 1, seed: 0 }
    }
}

/// Errors making a demo sector.
#[derive(Debug, thiserror::Error)]
#[error("making demo sector: {0}")]
pub struct DemoError(pub String);

fn demo_err(e: impl std::fmt::Display) -> DemoError {
    DemoError(e.to_string())
}

/// Replicates a tiny sector with storage-proofs-porep and computes its
/// vanilla proofs: a real StackedDrg instance, built without the registered
/// proof types (which would need ~14 minutes of parameter generation).
pub fn tiny_instance(config: &TinyConfig) -> Result<StackedInstance<TinyTree>, DemoError> {
    let parts = tiny_parts(config)?;
    StackedInstance::new(parts.vanilla_params, parts.public_inputs, parts.vanilla_proofs).map_err(demo_err)
}

/// The pieces of a tiny instance, for callers that want to alter one (tests
/// of tampered inputs) before building the [`StackedInstance`].
pub struct TinyParts {
    /// StackedDrg public parameters.
    pub vanilla_params: stacked::PublicParams<TinyTree>,
    /// Replica id, commitments and challenge seed.
    pub public_inputs:
        stacked::PublicInputs<<PoseidonHasher as Hasher>::Domain, <DefaultPieceHasher as Hasher>::Domain>,
    /// Vanilla proofs per partition.
    pub vanilla_proofs: Vec<Vec<stacked::Proof<TinyTree, DefaultPieceHasher>>>,
}

/// Replicates a tiny sector and computes its vanilla proofs (see
/// [`tiny_instance`]).
pub fn tiny_parts(config: &TinyConfig) -> Result<TinyParts, DemoError> {
    // storage-proofs panics on shapes it does not support; refuse them here.
    if config.layers != 2 && config.layers != 11 {
        return Err(DemoError(format!("{} layers: the column hash supports 2 or 11", config.layers)));
    }
    if config.nodes < 8 || !config.nodes.is_power_of_two() || !config.nodes.trailing_zeros().is_multiple_of(3) {
        return Err(DemoError(format!("{} nodes: must be a power of 8, at least 8", config.nodes)));
    }
    if config.challenges == 0 || config.partitions == 0 {
        return Err(DemoError("challenges and partitions must be at least 1".into()));
    }
    let mut rng = ChaCha20Rng::seed_from_u64(config.seed);
    let setup = compound_proof::SetupParams {
        vanilla_params: stacked::SetupParams {
            nodes: config.nodes,
            degree: BASE_DEGREE,
            expansion_degree: EXP_DEGREE,
            porep_id: [55; 32],
            challenges: Challenges::new_interactive(config.challenges),
            num_layers: config.layers,
            api_version: ApiVersion::V1_1_0,
            api_features: vec![],
        },
        partitions: Some(config.partitions),
        priority: false,
    };
    let pp = <StackedCompound<TinyTree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, TinyTree, DefaultPieceHasher>,
        _,
    >>::setup(&setup)
    .map_err(demo_err)?;

    let dir = tempfile::tempdir().map_err(demo_err)?;
    let replica_path = dir.path().join("replica");
    let data: Vec<u8> = (0..config.nodes).flat_map(|_| Scalar::random(&mut rng).to_bytes_le()).collect();
    let mut mmapped = setup_replica(&data, &replica_path);
    let replica_id = <PoseidonHasher as Hasher>::Domain::from(Scalar::random(&mut rng));

    let (labels, _) =
        StackedDrg::<TinyTree, DefaultPieceHasher>::replicate_phase1(&pp.vanilla_params, &replica_id, dir.path())
            .map_err(demo_err)?;
    let (tau, (p_aux, t_aux)) = StackedDrg::<TinyTree, DefaultPieceHasher>::replicate_phase2(
        &pp.vanilla_params,
        labels,
        (mmapped.as_mut()).into(),
        None,
        dir.path().to_path_buf(),
        replica_path.clone(),
    )
    .map_err(demo_err)?;

    let public_inputs = stacked::PublicInputs { replica_id, seed: Some(rng.gen()), tau: Some(tau), k: None };
    let t_aux =
        TemporaryAuxCache::<TinyTree, DefaultPieceHasher>::new(&t_aux, replica_path, false).map_err(demo_err)?;
    let private_inputs = PrivateInputs::<TinyTree, DefaultPieceHasher> { p_aux, t_aux };
    let vanilla = StackedDrg::<TinyTree, DefaultPieceHasher>::prove_all_partitions(
        &pp.vanilla_params,
        &public_inputs,
        &private_inputs,
        config.partitions,
    )
    .map_err(demo_err)?;
    Ok(TinyParts { vanilla_params: pp.vanilla_params, public_inputs, vanilla_proofs: vanilla })
}

/// The seed of the tiny sector's test parameters, shared by the example,
/// the `porep-c2 bench` default and the tests, so one generation serves
/// them all.
pub const TINY_PARAMS_SEED: u64 = 7;

/// Where the tools keep the tiny sector's test parameters: the build's
/// `target/tmp/test-params` (what the tests use, `CARGO_TARGET_TMPDIR`), found
/// from the running executable (cargo keeps `.rustc_info.json`, and lately
/// `CACHEDIR.TAG`, at the root of its target folder); the system's temporary
/// folder when not run from a cargo build.
pub fn tiny_params_dir() -> PathBuf {
    let is_target = |d: &Path| d.join(".rustc_info.json").is_file() || d.join("CACHEDIR.TAG").is_file();
    let target = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().skip(1).find(|d| is_target(d)).map(Path::to_path_buf));
    match target {
        Some(target) => target.join("tmp").join("test-params"),
        None => std::env::temp_dir().join("porep-c2-demo-params"),
    }
}

/// Reads the parameters for `instance` from `dir` (filecoin-proofs' file
/// names), generating and writing random ones from `seed` first when they are
/// missing. Returns the parameters and whether they were generated.
///
/// Safe when several threads or processes ask for the same set at once:
/// the first generates it under `<params>.lock` (an exclusive file lock)
/// while the others wait, then read what it wrote.
pub fn ensure_parameters(
    instance: &dyn ProofInstance,
    dir: &Path,
    seed: u64,
) -> Result<(Arc<Parameters<Bls12>>, bool), Error> {
    let path = params_path(dir, instance.parameter_id());
    if path.exists() {
        return Ok((Arc::new(read_parameters(&path)?), false));
    }
    let io = |source| Error::from(porep_c2::ParamsError::Io { path: path.clone(), source });
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let lock = std::fs::File::create(&lock_path).map_err(io)?;
    lock.lock().map_err(io)?;
    // Another thread or process may have written the set while this one
    // waited for the lock.
    if path.exists() {
        return Ok((Arc::new(read_parameters(&path)?), false));
    }
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    // From the recorded matrices where the shape has them (the same bytes
    // as bellperson's generator for the same seed, several times faster:
    // `crate::setup`); bellperson's own generator otherwise.
    let params = match instance.record_matrices() {
        Ok(m) => {
            let waste = crate::setup::draw(&mut rng);
            let threads = rayon::current_num_threads();
            eprintln!(
                "generating Groth16 test parameters for {} ({} constraints) into {}: about {:.0?} on {threads} threads \
                 (estimated from this machine's rate; once, then read from there)",
                instance.parameter_id(),
                m.constraints(),
                dir.display(),
                crate::setup::estimate(&m, threads),
            );
            let bar = indicatif::ProgressBar::new(0).with_style(
                indicatif::ProgressStyle::with_template("{msg:>10} [{bar:40}] {pos}/{len} points, ETA {eta}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            let progress = |step| match step {
                crate::setup::SetupStep::Query(name, points) => {
                    bar.set_message(name);
                    bar.set_length(points);
                    bar.set_position(0);
                    bar.reset_eta();
                }
                crate::setup::SetupStep::Points(n) => bar.inc(n),
            };
            let params = crate::setup::generate_parameters_with(&m, &waste, &progress)
                .map_err(|e| Error::Synthesis(c2_synth::SynthError::Unsupported(format!("test set-up: {e}"))))?;
            bar.finish_and_clear();
            params
        }
        Err(c2_synth::MatrixError::Unsupported(_)) => {
            eprintln!(
                "generating Groth16 test parameters for {} with bellperson's generator into {} (once)",
                instance.parameter_id(),
                dir.display()
            );
            instance.generate_parameters(&mut rng)?
        }
        Err(e) => return Err(e.into()),
    };
    write_parameters(&params, &path, Some(&verifying_key_path(dir, instance.parameter_id())))?;
    Ok((Arc::new(params), true))
}

/// A sector sealed with the registered flow, up to its C1 output.
pub struct SealedSector {
    /// The C1 output, as Lotus would write it.
    pub c1: SealCommitPhase1Output,
    /// Prover id used.
    pub prover_id: [u8; 32],
    /// Sector id used.
    pub sector_id: SectorId,
    /// Sector cache and replica (kept so the caller can inspect them).
    pub dir: PathBuf,
}

impl SealedSector {
    /// filecoin-proofs' own verifier (`verify_seal`) on `proof` (a C2
    /// output's bytes) for this sector.
    pub fn verify_seal(&self, proof: &[u8]) -> Result<bool, DemoError> {
        let c1 = &self.c1;
        filecoin_proofs_api::seal::verify_seal(
            c1.registered_proof,
            c1.comm_r,
            c1.comm_d,
            self.prover_id,
            self.sector_id,
            c1.ticket,
            c1.seed,
            proof,
        )
        .map_err(demo_err)
    }
}

impl SealedSector {
    /// The replica as a PoSt prover reads it (filecoin-proofs-api's
    /// `PrivateReplicaInfo`: comm_r, the cache folder with tree R, the
    /// sealed file).
    pub fn private_replica(&self, registered_proof: RegisteredPoStProof) -> PrivateReplicaInfo {
        PrivateReplicaInfo::new(registered_proof, self.c1.comm_r, self.dir.join("cache"), self.dir.join("sealed"))
    }

    /// The replica as a PoSt verifier sees it.
    pub fn public_replica(&self, registered_proof: RegisteredPoStProof) -> PublicReplicaInfo {
        PublicReplicaInfo::new(registered_proof, self.c1.comm_r)
    }
}

/// PoSt vanilla proofs for `sectors` (one prover's), one per sector in
/// order, as a node makes them and Curio sends them: filecoin-proofs-api's
/// `generate_fallback_sector_challenges`, then
/// `generate_single_vanilla_proof` per sector (a bincode
/// `FallbackPoStSectorProof` each). For WinningPoSt pass the one challenged
/// sector.
pub fn post_vanilla_proofs(
    registered_proof: RegisteredPoStProof,
    sectors: &[&SealedSector],
    randomness: &[u8; 32],
) -> Result<Vec<Vec<u8>>, DemoError> {
    let first = sectors.first().ok_or_else(|| DemoError("no sectors".into()))?;
    let ids: Vec<SectorId> = sectors.iter().map(|s| s.sector_id).collect();
    let challenges =
        generate_fallback_sector_challenges(registered_proof, randomness, &ids, first.prover_id).map_err(demo_err)?;
    sectors
        .iter()
        .map(|s| {
            let sector_challenges = challenges
                .get(&s.sector_id)
                .ok_or_else(|| DemoError(format!("no challenges for {:?}", s.sector_id)))?;
            generate_single_vanilla_proof(
                registered_proof,
                s.sector_id,
                &s.private_replica(registered_proof),
                sector_challenges,
            )
            .map_err(demo_err)
        })
        .collect()
}

/// A sector's worth of random data (drawn from `rng`) written to `staged`
/// as one piece, filecoin-proofs' `add_piece`: what sealing and an update
/// encode.
fn stage_random_data(
    registered_proof: RegisteredSealProof,
    staged: &Path,
    rng: &mut ChaCha20Rng,
) -> Result<filecoin_proofs_api::PieceInfo, DemoError> {
    let sector_size = u64::from(registered_proof.sector_size());
    let unpadded = UnpaddedBytesAmount::from(PaddedBytesAmount(sector_size));
    let mut data = vec![0u8; u64::from(unpadded) as usize];
    rng.fill(&mut data[..]);
    let mut staged_file =
        OpenOptions::new().read(true).write(true).create(true).truncate(true).open(staged).map_err(demo_err)?;
    let (piece, _) = add_piece(registered_proof, &data[..], &mut staged_file, unpadded, &[]).map_err(demo_err)?;
    staged_file.flush().map_err(demo_err)?;
    Ok(piece)
}

/// A sealed sector updated with new data (SnapDeals), with its partition
/// vanilla proofs as a node makes them and Curio sends them.
pub struct UpdatedSector {
    /// The update proof type (the sealed sector's size).
    pub registered_proof: RegisteredUpdateProof,
    /// The sealed sector's comm_r (the sector key's).
    pub comm_r_old: [u8; 32],
    /// The updated replica's comm_r.
    pub comm_r_new: [u8; 32],
    /// The new data's comm_d.
    pub comm_d_new: [u8; 32],
    /// One bincode `PartitionProof` per partition (filecoin-proofs-api's
    /// `generate_partition_proofs`).
    pub vanilla_proofs: Vec<Vec<u8>>,
}

impl UpdatedSector {
    /// filecoin-proofs' own verifier (`verify_empty_sector_update_proof`)
    /// on `proof` for this update.
    pub fn verify(&self, proof: &[u8]) -> Result<bool, DemoError> {
        filecoin_proofs_api::update::verify_empty_sector_update_proof(
            self.registered_proof,
            proof,
            self.comm_r_old,
            self.comm_r_new,
            self.comm_d_new,
        )
        .map_err(demo_err)
    }
}

/// Encodes random data (seeded) into `sector`'s replica as a SnapDeals
/// update does (filecoin-proofs-api's `empty_sector_update_encode_into`,
/// the sealed replica as the sector key), then makes the partition vanilla
/// proofs (`generate_partition_proofs`). Files go under the sector's
/// folder. Needs no Groth16 parameters.
pub fn update_sector(sector: &SealedSector, seed: u64) -> Result<UpdatedSector, DemoError> {
    let registered_proof = match u64::from(sector.c1.registered_proof.sector_size()) {
        2048 => RegisteredUpdateProof::StackedDrg2KiBV1,
        0x80_0000 => RegisteredUpdateProof::StackedDrg8MiBV1,
        0x2000_0000 => RegisteredUpdateProof::StackedDrg512MiBV1,
        0x8_0000_0000 => RegisteredUpdateProof::StackedDrg32GiBV1,
        0x10_0000_0000 => RegisteredUpdateProof::StackedDrg64GiBV1,
        other => return Err(DemoError(format!("no update proof for {other} B sectors"))),
    };
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let dir = &sector.dir;
    let (key, key_cache) = (dir.join("sealed"), dir.join("cache"));
    let (staged, replica, cache) = (dir.join("update-staged"), dir.join("update-replica"), dir.join("update-cache"));
    std::fs::create_dir_all(&cache).map_err(demo_err)?;
    let piece = stage_random_data(sector.c1.registered_proof, &staged, &mut rng)?;
    // The new replica starts as a copy of the sector key, as a node's does.
    std::fs::copy(&key, &replica).map_err(demo_err)?;
    let encoded =
        empty_sector_update_encode_into(registered_proof, &replica, &cache, &key, &key_cache, &staged, &[piece])
            .map_err(demo_err)?;
    let comm_r_old = sector.c1.comm_r;
    let vanilla_proofs = generate_partition_proofs(
        registered_proof,
        comm_r_old,
        encoded.comm_r_new,
        encoded.comm_d_new,
        &key,
        &key_cache,
        &replica,
        &cache,
    )
    .map_err(demo_err)?
    .into_iter()
    .map(|p| p.0)
    .collect();
    Ok(UpdatedSector {
        registered_proof,
        comm_r_old,
        comm_r_new: encoded.comm_r_new,
        comm_d_new: encoded.comm_d_new,
        vanilla_proofs,
    })
}

/// Runs filecoin-proofs' own PC1, PC2 and C1 on random data (seeded) for a
/// registered proof type, in `dir`. Needs no Groth16 parameters.
pub fn seal_registered(
    registered_proof: RegisteredSealProof,
    dir: &Path,
    seed: u64,
) -> Result<SealedSector, DemoError> {
    seal_registered_for(registered_proof, dir, seed, None, None)
}

/// [`seal_registered`] for this prover id (e.g. a miner's, so a service
/// that derives it from the actor id proves the sector) and sector number;
/// `None`: random ones from the seed. The other random choices do not
/// depend on them.
pub fn seal_registered_for(
    registered_proof: RegisteredSealProof,
    dir: &Path,
    seed: u64,
    prover_id: Option<[u8; 32]>,
    sector_id: Option<u64>,
) -> Result<SealedSector, DemoError> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    std::fs::create_dir_all(dir).map_err(demo_err)?;
    let cache = dir.join("cache");
    std::fs::create_dir_all(&cache).map_err(demo_err)?;
    let staged = dir.join("staged");
    let sealed = dir.join("sealed");

    let piece = stage_random_data(registered_proof, &staged, &mut rng)?;
    File::create(&sealed).map_err(demo_err)?;

    let drawn: [u8; 32] = rng.gen();
    let prover_id = prover_id.unwrap_or(drawn);
    let drawn = rng.gen_range(1..1_000_000u64);
    let sector_id = SectorId::from(sector_id.unwrap_or(drawn));
    let ticket: [u8; 32] = rng.gen();
    let mut seed_bytes: [u8; 32] = rng.gen();
    seed_bytes[31] &= 0x3f;
    let pieces = [piece];
    let pc1 = seal_pre_commit_phase1(registered_proof, &cache, &staged, &sealed, prover_id, sector_id, ticket, &pieces)
        .map_err(demo_err)?;
    let pc2 = seal_pre_commit_phase2(pc1, &cache, &sealed).map_err(demo_err)?;
    let c1 = seal_commit_phase1(&cache, &sealed, prover_id, sector_id, ticket, seed_bytes, pc2, &pieces)
        .map_err(demo_err)?;
    Ok(SealedSector { c1, prover_id, sector_id, dir: dir.to_path_buf() })
}

/// The parameter id (cache file stem) of a registered proof type.
pub fn registered_parameter_id(registered_proof: RegisteredSealProof) -> Result<String, Error> {
    registered_proof
        .circuit_identifier()
        .map_err(|e| Error::Synthesis(c2_synth::SynthError::Unsupported(e.to_string())))
}

/// Random Groth16 parameters for a registered proof type (minutes to hours:
/// 2 KiB takes ~14 minutes on 2 cores), written to `dir` under
/// filecoin-proofs' names unless already there.
pub fn ensure_registered_parameters(
    c1: &SealCommitPhase1Output,
    prover_id: [u8; 32],
    sector_id: SectorId,
    dir: &Path,
    seed: u64,
) -> Result<(Arc<Parameters<Bls12>>, bool), Error> {
    let instance = c2_synth::instance_from_c1(c1, prover_id, u64::from(sector_id))?;
    ensure_parameters(instance.as_ref(), dir, seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example proves the tiny sector with one partition, the tests
    /// with two: the circuit (and so the parameter set) is the same.
    #[test]
    fn the_tiny_parameter_set_does_not_depend_on_partitions() {
        let one = tiny_instance(&TinyConfig::default()).unwrap();
        let two = tiny_instance(&TinyConfig { partitions: 2, ..TinyConfig::default() }).unwrap();
        assert_eq!(one.parameter_id(), two.parameter_id());
    }
}
