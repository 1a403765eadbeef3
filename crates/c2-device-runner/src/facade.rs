//! The facade on the GPU: the tiny real StackedDrg sector (porep-c2's
//! demo) proved with the GPU NTT and GPU MSM and with the CPU, same blinding
//! factors: the bytes must be identical and both proofs verify (prove_instance
//! verifies before returning). The GPU run has no retry backend, so a device
//! fault fails the check instead of quietly proving on the CPU.

use std::sync::Arc;
use std::time::Instant;

use c2_cuda::Gpu;
use porep_c2::{blinding_pairs, demo, prove_instance, Backend, PorepInstance, ProverConfig, Randomness};

use crate::Report;

/// Runs the comparison; parameters are generated (seeded) into the temp
/// folder on first use.
pub fn check(gpu: Arc<Gpu>, r: &mut Report) -> Result<(), String> {
    let t = Instant::now();
    let instance = demo::tiny_instance(&demo::TinyConfig::default()).map_err(|e| e.to_string())?;
    let dir = std::env::temp_dir().join("porep-c2-runner-params");
    let (params, generated) = demo::ensure_parameters(&instance, &dir, 0).map_err(|e| e.to_string())?;
    println!(
        "facade: tiny StackedDrg sector, parameters {} in {:.1?}",
        if generated { "generated" } else { "read" },
        t.elapsed()
    );
    let blinding =
        blinding_pairs(&Randomness::Seed([11; 32]), instance.num_partitions()).map_err(|e| e.to_string())?;
    let gpu_backend = Backend {
        ntt: Arc::new(c2_ntt::GpuNtt::new(gpu.clone()).map_err(|e| e.to_string())?),
        msm: Arc::new(c2_msm::gpu::GpuMsm::new(gpu).map_err(|e| e.to_string())?),
    };
    let cpu = ProverConfig { backend: Backend::cpu(), ..ProverConfig::default() };
    let on_gpu = ProverConfig { backend: gpu_backend, retry_backend: None, ..ProverConfig::default() };
    let (cpu_bytes, cpu_report) = prove_instance(&instance, &params, &blinding, &cpu).map_err(|e| e.to_string())?;
    let (gpu_bytes, gpu_report) = prove_instance(&instance, &params, &blinding, &on_gpu).map_err(|e| e.to_string())?;
    let msm_time = |rep: &porep_c2::ProofReport| -> f64 {
        rep.partitions
            .iter()
            .map(|p| (p.steps.msm_h + p.steps.msm_l + p.steps.msm_a + p.steps.msm_b_g1 + p.steps.msm_b_g2).as_secs_f64())
            .sum()
    };
    r.check(
        format!(
            "facade: tiny StackedDrg sector ({} partition(s)), GPU NTT + GPU MSM bytes == CPU bytes, both verified (MSMs {:.3} s GPU vs {:.3} s CPU)",
            instance.num_partitions(),
            msm_time(&gpu_report),
            msm_time(&cpu_report)
        ),
        cpu_bytes == gpu_bytes && !cpu_bytes.is_empty(),
    );
    Ok(())
}
