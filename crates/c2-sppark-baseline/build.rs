//! Compiles the C ABI shim over sppark's G1 MSM with nvcc (sppark's headers
//! from its crate, blst's C++ header from the blst crate) and links the CUDA
//! runtime statically. Architectures: `C2_CUDA_ARCHS` (default 90).
use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=cuda/sppark_msm.cu");
    println!("cargo:rerun-if-env-changed=C2_CUDA_ARCHS");
    let sppark = env::var("DEP_SPPARK_ROOT").expect("sppark exports its header folder");
    let blst_src = env::var("DEP_BLST_C_SRC").expect("blst exports its source folder");
    let mut b = cc::Build::new();
    b.cuda(true)
        .cudart("static")
        .include(&sppark)
        .include(&blst_src)
        .define("FEATURE_BLS12_381", None)
        .define("TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE", None)
        .flag("-std=c++17")
        .flag("-t0");
    // blst's C++ header calls mul_mont_384 & co., which blst renames to its
    // mulx_ variants when it is built with ADX (detected on the build host,
    // as blst's own build script does); follow the same choice.
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("adx") {
        b.define("__ADX__", None);
    }
    let archs = env::var("C2_CUDA_ARCHS").unwrap_or_else(|_| "90".into());
    for a in archs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        b.flag("-gencode").flag(format!("arch=compute_{a},code=sm_{a}"));
    }
    b.file("cuda/sppark_msm.cu").compile("c2_sppark_msm");
    // The runtime library next to nvcc (toolkit lib64, or the PyPI wheel's lib).
    if let Some(nvcc) = find_nvcc() {
        if let Some(root) = nvcc.parent().and_then(|b| b.parent()) {
            for lib in ["lib64", "lib"] {
                println!("cargo:rustc-link-search=native={}", root.join(lib).display());
            }
        }
    }
}

fn find_nvcc() -> Option<PathBuf> {
    if let Some(p) = env::var_os("CUDA_PATH") {
        let p = PathBuf::from(p).join("bin/nvcc");
        if p.exists() {
            return Some(p);
        }
    }
    env::var_os("PATH")?.to_str()?.split(':').map(|d| PathBuf::from(d).join("nvcc")).find(|p| p.exists())
}
