//! Curio's WindowPoSt and WinningPoSt requests, built as
//! `lib/ffi/cuzk_funcs.go` builds them (`WindowPoStCuzk`, `WinningPoStCuzk`:
//! ids, numbers, priorities, bincode vanilla proofs from filecoin-proofs'
//! own `generate_single_vanilla_proof` on real sealed 2 KiB sectors), sent
//! over gRPC to the service with the real engine ([`FilecoinEngine`]) on
//! the CPU. The answers are checked as a chain node would: filecoin-proofs'
//! `verify_window_post` on the deadline's partitions, `verify_winning_post`
//! on the block's proof. Bad requests fail with a message that says why,
//! and the service serves on.
//!
//! The PoSt circuits' random parameters (11.5 MB and 47 MB) are generated
//! once into the tests' parameter folder with the seed the library's
//! `tests/post_2kib.rs` uses, so either test binary makes the same files.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use c2_testkit::demo::{self, SealedSector};
use common::{await_done, curio_window_post, curio_winning_post, Daemon};
use filecoin_proofs_api::post as api;
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, SectorId};
use porep_c2::{post_instance, ParamsSource, PoStKind, ProverConfig};
use porep_c2_service::proto::await_proof_response::Status as AwaitStatus;
use porep_c2_service::proto::{self, proving_engine_client::ProvingEngineClient};
use porep_c2_service::{prover_id_from_actor, FilecoinEngine, JobsConfig};
use tonic::transport::Channel;

/// The miner of every request (prover id: its actor id as filecoin-ffi
/// derives it).
const MINER: u64 = 1000;

fn test_params_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("test-params")
}

/// The chain's randomness, masked to a field element as Curio does before
/// it asks for vanilla proofs (`compute_do.go`: `randomness[31] &= 0x3f`).
fn randomness(byte: u8) -> [u8; 32] {
    let mut r = [byte; 32];
    r[31] &= 0x3f;
    r
}

async fn prove(c: &mut ProvingEngineClient<Channel>, r: proto::SubmitProofRequest) -> proto::AwaitProofResponse {
    c.prove(proto::ProveRequest { submit: Some(r) }).await.unwrap().into_inner().result.unwrap()
}

fn completed(r: &proto::AwaitProofResponse) -> bool {
    r.status == AwaitStatus::Completed as i32
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn curios_post_requests_are_proved_and_verify() {
    // filecoin-proofs reads its settings once per process: its verifiers
    // find the verifying keys in the tests' folder.
    std::env::set_var(porep_c2::PARAMETER_CACHE_ENV, test_params_dir());
    let _ = env_logger::builder().is_test(true).try_init();
    let work = tempfile::tempdir().unwrap();
    let prover_id = prover_id_from_actor(MINER);
    let sectors: Vec<SealedSector> = (0..3u64)
        .map(|i| {
            let dir = work.path().join(format!("s{i}"));
            let rp = RegisteredSealProof::StackedDrg2KiBV1_1;
            demo::seal_registered_for(rp, &dir, 60 + i, Some(prover_id), Some(200 + i)).unwrap()
        })
        .collect();
    let all: Vec<&SealedSector> = sectors.iter().collect();

    // Curio's numbers: abi.RegisteredPoStProof 10 (Window 2 KiB V1_1,
    // proofs-api's V1_2) and 0 (Winning 2 KiB V1).
    let (window_rp, window_number) = (RegisteredPoStProof::StackedDrgWindow2KiBV1_2, 10);
    let (winning_rp, winning_number) = (RegisteredPoStProof::StackedDrgWinning2KiBV1, 0);
    let window_rand = randomness(71);
    let vanilla = demo::post_vanilla_proofs(window_rp, &all, &window_rand).unwrap();
    let winning_rand = randomness(72);
    let picked =
        api::generate_winning_post_sector_challenge(winning_rp, &winning_rand, sectors.len() as u64, prover_id)
            .unwrap();
    let won = &sectors[picked[0] as usize];
    let winning_vanilla = demo::post_vanilla_proofs(winning_rp, &[won], &winning_rand).unwrap();

    // The parameters the engine reads from its folder.
    let window0 = PoStKind::Window { partition_index: 0 };
    for (rp, kind, rand, v) in [
        (window_rp, window0, &window_rand, &vanilla[..2]),
        (winning_rp, PoStKind::Winning, &winning_rand, &winning_vanilla[..]),
    ] {
        let instance = post_instance(rp, kind, rand, &prover_id, v).unwrap();
        demo::ensure_parameters(instance.as_ref(), &test_params_dir(), 11).unwrap();
    }
    let config = ProverConfig { params: ParamsSource::CacheDir(test_params_dir()), ..ProverConfig::default() };
    let jobs = JobsConfig { concurrent_proofs: 1, max_pending: 8, ..JobsConfig::default() };
    let daemon = Daemon::with_jobs(Arc::new(FilecoinEngine::new(config)), jobs).await;
    let mut c = daemon.client().await;

    // The deadline's two partitions (2 KiB: two sectors each; the second
    // has one), submitted together as Curio's WindowPoSt task does, then
    // the deadline verified as the chain does.
    let window = |k: u32, v: &[Vec<u8>]| curio_window_post(MINER, window_number, 2048, &window_rand, v.to_vec(), k);
    let p0 = c.submit_proof(window(0, &vanilla[..2])).await.unwrap().into_inner();
    let p1 = c.submit_proof(window(1, &vanilla[2..])).await.unwrap().into_inner();
    let (r0, r1) = (await_done(&mut c, &p0.job_id).await, await_done(&mut c, &p1.job_id).await);
    for r in [&r0, &r1] {
        assert!(completed(r) && r.proof.len() == 192, "{r:?}");
    }
    let replicas: BTreeMap<SectorId, _> = all.iter().map(|s| (s.sector_id, s.public_replica(window_rp))).collect();
    let deadline = [&r0.proof[..], &r1.proof[..]].concat();
    assert!(
        api::verify_window_post(&window_rand, &[(window_rp, &deadline[..])], &replicas, prover_id).unwrap(),
        "verify_window_post accepts the daemon's partitions"
    );

    // The block's WinningPoSt, verified as the chain does.
    let w =
        prove(&mut c, curio_winning_post(MINER, winning_number, 2048, &winning_rand, winning_vanilla.clone())).await;
    assert!(completed(&w) && w.proof.len() == 192, "{w:?}");
    let won_replica: BTreeMap<SectorId, _> = [(won.sector_id, won.public_replica(winning_rp))].into();
    assert!(api::verify_winning_post(&winning_rand, &w.proof, &won_replica, prover_id).unwrap(), "verify_winning_post");

    // Bad requests: FAILED with the reason, each found before any proving.
    let failed = |r: &proto::AwaitProofResponse, says: &str| {
        assert_eq!(r.status, AwaitStatus::Failed as i32, "{r:?}");
        assert!(r.error_message.contains(says), "{:?} should say {says:?}", r.error_message);
    };
    // A WinningPoSt number in a WindowPoSt request.
    let mut wrong_type = window(0, &vanilla[..2]);
    wrong_type.registered_proof = winning_number;
    failed(&prove(&mut c, wrong_type).await, "is not a window-post proof type");
    // A sector size that is not the proof type's.
    let mut wrong_size = window(0, &vanilla[..2]);
    wrong_size.sector_size = 8 << 20;
    failed(&prove(&mut c, wrong_size).await, "sector_size is 8388608");
    // Randomness of 31 bytes; not a field element.
    let mut short = window(0, &vanilla[..2]);
    short.randomness.pop();
    failed(&prove(&mut c, short).await, "randomness is 31 bytes");
    let mut unmasked = window(0, &vanilla[..2]);
    unmasked.randomness = vec![0xff; 32];
    failed(&prove(&mut c, unmasked).await, "randomness is not a canonical field element");
    // Three sectors in a partition of two.
    failed(&prove(&mut c, window(0, &vanilla)).await, "3 sector vanilla proofs");
    // Not bincode; a sector's comm_c changed (64 bytes from the end, before
    // comm_r_last): H(comm_c, comm_r_last) is no longer its comm_r.
    failed(&prove(&mut c, window(0, &[vec![1, 2, 3]])).await, "cannot be decoded as a FallbackPoStSectorProof");
    let mut tampered = vanilla[..2].to_vec();
    let at = tampered[1].len() - 64;
    tampered[1][at] ^= 1;
    failed(&prove(&mut c, window(0, &tampered)).await, "do not verify");
    // The winning sector's proof for other randomness.
    let other = curio_winning_post(MINER, winning_number, 2048, &randomness(73), winning_vanilla);
    failed(&prove(&mut c, other).await, "do not verify");

    // Serving on: partition 0's request again is proved (a new job: the
    // failed requests under its id made it theirs) and verifies.
    let again = prove(&mut c, window(0, &vanilla[..2])).await;
    assert!(completed(&again) && again.job_id != p0.job_id, "{again:?}");
    let deadline = [&again.proof[..], &r1.proof[..]].concat();
    assert!(api::verify_window_post(&window_rand, &[(window_rp, &deadline[..])], &replicas, prover_id).unwrap());
    let status = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
    assert_eq!((status.total_proofs_completed, status.total_proofs_failed), (4, 8), "{status:?}");
    let metrics = c.get_metrics(proto::GetMetricsRequest {}).await.unwrap().into_inner().prometheus_text;
    for line in [
        "porep_c2_proofs_completed_total{proof_kind=\"window-post\"} 3",
        "porep_c2_proofs_completed_total{proof_kind=\"winning-post\"} 1",
    ] {
        assert!(metrics.contains(line), "{line} in {metrics}");
    }
    daemon.stop().await;
}
