//! Curio's SnapDeals request (`UpdateProve` through `lib/ffi/cuzk_funcs.go`:
//! id `snap-<miner>-<sector>`, `abi.RegisteredUpdateProof` number, NORMAL,
//! bincode partition proofs from filecoin-proofs' own
//! `generate_partition_proofs` on a real sealed and updated 2 KiB sector,
//! the three commitments raw) sent over gRPC to the service with the real
//! engine on the CPU. The proof is checked as a chain node would:
//! filecoin-proofs' `verify_empty_sector_update_proof`. Bad requests fail
//! with a message that says why, and the service serves on.
//!
//! The update circuit's random parameters are generated once into the
//! tests' parameter folder with the seed the library's
//! `tests/update_2kib.rs` uses, so either test binary makes the same file.

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use c2_testkit::demo;
use common::Daemon;
use filecoin_proofs_api::RegisteredSealProof;
use porep_c2::{update_instance, ParamsSource, ProverConfig};
use porep_c2_service::proto::await_proof_response::Status as AwaitStatus;
use porep_c2_service::proto::{self, proving_engine_client::ProvingEngineClient};
use porep_c2_service::{curio, prover_id_from_actor, FilecoinEngine, JobsConfig};
use tonic::transport::Channel;

const MINER: u64 = 1000;
const SECTOR: u64 = 301;

fn test_params_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("test-params")
}

async fn prove(c: &mut ProvingEngineClient<Channel>, r: proto::SubmitProofRequest) -> proto::AwaitProofResponse {
    c.prove(proto::ProveRequest { submit: Some(r) }).await.unwrap().into_inner().result.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn curios_snap_request_is_proved_and_verifies() {
    std::env::set_var(porep_c2::PARAMETER_CACHE_ENV, test_params_dir());
    let _ = env_logger::builder().is_test(true).try_init();
    let work = tempfile::tempdir().unwrap();
    let prover_id = prover_id_from_actor(MINER);
    let sealed = demo::seal_registered_for(
        RegisteredSealProof::StackedDrg2KiBV1_1,
        &work.path().join("s"),
        80,
        Some(prover_id),
        Some(SECTOR),
    )
    .unwrap();
    let u = demo::update_sector(&sealed, 81).unwrap();
    let instance =
        update_instance(u.registered_proof, &u.vanilla_proofs, &u.comm_r_old, &u.comm_r_new, &u.comm_d_new).unwrap();
    demo::ensure_parameters(instance.as_ref(), &test_params_dir(), 11).unwrap();

    let config = ProverConfig { params: ParamsSource::CacheDir(test_params_dir()), ..ProverConfig::default() };
    let jobs = JobsConfig { concurrent_proofs: 1, max_pending: 8, ..JobsConfig::default() };
    let daemon = Daemon::with_jobs(Arc::new(FilecoinEngine::new(config)), jobs).await;
    let mut c = daemon.client().await;
    // abi.RegisteredUpdateProof 0: StackedDrg2KiBV1.
    let request = |vanilla: Vec<Vec<u8>>, old: &[u8; 32], new: &[u8; 32]| {
        curio::snap_update(MINER, SECTOR, 0, 2048, vanilla, old, new, &u.comm_d_new)
    };
    let good = request(u.vanilla_proofs.clone(), &u.comm_r_old, &u.comm_r_new);
    let r = prove(&mut c, good.clone()).await;
    assert_eq!(r.status, AwaitStatus::Completed as i32, "{r:?}");
    assert_eq!(r.proof.len(), 192);
    assert!(u.verify(&r.proof).unwrap(), "verify_empty_sector_update_proof accepts the daemon's proof");

    let failed = |r: &proto::AwaitProofResponse, says: &str| {
        assert_eq!(r.status, AwaitStatus::Failed as i32, "{r:?}");
        assert!(r.error_message.contains(says), "{:?} should say {says:?}", r.error_message);
    };
    // A number that is no registered update proof; a size not the proof's.
    let mut wrong_number = good.clone();
    wrong_number.registered_proof = 5;
    failed(&prove(&mut c, wrong_number).await, "not a registered update proof");
    let mut wrong_size = good.clone();
    wrong_size.sector_size = 32 << 30;
    failed(&prove(&mut c, wrong_size).await, "the request's sector_size is 34359738368");
    // A commitment of 31 bytes; one that is not a field element.
    let mut short = good.clone();
    short.comm_d_new.pop();
    failed(&prove(&mut c, short).await, "comm_d_new is 31 bytes");
    failed(
        &prove(&mut c, request(u.vanilla_proofs.clone(), &[0xff; 32], &u.comm_r_new)).await,
        "comm_r_old is not a canonical",
    );
    // Two partitions' proofs for a one-partition sector; not bincode; the
    // commitments of another update (old and new swapped).
    let two = vec![u.vanilla_proofs[0].clone(), u.vanilla_proofs[0].clone()];
    failed(&prove(&mut c, request(two, &u.comm_r_old, &u.comm_r_new)).await, "2 partition vanilla proofs");
    failed(&prove(&mut c, request(vec![vec![7; 9]], &u.comm_r_old, &u.comm_r_new)).await, "cannot be decoded");
    failed(
        &prove(&mut c, request(u.vanilla_proofs.clone(), &u.comm_r_new, &u.comm_r_old)).await,
        "does not verify against comm_r_old",
    );

    // Serving on: the good request again is proved (a new job: the failed
    // requests under its id made it theirs) and verifies.
    let again = prove(&mut c, good).await;
    assert_eq!(again.status, AwaitStatus::Completed as i32, "{again:?}");
    assert!(u.verify(&again.proof).unwrap());
    let status = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
    assert_eq!((status.total_proofs_completed, status.total_proofs_failed), (2, 7), "{status:?}");
    let metrics = c.get_metrics(proto::GetMetricsRequest {}).await.unwrap().into_inner().prometheus_text;
    let line = "porep_c2_proofs_completed_total{proof_kind=\"snap-update\"} 2";
    assert!(metrics.contains(line), "{line} in {metrics}");
    daemon.stop().await;
}
