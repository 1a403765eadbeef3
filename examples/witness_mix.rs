//! witness-mix: seals a sector of a registered proof type with
//! filecoin-proofs' own PC1/PC2/C1 (random data, seeded; no parameters
//! needed), synthesizes partition 0 of its C2 circuit and prints the share of
//! aux values that are 0, 1 or other (and how wide the others are), overall
//! and among the aux variables in A and in B: the numbers the synthetic
//! 32 GiB shape (`c2_testkit::synthetic`) is built from. Then, for each query
//! whose bases are streamed on a small device (L, A's and B's aux parts),
//! the share of bases in blocks of 2^k consecutive bases whose scalars are
//! all zero: what a streamed MSM could leave on the host.
//!
//! ```text
//! cargo run --release --example witness-mix -- 2KiB 8MiB
//! ```

// Each example uses a subset of the shared CLI helpers.
#[allow(dead_code)]
use c2_testkit::cli::fail;
use c2_testkit::demo;

use filecoin_proofs_api::RegisteredSealProof;
use porep_c2::{instance_from_c1, Density};

/// (zero, one, other, other below 2^64) among the aux values `pick` selects.
fn mix(aux: &[blstrs::Scalar], pick: impl Fn(usize) -> bool) -> [usize; 4] {
    let mut m = [0usize; 4];
    for (_, x) in aux.iter().enumerate().filter(|(i, _)| pick(*i)) {
        let b = x.to_bytes_le();
        if b.iter().all(|&v| v == 0) {
            m[0] += 1;
        } else if b[0] == 1 && b[1..].iter().all(|&v| v == 0) {
            m[1] += 1;
        } else {
            m[2] += 1;
            if b[8..].iter().all(|&v| v == 0) {
                m[3] += 1;
            }
        }
    }
    m
}

fn line(label: &str, m: [usize; 4]) -> String {
    let n = (m[0] + m[1] + m[2]).max(1) as f64;
    let pct = |k: usize| 100.0 * m[k] as f64 / n;
    format!(
        "  {label:<12} {:>10} values: zero {:5.1} %, one {:5.1} %, other {:4.1} % ({} of them below 2^64)",
        m[0] + m[1] + m[2],
        pct(0),
        pct(1),
        pct(2),
        m[3]
    )
}

/// Share of the bases of one query, in blocks of `block` consecutive bases,
/// whose block's scalars are all zero. `scalars` are the query's scalars in
/// base order (a mask's set entries only).
fn zero_block_share(scalars: &[&blstrs::Scalar], block: usize) -> f64 {
    let zero = scalars
        .chunks(block)
        .filter(|c| c.iter().all(|x| x.to_bytes_le().iter().all(|&v| v == 0)))
        .map(|c| c.len())
        .sum::<usize>();
    100.0 * zero as f64 / scalars.len().max(1) as f64
}

fn zero_blocks(label: &str, scalars: &[&blstrs::Scalar]) -> String {
    let shares: Vec<String> =
        [2u32, 4, 6, 8, 12, 16].iter().map(|&k| format!("2^{k}: {:.1} %", zero_block_share(scalars, 1 << k))).collect();
    format!("  {label:<12} bases in all-zero blocks of {}", shares.join(", "))
}

fn main() {
    let sizes: Vec<String> = std::env::args().skip(1).collect();
    let sizes = if sizes.is_empty() { vec!["2KiB".to_string()] } else { sizes };
    for size in sizes {
        let proof = match size.as_str() {
            "2KiB" => RegisteredSealProof::StackedDrg2KiBV1_1,
            "8MiB" => RegisteredSealProof::StackedDrg8MiBV1_1,
            "512MiB" => RegisteredSealProof::StackedDrg512MiBV1_1,
            other => fail(format!("unknown size {other} (2KiB, 8MiB, 512MiB)")),
        };
        let work = tempfile::tempdir().unwrap_or_else(|e| fail(e));
        let sealed = demo::seal_registered(proof, work.path(), 1).unwrap_or_else(|e| fail(e));
        let instance =
            instance_from_c1(&sealed.c1, sealed.prover_id, u64::from(sealed.sector_id)).unwrap_or_else(|e| fail(e));
        let s = instance.synthesize_partition(0).unwrap_or_else(|e| fail(e));
        let aux = &s.aux_assignment;
        let density = |d: &Density| 100.0 * d.count_ones() as f64 / aux.len().max(1) as f64;
        println!(
            "{size}: partition 0 of {}: {} constraints, {} aux, {} inputs; A density {:.1} %, B density {:.1} %",
            instance.num_partitions(),
            s.num_constraints(),
            aux.len(),
            s.num_inputs(),
            density(&s.a_aux_density),
            density(&s.b_aux_density)
        );
        println!("{}", line("all aux", mix(aux, |_| true)));
        println!("{}", line("aux in A", mix(aux, |i| s.a_aux_density.get(i))));
        println!("{}", line("aux in B", mix(aux, |i| s.b_aux_density.get(i))));
        let query = |pick: &dyn Fn(usize) -> bool| {
            aux.iter().enumerate().filter(|(i, _)| pick(*i)).map(|(_, x)| x).collect::<Vec<_>>()
        };
        println!("{}", zero_blocks("L", &query(&|_| true)));
        println!("{}", zero_blocks("A (aux)", &query(&|i| s.a_aux_density.get(i))));
        println!("{}", zero_blocks("B (aux)", &query(&|i| s.b_aux_density.get(i))));
    }
}
