//! Builds ec-gpu-gen's FFT and multiexp kernels (the ones bellperson 0.27
//! uses), the baselines our NTT and MSM are compared against, for the same architectures as our kernels.
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
    // The same source bellperson 0.27's build script generates: FFT plus the
    // G1 and G2 multiexp kernels.
    let src = ec_gpu_gen::SourceBuilder::new()
        .add_fft::<blstrs::Scalar>()
        .add_multiexp::<blstrs::G1Affine, blstrs::Fp>()
        .add_multiexp::<blstrs::G2Affine, blstrs::Fp2>();
    ec_gpu_gen::generate(&src);
}
