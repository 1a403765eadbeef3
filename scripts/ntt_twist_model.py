# Model of the NTT pass with per-element twists (cuda-kernels/ntt/ntt.cuh, branch wip/ntt-twist):
# one pass and whole transforms with the kernel's index arithmetic vs the original per-butterfly
# twiddles and vs the DFT, over BLS12-381 Fr, small sizes and block sizes. Run: python3 scripts/ntt_twist_model.py
# Model of one DIT pass (stages s0+1..s0+k) with the original per-butterfly
# twiddles vs a per-element "twist" then small-root butterflies.
import random
p = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001
g = 7
def root(n):  # primitive n-th root, n power of 2
    return pow(g, (p - 1) // n, p)
def rev(x, bits):
    return int(format(x, f'0{bits}b')[::-1], 2) if bits else 0
def orig_pass(x, log_n, s0, k):
    x = x[:]; n = 1 << log_n
    for r in range(k):
        s = s0 + r + 1; h = 1 << (s - 1); w2h = root(2 * h)
        for i in range(n):
            if (i >> (s - 1)) & 1: continue
            w = pow(w2h, i % h, p)
            a, b = x[i], x[i + h] * w % p
            x[i], x[i + h] = (a + b) % p, (a - b) % p
    return x
def twist_pass(x, log_n, s0, k):
    x = x[:]; n = 1 << log_n
    big = root(1 << (s0 + k))
    for i in range(n):
        mid = (i >> s0) & ((1 << k) - 1); j = i & ((1 << s0) - 1)
        x[i] = x[i] * pow(big, j * rev(mid, k), p) % p
    for r in range(k):
        s = s0 + r + 1; h = 1 << (s - 1); wr = root(1 << (r + 1))
        for i in range(n):
            if (i >> (s - 1)) & 1: continue
            low = (i >> s0) % (1 << r)
            w = pow(wr, low, p)
            a, b = x[i], x[i + h] * w % p
            x[i], x[i + h] = (a + b) % p, (a - b) % p
    return x
random.seed(1)
for log_n, s0, k in [(6, 2, 3), (7, 3, 4), (8, 4, 4), (8, 2, 6), (9, 5, 4)]:
    n = 1 << log_n
    x = [random.randrange(p) for _ in range(n)]
    print(log_n, s0, k, orig_pass(x, log_n, s0, k) == twist_pass(x, log_n, s0, k))

# Whole transform as the kernels run it: bit reversal, then the host's pass
# plan (block of 2^B elements), each pass block by block with the kernel's
# index arithmetic, the twist from the omega^i (i < n/2) table.
def kernel_ntt(x, log_n, B):
    n = 1 << log_n; half = n // 2; om = root(n)
    tw = [pow(om, i, p) for i in range(max(half, 1))]
    def root_power(e): return tw[e] if e < half else (-tw[e - half]) % p
    x = [x[rev(i, log_n)] for i in range(n)]
    s0 = 0
    while s0 < log_n:
        if s0 == 0: k, cb = min(log_n, B), 0
        else:
            k = min(log_n - s0, B - 1); cb = min(s0, B - k)
        C = 1 << cb; E = C << k; lo_tiles = (1 << s0) >> cb
        for blk in range(n // E):
            hi = blk // lo_tiles; lo0 = (blk % lo_tiles) << cb
            base = (hi << (s0 + k)) + lo0
            sh = []
            for e in range(E):
                mid, l = e >> cb, e & (C - 1)
                v = x[base + (mid << s0) + l]
                jm = (lo0 + l) * rev(mid, k)
                if jm: v = v * root_power(jm << (log_n - s0 - k)) % p
                sh.append(v)
            for r in range(k):
                for t in range(E // 2):
                    l = t & (C - 1); m = t >> cb; low = m & ((1 << r) - 1)
                    mid0 = ((m >> r) << (r + 1)) | low
                    e0 = (mid0 << cb) | l; e1 = e0 + (1 << (r + cb))
                    a = sh[e0]
                    b = sh[e1] if r == 0 else sh[e1] * tw[low << (log_n - r - 1)] % p
                    sh[e0], sh[e1] = (a + b) % p, (a - b) % p
            for e in range(E):
                mid, l = e >> cb, e & (C - 1)
                x[base + (mid << s0) + l] = sh[e]
        s0 += k
    return x
def dft(x):
    n = len(x); om = root(n)
    return [sum(x[j] * pow(om, i * j, p) for j in range(n)) % p for i in range(n)]
for log_n, B in [(1, 4), (3, 4), (5, 4), (7, 4), (8, 3), (9, 4), (6, 2)]:
    x = [random.randrange(p) for _ in range(1 << log_n)]
    print("ntt", log_n, B, kernel_ntt(x, log_n, B) == dft(x))
