//! Registered proof types end to end on the GPU (issues 5 and 13, "done
//! when"): filecoin-proofs' own PC1, PC2 and C1 on seeded data, random
//! Groth16 parameters generated once per type into a private cache folder
//! (never a production cache: random parameters verify only against their
//! own key), then `prove_porep_c2` on the CPU and with GPU workers for the
//! same seed, the device pool optionally capped (`--vram-cap-gib`, with the
//! workers planned for the sector's own partition shape). The bytes must be
//! equal and `filecoin_proofs_api::seal::verify_seal` must accept the GPU
//! proof.

use std::time::Instant;

use c2_testkit::demo;
use filecoin_proofs_api::RegisteredSealProof;
use porep_c2::gpu::{gpu_backend, GpuBackendConfig};
use porep_c2::plan::PartitionShape;
use porep_c2::{prove_porep_c2_with_report, Backend, ParamsSource, ProverConfig, Randomness, SynthesisPath};

use crate::Report;

/// Runs the check for each proof type in `types` (parameters are generated
/// on the first run, all types at once: ~4 min for 2 KiB and 8 MiB on 16
/// cores), with the pool capped at `cap_gib` GiB when given.
pub fn check(r: &mut Report, types: &[RegisteredSealProof], cap_gib: Option<usize>) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    // filecoin-proofs reads its parameter folder once per process: set it
    // before its first call.
    let dir = std::env::temp_dir().join("porep-c2-runner-registered-params");
    std::env::set_var(porep_c2::PARAMETER_CACHE_ENV, &dir);
    let t = Instant::now();
    let sealed = types
        .iter()
        .enumerate()
        .map(|(i, &ty)| {
            let work = std::env::temp_dir().join(format!("porep-c2-runner-sector-{i}"));
            demo::seal_registered(ty, &work, 1).map_err(|x| e(&x))
        })
        .collect::<Result<Vec<_>, _>>()?;
    println!("registered: PC1 + PC2 + C1 of {} sector(s) in {:.1?}", sealed.len(), t.elapsed());
    let t = Instant::now();
    std::thread::scope(|sc| -> Result<(), String> {
        let jobs: Vec<_> = sealed
            .iter()
            .map(|s| sc.spawn(|| demo::ensure_registered_parameters(&s.c1, s.prover_id, s.sector_id, &dir, 1)))
            .collect();
        for j in jobs {
            j.join().map_err(|_| "parameter generation panicked".to_string())?.map_err(|x| e(&x))?;
        }
        Ok(())
    })?;
    println!("registered: parameters ready in {:.1?}", t.elapsed());
    for (&ty, s) in types.iter().zip(&sealed) {
        let size = u64::from(ty.sector_size());
        let base = ProverConfig {
            params: ParamsSource::CacheDir(dir.clone()),
            randomness: Randomness::Seed([3; 32]),
            ..ProverConfig::default()
        };
        let cpu = ProverConfig { backend: Backend::cpu(), ..base.clone() };
        let t = Instant::now();
        let (cpu_out, _) = prove_porep_c2_with_report(&s.c1, s.prover_id, s.sector_id, &cpu).map_err(|x| e(&x))?;
        let cpu_s = t.elapsed().as_secs_f64();
        let mut config = GpuBackendConfig::default();
        config.vram.cap = cap_gib.map(|g| g << 30);
        config.plan_for = PartitionShape::for_sector_size(size).ok_or_else(|| format!("no shape for {size} B"))?;
        // No retry backend: a device fault fails the check instead of quietly
        // proving on the CPU.
        let gpu = ProverConfig {
            backend: gpu_backend(&config).map_err(|x| e(&x))?,
            retry_backend: None,
            synthesis: SynthesisPath::Circuit,
            ..base
        };
        let t = Instant::now();
        let (gpu_out, report) =
            prove_porep_c2_with_report(&s.c1, s.prover_id, s.sector_id, &gpu.clone()).map_err(|x| e(&x))?;
        let gpu_s = t.elapsed().as_secs_f64();
        for p in &report.partitions {
            println!("  {}", p.timeline());
        }
        let t = Instant::now();
        let ok = s.verify_seal(&gpu_out.proof).map_err(|x| e(&x))?;
        let cap = cap_gib.map_or("uncapped".to_string(), |g| format!("pool capped at {g} GiB"));
        r.check(
            format!(
                "registered {ty:?} ({cap}): GPU workers' proof == CPU proof (same seed) and filecoin_proofs verify_seal accepts it ({:.1?}); C2 {gpu_s:.2} s GPU vs {cpu_s:.2} s CPU",
                t.elapsed()
            ),
            ok && gpu_out.proof == cpu_out.proof && gpu_out.proof.len() == 192,
        );
        // The witness-only path (a, b, c from the constraint matrices on
        // the device), on the sealed sector and on a valid CC test sector
        // of the same type (same parameters: one circuit shape).
        let witness = ProverConfig { synthesis: SynthesisPath::Matrices { cache_dir: None }, ..gpu };
        let cc = c2_synth::cc_sector(ty, &c2_synth::CcSectorConfig { rng_seed: 5, sector_id: 5, ..Default::default() })
            .map_err(|x| e(&x))?;
        let cc = demo::SealedSector {
            c1: cc.c1,
            prover_id: cc.prover_id,
            sector_id: cc.sector_id.into(),
            dir: std::env::temp_dir(),
        };
        for (what, sector, want) in [("sealed", s, Some(&cpu_out.proof)), ("CC test", &cc, None)] {
            let t = Instant::now();
            let (out, report) = prove_porep_c2_with_report(&sector.c1, sector.prover_id, sector.sector_id, &witness)
                .map_err(|x| e(&x))?;
            let secs = t.elapsed().as_secs_f64();
            let abc_ms: f32 = report.partitions.iter().filter_map(|p| p.steps.gpu.as_ref()).map(|g| g.abc_ms).sum();
            let ok = sector.verify_seal(&out.proof).map_err(|x| e(&x))?;
            r.check(
                format!(
                    "registered {ty:?} ({cap}), {what} sector, witness only + a, b, c on the device ({abc_ms:.2} ms): verify_seal accepts{}; C2 {secs:.2} s",
                    if want.is_some() { ", bytes == CPU proof" } else { "" }
                ),
                ok && want.is_none_or(|w| *w == out.proof) && abc_ms > 0.0,
            );
        }
        let _ = std::fs::remove_dir_all(&s.dir);
    }
    Ok(())
}
