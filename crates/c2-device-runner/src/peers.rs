//! Side by side with the peer provers (issue 5): the same
//! [`ShapedCircuit`](c2_testkit::synthetic::ShapedCircuit)s, parameters
//! (`random_parameters(shape, seed)`) and `r = 3`, `s = 5` as `peer-prove`
//! (crate c2-peer-bench: bellperson 0.27 CUDA, SupraSeal C2), proved through
//! porep-c2's GPU workers. Every `*.proof` in `--peer-dir` must equal our
//! bytes; every `*.log` there holds the peer's `PEER ...` summary line, whose
//! per-partition prover time goes into the ratio table.

use std::path::Path;
use std::time::Instant;

use c2_testkit::synthetic::{random_parameters, SyntheticPorep, SyntheticShape};
use porep_c2::gpu::{gpu_backend, GpuBackendConfig};
use porep_c2::{prove_instance, ProverConfig};

use crate::{median, Report};

/// A peer's `PEER <name> | ... = X s per partition` line: (name, X).
fn peer_line(log: &str) -> Option<(String, f64)> {
    let line = log.lines().rev().find(|l| l.starts_with("PEER "))?;
    let name = line.trim_start_matches("PEER ").split(" | ").next()?.to_string();
    let secs = line.rsplit(" = ").next()?.split_whitespace().next()?.parse().ok()?;
    Some((name, secs))
}

/// What `--only peers` runs.
pub struct PeerRun<'a> {
    /// The shape's scale (1/scale of a 32 GiB partition).
    pub scale: usize,
    /// Partitions per proof.
    pub partitions: usize,
    /// Timed proofs after the warm-up.
    pub reps: usize,
    /// The parameters' seed (the peers use the same).
    pub seed: u64,
    /// The peers' `*.proof` and `*.log` files.
    pub dir: Option<&'a Path>,
    /// Our device pool capped at this many GiB (the peers then run with
    /// `peer-prove --vram-free-gib` of the same size).
    pub vram_cap_gib: Option<usize>,
}

/// Proves the shaped circuits `reps` times after one warm-up proof
/// (parameters uploaded), then compares with the peers' files.
pub fn compare(r: &mut Report, run: &PeerRun<'_>) -> Result<(), String> {
    let PeerRun { scale, partitions, reps, seed, dir: peer_dir, vram_cap_gib } = *run;
    let shape = SyntheticShape::porep_32gib().scaled(scale);
    let instance = SyntheticPorep::shaped_circuits(shape.clone(), partitions);
    let t = Instant::now();
    let params = random_parameters(&shape, seed);
    println!(
        "peers: shaped circuit 1/{scale}: {} constraints, {} aux, domain 2^{}; parameters in {:.1?}",
        shape.constraints,
        shape.aux,
        shape.domain().trailing_zeros(),
        t.elapsed()
    );
    let mut backend_config = GpuBackendConfig { devices: vec![0], ..Default::default() };
    backend_config.vram.cap = vram_cap_gib.map(|g| g << 30);
    let backend = gpu_backend(&backend_config).map_err(|e| e.to_string())?;
    let cap = vram_cap_gib.map_or(String::new(), |g| format!(", pool capped at {g} GiB"));
    let config = ProverConfig {
        backend,
        retry_backend: None,
        verify: false,
        check_vanilla_proofs: false,
        ..ProverConfig::default()
    };
    let blinding = vec![(blstrs::Scalar::from(3u64), blstrs::Scalar::from(5u64)); partitions];
    let mut bytes = Vec::new();
    let (mut prove_s, mut kernel_s, mut synth_s) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..=reps {
        let (b, rep_report) = prove_instance(&instance, &params, &blinding, &config).map_err(|e| e.to_string())?;
        for p in &rep_report.partitions {
            println!("  {}{}", if rep == 0 { "(warm-up) " } else { "" }, p.timeline());
            if rep > 0 {
                prove_s.push(p.prove.as_secs_f64());
                synth_s.push(p.synthesis.as_secs_f64());
                kernel_s.extend(p.steps.gpu.as_ref().map(|g| g.kernel_ms() as f64 / 1e3));
            }
        }
        bytes = b;
    }
    let ours = median(prove_s);
    r.bench.push(format!(
        "peers 1/{scale} (2^{}), per partition | ours (porep-c2 GPU worker{cap}): prove {ours:.3} s (kernels {:.3} s), synthesis {:.1} s",
        shape.domain().trailing_zeros(),
        median(kernel_s),
        median(synth_s),
    ));
    println!("{}", r.bench.last().expect("pushed"));
    let Some(dir) = peer_dir else { return Ok(()) };
    let mut entries: Vec<_> =
        std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?.flatten().collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let path = e.path();
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("?").to_string();
        match path.extension().and_then(|x| x.to_str()) {
            Some("proof") => {
                let theirs = std::fs::read(&path).map_err(|e| e.to_string())?;
                r.check(
                    format!(
                        "peers 1/{scale}: {stem} proof bytes == ours ({} partition(s), same parameters, r, s)",
                        partitions
                    ),
                    theirs == bytes && !bytes.is_empty(),
                );
            }
            Some("log") => {
                let log = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
                match peer_line(&log) {
                    Some((name, theirs)) => r.bench.push(format!(
                        "peers 1/{scale}, per partition | {name}: prover {theirs:.3} s -> ours is {:.1}x faster",
                        theirs / ours
                    )),
                    None => r.check(format!("peers 1/{scale}: {stem}.log has a PEER summary line"), false),
                }
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_the_peer_summary_line() {
        let log = "x\nPEER bellperson 0.27 cuda | scale 1/8 | 1 partition(s) | median of 2: wall 9.1 s, prover 4.2 s = 4.200 s per partition\n";
        assert_eq!(super::peer_line(log), Some(("bellperson 0.27 cuda".into(), 4.2)));
    }
}
