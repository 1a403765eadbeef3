//! SupraSeal C2 links the CUDA runtime statically (`-lcudart_static`) but
//! leaves finding it to the toolkit's lib folder: point the linker there
//! (`CUDA_PATH`, set by real toolkits and by scripts/cuda-toolchain.sh).
fn main() {
    println!("cargo:rerun-if-env-changed=CUDA_PATH");
    if let Some(root) = std::env::var_os("CUDA_PATH").map(std::path::PathBuf::from) {
        for lib in ["lib64", "lib"] {
            println!("cargo:rustc-link-search=native={}", root.join(lib).display());
        }
    }
}
