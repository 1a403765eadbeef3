# Model of the NTT passes (cuda-kernels/ntt/ntt.cuh) over BLS12-381 Fr, small sizes and block sizes:
# one twisted pass vs the original per-butterfly twiddles; whole forward transforms with the kernel's
# index arithmetic vs the DFT; the inverse (DIF) passes, natural order in, bit-reversed scaled
# coefficients out; and compute_h in the kernels' order (one bit reversal, at the end) vs the
# polynomial definition. Run: python3 scripts/ntt_twist_model.py (prints only True lines when right).
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

# The host's pass plan (GpuNtt::pass_plan): (s0, k, c_bits) per pass.
def pass_plan(log_n, B):
    plan, s0 = [], 0
    while s0 < log_n:
        if s0 == 0: k, cb = min(log_n, B), 0
        else:
            k = min(log_n - s0, B - 1); cb = min(s0, B - k)
        plan.append((s0, k, cb)); s0 += k
    return plan

# The inverse pass (stages_pass_inverse): the forward pass run backwards with
# inverse butterflies (u, v) -> (u + v, (u - v) w^-1), then the untwist on
# store, and in the pass flagged `scale` the factor c x^rev(p) at position p.
def inverse_passes(x, log_n, B, scale=None):
    x = x[:]; n = 1 << log_n; half = n // 2; om = root(n)
    tw = [pow(om, i, p) for i in range(max(half, 1))]
    def root_power(e): return tw[e] if e < half else (-tw[e - half]) % p
    for (s0, k, cb) in reversed(pass_plan(log_n, B)):
        C = 1 << cb; E = C << k; lo_tiles = (1 << s0) >> cb
        for blk in range(n // E):
            hi = blk // lo_tiles; lo0 = (blk % lo_tiles) << cb
            base = (hi << (s0 + k)) + lo0
            sh = [x[base + ((e >> cb) << s0) + (e & (C - 1))] for e in range(E)]
            for r in reversed(range(k)):
                for t in range(E // 2):
                    l = t & (C - 1); m = t >> cb; low = m & ((1 << r) - 1)
                    mid0 = ((m >> r) << (r + 1)) | low
                    e0 = (mid0 << cb) | l; e1 = e0 + (1 << (r + cb))
                    u, v = sh[e0], sh[e1]
                    d = (u - v) % p
                    if r and low: d = d * root_power((n - (low << (log_n - r - 1))) & (n - 1)) % p
                    sh[e0], sh[e1] = (u + v) % p, d
            for e in range(E):
                mid, l = e >> cb, e & (C - 1)
                pos = base + (mid << s0) + l
                v = sh[e]
                jm = (lo0 + l) * rev(mid, k)
                if jm: v = v * root_power((n - (jm << (log_n - s0 - k))) & (n - 1)) % p
                if scale and s0 == 0: v = v * scale(rev(pos, log_n)) % p
                x[pos] = v
    return x
def forward_passes(x, log_n, B):  # kernel_ntt without its bit reversal
    return kernel_ntt([x[rev(i, log_n)] for i in range(1 << log_n)], log_n, B)
def idft(x):
    n = len(x); om = pow(root(n), p - 2, p); ninv = pow(n, p - 2, p)
    return [sum(x[j] * pow(om, i * j, p) for j in range(n)) * ninv % p for i in range(n)]
for log_n, B in [(1, 4), (3, 4), (5, 4), (7, 4), (8, 3), (9, 4), (6, 2)]:
    n = 1 << log_n
    x = [random.randrange(p) for _ in range(n)]
    ninv = pow(n, p - 2, p)
    got = inverse_passes(x, log_n, B, lambda i: ninv)
    want = idft(x)
    print("inverse", log_n, B, got == [want[rev(i, log_n)] for i in range(n)])

# compute_h in the kernels' order: per vector, inverse passes (scale g^i / n)
# then forward passes -> coset evaluations in natural order; a*b - c, / Z;
# inverse passes (scale g^-i / n); one bit reversal.
def kernel_compute_h(a, b, c, log_n, B):
    n = 1 << log_n; ninv = pow(n, p - 2, p); gi = pow(g, p - 2, p)
    ev = [forward_passes(inverse_passes(v, log_n, B, lambda i: pow(g, i, p) * ninv % p), log_n, B) for v in (a, b, c)]
    zinv = pow((pow(g, n, p) - 1) % p, p - 2, p)
    h = [(x * y - z) * zinv % p for x, y, z in zip(*ev)]
    h = inverse_passes(h, log_n, B, lambda i: pow(gi, i, p) * ninv % p)
    return [h[rev(i, log_n)] for i in range(n)]
def reference_h(a, b, c, log_n):
    n = 1 << log_n
    def coset_eval(v):
        co = idft(v); return dft([co[i] * pow(g, i, p) % p for i in range(n)])
    ea, eb, ec = coset_eval(a), coset_eval(b), coset_eval(c)
    zinv = pow((pow(g, n, p) - 1) % p, p - 2, p)
    q = idft([(x * y - z) * zinv % p for x, y, z in zip(ea, eb, ec)])
    gi = pow(g, p - 2, p)
    return [q[i] * pow(gi, i, p) % p for i in range(n)]
for log_n, B in [(2, 4), (5, 3), (7, 4), (8, 4)]:
    n = 1 << log_n
    a, b, c = ([random.randrange(p) for _ in range(n)] for _ in range(3))
    print("compute_h", log_n, B, kernel_compute_h(a, b, c, log_n, B) == reference_h(a, b, c, log_n))

# The tiled bit reversal (bit_reverse_tiles): block m swaps its 16 x 16 tile
# with rev(m)'s, transposed, bits reversed.
def tiled_bit_reverse(x, log_n):
    x = x[:]; M = log_n - 8
    idx = lambda a, m, b: (a << (log_n - 4)) | (m << 4) | b
    for m in range(1 << M):
        m2 = rev(m, M)
        if m > m2: continue
        A = {(a, b): x[idx(a, m, b)] for a in range(16) for b in range(16)}
        B = {(a, b): x[idx(a, m2, b)] for a in range(16) for b in range(16)}
        for a in range(16):
            for b in range(16):
                x[idx(a, m2, b)] = A[(rev(b, 4), rev(a, 4))]
                if m != m2: x[idx(a, m, b)] = B[(rev(b, 4), rev(a, 4))]
    return x
for log_n in (8, 9, 10, 11, 12):
    x = list(range(1 << log_n))
    print("bit reversal", log_n, tiled_bit_reverse(x, log_n) == [x[rev(i, log_n)] for i in range(1 << log_n)])
