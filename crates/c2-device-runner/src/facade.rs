//! The facade on the GPU: the tiny real StackedDrg sector (porep-c2's
//! demo) proved on the CPU and five GPU ways (host-level GPU stages; GPU
//! workers with parameters resident; GPU workers streaming the parameters;
//! witness-only synthesis with a, b, c from the constraint matrices on the
//! workers' device, and on the host for the host-level stages),
//! same blinding factors: the bytes must be identical and every proof
//! verifies (prove_instance verifies before returning). The GPU runs have no
//! retry backend, so a device fault fails the check instead of quietly
//! proving on the CPU.

use std::sync::Arc;
use std::time::Instant;

use c2_cuda::Gpu;
use c2_testkit::demo;
use porep_c2::gpu::{gpu_backend, GpuBackendConfig};
use porep_c2::{blinding_pairs, prove_instance, Backend, ProofInstance, ProverConfig, Randomness, SynthesisPath};

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
    let blinding = blinding_pairs(&Randomness::Seed([11; 32]), instance.num_partitions()).map_err(|e| e.to_string())?;
    let staged = || -> Result<Backend, String> {
        Ok(Backend::staged(
            Arc::new(c2_ntt::GpuNtt::new(gpu.clone()).map_err(|e| e.to_string())?),
            Arc::new(c2_msm::gpu::GpuMsm::new(gpu.clone()).map_err(|e| e.to_string())?),
        ))
    };
    // One backend at a time: each GPU backend reserves the device's free
    // memory (less a margin) for its pool while it lives.
    let workers = |resident_params: bool| {
        gpu_backend(&GpuBackendConfig { resident_params, ..GpuBackendConfig::default() }).map_err(|e| e.to_string())
    };
    type MakeBackend<'a> = Box<dyn Fn() -> Result<Backend, String> + 'a>;
    let cpu = ProverConfig { backend: Backend::cpu(), ..ProverConfig::default() };
    let (cpu_bytes, cpu_report) = prove_instance(&instance, &params, &blinding, &cpu).map_err(|e| e.to_string())?;
    let msm_time = |rep: &porep_c2::ProofReport| -> f64 {
        rep.partitions
            .iter()
            .map(|p| {
                (p.steps.msm_h + p.steps.msm_l + p.steps.msm_a + p.steps.msm_b_g1 + p.steps.msm_b_g2).as_secs_f64()
            })
            .sum()
    };
    let (circuit, witness) = (SynthesisPath::Circuit, SynthesisPath::Matrices { cache_dir: None });
    let ways: [(&str, MakeBackend<'_>, &SynthesisPath); 5] = [
        ("host-level stages (GPU NTT + GPU MSM)", Box::new(staged), &circuit),
        ("GPU workers, parameters resident", Box::new(|| workers(true)), &circuit),
        ("GPU workers, parameters streamed", Box::new(|| workers(false)), &circuit),
        ("GPU workers, witness only, a, b, c on the device", Box::new(|| workers(true)), &witness),
        ("host-level stages, witness only (a, b, c on the host)", Box::new(staged), &witness),
    ];
    for (label, make, synthesis) in ways {
        // No retry backend: a device fault fails the check.
        let on_gpu = ProverConfig {
            backend: make()?,
            retry_backend: None,
            synthesis: synthesis.clone(),
            ..ProverConfig::default()
        };
        let (gpu_bytes, gpu_report) =
            prove_instance(&instance, &params, &blinding, &on_gpu).map_err(|e| e.to_string())?;
        let gpu_ms: Vec<String> = gpu_report
            .partitions
            .iter()
            .filter_map(|p| p.steps.gpu.as_ref())
            .map(|g| {
                format!(
                    "kernels {:.1} ms (a, b, c {:.2} ms), upload {:.1} ms, {:.1} MB to the device",
                    g.kernel_ms(),
                    g.abc_ms,
                    g.upload_ms,
                    g.h2d_bytes as f64 / 1e6
                )
            })
            .collect();
        r.check(
            format!(
                "facade: tiny StackedDrg sector ({} partition(s)), {label}: bytes == CPU bytes, both verified (MSMs {:.3} s GPU vs {:.3} s CPU){}",
                instance.num_partitions(),
                msm_time(&gpu_report),
                msm_time(&cpu_report),
                if gpu_ms.is_empty() { String::new() } else { format!(" [{}]", gpu_ms.join("; ")) }
            ),
            cpu_bytes == gpu_bytes && !cpu_bytes.is_empty(),
        );
    }
    Ok(())
}
