//! Builds ec-gpu-gen's FFT kernel (the one bellperson uses), the baseline our
//! NTT is compared against, for the same architectures as our kernels.
fn main() {
    println!("cargo:rerun-if-env-changed=C2_CUDA_ARCHS");
    if std::env::var_os("EC_GPU_CUDA_NVCC_ARGS").is_none() {
        let archs = std::env::var("C2_CUDA_ARCHS").unwrap_or_else(|_| "80,86,89,90".into());
        let mut args = String::from("--optimize=6 --threads=0 --fatbin");
        for a in archs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            args.push_str(&format!(" --generate-code=arch=compute_{a},code=sm_{a}"));
        }
        // The build script's own environment: read by ec_gpu_gen::generate.
        std::env::set_var("EC_GPU_CUDA_NVCC_ARGS", args);
    }
    let src = ec_gpu_gen::SourceBuilder::new().add_fft::<blstrs::Scalar>();
    ec_gpu_gen::generate(&src);
}
