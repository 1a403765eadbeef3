//! One 32 GiB-shaped partition on the GPU, stage by stage, with everything
//! composed at device level: a, b, c and the witness uploaded once (pinned),
//! H computed and left on the device, every MSM over resident parameters.
//!
//! Shapes from FACTS.md (130,278,869 constraints, 130,169,893 aux, 328
//! inputs, A density 99.7 %, B density 25.4 %; domain 2^27), divided by
//! `--partition-scale` (1, 2, 4, 8). Witness values: 50 % zero, 46 % one, 4 %
//! full-width (the 512 MiB mix of FACTS.md, rounded toward more full-width
//! values). Parameters are random points tiled from a pool of 2^22: timing
//! only, the "proof" does not verify and is not assembled.

use std::sync::Arc;
use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use c2_cuda::{DeviceBuffer, Gpu, GpuError, PinnedRange};
use c2_msm::gpu::{DeviceDensity, DeviceScalars, GpuMsm, G1, G2};
use c2_msm::Density;
use c2_ntt::GpuNtt;
use ff::Field;
use group::Group;
use rayon::prelude::*;

use crate::{median, random_vec, Report};

const CONSTRAINTS: usize = 130_278_869;
const AUX: usize = 130_169_893;
const INPUTS: usize = 328;

fn witness_mix(n: usize, salt: u64) -> Vec<Scalar> {
    let r = random_vec(n, salt);
    r.par_iter()
        .enumerate()
        .map(|(i, x)| match ((i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) % 100 {
            0..=49 => Scalar::ZERO,
            50..=95 => Scalar::ONE,
            _ => *x,
        })
        .collect()
}

fn mask(n: usize, per_mille: u64, salt: u64) -> Density {
    Density::from_bools((0..n as u64).map(|i| (i.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ salt) % 1000 < per_mille))
}

fn tiled<A: Copy>(pool: &[A], n: usize) -> Vec<A> {
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        v.extend_from_slice(&pool[..(n - v.len()).min(pool.len())]);
    }
    v
}

fn upload<T: Copy>(gpu: &Arc<Gpu>, v: &[T], s: &c2_cuda::Stream) -> Result<DeviceBuffer<T>, GpuError> {
    let mut d = gpu.alloc::<T>(v.len())?;
    d.upload_async(0, v, s)?;
    Ok(d)
}

/// Stage times of one partition, ms.
#[derive(Default, Clone)]
struct Stages {
    upload: f64,
    ntt: f64,
    h: f64,
    l: f64,
    a: f64,
    b1: f64,
    b2: f64,
}

impl Stages {
    fn total(&self) -> f64 {
        self.upload + self.ntt + self.h + self.l + self.a + self.b1 + self.b2
    }
}

/// Runs `partitions` partitions of the scaled shape and reports per stage.
pub fn bench(gpu: Arc<Gpu>, r: &mut Report, scale: usize, partitions: usize) -> Result<(), String> {
    let e = |x: GpuError| x.to_string();
    let m_err = |x: c2_msm::MsmError| x.to_string();
    let scale = scale.max(1);
    let (n_c, n_aux) = (CONSTRAINTS / scale, AUX / scale);
    let log_m = n_c.next_power_of_two().trailing_zeros();
    let m = 1usize << log_m;
    let t = Instant::now();
    let a_mask = mask(n_aux, 997, 1);
    let b_aux_mask = mask(n_aux, 254, 2);
    let b_in_mask = mask(INPUTS, 500, 3);
    let (na, nb_in, nb_aux) = (a_mask.count_ones(), b_in_mask.count_ones(), b_aux_mask.count_ones());
    // Parameters: random points, tiled.
    let pool1: Vec<G1Affine> = crate::msm::pool_points::<G1Projective>(1 << 22);
    let pool2: Vec<G2Affine> = crate::msm::pool_points::<G2Projective>(1 << 20);
    let stream = gpu.stream().map_err(e)?;
    let p_h = upload(&gpu, &tiled(&pool1, m - 1), &stream).map_err(e)?;
    let p_l = upload(&gpu, &tiled(&pool1, n_aux), &stream).map_err(e)?;
    let p_a_in = upload(&gpu, &tiled(&pool1, INPUTS), &stream).map_err(e)?;
    let p_a_aux = upload(&gpu, &tiled(&pool1, na), &stream).map_err(e)?;
    let p_b1_in = upload(&gpu, &tiled(&pool1, nb_in), &stream).map_err(e)?;
    let p_b1_aux = upload(&gpu, &tiled(&pool1, nb_aux), &stream).map_err(e)?;
    let p_b2_in = upload(&gpu, &tiled(&pool2, nb_in), &stream).map_err(e)?;
    let p_b2_aux = upload(&gpu, &tiled(&pool2, nb_aux), &stream).map_err(e)?;
    stream.synchronize().map_err(e)?;
    let params_gb = ((m - 1 + n_aux + INPUTS + na + nb_in + nb_aux) * 96 + (nb_in + nb_aux) * 192) as f64 / 1e9;
    println!(
        "partition bench 1/{scale}: {n_c} constraints, {n_aux} aux, domain 2^{log_m}, A {na}, B {nb_aux}; {params_gb:.1} GB of parameters resident ({:.1?} to build and upload)",
        t.elapsed()
    );

    let ntt = GpuNtt::new(gpu.clone()).map_err(|x| x.to_string())?;
    let msm = GpuMsm::new(gpu.clone()).map_err(m_err)?;
    let d_a_mask = msm.upload_density(&a_mask).map_err(m_err)?;
    let d_b_in = msm.upload_density(&b_in_mask).map_err(m_err)?;
    let d_b_aux = msm.upload_density(&b_aux_mask).map_err(m_err)?;
    let (t0, t1) = (gpu.event().map_err(e)?, gpu.event().map_err(e)?);
    let mut runs: Vec<Stages> = Vec::new();
    for p in 0..partitions {
        // Host vectors as synthesis would hand them over (then pinned).
        let mut abc: Vec<Vec<Scalar>> = (0..3).map(|k| {
            let mut v = random_vec(n_c, 10 * p as u64 + k);
            v.resize(m, Scalar::ZERO);
            v
        }).collect();
        let mut aux = witness_mix(n_aux, p as u64);
        let mut inputs = random_vec(INPUTS, 99 + p as u64);
        inputs[0] = Scalar::ONE;
        let mut st = Stages::default();
        let (mut d_a, mut d_b, mut d_c, d_aux, d_in) = {
            let [va, vb, vc] = &mut abc[..] else { unreachable!() };
            let (pa, pb, pc) = (
                PinnedRange::new(&gpu, va).map_err(e)?,
                PinnedRange::new(&gpu, vb).map_err(e)?,
                PinnedRange::new(&gpu, vc).map_err(e)?,
            );
            let paux = PinnedRange::new(&gpu, &mut aux).map_err(e)?;
            let pin = PinnedRange::new(&gpu, &mut inputs).map_err(e)?;
            t0.record(&stream).map_err(e)?;
            let d = (
                upload(&gpu, &pa[..], &stream).map_err(e)?,
                upload(&gpu, &pb[..], &stream).map_err(e)?,
                upload(&gpu, &pc[..], &stream).map_err(e)?,
                upload(&gpu, &paux[..], &stream).map_err(e)?,
                upload(&gpu, &pin[..], &stream).map_err(e)?,
            );
            t1.record(&stream).map_err(e)?;
            stream.synchronize().map_err(e)?;
            st.upload = t1.elapsed_ms(&t0).map_err(e)? as f64;
            d
        };
        let mut d_h = gpu.alloc::<Scalar>(m).map_err(e)?;
        let clock = Instant::now();
        ntt.compute_h_device(&mut d_a, &mut d_b, &mut d_c, &mut d_h, log_m, &stream).map_err(|x| x.to_string())?;
        stream.synchronize().map_err(e)?;
        st.ntt = clock.elapsed().as_secs_f64() * 1e3;
        drop((d_a, d_b, d_c));
        let timed = |f: &mut dyn FnMut() -> Result<(), String>| -> Result<f64, String> {
            let c = Instant::now();
            f()?;
            Ok(c.elapsed().as_secs_f64() * 1e3)
        };
        let aux_s = DeviceScalars::montgomery(&d_aux);
        let in_s = DeviceScalars::montgomery(&d_in);
        let mut sink = G1Projective::identity();
        let mut sink2 = G2Projective::identity();
        st.h = timed(&mut || {
            sink += msm.msm_device::<G1>(&p_h, DeviceScalars::montgomery(&d_h).prefix(m - 1), None).map_err(m_err)?;
            Ok(())
        })?;
        drop(d_h);
        st.l = timed(&mut || {
            sink += msm.msm_device::<G1>(&p_l, aux_s, None).map_err(m_err)?;
            Ok(())
        })?;
        st.a = timed(&mut || {
            sink += msm.msm_device::<G1>(&p_a_in, in_s, None).map_err(m_err)?;
            sink += msm.msm_device::<G1>(&p_a_aux, aux_s, Some(&d_a_mask)).map_err(m_err)?;
            Ok(())
        })?;
        st.b1 = timed(&mut || {
            sink += msm.msm_device::<G1>(&p_b1_in, in_s, Some(&d_b_in)).map_err(m_err)?;
            sink += msm.msm_device::<G1>(&p_b1_aux, aux_s, Some(&d_b_aux)).map_err(m_err)?;
            Ok(())
        })?;
        st.b2 = timed(&mut || {
            sink2 += msm.msm_device::<G2>(&p_b2_in, in_s, Some(&d_b_in)).map_err(m_err)?;
            sink2 += msm.msm_device::<G2>(&p_b2_aux, aux_s, Some(&d_b_aux)).map_err(m_err)?;
            Ok(())
        })?;
        let _ = (sink, sink2, DeviceDensity::len(&d_a_mask));
        println!(
            "partition {p}: upload {:.1} | compute_h {:.1} | H {:.1} | L {:.1} | A {:.1} | B_G1 {:.1} | B_G2 {:.1} | total {:.1} ms",
            st.upload, st.ntt, st.h, st.l, st.a, st.b1, st.b2, st.total()
        );
        runs.push(st);
    }
    let med = |f: fn(&Stages) -> f64| median(runs.iter().map(f).collect());
    r.bench.push(format!(
        "partition 1/{scale} (2^{log_m}), median of {partitions} (ms): upload {:.1} | compute_h {:.1} | H {:.1} | L {:.1} | A {:.1} | B_G1 {:.1} | B_G2 {:.1} | GPU total {:.1}",
        med(|s| s.upload), med(|s| s.ntt), med(|s| s.h), med(|s| s.l), med(|s| s.a), med(|s| s.b1), med(|s| s.b2), med(Stages::total)
    ));
    Ok(())
}
