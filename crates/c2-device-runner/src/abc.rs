//! a, b, c from the constraint matrices on the GPU (issue 14, step 5):
//! `c2_abc::GpuAbc` against the CPU product (`c2_abc::evaluate`) on random
//! matrices with edge cases (empty rows, coefficients 0, 1, r-1, witness
//! values 0, 1, r-1, padding rows), then on real circuits: valid CC test
//! sectors (`c2_synth::cc_sector`), matrices recorded from partition 0's
//! challenges, its witness, and the GPU product against the CPU's and
//! against what synthesis itself records (sizes that fit the check).
//! Timed: recording, witness, CPU product, upload, the three kernels
//! (events).

use std::time::Instant;

use blstrs::Scalar;
use c2_abc::{evaluate, ChunkedMatrices, GpuAbc, PinnedChunks};
use c2_cuda::{DeviceMemory, Gpu};
use c2_synth::{cc_sector, CcSectorConfig, ConstraintMatrices, SparseMatrix};
use ff::Field;
use filecoin_proofs_api::RegisteredSealProof;
use rand::{Rng, SeedableRng};

use crate::Report;

/// Random matrices: `rows` rows of 0..=max_len entries over `width` columns.
fn random_matrix(rows: usize, width: u32, coeffs: u32, max_len: u32, rng: &mut impl Rng) -> SparseMatrix {
    let mut m = SparseMatrix { row_starts: vec![0], cols: Vec::new(), coeffs: Vec::new() };
    for _ in 0..rows {
        for _ in 0..rng.gen_range(0..=max_len) {
            m.cols.push(rng.gen_range(0..width));
            m.coeffs.push(rng.gen_range(0..coeffs));
        }
        m.row_starts.push(m.cols.len() as u64);
    }
    m
}

/// Witness values: random, with zeros, ones and r-1 planted.
fn witness(n: usize, rng: &mut impl Rng) -> Vec<Scalar> {
    (0..n)
        .map(|_| match rng.gen_range(0..8) {
            0 | 1 => Scalar::ZERO,
            2 | 3 => Scalar::ONE,
            4 => -Scalar::ONE,
            _ => Scalar::random(&mut *rng),
        })
        .collect()
}

/// The differential checks and the real-circuit runs for `sectors`.
pub fn checks(gpu: std::sync::Arc<Gpu>, r: &mut Report, sectors: &[RegisteredSealProof]) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let abc = GpuAbc::with_memory(DeviceMemory::driver(gpu.clone())).map_err(|x| e(&x))?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0xabc);
    let tables: [(&str, Vec<Scalar>); 3] = [
        ("1, 0, r-1, random", vec![Scalar::ONE, Scalar::ZERO, -Scalar::ONE, Scalar::random(&mut rng)]),
        ("no one", vec![Scalar::from(2u64), -Scalar::ONE, Scalar::random(&mut rng)]),
        ("only one", vec![Scalar::ONE]),
    ];
    for (rows, inputs, aux) in [(1usize, 1usize, 1usize), (3, 2, 5), (1000, 5, 3000), ((1 << 16) + 1, 40, 70_001)] {
        for (name, coeffs) in &tables {
            let width = (inputs + aux) as u32;
            let k = coeffs.len() as u32;
            let m = ConstraintMatrices {
                inputs,
                aux,
                coeffs: coeffs.clone(),
                a: random_matrix(rows, width, k, 6, &mut rng),
                b: random_matrix(rows, width, k, 2, &mut rng),
                c: random_matrix(rows, width, k, 4, &mut rng),
            };
            let (zi, za) = (witness(inputs, &mut rng), witness(aux, &mut rng));
            let want = evaluate(&m.view(), &zi, &za).map_err(|x| e(&x))?;
            let d = abc.upload(&m.view()).map_err(|x| e(&x))?;
            let got = abc.evaluate(&d, &zi, &za).map_err(|x| e(&x))?;
            r.check(format!("abc rows={rows} z={} coefficients {name}: GPU == CPU", inputs + aux), got == want);
        }
    }
    // Long rows (more than 32 entries: one warp each), mixed with short ones.
    for (rows, max_len) in [(1usize, 40u32), (700, 1500), (5000, 64)] {
        let coeffs = vec![Scalar::ONE, -Scalar::ONE, Scalar::from(2u64), Scalar::random(&mut rng)];
        let (inputs, aux) = (7usize, 20_000usize);
        let m = ConstraintMatrices {
            inputs,
            aux,
            coeffs,
            a: random_matrix(rows, (inputs + aux) as u32, 4, max_len, &mut rng),
            b: random_matrix(rows, (inputs + aux) as u32, 4, 2, &mut rng),
            c: random_matrix(rows, (inputs + aux) as u32, 4, max_len / 2, &mut rng),
        };
        let (zi, za) = (witness(inputs, &mut rng), witness(aux, &mut rng));
        let want = evaluate(&m.view(), &zi, &za).map_err(|x| e(&x))?;
        let d = abc.upload(&m.view()).map_err(|x| e(&x))?;
        let got = abc.evaluate(&d, &zi, &za).map_err(|x| e(&x))?;
        r.check(format!("abc rows={rows} of up to {max_len} entries (warp per long row): GPU == CPU"), got == want);
    }
    // Padding: rows < out.len() leaves zeros after the products, over garbage.
    {
        let coeffs = vec![Scalar::ONE, Scalar::from(7u64)];
        let m = ConstraintMatrices {
            inputs: 1,
            aux: 10,
            coeffs,
            a: random_matrix(100, 11, 2, 3, &mut rng),
            b: random_matrix(100, 11, 2, 3, &mut rng),
            c: random_matrix(100, 11, 2, 3, &mut rng),
        };
        let (zi, za) = (witness(1, &mut rng), witness(10, &mut rng));
        let want = evaluate(&m.view(), &zi, &za).map_err(|x| e(&x))?;
        let d = abc.upload(&m.view()).map_err(|x| e(&x))?;
        let stream = gpu.stream().map_err(|x| e(&x))?;
        let mut z = gpu.alloc::<Scalar>(11).map_err(|x| e(&x))?;
        let zv: Vec<Scalar> = zi.iter().chain(&za).copied().collect();
        z.upload(0, &zv, &stream).map_err(|x| e(&x))?;
        let mut out = gpu.alloc::<Scalar>(128).map_err(|x| e(&x))?;
        out.upload(0, &vec![-Scalar::ONE; 128], &stream).map_err(|x| e(&x))?;
        abc.product_device(&d, 1, &z, &mut out, &stream).map_err(|x| e(&x))?;
        let mut host = vec![Scalar::ZERO; 128];
        out.download(0, &mut host, &stream).map_err(|x| e(&x))?;
        stream.synchronize().map_err(|x| e(&x))?;
        let ok = host[..100] == want.1[..] && host[100..].iter().all(|x| bool::from(x.is_zero()));
        r.check("abc B·z into a 128-element domain vector: products, then zeros".into(), ok);
    }
    // A malformed matrix is refused before any kernel reads it.
    {
        let mut m = ConstraintMatrices {
            inputs: 1,
            aux: 3,
            coeffs: vec![Scalar::ONE],
            a: random_matrix(10, 4, 1, 3, &mut rng),
            b: random_matrix(10, 4, 1, 3, &mut rng),
            c: random_matrix(10, 4, 1, 3, &mut rng),
        };
        if let Some(c) = m.c.cols.first_mut() {
            *c = 4;
        }
        r.check("abc: a column outside z is refused at upload".into(), abc.upload(&m.view()).is_err());
    }
    streamed_on_random_matrices(&abc, &gpu, r, &mut rng)?;
    satisfaction_on_random_vectors(&abc, &gpu, r, &mut rng)?;
    compact_witness_on_random_vectors(&abc, &gpu, r, &mut rng)?;
    for &rp in sectors {
        real_sector(&abc, &gpu, r, rp)?;
    }
    Ok(())
}

/// The products from the compact form (issue 42: the challenge blocks'
/// rows kept once, `c2_abc::RepeatedMatrices`), resident: found, uploaded,
/// timed by events (second run) and compared with the CPU's full product,
/// the domain's padding zero over r-1. `full_ms`: the full matrices' times.
#[allow(clippy::too_many_arguments)]
fn repeated_products(
    abc: &GpuAbc,
    gpu: &std::sync::Arc<Gpu>,
    r: &mut Report,
    label: &str,
    m: &ConstraintMatrices,
    z: &c2_cuda::DeviceBuffer<Scalar>,
    out: &mut c2_cuda::DeviceBuffer<Scalar>,
    want: &c2_abc::Abc,
    full_ms: [f32; 3],
) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let t = Instant::now();
    let Some(compact) = c2_abc::RepeatedMatrices::find(&m.view()) else {
        r.check(format!("abc {label}: the matrices' challenge rows repeat"), false);
        return Ok(());
    };
    let t_find = t.elapsed();
    let t = Instant::now();
    let d = abc.upload_repeated(&compact).map_err(|x| e(&x))?;
    let t_up = t.elapsed();
    let stream = gpu.stream().map_err(|x| e(&x))?;
    let (start, end) = (gpu.event().map_err(|x| e(&x))?, gpu.event().map_err(|x| e(&x))?);
    let (n, domain) = (m.constraints(), out.len());
    let mut ms = [0f32; 3];
    let mut same = true;
    for (which, want) in [&want.0, &want.1, &want.2].into_iter().enumerate() {
        out.upload(0, &vec![-Scalar::ONE; domain], &stream).map_err(|x| e(&x))?;
        for _ in 0..2 {
            start.record(&stream).map_err(|x| e(&x))?;
            abc.product_device(&d, which, z, out, &stream).map_err(|x| e(&x))?;
            end.record(&stream).map_err(|x| e(&x))?;
            end.synchronize().map_err(|x| e(&x))?;
            ms[which] = end.elapsed_ms(&start).map_err(|x| e(&x))?;
        }
        let mut back = vec![Scalar::ZERO; domain];
        out.download(0, &mut back, &stream).map_err(|x| e(&x))?;
        stream.synchronize().map_err(|x| e(&x))?;
        same &= back[..n] == want[..] && back[n..].iter().all(|x| bool::from(x.is_zero()));
    }
    let rep = compact.repeat;
    r.check(
        format!(
            "abc {label} partition 0: A·z, B·z, C·z from the repeated rows ({} blocks of {} rows from row {}; {:.3} GB on the device against {:.2} GB, found in {t_find:.2?}, uploaded in {t_up:.2?}; A {:.1} / B {:.1} / C {:.1} ms, full matrices {:.1} / {:.1} / {:.1} ms) == CPU, padding zero",
            rep.blocks,
            rep.block_rows,
            rep.first_row,
            d.bytes() as f64 / 1e9,
            m.bytes() as f64 / 1e9,
            ms[0],
            ms[1],
            ms[2],
            full_ms[0],
            full_ms[1],
            full_ms[2]
        ),
        same,
    );
    Ok(())
}

/// A, B, C streamed in `chunks` (page-locked or not) through an
/// `AbcStream`: the three products downloaded from an
/// output of `out_len` elements first filled with r-1 (so the padding
/// rows must come back zero), and the kernel-and-copy milliseconds of
/// each product (events on the compute stream, the copy stream's chunks
/// included).
fn streamed_products(
    abc: &GpuAbc,
    gpu: &std::sync::Arc<Gpu>,
    chunks: std::sync::Arc<ChunkedMatrices>,
    z: &[Scalar],
    pinned: bool,
    out_len: usize,
) -> Result<(Vec<Vec<Scalar>>, [f32; 3]), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let p =
        if pinned { PinnedChunks::new(gpu, chunks).map_err(|x| e(&x))? } else { PinnedChunks::unregistered(chunks) };
    let (copy, stream) = (gpu.stream().map_err(|x| e(&x))?, gpu.stream().map_err(|x| e(&x))?);
    let mut dz = gpu.alloc::<Scalar>(z.len().max(1)).map_err(|x| e(&x))?;
    dz.upload(0, z, &stream).map_err(|x| e(&x))?;
    let mut out = gpu.alloc::<Scalar>(out_len.max(1)).map_err(|x| e(&x))?;
    let memory = DeviceMemory::driver(gpu.clone());
    let mut s = abc.stream_matrices(&p, &memory, &copy).map_err(|x| e(&x))?;
    let (start, end) = (gpu.event().map_err(|x| e(&x))?, gpu.event().map_err(|x| e(&x))?);
    let mut result = Vec::new();
    let mut ms = [0f32; 3];
    for (which, t) in ms.iter_mut().enumerate() {
        out.upload(0, &vec![-Scalar::ONE; out_len], &stream).map_err(|x| e(&x))?;
        start.record(&stream).map_err(|x| e(&x))?;
        s.product(which, &dz, &mut out, &copy, &stream).map_err(|x| e(&x))?;
        end.record(&stream).map_err(|x| e(&x))?;
        let mut back = vec![Scalar::ZERO; out_len];
        out.download(0, &mut back, &stream).map_err(|x| e(&x))?;
        stream.synchronize().map_err(|x| e(&x))?;
        *t = end.elapsed_ms(&start).map_err(|x| e(&x))?;
        result.push(back);
    }
    Ok((result, ms))
}

/// Streamed a, b, c (matrices in row chunks through two device slots)
/// against the CPU product on random matrices with long rows (warp per
/// row), empty rows and padding: chunks of one row each, of a few rows,
/// and the whole matrix; page-locked and pageable chunks.
fn streamed_on_random_matrices(
    abc: &GpuAbc,
    gpu: &std::sync::Arc<Gpu>,
    r: &mut Report,
    rng: &mut impl Rng,
) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    for (rows, inputs, aux, max_len) in [(1usize, 1usize, 1usize, 3u32), (1000, 5, 3000, 6), (3001, 7, 20_000, 80)] {
        let coeffs = vec![Scalar::ONE, Scalar::ZERO, -Scalar::ONE, Scalar::random(&mut *rng)];
        let width = (inputs + aux) as u32;
        let m = ConstraintMatrices {
            inputs,
            aux,
            coeffs,
            a: random_matrix(rows, width, 4, max_len, rng),
            b: random_matrix(rows, width, 4, 2, rng),
            c: random_matrix(rows, width, 4, max_len / 2, rng),
        };
        let (zi, za) = (witness(inputs, rng), witness(aux, rng));
        let want = evaluate(&m.view(), &zi, &za).map_err(|x| e(&x))?;
        let z: Vec<Scalar> = zi.iter().chain(&za).copied().collect();
        let out_len = rows.next_power_of_two() + 1;
        for (max_words, pinned) in [(8usize, true), (300, false), (300, true), (1 << 24, true)] {
            let chunks = std::sync::Arc::new(ChunkedMatrices::new(&m.view(), max_words).map_err(|x| e(&x))?);
            let (got, _) = streamed_products(abc, gpu, chunks, &z, pinned, out_len)?;
            let ok = [&want.0, &want.1, &want.2]
                .iter()
                .zip(&got)
                .all(|(w, g)| g[..rows] == w[..] && g[rows..].iter().all(|x| bool::from(x.is_zero())));
            r.check(
                format!(
                    "abc streamed rows={rows} of up to {max_len} entries, chunks of <= {max_words} words ({}): GPU == CPU, padding zero",
                    if pinned { "page-locked" } else { "pageable" }
                ),
                ok,
            );
        }
    }
    Ok(())
}

/// The GPU satisfaction check against the CPU's on random satisfied
/// vectors (a·b = c) with failures planted at the first, the last and
/// several places (the smallest must come back), and none.
fn satisfaction_on_random_vectors(
    abc: &GpuAbc,
    gpu: &std::sync::Arc<Gpu>,
    r: &mut Report,
    rng: &mut impl Rng,
) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let stream = gpu.stream().map_err(|x| e(&x))?;
    for n in [1usize, 1000, 65_537] {
        let a = witness(n, rng);
        let b = witness(n, rng);
        let c0: Vec<Scalar> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
        let plants: [&[usize]; 4] = [&[], &[0], &[n - 1], &[n / 2, n - 1, n / 3 + 1]];
        for plant in plants {
            let plant: Vec<usize> = plant.iter().copied().filter(|&i| i < n).collect();
            let mut c = c0.clone();
            for &i in &plant {
                c[i] = c0[i] + Scalar::ONE;
            }
            let want = c2_abc::first_unsatisfied(&a, &b, &c);
            let mut dev = Vec::new();
            for v in [&a, &b, &c] {
                let mut d = gpu.alloc::<Scalar>(n).map_err(|x| e(&x))?;
                d.upload(0, v, &stream).map_err(|x| e(&x))?;
                dev.push(d);
            }
            stream.synchronize().map_err(|x| e(&x))?;
            let got = abc.first_unsatisfied_device(&dev[0], &dev[1], &dev[2], n, &stream).map_err(|x| e(&x))?;
            let planted_first = plant.iter().min().copied();
            r.check(
                format!("satisfaction check n={n}, failures at {plant:?}: GPU {got:?} == CPU {want:?}"),
                got == want && want == planted_first,
            );
        }
    }
    Ok(())
}

/// Compact witnesses expanded on the device == on the host: lengths
/// around word edges, values 0, 1, r-1 and random, all-bits and all-full,
/// at an offset into a longer vector whose other elements stay untouched.
fn compact_witness_on_random_vectors(
    abc: &GpuAbc,
    gpu: &std::sync::Arc<Gpu>,
    r: &mut Report,
    rng: &mut impl Rng,
) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let stream = gpu.stream().map_err(|x| e(&x))?;
    for (n, full_share) in [(1usize, 0u32), (63, 50), (64, 0), (65, 100), (1000, 3), (70_001, 3), (70_001, 100)] {
        let values: Vec<Scalar> = (0..n)
            .map(|_| {
                if rng.gen_range(0..100) < full_share {
                    if rng.gen() {
                        -Scalar::ONE
                    } else {
                        Scalar::random(&mut *rng)
                    }
                } else if rng.gen() {
                    Scalar::ONE
                } else {
                    Scalar::ZERO
                }
            })
            .collect();
        let w = c2_abc::CompactWitness::from_scalars(&values);
        let offset = 7;
        let sentinel = Scalar::from(12345u64);
        let mut z = gpu.alloc::<Scalar>(offset + n + 3).map_err(|x| e(&x))?;
        z.upload(0, &vec![sentinel; offset + n + 3], &stream).map_err(|x| e(&x))?;
        abc.expand_witness(&w, &mut z, offset, &DeviceMemory::driver(gpu.clone()), &stream).map_err(|x| e(&x))?;
        let mut back = vec![Scalar::ZERO; offset + n + 3];
        z.download(0, &mut back, &stream).map_err(|x| e(&x))?;
        stream.synchronize().map_err(|x| e(&x))?;
        let untouched = back[..offset].iter().chain(&back[offset + n..]).all(|x| *x == sentinel);
        r.check(
            format!(
                "compact witness n={n} ({} full values) expanded at offset {offset} on the GPU == host values, neighbours untouched",
                w.full_value().len()
            ),
            back[offset..offset + n] == values[..] && w.expand() == values && untouched,
        );
    }
    Ok(())
}

/// One real partition: matrices recorded, witness, CPU and GPU products.
fn real_sector(abc: &GpuAbc, gpu: &std::sync::Arc<Gpu>, r: &mut Report, rp: RegisteredSealProof) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let s = cc_sector(rp, &CcSectorConfig::default()).map_err(|x| e(&x))?;
    let instance = c2_synth::instance_from_c1(&s.c1, s.prover_id, s.sector_id).map_err(|x| e(&x))?;
    let t = Instant::now();
    let m = instance.record_matrices().map_err(|x| e(&x))?;
    let t_record = t.elapsed();
    let t = Instant::now();
    let (inputs, aux) = instance.synthesize_witness(0).map_err(|x| e(&x))?;
    let t_witness = t.elapsed();
    let t = Instant::now();
    let want = evaluate(&m.view(), &inputs, &aux).map_err(|x| e(&x))?;
    let t_cpu = t.elapsed();
    let t = Instant::now();
    let d = abc.upload(&m.view()).map_err(|x| e(&x))?;
    let t_up = t.elapsed();
    // The three products on the device, timed by events, z and out resident.
    let stream = gpu.stream().map_err(|x| e(&x))?;
    let n = m.constraints();
    let mut z = gpu.alloc::<Scalar>(m.inputs + m.aux).map_err(|x| e(&x))?;
    let zv: Vec<Scalar> = inputs.iter().chain(&aux).copied().collect();
    z.upload(0, &zv, &stream).map_err(|x| e(&x))?;
    stream.synchronize().map_err(|x| e(&x))?;
    drop(zv);
    let domain = n.next_power_of_two();
    let mut out = gpu.alloc::<Scalar>(domain).map_err(|x| e(&x))?;
    let (start, end) = (gpu.event().map_err(|x| e(&x))?, gpu.event().map_err(|x| e(&x))?);
    let mut ms = [0f32; 3];
    let mut same = true;
    for (which, want) in [&want.0, &want.1, &want.2].into_iter().enumerate() {
        // Twice: the second run is the timed one (the first warms caches and clocks).
        for _ in 0..2 {
            start.record(&stream).map_err(|x| e(&x))?;
            abc.product_device(&d, which, &z, &mut out, &stream).map_err(|x| e(&x))?;
            end.record(&stream).map_err(|x| e(&x))?;
            end.synchronize().map_err(|x| e(&x))?;
            ms[which] = end.elapsed_ms(&start).map_err(|x| e(&x))?;
        }
        let mut back = vec![Scalar::ZERO; n];
        out.download(0, &mut back, &stream).map_err(|x| e(&x))?;
        stream.synchronize().map_err(|x| e(&x))?;
        same &= back == *want;
    }
    let label = format!("{rp:?}");
    r.check(format!("abc {label} partition 0 ({n} constraints): GPU A·z, B·z, C·z == CPU"), same);
    let full_ms = ms;
    repeated_products(abc, gpu, r, &label, &m, &z, &mut out, &want, full_ms)?;
    // The same products from matrices streamed in the GPU workers' chunks
    // (page-locked, 256 MiB slots), timed with their copies.
    let zv: Vec<Scalar> = inputs.iter().chain(&aux).copied().collect();
    drop(out);
    let t = Instant::now();
    let chunked = ChunkedMatrices::new(&m.view(), porep_c2::plan::MATRIX_SLOT_BYTES / 4).map_err(|x| e(&x))?;
    let (chunk_count, chunk_bytes) = ((0..3).map(|w| chunked.chunks(w).len()).sum::<usize>(), chunked.bytes());
    let t_chunk = t.elapsed();
    let (got, streamed_ms) = streamed_products(abc, gpu, std::sync::Arc::new(chunked), &zv, true, domain)?;
    drop(zv);
    let same_streamed = [&want.0, &want.1, &want.2]
        .iter()
        .zip(&got)
        .all(|(w, g)| g[..n] == w[..] && g[n..].iter().all(|x| bool::from(x.is_zero())));
    drop(got);
    r.check(
        format!(
            "abc {label} partition 0: streamed A·z, B·z, C·z ({chunk_count} chunks, {:.2} GB, cut in {t_chunk:.2?}; A {:.1} ms, B {:.1} ms, C {:.1} ms with the copies) == CPU",
            chunk_bytes as f64 / 1e9,
            streamed_ms[0],
            streamed_ms[1],
            streamed_ms[2]
        ),
        same_streamed,
    );
    // The compact witness (generated compact), expanded on the device into
    // z's aux part: the same z.
    let t = Instant::now();
    let (c_inputs, compact) = instance.synthesize_compact_witness(0).map_err(|x| e(&x))?;
    let t_compact = t.elapsed();
    let mut z2 = gpu.alloc::<Scalar>(m.inputs + m.aux).map_err(|x| e(&x))?;
    z2.upload(0, &c_inputs, &stream).map_err(|x| e(&x))?;
    let t = Instant::now();
    abc.expand_witness(&compact, &mut z2, m.inputs, &DeviceMemory::driver(gpu.clone()), &stream).map_err(|x| e(&x))?;
    let t_expand = t.elapsed();
    let mut back = vec![Scalar::ZERO; m.aux];
    z2.download(m.inputs, &mut back, &stream).map_err(|x| e(&x))?;
    stream.synchronize().map_err(|x| e(&x))?;
    r.check(
        format!(
            "compact witness {label} partition 0: {:.1} MB instead of {:.1} MB ({} full values of {}), generated in {t_compact:.2?} (16 threads), uploaded and expanded on the GPU in {t_expand:.2?}: == the full witness",
            compact.bytes() as f64 / 1e6,
            aux.len() as f64 * 32e-6,
            compact.full_value().len(),
            compact.len()
        ),
        c_inputs == inputs && back == aux,
    );
    drop((back, z2, compact));
    // The satisfaction check on the device: the real witness satisfies
    // every constraint; one aux value changed breaks one, and the device
    // names the same first constraint as the CPU.
    let t = Instant::now();
    let ok = abc.first_unsatisfied(&d, &inputs, &aux).map_err(|x| e(&x))?;
    let t_sat = t.elapsed();
    let cpu_ok = c2_abc::first_unsatisfied(&want.0, &want.1, &want.2);
    let mut broken = aux.clone();
    let j = broken.len() / 2;
    broken[j] += Scalar::ONE;
    let bad = abc.first_unsatisfied(&d, &inputs, &broken).map_err(|x| e(&x))?;
    let want_bad = evaluate(&m.view(), &inputs, &broken).map_err(|x| e(&x))?;
    let cpu_bad = c2_abc::first_unsatisfied(&want_bad.0, &want_bad.1, &want_bad.2);
    drop((broken, want_bad));
    r.check(
        format!(
            "satisfaction check {label} partition 0 on the device ({t_sat:.2?} with the upload): all {n} hold (CPU too); aux {j} changed: first failing constraint GPU {bad:?} == CPU {cpu_bad:?}"
        ),
        ok.is_none() && cpu_ok.is_none() && bad.is_some() && bad == cpu_bad,
    );
    if n <= 10_000_000 {
        // Small enough to synthesize once more: the products are what synthesis records.
        let full = instance.synthesize_partition(0).map_err(|x| e(&x))?;
        r.check(
            format!("abc {label}: matrices x witness == synthesis' a, b, c"),
            want.0 == full.a && want.1 == full.b && want.2 == full.c,
        );
    }
    let line = format!(
        "abc {label}: {n} constraints, A/B/C entries {}/{}/{}, {} coefficients; record {:.2?}, witness {:.2?} \
         (16 threads), CPU product {:.2?}, upload {:.2?} ({:.2} GB on the device), GPU A {:.2} ms, B {:.2} ms, \
         C {:.2} ms (sum {:.2} ms)",
        m.a.entries(),
        m.b.entries(),
        m.c.entries(),
        m.coeffs.len(),
        t_record,
        t_witness,
        t_cpu,
        t_up,
        d.bytes() as f64 / 1e9,
        ms[0],
        ms[1],
        ms[2],
        ms.iter().sum::<f32>()
    );
    println!("{line}");
    r.bench.push(line);
    Ok(())
}
