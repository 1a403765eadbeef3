//! `porep-c2 bench --daemon`: the bench's load sent to a running service
//! through its gRPC API (`Prove`, several in flight), each returned proof
//! verified here, and the daemon's own figures read from `GetMetrics`
//! before and after: GPU busy (kernel events), resident memory, device
//! memory in use, parameter loading.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use porep_c2::{verify_porep_c2, ParamsSource};
use porep_c2_service::proto::{self, await_proof_response::Status};
use porep_c2_service::{client, registered_seal_proof, Listen};

use crate::bench::BenchArgs;

/// A priority's name (`low` .. `critical`, any case) as the wire's number.
pub fn parse_priority(s: &str) -> Result<i32, String> {
    match proto::Priority::from_str_name(&s.to_ascii_uppercase()) {
        Some(p) if p != proto::Priority::Unspecified => Ok(p as i32),
        _ => Err(format!("priority {s:?}: low, normal, high or critical")),
    }
}

/// A wire priority's name (`HIGH`), for reports.
fn priority_name(priority: i32) -> &'static str {
    proto::Priority::try_from(priority).map_or("?", |p| p.as_str_name())
}

/// The series of a Prometheus text exposition, `name{labels}` -> value.
fn parse_prometheus(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter_map(|(k, v)| Some((k.to_string(), v.parse().ok()?)))
        .collect()
}

/// The daemon's figures at one moment.
#[derive(Clone, Debug, Default, serde::Serialize)]
struct DaemonSample {
    /// GPU busy seconds per device (`gpu="N"` label).
    gpu_busy_s: BTreeMap<String, f64>,
    /// Device memory in use per device, bytes.
    device_used_bytes: BTreeMap<String, f64>,
    /// The daemon's resident memory, bytes.
    resident_bytes: f64,
    /// Seconds its proofs spent reading or finding parameters.
    params_load_s: f64,
    /// Proofs it completed.
    completed: f64,
    /// Partitions proved again after a device fault (or on the CPU while
    /// every device was fenced).
    retries: f64,
    /// Partitions of completed proofs by where they were proved (`0`, `1`,
    /// .., `cpu`).
    partitions: BTreeMap<String, f64>,
    /// Workers out of service (fenced after a device fault) at this moment.
    fenced: Vec<String>,
}

impl DaemonSample {
    fn from_metrics(text: &str) -> Self {
        let series = parse_prometheus(text);
        let by_label = |prefix: &str| -> BTreeMap<String, f64> {
            series
                .iter()
                .filter_map(|(k, v)| Some((k.strip_prefix(prefix)?.trim_end_matches("\"}").to_string(), *v)))
                .collect()
        };
        let sum = |prefix: &str| series.iter().filter(|(k, _)| k.starts_with(prefix)).map(|(_, v)| v).sum();
        Self {
            gpu_busy_s: by_label("porep_c2_gpu_busy_seconds_total{gpu=\""),
            device_used_bytes: by_label("porep_c2_device_memory_used_bytes{gpu=\""),
            resident_bytes: series.get("process_resident_memory_bytes").copied().unwrap_or(0.0),
            params_load_s: sum("porep_c2_params_load_seconds_total"),
            completed: sum("porep_c2_proofs_completed_total"),
            retries: sum("porep_c2_partition_retries_total"),
            partitions: by_label("porep_c2_partitions_total{device=\""),
            fenced: by_label("porep_c2_worker_healthy{worker=\"")
                .into_iter()
                .filter(|(_, up)| *up == 0.0)
                .map(|(w, _)| w)
                .collect(),
        }
    }
}

/// One proof through the daemon.
#[derive(Debug, serde::Serialize)]
struct DaemonRun {
    index: usize,
    job_id: String,
    wall_s: f64,
    queue_wait_ms: u64,
    total_ms: u64,
    gpu_compute_ms: u64,
    verified: bool,
}

#[derive(serde::Serialize)]
struct DaemonReport {
    daemon: String,
    sector: String,
    concurrent: usize,
    priority: String,
    proofs: usize,
    wall_s: f64,
    seconds_per_proof: f64,
    /// Per device: GPU busy seconds added during the run over wall time, percent.
    gpu_busy_percent: BTreeMap<String, f64>,
    before: DaemonSample,
    after: DaemonSample,
    runs: Vec<DaemonRun>,
}

/// A C1 output's request and what verifies its proofs.
struct RealLoad {
    c1: porep_c2::SealCommitPhase1Output,
    params: ParamsSource,
    prover_id: [u8; 32],
}

/// Runs the bench against `a.daemon`.
pub fn run(a: &BenchArgs) -> Result<()> {
    let Some(address) = &a.daemon else { bail!("no --daemon") };
    let listen = Listen::parse(address).map_err(anyhow::Error::msg)?;
    let number = |rp| (0..64).find(|&n| registered_seal_proof(n) == Some(rp));
    let (json, real, registered, actor, sector_id, sector) = if a.synthetic {
        let rp = filecoin_proofs_api::RegisteredSealProof::StackedDrg32GiBV1_1;
        let Some(registered) = number(rp) else { bail!("{rp:?} has no registered-proof number") };
        let what = "synthetic 32 GiB shape (a daemon started with --synthetic-timing-only: TIMING ONLY, not verified)";
        (b"synthetic".to_vec(), None, registered, 1000, 1, what.to_string())
    } else {
        let Some(path) = &a.c1 else { bail!("--daemon needs --c1 (or --synthetic)") };
        let input = crate::prove::read_input(path, a.sector.sector_id)?;
        let Some(actor) = a.sector.actor()? else {
            bail!("--daemon needs --miner: the service derives the prover id from it")
        };
        let Some(sector_id) = a.sector.sector_id.or(input.sector_number()) else { bail!("give --sector-id") };
        let sector_size = input.sector_size();
        let c1 = input.c1;
        // Sent as Curio sends it: the C1 JSON in Curio's envelope.
        let json = porep_c2::C1Envelope { sector_number: sector_id, sector_size }.wrap(&serde_json::to_vec(&c1)?);
        let Some(registered) = number(c1.registered_proof) else {
            bail!("{:?} has no registered-proof number", c1.registered_proof)
        };
        let params = match &a.prover.params_dir {
            Some(d) => ParamsSource::CacheDir(d.clone()),
            None => ParamsSource::from_env(),
        };
        let sector = format!("{} ({:?})", path.display(), c1.registered_proof);
        let real = RealLoad { c1, params, prover_id: a.sector.prover_id()? };
        (json, Some(real), registered, actor, sector_id, sector)
    };
    let (concurrent, total, priority) = (a.concurrent as usize, a.total as usize, a.priority);
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let report = runtime.block_on(async {
        let mut c = client::connect(&listen).await.with_context(|| format!("connecting to {listen}"))?;
        let metrics = |mut c: proto::proving_engine_client::ProvingEngineClient<_>| async move {
            let text = c.get_metrics(proto::GetMetricsRequest {}).await?.into_inner().prometheus_text;
            Ok::<_, tonic::Status>(DaemonSample::from_metrics(&text))
        };
        let before = metrics(c.clone()).await.context("GetMetrics")?;
        let status = c.get_status(proto::GetStatusRequest {}).await.context("GetStatus")?.into_inner();
        log::info!(
            "daemon {listen}: {} GPU(s), sets loaded: [{}]; bench: {sector}, {total} proof(s), {concurrent} in flight, priority {}",
            status.gpus.len(),
            status.loaded_srs.iter().map(|s| s.circuit_id.as_str()).collect::<Vec<_>>().join(", "),
            priority_name(priority)
        );
        let (next, done, start) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)), Instant::now());
        let shared = Arc::new((json, real));
        let tag = format!("bench-{}-{}", std::process::id(), start.elapsed().as_nanos());
        let tasks: Vec<_> = (0..concurrent.min(total))
            .map(|_| {
                let (mut c, next, done, shared, tag) = (c.clone(), next.clone(), done.clone(), shared.clone(), tag.clone());
                let verify = !a.no_verify && shared.1.is_some();
                tokio::spawn(async move {
                    let mut mine = Vec::new();
                    loop {
                        let index = next.fetch_add(1, Ordering::SeqCst);
                        if index >= total {
                            return Ok::<_, anyhow::Error>(mine);
                        }
                        let submit = proto::SubmitProofRequest {
                            request_id: format!("{tag}-{index}"),
                            proof_kind: proto::ProofKind::PorepSealCommit as i32,
                            registered_proof: registered,
                            sector_size: registered_seal_proof(registered).map_or(0, |rp| u64::from(rp.sector_size())),
                            priority,
                            vanilla_proof: shared.0.clone(),
                            sector_number: sector_id,
                            miner_id: actor,
                            ..Default::default()
                        };
                        let t = Instant::now();
                        let r = c
                            .prove(proto::ProveRequest { submit: Some(submit) })
                            .await
                            .with_context(|| format!("proof {index}: Prove"))?
                            .into_inner()
                            .result
                            .with_context(|| format!("proof {index}: an empty answer"))?;
                        let wall_s = t.elapsed().as_secs_f64();
                        if r.status != Status::Completed as i32 {
                            bail!("proof {index} ({}): {:?}: {}", r.job_id, r.status(), r.error_message);
                        }
                        if verify {
                            let s = shared.clone();
                            let proof = r.proof.clone();
                            tokio::task::spawn_blocking(move || match &s.1 {
                                Some(l) => verify_porep_c2(&l.c1, l.prover_id, sector_id.into(), &proof, &l.params),
                                None => Ok(()),
                            })
                            .await?
                            .with_context(|| format!("proof {index} ({}) from the daemon", r.job_id))?;
                        }
                        let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                        eprintln!(
                            "[{n}/{total}] proof {index} ({}): {wall_s:.2} s (daemon: queue {} ms, total {} ms, GPU {} ms){}; {:.1} s elapsed",
                            r.job_id,
                            r.queue_wait_ms,
                            r.total_ms,
                            r.gpu_compute_ms,
                            if verify { ", verified here" } else { "" },
                            start.elapsed().as_secs_f64()
                        );
                        mine.push(DaemonRun {
                            index,
                            job_id: r.job_id,
                            wall_s,
                            queue_wait_ms: r.queue_wait_ms,
                            total_ms: r.total_ms,
                            gpu_compute_ms: r.gpu_compute_ms,
                            verified: verify,
                        });
                    }
                })
            })
            .collect();
        let mut runs = Vec::new();
        for t in tasks {
            runs.extend(t.await??);
        }
        let wall_s = start.elapsed().as_secs_f64();
        runs.sort_by_key(|r| r.index);
        let after = metrics(c.clone()).await.context("GetMetrics")?;
        let gpu_busy_percent = after
            .gpu_busy_s
            .iter()
            .map(|(d, s)| (d.clone(), 100.0 * (s - before.gpu_busy_s.get(d).copied().unwrap_or(0.0)) / wall_s))
            .collect();
        Ok::<_, anyhow::Error>(DaemonReport {
            daemon: listen.to_string(),
            sector,
            concurrent,
            priority: priority_name(priority).to_string(),
            proofs: total,
            wall_s,
            seconds_per_proof: wall_s / total as f64,
            gpu_busy_percent,
            before,
            after,
            runs,
        })
    })?;
    let gb = |b: f64| b / 1e9;
    println!(
        "{} proof(s) through {} in {:.2} s: {:.2} s/proof with {} in flight, priority {} (mean single-proof wall {:.2} s){}",
        report.proofs,
        report.daemon,
        report.wall_s,
        report.seconds_per_proof,
        report.concurrent,
        report.priority,
        report.runs.iter().map(|r| r.wall_s).sum::<f64>() / report.proofs as f64,
        if a.no_verify || a.synthetic { "" } else { ", every proof verified here" }
    );
    let busy: Vec<String> = report.gpu_busy_percent.iter().map(|(d, p)| format!("cuda:{d} {p:.0}%")).collect();
    println!("daemon GPU busy (union of kernel spans, CUDA events) / wall: [{}]", busy.join(", "));
    println!(
        "daemon resident memory {:.2} GB -> {:.2} GB; device memory in use [{}]; parameter loading {:.2} s over {} proofs",
        gb(report.before.resident_bytes),
        gb(report.after.resident_bytes),
        report
            .after
            .device_used_bytes
            .iter()
            .map(|(d, b)| {
                let was = report.before.device_used_bytes.get(d).copied().unwrap_or(0.0);
                format!("cuda:{d} {:.2} -> {:.2} GB", gb(was), gb(*b))
            })
            .collect::<Vec<_>>()
            .join(", "),
        report.after.params_load_s - report.before.params_load_s,
        report.after.completed - report.before.completed
    );
    let placed: Vec<String> = report
        .after
        .partitions
        .iter()
        .map(|(d, n)| (d, n - report.before.partitions.get(d).copied().unwrap_or(0.0)))
        .filter(|(_, n)| *n > 0.0)
        .map(|(d, n)| format!("{} {n:.0}", if d == "cpu" { "cpu".to_string() } else { format!("cuda:{d}") }))
        .collect();
    println!(
        "daemon partitions by device [{}]; retried after a device fault {:.0}; fenced now [{}]",
        placed.join(", "),
        report.after.retries - report.before.retries,
        report.after.fenced.join(", ")
    );
    if let Some(p) = &a.json {
        std::fs::write(p, serde_json::to_vec_pretty(&report)?).with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daemon_figures_are_read_from_the_exposition() {
        let text = "# HELP x y\n# TYPE x counter\n\
            porep_c2_gpu_busy_seconds_total{gpu=\"0\"} 1.5\n\
            porep_c2_gpu_busy_seconds_total{gpu=\"1\"} 2\n\
            porep_c2_device_memory_used_bytes{gpu=\"0\"} 1000\n\
            process_resident_memory_bytes 4096\n\
            porep_c2_params_load_seconds_total{proof_kind=\"POREP_SEAL_COMMIT\"} 0.25\n\
            porep_c2_proofs_completed_total{proof_kind=\"POREP_SEAL_COMMIT\"} 7\n\
            porep_c2_partition_retries_total{proof_kind=\"POREP_SEAL_COMMIT\"} 3\n\
            porep_c2_partitions_total{device=\"0\"} 11\n\
            porep_c2_partitions_total{device=\"cpu\"} 3\n\
            porep_c2_worker_healthy{worker=\"cuda:0/0\"} 0\n\
            porep_c2_worker_healthy{worker=\"cuda:0/1\"} 1\n";
        assert_eq!(parse_priority("high"), Ok(proto::Priority::High as i32));
        assert_eq!(parse_priority("LOW"), Ok(proto::Priority::Low as i32));
        assert!(parse_priority("urgent").is_err() && parse_priority("priority_unspecified").is_err());
        let s = DaemonSample::from_metrics(text);
        assert_eq!(s.gpu_busy_s, BTreeMap::from([("0".into(), 1.5), ("1".into(), 2.0)]));
        assert_eq!(s.device_used_bytes, BTreeMap::from([("0".into(), 1000.0)]));
        assert_eq!((s.resident_bytes, s.params_load_s, s.completed), (4096.0, 0.25, 7.0));
        assert_eq!(s.retries, 3.0);
        assert_eq!(s.partitions, BTreeMap::from([("0".into(), 11.0), ("cpu".into(), 3.0)]));
        assert_eq!(s.fenced, vec!["cuda:0/0".to_string()]);
    }
}
