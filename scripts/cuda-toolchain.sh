#!/usr/bin/env bash
# Finds a CUDA toolkit for building porep-c2 with `--features cuda`, or
# installs CUDA 13.0's nvcc from PyPI wheels into a cache folder, and builds a
# link stub for the driver library where none exists. Prints the environment
# to use; eval it:
#
#     eval "$(scripts/cuda-toolchain.sh)"
#     cargo build --release --features cuda
#
# A real toolkit wins: $CUDA_PATH, /usr/local/cuda, or nvcc on PATH.
# The stub (libcuda.so, soname libcuda.so.1, every driver entry point
# returning CUDA_ERROR_NO_DEVICE) only satisfies the linker: at run time the
# real driver's libcuda.so.1 is loaded. On a machine without a driver, putting
# the stub folder on LD_LIBRARY_PATH lets a cuda build start and report
# "no GPU" instead of failing to load.
#
# Environment: C2_CUDA_CACHE (default ~/.cache/porep-c2/cuda-13.0),
#              C2_CUDA_VERSION (default 13.0.*, a pip version specifier).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${C2_CUDA_CACHE:-$HOME/.cache/porep-c2/cuda-13.0}"
version="${C2_CUDA_VERSION:-13.0.*}"
log() { echo "cuda-toolchain: $*" >&2; }

find_real_toolkit() {
    local cand
    for cand in "${CUDA_PATH:-}" /usr/local/cuda "$(dirname "$(dirname "$(command -v nvcc 2>/dev/null || echo /x/x/x)")")"; do
        if [[ -n "$cand" && -x "$cand/bin/nvcc" && "$cand" != "$cache/"* ]]; then
            echo "$cand"
            return 0
        fi
    done
    return 1
}

find_driver_lib() {
    local d
    for d in "${CUDA_LIBRARY_PATH:-}" /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/nvidia/lib64 /usr/local/cuda/lib64/stubs "$1/lib64/stubs" "$1/lib/stubs"; do
        if [[ -n "$d" && ( -e "$d/libcuda.so" ) ]]; then
            echo "$d"
            return 0
        fi
    done
    return 1
}

if toolkit="$(find_real_toolkit)"; then
    log "using the CUDA toolkit at $toolkit"
else
    toolkit="$cache/py/nvidia/cu13"
    if [[ ! -x "$toolkit/bin/nvcc" ]]; then
        log "no CUDA toolkit found: installing nvcc $version from PyPI into $cache"
        mkdir -p "$cache"
        python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$cache/py" \
            "nvidia-cuda-nvcc==$version" "nvidia-nvvm==$version" "nvidia-cuda-crt==$version" \
            "nvidia-cuda-runtime==$version" "nvidia-cuda-cccl==$version" >&2
    fi
    # The wheels ship lib/ but nvcc looks for lib64/ too.
    [[ -e "$toolkit/lib64" ]] || ln -s lib "$toolkit/lib64"
    "$toolkit/bin/nvcc" --version >&2
fi

if ! libdir="$(find_driver_lib "$toolkit")"; then
    libdir="$cache/stub"
    if [[ ! -e "$libdir/libcuda.so.1" || "$here/libcuda-stub.c" -nt "$libdir/libcuda.so.1" ]]; then
        log "no libcuda.so found: building the link stub in $libdir"
        mkdir -p "$libdir"
        gcc -shared -fPIC -O1 -Wl,-soname,libcuda.so.1 -o "$libdir/libcuda.so.1" "$here/libcuda-stub.c"
        ln -sf libcuda.so.1 "$libdir/libcuda.so"
    fi
fi

echo "export CUDA_PATH='$toolkit'"
echo "export CUDA_LIBRARY_PATH='$libdir'"
echo "export PATH='$toolkit/bin':\"\$PATH\""
echo "export LIBRARY_PATH='$libdir':\"\${LIBRARY_PATH:-}\""
