// Host build of cuda-kernels/ff/fr_fp64.cuh for scripts/fp64_fr_model.py:
// the CUDA intrinsics it uses, emulated with the C library's fma and the
// floating-point environment's rounding mode, then the kernel's code itself
// run on pairs read from stdin (hex, one pair per line), its products
// printed (hex, blstrs' Montgomery form as the self-test kernel computes it).
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#pragma STDC FENV_ACCESS ON

#define __device__
#define __forceinline__ inline
#define C2_FP64_HOST_CHECK

struct fr_t {
    uint32_t val[8];
};

static double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
static double __fma_rz(double a, double b, double c) {
    std::fesetround(FE_TOWARDZERO);
    volatile double r = std::fma(a, b, c);
    std::fesetround(FE_TONEAREST);
    return r;
}
static double __dadd_rn(double a, double b) {
    volatile double r = a + b;
    return r;
}
static long long __double_as_longlong(double x) {
    long long v;
    std::memcpy(&v, &x, 8);
    return v;
}
static double __longlong_as_double(long long x) {
    double v;
    std::memcpy(&v, &x, 8);
    return v;
}

// x + y mod r on 64-bit words (the header's times16 needs it).
static const uint64_t R[4] = {0xffffffff00000001ull, 0x53bda402fffe5bfeull, 0x3339d80809a1d805ull,
                              0x73eda753299d7d48ull};
static fr_t fr_add(fr_t x, fr_t y) {
    unsigned __int128 c = 0;
    uint64_t s[4], d[4];
    for (int k = 0; k < 4; k++) {
        const uint64_t a = (uint64_t)x.val[2 * k] | ((uint64_t)x.val[2 * k + 1] << 32);
        const uint64_t b = (uint64_t)y.val[2 * k] | ((uint64_t)y.val[2 * k + 1] << 32);
        c += (unsigned __int128)a + b;
        s[k] = (uint64_t)c;
        c >>= 64;
    }
    unsigned __int128 borrow = 0;
    for (int k = 0; k < 4; k++) {
        const unsigned __int128 t = (unsigned __int128)s[k] - R[k] - borrow;
        d[k] = (uint64_t)t;
        borrow = (t >> 64) ? 1 : 0;
    }
    const bool keep = borrow && !c;  // s < r (s < 2r < 2^256: no carry out)
    fr_t out;
    for (int k = 0; k < 4; k++) {
        const uint64_t v = keep ? s[k] : d[k];
        out.val[2 * k] = (uint32_t)v;
        out.val[2 * k + 1] = (uint32_t)(v >> 32);
    }
    return out;
}

#include "ff/fr_fp64.cuh"

static bool read_fr(const char* hex, fr_t& v) {
    // 64 hex digits, most significant first.
    if (std::strlen(hex) != 64) return false;
    for (int k = 0; k < 8; k++) {
        char word[9] = {0};
        std::memcpy(word, hex + 8 * (7 - k), 8);
        v.val[k] = (uint32_t)std::strtoul(word, nullptr, 16);
    }
    return true;
}

int main() {
    char a[80], b[80];
    while (std::scanf("%79s %79s", a, b) == 2) {
        fr_t x, y;
        if (!read_fr(a, x) || !read_fr(b, y)) return 2;
        const fr_t p = fp64::mul_by_table(x, fp64::times16(y));
        for (int k = 7; k >= 0; k--) std::printf("%08x", p.val[k]);
        std::printf("\n");
    }
    return 0;
}
