#!/usr/bin/env python3
"""Exact model of a BLS12-381 Fr Montgomery product on the FP64 pipe.

Issue 16 (deliverable 1) asks for products on the FP64 pipe beside the
integer pipe: an H200 runs 13.7 T FP64 FMA/s next to 9.31 T 32-bit
carry-chain multiply-adds/s (BENCHMARKS.md, 2026-11-30 ceilings), and the NTT
runs at 76 % of the integer pipe's product rate (session 17). Before writing
the kernel, this script fixes the algorithm and checks that every double
operation in it is exact, with IEEE semantics emulated bit for bit (fused
multiply-add rounded once, to nearest or toward zero, as CUDA's __fma_rn /
__fma_rz do), and counts what one product costs per pipe.

The algorithm (the splitting of Emmart, Zheng and Weems, "Faster modular
exponentiation using double precision floating point arithmetic on the GPU",
ARITH 2018; written here from that description):

* An element x < r < 2^255 is 5 limbs of 52 bits, each an exact double.
* A limb product a*b < 2^104 splits into two doubles with no rounding error:
      hi = fma_rz(a, b, 2^104)          in [2^104, 2^105): ulp 2^52, so
                                         hi = 2^104 + H * 2^52, H = floor(ab / 2^52)
      lo = fma_rn(a, b, (2^104 + 2^52) - hi)   = ab - H 2^52 + 2^52 in [2^52, 2^53)
  (the subtraction is exact: (1 - H) 2^52). In both binades the mantissa
  field is linear in the value, so the bit patterns, read as 64-bit
  integers, are H and L = ab mod 2^52 plus fixed offsets: columns of the
  schoolbook product are sums of bit patterns in 64-bit integer registers
  (wrapping; the offsets are subtracted once per column).
* Montgomery reduction by 52-bit digits, R = 2^260: per round
  q = t_i * (-r^-1) mod 2^52 on the integer pipe, q as a double by the
  2^52 trick (or-in the exponent, subtract 2^52), then q * r's limbs split
  the same way. The result is < 2r; one conditional subtraction of r.
* R = 2^260 where blstrs' Montgomery form uses 2^256: a product of x R256
  with a table constant stored as 16 t R256 is x t R256 (the NTT's products
  are all data times table constants), so only the tables change.

The kernel header itself, cuda-kernels/ff/fr_fp64.cuh, is then built for the
host with g++ (scripts/fp64_fr_host_check.cpp: the CUDA intrinsics emulated
with the C library's fma under the matching rounding mode) and run on the
same cases plus 100,000 random pairs against big integers.

Run: python3 scripts/fp64_fr_model.py   (exit 0 when every check holds)
"""

import math
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

R_MOD = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
LIMB = 52
LIMBS = 5
MASK = (1 << LIMB) - 1
C1 = float(2**104)
C2 = float(2**104 + 2**52)  # 53 significant bits: representable
TWO52 = float(2**52)
MP = (-pow(R_MOD, -1, 1 << LIMB)) % (1 << LIMB)  # -r^-1 mod 2^52
U64 = (1 << 64) - 1


class Ops:
    """Operations per product, by the pipe a GPU would run them on."""

    def __init__(self):
        self.fma = 0  # FP64 pipe: DFMA
        self.dadd = 0  # FP64 pipe: DADD
        self.add64 = 0  # integer pipe: 64-bit adds (two 32-bit instructions each)
        self.mul64 = 0  # integer pipe: 64-bit low products (q)
        self.logic = 0  # integer pipe: shifts, masks, ors


def fixed(x):
    """x = n * 2^e exactly."""
    n, d = x.as_integer_ratio()
    return n, -(d.bit_length() - 1)


def round_fixed(total, e, mode):
    """The double nearest total * 2^e (mode 'rn', ties to even) or toward zero ('rz')."""
    if total == 0:
        return 0.0
    if mode == "rn":
        # CPython converts an int to float with round-half-even; ldexp is exact here.
        return math.ldexp(float(total), e)
    sign = -1 if total < 0 else 1
    mag = abs(total)
    shift = max(mag.bit_length() - 53, 0)
    return sign * math.ldexp(float(mag >> shift), e + shift)


def fma(a, b, c, mode="rn"):
    """a * b + c rounded once (IEEE fused multiply-add)."""
    na, ea = fixed(a)
    nb, eb = fixed(b)
    nc, ec = fixed(c)
    ep = ea + eb
    e = min(ep, ec)
    total = ((na * nb) << (ep - e)) + (nc << (ec - e))
    return round_fixed(total, e, mode)


def dadd(a, b):
    return fma(a, 1.0, b)


def bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def to_limbs(x):
    return [float((x >> (LIMB * i)) & MASK) for i in range(LIMBS)]


def split(a, b, ops):
    """(bit pattern of hi, bit pattern of lo) of the limb product a * b; checks exactness."""
    hi = fma(a, b, C1, "rz")
    lo = fma(a, b, dadd(C2, -hi))
    ops.fma += 2
    ops.dadd += 1
    p = int(a) * int(b)
    h, l = divmod(p, 1 << LIMB)
    assert hi == C1 + h * TWO52, "hi not exact"
    assert lo == TWO52 + l and 2**52 <= lo < 2**53, "lo not exact or out of its binade"
    assert bits(hi) - bits(C1) == h and bits(lo) - bits(TWO52) == l, "bit patterns not linear"
    return bits(hi), bits(lo)


def mont_mul(x, y, ops):
    """x * y * 2^-260 mod r for x, y < r, with every step as the kernel would run it."""
    a, b = to_limbs(x), to_limbs(y)
    rl = to_limbs(R_MOD)
    t = [0] * (2 * LIMBS + 1)  # 64-bit accumulators (wrapping)
    his = [0] * (2 * LIMBS + 1)  # how many hi / lo patterns each column holds
    los = [0] * (2 * LIMBS + 1)

    def acc(col, pattern, count):
        t[col] = (t[col] + pattern) & U64
        count[col] += 1
        ops.add64 += 1

    for i in range(LIMBS):
        for j in range(LIMBS):
            h, l = split(a[i], b[j], ops)
            acc(i + j + 1, h, his)
            acc(i + j, l, los)

    def value(col):
        """Column col with its offsets removed (a compile-time constant per column)."""
        v = (t[col] - his[col] * bits(C1) - los[col] * bits(TWO52)) & U64
        ops.add64 += 1
        return v

    carry = 0
    for i in range(LIMBS):
        ti = value(i) + carry
        ops.add64 += 1
        q = (ti * MP) & MASK
        ops.mul64 += 1
        ops.logic += 1
        # q as a double: or the exponent of 2^52 into its bits, subtract 2^52.
        qd = dadd(struct.unpack("<d", struct.pack("<Q", bits(TWO52) | q))[0], -TWO52)
        ops.logic += 1
        ops.dadd += 1
        assert qd == float(q)
        for j in range(LIMBS):
            h, l = split(qd, rl[j], ops)
            if j == 0:
                # The column's low part only needs its carry: t_i + q r_0 = 0 mod 2^52.
                ti = ti + (l - bits(TWO52))
                ops.add64 += 1
            else:
                acc(i + j, l, los)
            acc(i + j + 1, h, his)
        assert ti % (1 << LIMB) == 0, "reduction digit does not cancel"
        assert ti < 1 << 63, "column overflow"
        carry = ti >> LIMB
        ops.logic += 1
    out = 0
    for k in range(LIMBS):
        v = value(LIMBS + k) + carry
        ops.add64 += 1
        assert v < 1 << 63, "column overflow"
        out |= (v & MASK) << (LIMB * k)
        carry = v >> LIMB
        ops.logic += 2
    out |= carry << (LIMB * LIMBS)
    assert out < 2 * R_MOD, "Montgomery bound"
    if out >= R_MOD:
        out -= R_MOD
    # The conditional subtraction of r over 5 limbs: borrow chain.
    ops.add64 += LIMBS
    return out


def main():
    rng = random.Random(17)
    inv_r260 = pow(2**260, -1, R_MOD)
    edges = [0, 1, 2, R_MOD - 1, R_MOD - 2, (R_MOD - 1) // 2, 2**52 - 1, 2**52, 2**254 % R_MOD, MASK << 200]
    cases = [(x, y) for x in edges for y in edges]
    cases += [(rng.randrange(R_MOD), rng.randrange(R_MOD)) for _ in range(400)]
    # Limbs all ones below r: the largest limb products.
    big = sum(MASK << (LIMB * i) for i in range(LIMBS - 1)) | ((R_MOD >> (LIMB * 4)) - 1) << (LIMB * 4)
    cases += [(big, big), (big, R_MOD - 1)]
    ops = Ops()
    for x, y in cases:
        assert x < R_MOD and y < R_MOD
        got = mont_mul(x, y, ops)
        want = x * y * inv_r260 % R_MOD
        if got != want:
            print(f"FAIL x={x:#x} y={y:#x}: {got:#x} != {want:#x}")
            return 1
    # The 2^256 Montgomery form blstrs uses: tables stored times 16.
    for _ in range(50):
        x, t = rng.randrange(R_MOD), rng.randrange(R_MOD)
        xm, tm = x * 2**256 % R_MOD, t * 2**256 % R_MOD
        assert mont_mul(xm, 16 * tm % R_MOD, Ops()) == x * t * 2**256 % R_MOD
    host_cases = cases + [(rng.randrange(R_MOD), rng.randrange(R_MOD)) for _ in range(100000)]
    wrong = host_check(host_cases)
    if wrong is None:
        print("FAIL: g++ not found, the kernel header's host check could not run")
        return 2
    if wrong:
        print(f"FAIL: cuda-kernels/ff/fr_fp64.cuh built for the host: {wrong} of {len(host_cases)} products wrong")
        return 1
    print(f"cuda-kernels/ff/fr_fp64.cuh built for the host (g++): {len(host_cases)} products == x y 2^-256 mod r")
    n = len(cases)
    fp = (ops.fma + ops.dadd) / n
    other = (4 * ops.mul64 + ops.logic) / n
    # A 64-bit add is two 32-bit instructions (IADD3, IADD3.X); with IADD3's
    # three inputs one pair adds two patterns to an accumulator.
    ints_plain = 2 * ops.add64 / n + other
    ints_folded = ops.add64 / n + other
    print(f"{n} products (edges, random, largest limbs) and 50 in blstrs' form (tables x 16): all exact, all equal")
    print(
        f"per product: {ops.fma / n:.0f} DFMA + {ops.dadd / n:.0f} DADD = {fp:.0f} FP64 instructions; "
        f"{ops.add64 / n:.0f} 64-bit adds, {ops.mul64 / n:.0f} 64-bit low products, {ops.logic / n:.0f} logic: "
        f"{ints_plain:.0f} 32-bit integer instructions ({ints_folded:.0f} with the adds folded in pairs)"
    )
    # Per SM sub-partition and clock (sm_90): 16 FP64 lanes, 16 integer
    # ALU lanes, one warp instruction issued. 4 x 132 sub-partitions at the
    # 1.98 GHz SM clock; FP64 checked against the 13.7 T FMA/s measured
    # (BENCHMARKS.md, 2026-11-30: 16 x 4 x 132 x 1.98e9 = 16.7 T peak).
    lanes = 4 * 132 * 1.98e9
    for label, ints in (("plain 64-bit adds", ints_plain), ("adds folded in pairs", ints_folded)):
        cycles = max(2 * fp, 2 * ints, fp + ints)  # per warp product on one sub-partition
        rate = 32 * lanes / cycles
        print(
            f"prediction ({label}): FP64 pipe {2 * fp:.0f}, integer pipe {2 * ints:.0f}, issue {fp + ints:.0f} "
            f"cycles per warp product -> {rate / 1e9:.0f} G products/s at best, "
            f"{rate / 58.7e9:.2f}x sppark's integer product (58.7 G/s measured, session 15)"
        )
    return 0


def host_check(cases):
    """The kernel's own code (cuda-kernels/ff/fr_fp64.cuh) built for the host by
    g++ (scripts/fp64_fr_host_check.cpp emulates the CUDA intrinsics), run on
    `cases`: its products must be x y 2^-256 mod r, what the self-test kernel
    computes. Returns the number of wrong products, or None without g++."""
    cxx = shutil.which("g++")
    if cxx is None:
        return None
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "fp64_fr_host_check")
        subprocess.run(
            [cxx, "-O2", "-std=c++17", "-frounding-math", "-I", os.path.join(root, "cuda-kernels"),
             os.path.join(root, "scripts", "fp64_fr_host_check.cpp"), "-o", exe],
            check=True,
        )
        stdin = "".join(f"{x:064x} {y:064x}\n" for x, y in cases)
        out = subprocess.run([exe], input=stdin, capture_output=True, text=True, check=True).stdout.split()
    inv = pow(2**256, -1, R_MOD)
    return sum(int(got, 16) != x * y * inv % R_MOD for got, (x, y) in zip(out, cases)) + abs(len(out) - len(cases))


if __name__ == "__main__":
    sys.exit(main())
