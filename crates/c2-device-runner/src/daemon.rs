//! PoSt through the daemon on the GPU (issue 39): the service's own gRPC
//! server, job table and `FilecoinEngine` in this process on a unix
//! socket, a tonic client sending requests built as Curio builds them
//! (`porep_c2_service::curio`).
//!
//! 1. Registered 2 KiB, verified: sealed 2 KiB sectors, filecoin-proofs'
//!    vanilla proofs, Groth16 parameters generated for the PoSt circuits
//!    (written as filecoin-proofs names them); WindowPoSt (one partition of
//!    two sectors), WinningPoSt and a SnapDeals update of a third sector
//!    through the daemon on the GPU workers, accepted by
//!    `verify_window_post` / `verify_winning_post` /
//!    `verify_empty_sector_update_proof`.
//! 2. WinningPoSt 32 GiB latency: alone, then while the GPU proves 32 GiB
//!    C2 sectors (CC test sectors in Curio's envelope, two at once), with
//!    the host lanes on (`[jobs] background_nice = 10`, the default) and
//!    off. Groth16 test parameters generated for both circuits on the GPU
//!    (`crate::setup::params_for`), so the engine verifies every proof.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use c2_synth::{
    cc_sector, instance_from_c1, post_instance, post_test_sectors, update_instance, CcSectorConfig, PoStKind,
    ProofInstance,
};
use c2_testkit::demo::{self, SealedSector};
use filecoin_proofs_api::post as api;
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, SectorId};
use porep_c2::gpu::{gpu_backend, GpuBackendConfig};
use porep_c2::{C1Envelope, HostLanes, MatrixStore, ParamsSource, ProverConfig, SynthesisPath};
use porep_c2_service::proto::await_proof_response::Status;
use porep_c2_service::proto::{self, proving_engine_client::ProvingEngineClient};
use porep_c2_service::{curio, jobs::URGENT_PRIORITY, prover_id_from_actor, Engine, FilecoinEngine, Jobs, JobsConfig};
use porep_c2_service::{Listen, Metrics, ServeOptions};
use tonic::transport::Channel;

use crate::Report;

/// The miner of every request.
const MINER: u64 = 1000;

/// What `--only daemon` runs.
pub struct DaemonRun {
    /// WinningPoSt requests per latency series.
    pub winning: usize,
    /// 32 GiB C2 proofs of the load (proved two at once).
    pub c2_proofs: usize,
    /// One pass per entry: the GPU backend's urgent lane on (true) or off.
    pub lanes: Vec<bool>,
}

type Client = ProvingEngineClient<Channel>;

/// A daemon in this process: the service's server on a unix socket.
struct Daemon {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    served: tokio::task::JoinHandle<()>,
    socket: PathBuf,
}

impl Daemon {
    async fn start(engine: Arc<dyn Engine>, jobs: JobsConfig, socket: &Path) -> Result<Self, String> {
        let _ = std::fs::remove_file(socket);
        let jobs = Jobs::start(engine, jobs, Arc::new(Metrics::default()));
        let options = ServeOptions::new(Listen::Unix(socket.to_path_buf()));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(async move {
            let shutdown = async move {
                let _ = rx.await;
            };
            if let Err(e) = porep_c2_service::serve_with(&options, jobs, shutdown, || {}).await {
                eprintln!("daemon: {e}");
            }
        });
        for _ in 0..200 {
            if socket.exists() {
                return Ok(Self { stop: Some(tx), served, socket: socket.to_path_buf() });
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        Err(format!("the daemon did not listen on {}", socket.display()))
    }

    async fn client(&self) -> Result<Client, String> {
        porep_c2_service::client::connect(&Listen::Unix(self.socket.clone())).await.map_err(|e| e.to_string())
    }

    async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        let _ = self.served.await;
    }
}

async fn prove(c: &mut Client, r: proto::SubmitProofRequest) -> Result<proto::AwaitProofResponse, String> {
    let out = c.prove(proto::ProveRequest { submit: Some(r) }).await.map_err(|e| e.to_string())?;
    out.into_inner().result.ok_or_else(|| "Prove answered without a result".to_string())
}

fn completed(r: &proto::AwaitProofResponse) -> bool {
    r.status == Status::Completed as i32 && !r.proof.is_empty()
}

/// The chain's randomness as Curio masks it.
fn randomness(byte: u8) -> [u8; 32] {
    let mut r = [byte; 32];
    r[31] &= 0x3f;
    r
}

/// Runs both parts.
pub fn bench(gpu: Arc<c2_cuda::Gpu>, r: &mut Report, run: &DaemonRun) -> Result<(), String> {
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let work = std::env::temp_dir().join("c2-runner-daemon");
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    registered_2k(r, &rt, &work)?;
    latency_32g(gpu, r, &rt, &work, run)
}

fn registered_2k(r: &mut Report, rt: &tokio::runtime::Runtime, work: &Path) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    // filecoin-proofs reads its parameter folder once per process: this
    // part runs before anything else asks for it.
    let params_dir = work.join("params");
    std::env::set_var(porep_c2::PARAMETER_CACHE_ENV, &params_dir);
    let prover_id = prover_id_from_actor(MINER);
    let t = Instant::now();
    let sectors: Vec<SealedSector> = (0..2u64)
        .map(|i| {
            let dir = work.join(format!("sector-{i}"));
            demo::seal_registered_for(
                RegisteredSealProof::StackedDrg2KiBV1_1,
                &dir,
                60 + i,
                Some(prover_id),
                Some(200 + i),
            )
        })
        .collect::<Result<_, _>>()
        .map_err(|x| e(&x))?;
    let all: Vec<&SealedSector> = sectors.iter().collect();
    // Curio's numbers: 10 (Window 2 KiB V1_1 = proofs-api V1_2), 0 (Winning 2 KiB).
    let (window_rp, winning_rp) =
        (RegisteredPoStProof::StackedDrgWindow2KiBV1_2, RegisteredPoStProof::StackedDrgWinning2KiBV1);
    let (window_rand, winning_rand) = (randomness(71), randomness(72));
    let window_vanilla = demo::post_vanilla_proofs(window_rp, &all, &window_rand).map_err(|x| e(&x))?;
    let picked =
        api::generate_winning_post_sector_challenge(winning_rp, &winning_rand, 2, prover_id).map_err(|x| e(&x))?;
    let won = &sectors[picked[0] as usize];
    let winning_vanilla = demo::post_vanilla_proofs(winning_rp, &[won], &winning_rand).map_err(|x| e(&x))?;
    for (rp, kind, rand, v) in [
        (window_rp, PoStKind::Window { partition_index: 0 }, &window_rand, &window_vanilla),
        (winning_rp, PoStKind::Winning, &winning_rand, &winning_vanilla),
    ] {
        let instance = post_instance(rp, kind, rand, &prover_id, v).map_err(|x| e(&x))?;
        demo::ensure_parameters(instance.as_ref(), &params_dir, 11).map_err(|x| e(&x))?;
    }
    // A SnapDeals update of a third sector (abi.RegisteredUpdateProof 0).
    let key = demo::seal_registered_for(
        RegisteredSealProof::StackedDrg2KiBV1_1,
        &work.join("sector-2"),
        62,
        Some(prover_id),
        Some(202),
    )
    .map_err(|x| e(&x))?;
    let update = demo::update_sector(&key, 63).map_err(|x| e(&x))?;
    let u = &update;
    let instance = update_instance(u.registered_proof, &u.vanilla_proofs, &u.comm_r_old, &u.comm_r_new, &u.comm_d_new)
        .map_err(|x| e(&x))?;
    demo::ensure_parameters(instance.as_ref(), &params_dir, 11).map_err(|x| e(&x))?;
    println!(
        "daemon 2k: 3 sealed sectors (one updated), vanilla proofs and PoSt / update parameters in {:.1?}",
        t.elapsed()
    );

    let backend = gpu_backend(&GpuBackendConfig::default()).map_err(|x| e(&x))?;
    let config = ProverConfig {
        params: ParamsSource::CacheDir(params_dir),
        backend,
        retry_backend: None,
        synthesis: SynthesisPath::Recorded,
        ..ProverConfig::default()
    };
    let lanes = HostLanes::new(0, 10, URGENT_PRIORITY).map_err(|x| e(&x))?;
    let engine: Arc<dyn Engine> = Arc::new(FilecoinEngine::new(config).with_host_lanes(lanes));
    let (window, winning, snap) = rt.block_on(async {
        let daemon = Daemon::start(engine, JobsConfig::default(), &work.join("2k.sock")).await?;
        let mut c = daemon.client().await?;
        let window =
            prove(&mut c, curio::window_post(MINER, 10, 2048, &window_rand, window_vanilla.clone(), 0)).await?;
        let winning =
            prove(&mut c, curio::winning_post(MINER, 0, 2048, &winning_rand, winning_vanilla.clone())).await?;
        let snap = curio::snap_update(
            MINER,
            202,
            0,
            2048,
            u.vanilla_proofs.clone(),
            &u.comm_r_old,
            &u.comm_r_new,
            &u.comm_d_new,
        );
        let snap = prove(&mut c, snap).await?;
        daemon.stop().await;
        Ok::<_, String>((window, winning, snap))
    })?;
    let snap_ok = completed(&snap) && u.verify(&snap.proof).unwrap_or(false);
    r.check(
        format!(
            "daemon 2k: Curio's SnapDeals request proved on the GPU workers ({} ms in the daemon), verify_empty_sector_update_proof accepts",
            snap.total_ms
        ),
        snap_ok,
    );
    let replicas: BTreeMap<SectorId, _> = all.iter().map(|s| (s.sector_id, s.public_replica(window_rp))).collect();
    let window_ok = completed(&window)
        && api::verify_window_post(&window_rand, &[(window_rp, &window.proof[..])], &replicas, prover_id)
            .unwrap_or(false);
    r.check(
        format!(
            "daemon 2k: Curio's WindowPoSt request proved on the GPU workers ({} ms in the daemon), verify_window_post accepts",
            window.total_ms
        ),
        window_ok,
    );
    let won_replica: BTreeMap<SectorId, _> = [(won.sector_id, won.public_replica(winning_rp))].into();
    let winning_ok = completed(&winning)
        && api::verify_winning_post(&winning_rand, &winning.proof, &won_replica, prover_id).unwrap_or(false);
    r.check(
        format!(
            "daemon 2k: Curio's WinningPoSt request proved on the GPU workers ({} ms in the daemon), verify_winning_post accepts",
            winning.total_ms
        ),
        winning_ok,
    );
    if !window_ok || !winning_ok {
        println!("daemon 2k: window {window:?}\ndaemon 2k: winning {winning:?}");
    }
    Ok(())
}

/// Min / median / max of `v`, seconds, for a table line.
fn spread(v: &[f64]) -> String {
    if v.is_empty() {
        return "no samples".into();
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    format!("{:.3} / {:.3} / {:.3} s (min / median / max of {})", s[0], s[s.len() / 2], s[s.len() - 1], s.len())
}

fn latency_32g(
    gpu: Arc<c2_cuda::Gpu>,
    r: &mut Report,
    rt: &tokio::runtime::Runtime,
    work: &Path,
    run: &DaemonRun,
) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let prover_id = prover_id_from_actor(MINER);
    let seal = RegisteredSealProof::StackedDrg32GiBV1_1;
    let winning_rp = RegisteredPoStProof::StackedDrgWinning32GiBV1;
    let t = Instant::now();
    // The C2 load: CC test sectors as Curio sends them (envelope).
    let mut c2 = Vec::new();
    let mut porep_instance = None;
    for i in 0..run.c2_proofs.max(1) as u64 {
        let sector_id = 100 + i;
        let cc = cc_sector(seal, &CcSectorConfig { prover_id, sector_id, ..CcSectorConfig::default() })
            .map_err(|x| e(&x))?;
        let json = serde_json::to_vec(&cc.c1).map_err(|x| e(&x))?;
        let wrapped = C1Envelope { sector_number: sector_id, sector_size: 32 << 30 }.wrap(&json);
        if porep_instance.is_none() {
            porep_instance = Some(instance_from_c1(&cc.c1, prover_id, sector_id).map_err(|x| e(&x))?);
        }
        // abi.RegisteredSealProof 8: StackedDrg32GiBV1_1.
        c2.push(curio::porep(MINER, sector_id, 8, 32 << 30, wrapped));
    }
    // WinningPoSt requests, each for its own randomness (a request the
    // daemon finished before would be answered from its record): one
    // series alone, one per load run.
    let series = 2 * run.winning;
    let mut winning = Vec::new();
    let mut winning_instance = None;
    for i in 0..series {
        let rand = randomness(1 + i as u8);
        let made = post_test_sectors(winning_rp, &rand, &prover_id, &[5_000 + i as u64], 7).map_err(|x| e(&x))?;
        let vanilla: Vec<Vec<u8>> = made.into_iter().map(|s| s.vanilla_proof).collect();
        if winning_instance.is_none() {
            winning_instance =
                Some(post_instance(winning_rp, PoStKind::Winning, &rand, &prover_id, &vanilla).map_err(|x| e(&x))?);
        }
        // abi.RegisteredPoStProof 3: StackedDrgWinning32GiBV1.
        winning.push(curio::winning_post(MINER, 3, 32 << 30, &rand, vanilla));
    }
    let (porep_instance, winning_instance) =
        (porep_instance.expect("one sector"), winning_instance.expect("one sector"));
    println!(
        "daemon 32g: {} CC test sector(s) in Curio's envelope ({:.1} MB each) and {series} WinningPoSt requests made in {:.1?}",
        c2.len(),
        c2[0].vanilla_proof.len() as f64 / 1e6,
        t.elapsed()
    );
    let store = Arc::new(MatrixStore::default());
    let mut sets = BTreeMap::new();
    for instance in [porep_instance.as_ref() as &dyn ProofInstance, winning_instance.as_ref()] {
        let tag = format!("daemon 32g: {}", instance.parameter_id());
        let params = crate::setup::params_for(gpu.clone(), r, &store, instance, &tag)?;
        sets.insert(instance.parameter_id().to_string(), Arc::new(params));
    }
    let sets = Arc::new(sets);
    let jobs = JobsConfig { concurrent_proofs: 2, ..JobsConfig::default() };
    // Pass 0 with the GPU backend's urgent lane (the default: a worker per
    // device for WinningPoSt on streams of the greatest priority), pass 1
    // without it (WinningPoSt takes an ordinary worker's next turn); the
    // host lanes on in both, as the service starts.
    for (pass, &lane_on) in run.lanes.iter().enumerate() {
        let config = GpuBackendConfig {
            urgent_lane: if lane_on { Some(porep_c2::UrgentLane::default()) } else { None },
            ..GpuBackendConfig::default()
        };
        let backend = gpu_backend(&config).map_err(|x| e(&x))?;
        let base = ProverConfig {
            params: ParamsSource::ById(sets.clone()),
            backend,
            retry_backend: None,
            // Generated parameters: the engine verifies every proof.
            verify: true,
            synthesis: SynthesisPath::Recorded,
            matrices: store.clone(),
            ..ProverConfig::default()
        };
        let engine =
            FilecoinEngine::new(base).with_host_lanes(HostLanes::new(0, 10, URGENT_PRIORITY).map_err(|x| e(&x))?);
        let t = Instant::now();
        for id in ["porep-32g", "winning-32g"] {
            engine.preload(id).map_err(|x| e(&x))?;
        }
        println!("daemon 32g: sets preloaded in {:.1?}", t.elapsed());
        let label = if lane_on { "urgent lane on" } else { "urgent lane off" };
        let socket = work.join(format!("32g-{pass}.sock"));
        let (idle, loaded, c2_wall, c2_ok, winning_ok) = rt.block_on(async {
            let daemon = Daemon::start(Arc::new(engine), jobs.clone(), &socket).await?;
            let mut c = daemon.client().await?;
            let mut ok = true;
            // Alone (first pass only): one request at a time.
            let mut idle = Vec::new();
            if pass == 0 {
                for req in &winning[..run.winning] {
                    let t = Instant::now();
                    let out = prove(&mut c, req.clone()).await?;
                    idle.push((t.elapsed().as_secs_f64(), out.queue_wait_ms, out.total_ms));
                    ok &= completed(&out);
                }
            }
            // The C2 load: every sector submitted at once (two proved at a
            // time, the rest queued), then WinningPoSt requests one after
            // another while it runs.
            let t0 = Instant::now();
            let mut jobs_ids = Vec::new();
            for req in &c2 {
                let out = c.submit_proof(req.clone()).await.map_err(|x| e(&x))?.into_inner();
                jobs_ids.push(out.job_id);
            }
            // Into the load: the first partitions synthesized and on the GPU.
            tokio::time::sleep(Duration::from_secs(6)).await;
            let mut loaded = Vec::new();
            for req in &winning[run.winning..] {
                let t = Instant::now();
                let out = prove(&mut c, req.clone()).await?;
                loaded.push((t.elapsed().as_secs_f64(), out.queue_wait_ms, out.total_ms));
                ok &= completed(&out);
                tokio::time::sleep(Duration::from_millis(1500)).await;
            }
            let mut c2_ok = true;
            for id in jobs_ids {
                let out = c
                    .await_proof(proto::AwaitProofRequest { job_id: id, timeout_ms: 0 })
                    .await
                    .map_err(|x| e(&x))?
                    .into_inner();
                c2_ok &= completed(&out) && out.proof.len() == 1920;
            }
            let c2_wall = t0.elapsed().as_secs_f64();
            daemon.stop().await;
            Ok::<_, String>((idle, loaded, c2_wall, c2_ok, ok))
        })?;
        r.check(format!("daemon 32g, {label}: every WinningPoSt COMPLETED"), winning_ok);
        r.check(format!("daemon 32g, {label}: every C2 proof COMPLETED (1,920 bytes)"), c2_ok);
        let secs = |v: &[(f64, u64, u64)]| v.iter().map(|x| x.0).collect::<Vec<_>>();
        let daemon_ms =
            |v: &[(f64, u64, u64)]| v.iter().map(|x| format!("{}/{}", x.1, x.2)).collect::<Vec<_>>().join(" ");
        if !idle.is_empty() {
            let line = format!(
                "daemon 32g WinningPoSt alone: client latency {}; daemon queue/total ms: {}",
                spread(&secs(&idle)),
                daemon_ms(&idle)
            );
            println!("{line}");
            r.bench.push(line);
        }
        let line = format!(
            "daemon 32g WinningPoSt under C2 load, {label}: client latency {}; daemon queue/total ms: {}; C2: {} proofs in {c2_wall:.1} s ({:.2} s/proof, verified)",
            spread(&secs(&loaded)),
            daemon_ms(&loaded),
            c2.len(),
            c2_wall / c2.len() as f64
        );
        println!("{line}");
        r.bench.push(line);
    }
    Ok(())
}
