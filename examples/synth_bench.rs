//! synth-bench: synthesis of one real StackedDrg partition per sector size,
//! every path side by side in one run, on valid committed-capacity test
//! sectors (`c2_synth::cc_sector`: no sealing, no parameters, any size up
//! to 64 GiB). Per size:
//!
//! 1. the test sector, checked with storage-proofs' vanilla verifier;
//! 2. the reference: the partition's circuit synthesized in one pass, as
//!    bellperson's prover does (one thread), and the satisfaction check
//!    `a_i · b_i == c_i` on it (the full-size correctness oracle where no
//!    parameters exist);
//! 3. the default path (challenges concurrently) at each thread count;
//! 4. the constraint matrices recorded from the blank circuit (time, bytes;
//!    written and read back when `--matrix-dir` is given), then at each
//!    thread count the witness-only synthesis through the gadgets, the
//!    default witness (SHA-256 hashes native) and A·z, B·z, C·z.
//!
//! Every result is compared with the reference (a, b, c, inputs, aux,
//! densities); the exit status is 1 when any differs. `--witness-only`
//! times just the witness, the gadgets' against the native generator's
//! (first call, then again: the in-place path), and compares them. Figures are wall
//! times; "M/s/core" is constraints per second divided by threads.
//!
//! ```text
//! cargo run --release --example synth-bench -- 2KiB 8MiB [--threads 1,2,4,8,16] \
//!     [--matrix-dir DIR] [--seed 1] [--partition 0] [--witness-only]
//! ```
//! A 32 GiB partition (130.3 M constraints) holds ~17 GB per synthesized
//! record and the reference alone takes over a minute: run it on a host with
//! 64 GB or more.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use c2_synth::{cc_sector, check_satisfied, CcSectorConfig, ConstraintMatrices, ProofInstance, Synthesized};
use c2_testkit::cli::fail;
use filecoin_proofs_api::RegisteredSealProof;

fn usage() -> ! {
    eprintln!(
        "usage: synth-bench [2KiB|8MiB|512MiB|32GiB|64GiB ...] [--threads 1,2,4] [--matrix-dir DIR] [--seed N] \
         [--partition K] [--witness-only]"
    );
    std::process::exit(2)
}

/// Peak resident memory of this process so far (Linux), in GB.
fn peak_rss_gb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(str::to_owned))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|kb| kb.parse::<f64>().ok()))
        .map_or(0.0, |kb| kb * 1024.0 / 1e9)
}

/// Runs `f` on a rayon pool of `threads` threads, timed.
fn on_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> (T, Duration) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap_or_else(|e| fail(format!("thread pool of {threads}: {e}")));
    pool.install(|| {
        let t = Instant::now();
        let out = f();
        (out, t.elapsed())
    })
}

/// Which parts of `got` differ from `want` (empty when identical).
fn differences(want: &Synthesized, got: &Synthesized) -> Vec<&'static str> {
    let mut d = Vec::new();
    let mut diff = |same: bool, what| {
        if !same {
            d.push(what)
        }
    };
    diff(want.a == got.a, "a");
    diff(want.b == got.b, "b");
    diff(want.c == got.c, "c");
    diff(want.input_assignment == got.input_assignment, "inputs");
    diff(want.aux_assignment == got.aux_assignment, "aux");
    diff(want.a_aux_density == got.a_aux_density, "A aux density");
    diff(want.b_input_density == got.b_input_density, "B input density");
    diff(want.b_aux_density == got.b_aux_density, "B aux density");
    d
}

struct Args {
    sizes: Vec<String>,
    threads: Vec<usize>,
    matrix_dir: Option<PathBuf>,
    seed: u64,
    partition: usize,
    witness_only: bool,
}

fn parse_args() -> Args {
    let mut a =
        Args { sizes: Vec::new(), threads: vec![1, 2], matrix_dir: None, seed: 1, partition: 0, witness_only: false };
    let mut args = std::env::args().skip(1);
    while let Some(x) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| usage());
        match x.as_str() {
            "--threads" => {
                a.threads = val().split(',').map(|t| t.parse().unwrap_or_else(|_| usage())).collect();
                if a.threads.contains(&0) {
                    usage()
                }
            }
            "--matrix-dir" => a.matrix_dir = Some(val().into()),
            "--seed" => a.seed = val().parse().unwrap_or_else(|_| usage()),
            "--partition" => a.partition = val().parse().unwrap_or_else(|_| usage()),
            "--witness-only" => a.witness_only = true,
            s if !s.starts_with('-') => a.sizes.push(s.to_string()),
            _ => usage(),
        }
    }
    if a.sizes.is_empty() {
        a.sizes.push("2KiB".into());
    }
    a
}

fn registered(size: &str) -> RegisteredSealProof {
    c2_testkit::cli::parse_sector_size(size).unwrap_or_else(|| usage())
}

fn main() {
    env_logger::init();
    let args = parse_args();
    let mut all_same = true;
    let mut table = Vec::new();
    for size in &args.sizes {
        let rp = registered(size);
        let t = Instant::now();
        let config = CcSectorConfig { rng_seed: args.seed, sector_id: args.seed, ..Default::default() };
        let sector = cc_sector(rp, &config).unwrap_or_else(|e| fail(e));
        let made = t.elapsed();
        let instance =
            porep_c2::instance_from_c1(&sector.c1, sector.prover_id, sector.sector_id).unwrap_or_else(|e| fail(e));
        let t = Instant::now();
        instance.check_vanilla_proofs().unwrap_or_else(|e| fail(format!("{size}: {e}")));
        eprintln!("{size}: CC test sector made in {made:.2?}, vanilla proofs verified in {:.2?}", t.elapsed());
        let k = args.partition;
        if args.witness_only {
            run_witness(size, instance.as_ref(), k, &args, &mut all_same, &mut table);
        } else {
            run_size(size, instance.as_ref(), k, &args, &mut all_same, &mut table);
        }
        eprintln!("{size}: peak RSS so far {:.1} GB", peak_rss_gb());
    }
    println!("| size | path | threads | wall s | M constraints/s | M/s/core | same as reference |");
    println!("|---|---|---|---|---|---|---|");
    for r in table {
        println!("{r}");
    }
    if !all_same {
        eprintln!("FAIL: a path differs from the reference");
        std::process::exit(1);
    }
}

fn run_size(
    size: &str,
    instance: &dyn ProofInstance,
    k: usize,
    args: &Args,
    all_same: &mut bool,
    table: &mut Vec<String>,
) {
    let mut push = |path: &str, threads: usize, n: usize, t: Duration, same: String| {
        let s = t.as_secs_f64();
        let rate = n as f64 / s / 1e6;
        let line =
            format!("| {size} | {path} | {threads} | {s:.2} | {rate:.2} | {:.2} | {same} |", rate / threads as f64);
        eprintln!("{line}");
        table.push(line);
    };
    let (reference, t) = on_threads(1, || instance.synthesize_partition_sequential(k));
    let reference = reference.unwrap_or_else(|e| fail(format!("{size}: {e}")));
    let n = reference.a.len();
    push("sequential (reference)", 1, n, t, "-".into());
    let t = Instant::now();
    let sat = check_satisfied(&reference);
    eprintln!("{size}: satisfaction check of {n} constraints in {:.2?}: {sat:?}", t.elapsed());
    if sat.is_err() {
        *all_same = false;
    }
    let gadget_witness_differs = std::cell::Cell::new(false);
    let witness_verdict = |same: bool| {
        gadget_witness_differs.set(gadget_witness_differs.get() || !same);
        if same { "yes" } else { "NO: inputs or aux" }.to_string()
    };
    let mut verdict = |got: &Synthesized| {
        let d = differences(&reference, got);
        if d.is_empty() {
            "yes".to_string()
        } else {
            *all_same = false;
            format!("NO: {}", d.join(", "))
        }
    };
    for &threads in &args.threads {
        let (got, t) = on_threads(threads, || instance.synthesize_partition(k));
        let got = got.unwrap_or_else(|e| fail(format!("{size}: {e}")));
        let same = verdict(&got);
        drop(got);
        push("challenges concurrently", threads, n, t, same);
    }
    let t = Instant::now();
    let matrices = match &args.matrix_dir {
        Some(dir) => {
            let (m, recorded) = instance.load_or_record_matrices(dir).unwrap_or_else(|e| fail(e));
            eprintln!(
                "{size}: matrices {} in {:.2?}",
                if recorded { "recorded and written" } else { "read" },
                t.elapsed()
            );
            let t = Instant::now();
            let again = ConstraintMatrices::read(&c2_synth::matrices_path(dir, instance.parameter_id()))
                .unwrap_or_else(|e| fail(e));
            eprintln!("{size}: matrices read back in {:.2?} (equal: {})", t.elapsed(), again == m);
            m
        }
        None => {
            let m = instance.record_matrices().unwrap_or_else(|e| fail(e));
            eprintln!("{size}: matrices recorded in {:.2?}", t.elapsed());
            m
        }
    };
    let (ea, eb, ec) = (matrices.a.entries(), matrices.b.entries(), matrices.c.entries());
    eprintln!(
        "{size}: matrices {} rows, A/B/C entries {ea}/{eb}/{ec}, {} distinct coefficients, {:.2} GB",
        matrices.constraints(),
        matrices.coeffs.len(),
        matrices.bytes() as f64 / 1e9
    );
    // The facade's composition: densities once per shape, then per
    // partition the witness and a, b, c on the host.
    let shape = std::sync::Arc::new(porep_c2::ShapeMatrices::new(instance.parameter_id(), matrices));
    for &threads in &args.threads {
        // The gadget witness (every gadget as the circuit runs it) beside the
        // native one, for the ratio.
        let (gadgets, tg) = on_threads(threads, || instance.synthesize_witness_gadgets(k));
        let (inputs, aux) = gadgets.unwrap_or_else(|e| fail(format!("{size}: {e}")));
        let same = witness_verdict(inputs == reference.input_assignment && aux == reference.aux_assignment);
        drop((inputs, aux));
        push("witness only, gadgets", threads, n, tg, same);
        let (witness, tw) = on_threads(threads, || instance.synthesize_witness(k));
        let (inputs, aux) = witness.unwrap_or_else(|e| fail(format!("{size}: {e}")));
        let aux = c2_synth::CompactWitness::from_scalars(&aux);
        let w = porep_c2::Witness { inputs, aux, matrices: shape.clone() };
        let (got, te) = on_threads(threads, || w.into_synthesized());
        let got = got.unwrap_or_else(|e| fail(format!("{size}: {e}")));
        let same = verdict(&got);
        drop(got);
        push("witness only, native", threads, n, tw, same.clone());
        push("A·z, B·z, C·z (CPU)", threads, n, te, same.clone());
        push("witness + matrices", threads, n, tw + te, same);
    }
    if gadget_witness_differs.get() {
        *all_same = false;
    }
}

/// `--witness-only`: the witness through the gadgets and natively (twice:
/// the first call learns a challenge's size), compared.
fn run_witness(
    size: &str,
    instance: &dyn ProofInstance,
    k: usize,
    args: &Args,
    all_same: &mut bool,
    table: &mut Vec<String>,
) {
    for &threads in &args.threads {
        let (gadgets, tg) = on_threads(threads, || instance.synthesize_witness_gadgets(k));
        let gadgets = gadgets.unwrap_or_else(|e| fail(format!("{size}: {e}")));
        let n = gadgets.1.len();
        let mut row = |path: &str, t: Duration, same: &str| {
            let s = t.as_secs_f64();
            let rate = n as f64 / s / 1e6;
            let line = format!(
                "| {size} | {path} | {threads} | {s:.2} | {rate:.2} (aux) | {:.2} | {same} |",
                rate / threads as f64
            );
            eprintln!("{line}");
            table.push(line);
        };
        row("witness only, gadgets", tg, "-");
        for call in ["first call", "again"] {
            let (native, tn) = on_threads(threads, || instance.synthesize_witness(k));
            let native = native.unwrap_or_else(|e| fail(format!("{size}: {e}")));
            let same = native == gadgets;
            *all_same &= same;
            row(&format!("witness only, native ({call})"), tn, if same { "yes" } else { "NO" });
        }
        let (compact, tc) = on_threads(threads, || instance.synthesize_compact_witness(k));
        let (c_inputs, compact) = compact.unwrap_or_else(|e| fail(format!("{size}: {e}")));
        let same = c_inputs == gadgets.0 && compact.expand() == gadgets.1;
        *all_same &= same;
        eprintln!(
            "{size}: compact witness {:.1} MB for {:.1} MB of scalars ({} full values of {})",
            compact.bytes() as f64 / 1e6,
            compact.len() as f64 * 32e-6,
            compact.full_value().len(),
            compact.len()
        );
        row("compact witness, native", tc, if same { "yes" } else { "NO" });
    }
}
