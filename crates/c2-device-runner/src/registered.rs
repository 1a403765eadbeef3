//! The registered 2 KiB proof type end to end on the GPU (issue 5, "done
//! when"): filecoin-proofs' own PC1, PC2 and C1 on seeded data, random 2 KiB
//! Groth16 parameters generated once into a private cache folder (never a
//! production cache: random parameters verify only against their own key),
//! then `prove_porep_c2` on the CPU and with GPU workers for the same seed.
//! The bytes must be equal and `filecoin_proofs_api::seal::verify_seal` must
//! accept the GPU proof.

use std::time::Instant;

use c2_testkit::demo;
use filecoin_proofs_api::RegisteredSealProof;
use porep_c2::gpu::{gpu_backend, GpuBackendConfig};
use porep_c2::{prove_porep_c2_with_report, Backend, ParamsSource, ProverConfig, Randomness};

use crate::Report;

/// Runs the check (parameters are generated on the first run: ~2 min on 16 cores).
pub fn check(r: &mut Report) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    // filecoin-proofs reads its parameter folder once per process: set it
    // before its first call.
    let dir = std::env::temp_dir().join("porep-c2-runner-registered-params");
    std::env::set_var(porep_c2::PARAMETER_CACHE_ENV, &dir);
    let work = std::env::temp_dir().join("porep-c2-runner-2kib-sector");
    let t = Instant::now();
    let s = demo::seal_registered(RegisteredSealProof::StackedDrg2KiBV1_1, &work, 1).map_err(|x| e(&x))?;
    println!("registered 2 KiB: PC1 + PC2 + C1 in {:.1?}", t.elapsed());
    let t = Instant::now();
    let (_, generated) =
        demo::ensure_registered_parameters(&s.c1, s.prover_id, s.sector_id, &dir, 1).map_err(|x| e(&x))?;
    println!("registered 2 KiB: parameters {} in {:.1?}", if generated { "generated" } else { "read" }, t.elapsed());
    let base = ProverConfig {
        params: ParamsSource::CacheDir(dir.clone()),
        randomness: Randomness::Seed([3; 32]),
        ..ProverConfig::default()
    };
    let cpu = ProverConfig { backend: Backend::cpu(), ..base.clone() };
    let t = Instant::now();
    let (cpu_out, _) = prove_porep_c2_with_report(&s.c1, s.prover_id, s.sector_id, &cpu).map_err(|x| e(&x))?;
    let cpu_s = t.elapsed().as_secs_f64();
    // No retry backend: a device fault fails the check instead of quietly
    // proving on the CPU.
    let gpu = ProverConfig {
        backend: gpu_backend(&GpuBackendConfig::default()).map_err(|x| e(&x))?,
        retry_backend: None,
        ..base
    };
    let t = Instant::now();
    let (gpu_out, report) = prove_porep_c2_with_report(&s.c1, s.prover_id, s.sector_id, &gpu).map_err(|x| e(&x))?;
    let gpu_s = t.elapsed().as_secs_f64();
    for p in &report.partitions {
        println!("  {}", p.timeline());
    }
    let t = Instant::now();
    let ok = s.verify_seal(&gpu_out.proof).map_err(|x| e(&x))?;
    r.check(
        format!(
            "registered 2 KiB: GPU workers' proof == CPU proof (same seed) and filecoin_proofs verify_seal accepts it ({:.1?}); C2 {gpu_s:.2} s GPU vs {cpu_s:.2} s CPU",
            t.elapsed()
        ),
        ok && gpu_out.proof == cpu_out.proof && gpu_out.proof.len() == 192,
    );
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}
