//! `peer-prove`: a peer prover on the synthetic 32 GiB-shaped circuit, for
//! the side-by-side benchmark (issue 5). Built with `--features
//! bellperson-cuda` it is bellperson 0.27's CUDA prover; with `--features
//! supraseal` it is SupraSeal C2 through bellperson's `cuda-supraseal`.
//!
//! ```text
//! peer-prove [--scale D] [--partitions K] [--reps R] [--seed S]
//!            [--params-file PATH] [--proof-out PATH] [--vram-free-gib G]
//! ```
//! Proves `K` partitions ([`c2_shapes::ShapedCircuit`] with seeds `1..=K`)
//! in one `create_proof_batch` call (as filecoin-proofs does), with random
//! parameters from `c2_shapes::random_parameters(shape, S)` and `r = 3`,
//! `s = 5` for every partition, `R` times (with `R > 1` the first run is a
//! warm-up, left out of the medians). The porep-c2 device runner proves
//! the same circuits with the same parameters and blinding and compares the
//! bytes written to `--proof-out`. Synthesis and prover times are
//! bellperson's own ("synthesis time", "prover time" log lines). SupraSeal
//! reads parameters only from a file: they are written to `--params-file`.
//! (bellperson on the real Filecoin circuits, with parameters generated for
//! them, runs inside the device runner: `--bellperson` with `--only real`,
//! `post` or `update` in a runner built with `--features bellperson-cuda`.)
//! `--vram-free-gib G` first takes all of device 0's free memory but `G` GiB
//! (one allocation, held until exit), so the peer runs as on a G GB card
//! (the ballast's context costs a few hundred MB more than a card's own
//! would: slightly in the peer's disfavour).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bellperson::groth16::{create_proof_batch, Proof};
use blstrs::{Bls12, Scalar};
use c2_shapes::{median, random_parameters, ShapedCircuit, SyntheticShape};

/// Prints bellperson's log lines and keeps its synthesis / prover times.
struct Capture {
    synthesis: Mutex<Vec<Duration>>,
    prover: Mutex<Vec<Duration>>,
    /// bellperson said it could not use the GPU (it then proves on the CPU).
    gpu_refused: AtomicBool,
}

impl log::Log for Capture {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= log::Level::Info
    }

    fn log(&self, record: &log::Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let msg = record.args().to_string();
        eprintln!("[{} {}] {msg}", record.level(), record.target());
        if msg.contains("Cannot instantiate GPU") {
            self.gpu_refused.store(true, Ordering::Relaxed);
        }
        for (prefix, into) in [("synthesis time: ", &self.synthesis), ("prover time: ", &self.prover)] {
            if let Some(d) = msg.strip_prefix(prefix).and_then(parse_duration) {
                into.lock().unwrap_or_else(|e| e.into_inner()).push(d);
            }
        }
    }

    fn flush(&self) {}
}

/// A `Duration`'s Debug form ("1.5s", "12.3ms", "45µs", "7ns") back.
fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    for (unit, scale) in [("ns", 1e-9), ("µs", 1e-6), ("ms", 1e-3), ("s", 1.0)] {
        if let Some(v) = s.strip_suffix(unit) {
            return v.parse::<f64>().ok().map(|x| Duration::from_secs_f64(x * scale));
        }
    }
    None
}

static CAPTURE: Capture =
    Capture { synthesis: Mutex::new(Vec::new()), prover: Mutex::new(Vec::new()), gpu_refused: AtomicBool::new(false) };

fn peer_name() -> Option<&'static str> {
    if cfg!(feature = "supraseal") {
        Some("supraseal-c2 (bellperson cuda-supraseal)")
    } else if cfg!(feature = "bellperson-cuda") {
        Some("bellperson 0.27 cuda")
    } else {
        None
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: peer-prove [--scale D] [--partitions K] [--reps R] [--seed S] [--params-file PATH] [--proof-out PATH] [--vram-free-gib G]"
    );
    std::process::exit(2)
}

/// Takes device 0's free memory but `free_gib` GiB in one allocation, held
/// (with its primary context) until the process exits; returns the bytes
/// taken and the bytes left free.
#[cfg(any(feature = "bellperson-cuda", feature = "supraseal"))]
fn ballast(free_gib: usize) -> Result<(usize, usize), String> {
    let gpu = c2_cuda::Gpu::open(0).map_err(|e| e.to_string())?;
    let (free, _) = gpu.memory().map_err(|e| e.to_string())?;
    let take = free.saturating_sub(free_gib << 30);
    if take > 0 {
        // Held until the process exits: never dropped.
        std::mem::forget(gpu.alloc::<u8>(take).map_err(|e| e.to_string())?);
    }
    let (free, _) = gpu.memory().map_err(|e| e.to_string())?;
    std::mem::forget(gpu);
    Ok((take, free))
}

#[cfg(not(any(feature = "bellperson-cuda", feature = "supraseal")))]
fn ballast(_free_gib: usize) -> Result<(usize, usize), String> {
    Err("built without a GPU prover".into())
}

fn main() {
    let Some(name) = peer_name() else {
        eprintln!("peer-prove was built without a prover: use --features bellperson-cuda or --features supraseal");
        std::process::exit(2)
    };
    let (mut scale, mut partitions, mut reps, mut seed) = (8usize, 1usize, 1usize, 7u64);
    let mut params_file = std::env::temp_dir().join("c2-peer-bench.params");
    let mut proof_out = None;
    let mut vram_free_gib = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--scale" => scale = val().parse().unwrap_or_else(|_| usage()),
            "--partitions" => partitions = val().parse().unwrap_or_else(|_| usage()),
            "--reps" => reps = val().parse().unwrap_or_else(|_| usage()),
            "--seed" => seed = val().parse().unwrap_or_else(|_| usage()),
            "--params-file" => params_file = val().into(),
            "--proof-out" => proof_out = Some(std::path::PathBuf::from(val())),
            "--vram-free-gib" => vram_free_gib = Some(val().parse::<usize>().unwrap_or_else(|_| usage())),
            _ => usage(),
        }
    }
    if partitions == 0 || reps == 0 {
        usage();
    }
    if log::set_logger(&CAPTURE).is_ok() {
        log::set_max_level(log::LevelFilter::Info);
    }

    if let Some(g) = vram_free_gib {
        let (taken, free) = ballast(g).unwrap_or_else(|e| fail(name, "taking device memory", &e));
        println!(
            "{name}: device 0: {:.1} GB taken by a ballast, {:.1} GB left free (asked {g} GiB)",
            taken as f64 / 1e9,
            free as f64 / 1e9
        );
    }
    let cap = vram_free_gib.map_or(String::new(), |g| format!(" [{g} GiB free]"));
    let shape = SyntheticShape::porep_32gib().scaled(scale);
    let t = Instant::now();
    let params = random_parameters(&shape, seed);
    println!(
        "{name}: shape 1/{scale}: {} constraints, {} aux, domain 2^{}; random parameters in {:.1?}",
        shape.constraints,
        shape.aux,
        shape.domain().trailing_zeros(),
        t.elapsed()
    );
    #[cfg(feature = "supraseal")]
    let params = {
        let t = Instant::now();
        let file =
            std::fs::File::create(&params_file).unwrap_or_else(|e| fail(name, "creating the parameter file", &e));
        params
            .write(std::io::BufWriter::with_capacity(1 << 24, file))
            .unwrap_or_else(|e| fail(name, "writing parameters", &e));
        drop(params);
        println!("{name}: parameters written to {} in {:.1?}", params_file.display(), t.elapsed());
        let t = Instant::now();
        let srs = bellperson::groth16::SuprasealParameters::<Bls12>::new(params_file.clone())
            .unwrap_or_else(|e| fail(name, "SupraSeal reading the parameters", &e));
        println!("{name}: SupraSeal SRS loaded in {:.1?}", t.elapsed());
        srs
    };
    #[cfg(not(feature = "supraseal"))]
    let _ = &params_file;

    let timed = timed_reps(name, reps, partitions, || {
        let circuits: Vec<ShapedCircuit> =
            (0..partitions).map(|k| ShapedCircuit { shape: shape.clone(), seed: k as u64 + 1 }).collect();
        let (r, s) = (vec![Scalar::from(3u64); partitions], vec![Scalar::from(5u64); partitions]);
        create_proof_batch(circuits, &params, r, s).unwrap_or_else(|e| fail(name, "proving", &e))
    });
    timed.finish(name, &format!("{cap} | scale 1/{scale}"), partitions, proof_out.as_deref());
}

fn fail(name: &str, what: &str, e: &dyn std::fmt::Display) -> ! {
    eprintln!("peer-prove ({name}): {what}: {e}");
    std::process::exit(1)
}

/// The proofs of the last rep and the figures of the timed ones.
struct Timed {
    proofs: Vec<Proof<Bls12>>,
    walls: Vec<f64>,
    provers: Vec<f64>,
}

/// Runs `prove` `reps` times, printing each rep's wall and bellperson's
/// own synthesis / prover times. With several reps the first is a warm-up
/// (kernel JIT, first allocations) and is left out of the medians.
fn timed_reps(name: &str, reps: usize, partitions: usize, mut prove: impl FnMut() -> Vec<Proof<Bls12>>) -> Timed {
    let mut timed = Timed { proofs: Vec::new(), walls: Vec::new(), provers: Vec::new() };
    for rep in 0..reps {
        let t = Instant::now();
        timed.proofs = prove();
        let wall = t.elapsed().as_secs_f64();
        let synthesis = CAPTURE.synthesis.lock().map(|v| v.last().copied()).ok().flatten();
        let prover = CAPTURE.prover.lock().map(|v| v.last().copied()).ok().flatten();
        println!(
            "{name}: rep {rep}: {partitions} partition(s) in {wall:.2} s (synthesis {}, prover {})",
            synthesis.map_or("?".into(), |d| format!("{:.2} s", d.as_secs_f64())),
            prover.map_or("?".into(), |d| format!("{:.2} s", d.as_secs_f64())),
        );
        if reps == 1 || rep > 0 {
            timed.walls.push(wall);
            timed.provers.extend(prover.map(|p| p.as_secs_f64()));
        }
    }
    timed
}

impl Timed {
    /// Writes the proofs to `proof_out` and prints the line the runner
    /// parses (`what` names the circuit).
    fn finish(self, name: &str, what: &str, partitions: usize, proof_out: Option<&std::path::Path>) {
        if let Some(path) = proof_out {
            let mut bytes = Vec::with_capacity(192 * self.proofs.len());
            for p in &self.proofs {
                p.write(&mut bytes).unwrap_or_else(|e| fail(name, "serializing a proof", &e));
            }
            std::fs::write(path, bytes).unwrap_or_else(|e| fail(name, "writing the proof", &e));
        }
        // A CPU fallback is no GPU figure.
        let name = if CAPTURE.gpu_refused.load(Ordering::Relaxed) {
            format!("{name} [GPU REFUSED: CPU fallback]")
        } else {
            name.to_string()
        };
        println!(
            "PEER {name}{what} | {partitions} partition(s) | median of {} rep(s): wall {:.3} s, prover {:.3} s = {:.3} s per partition",
            self.walls.len(),
            median(self.walls),
            median(self.provers.clone()),
            median(self.provers) / partitions as f64
        );
    }
}
