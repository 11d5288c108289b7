// Pippenger MSM with signed digits and bucket sorting, G1 (Fp) and G2 (Fp2).
//
// Per call: scalars leave Montgomery form; each scalar's signed c-bit digits
// are counted per (window, bucket), the counts scanned, and the point
// indices scattered into bucket order. Buckets are cut into chunks of K
// points, one thread per chunk, summed in XYZZ coordinates; one thread per
// bucket then adds up to T chunk sums. Buckets with more chunks (a skewed
// input: many equal scalars) first go through tree passes (fan-in G, in
// place), so they cost about K + G·log_G(size/(K·T)) + T serial additions. Then each window's sum Σ b·B_b by running sums
// over bucket segments and a tree reduction; the host combines the windows.
//
// Bit-heavy scalars (msm_bits.rs) come as a bitmap of the 1s, summed by
// msm_bit_sum and then msm_reduce, and the other scalars with their point
// indices (msm_scatter's `index`).
//
// Folded (bases resident with precomputed multiples: table[w·stride + i] =
// 2^(c·w)·P_i): every window's digits go into one set of buckets, as the
// point w·stride + i, so the bucket sums and window reductions run once.
#include "fp.cuh"

template <class F> struct affine { F x, y; };
// (X, Y, ZZ, ZZZ) with x = X/ZZ, y = Y/ZZZ; ZZ = 0 is the point at infinity.
template <class F> struct xyzz { F x, y, zz, zzz; };

template <class F> __device__ __forceinline__ void set_inf(xyzz<F>& p) { p.zz = F{}; p.zzz = F{}; }
template <class F> __device__ __forceinline__ bool is_inf(const xyzz<F>& p) { return is_zero(p.zz); }
template <class F> __device__ __forceinline__ F dbl_f(const F& a) { return add(a, a); }

// p = 2·(x, y) for an affine point.
template <class F> __device__ void dbl_affine(xyzz<F>& p, const F& x, const F& y) {
    F u = dbl_f(y), v = sqr(u), w = mul(u, v), s = mul(x, v);
    F x2 = sqr(x), m = add(dbl_f(x2), x2);
    p.x = sub(sqr(m), dbl_f(s));
    p.y = sub(mul(m, sub(s, p.x)), mul(w, y));
    p.zz = v; p.zzz = w;
}

template <class F> __device__ void dbl(xyzz<F>& p) {
    if (is_inf(p)) return;
    F u = dbl_f(p.y), v = sqr(u), w = mul(u, v), s = mul(p.x, v);
    F x2 = sqr(p.x), m = add(dbl_f(x2), x2);
    F x3 = sub(sqr(m), dbl_f(s));
    p.y = sub(mul(m, sub(s, x3)), mul(w, p.y));
    p.x = x3; p.zz = mul(v, p.zz); p.zzz = mul(w, p.zzz);
}

// p += (x2, y2), an affine point other than infinity.
template <class F> __device__ void add_affine(xyzz<F>& p, const F& x2, const F& y2) {
    if (is_inf(p)) { p.x = x2; p.y = y2; set_one(p.zz); set_one(p.zzz); return; }
    F P = sub(mul(x2, p.zz), p.x), R = sub(mul(y2, p.zzz), p.y);
    if (is_zero(P)) {
        if (is_zero(R)) dbl_affine(p, x2, y2); else set_inf(p);
        return;
    }
    F pp = sqr(P), ppp = mul(P, pp), q = mul(p.x, pp);
    F x3 = sub(sub(sqr(R), ppp), dbl_f(q));
    p.y = sub(mul(R, sub(q, x3)), mul(p.y, ppp));
    p.x = x3; p.zz = mul(p.zz, pp); p.zzz = mul(p.zzz, ppp);
}

template <class F> __device__ void add(xyzz<F>& p, const xyzz<F>& q) {
    if (is_inf(q)) return;
    if (is_inf(p)) { p = q; return; }
    F u1 = mul(p.x, q.zz), s1 = mul(p.y, q.zzz);
    F P = sub(mul(q.x, p.zz), u1), R = sub(mul(q.y, p.zzz), s1);
    if (is_zero(P)) {
        if (is_zero(R)) dbl(p); else set_inf(p);
        return;
    }
    F pp = sqr(P), ppp = mul(P, pp), qq = mul(u1, pp);
    F x3 = sub(sub(sqr(R), ppp), dbl_f(qq));
    p.y = sub(mul(R, sub(qq, x3)), mul(s1, ppp));
    p.x = x3; p.zz = mul(mul(p.zz, q.zz), pp); p.zzz = mul(mul(p.zzz, q.zzz), ppp);
}

// ------------------------------------------------------------------ scalars

extern "C" __global__ void msm_from_mont(fr* s, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) s[i] = fr_mul(s[i], fr{{1, 0, 0, 0}});
}

__device__ __forceinline__ u32 scalar_bits(const fr& s, u32 off, u32 c) {
    if (off >= 256) return 0;
    u32 limb = off / 64, sh = off % 64;
    u64 v = s.l[limb] >> sh;
    if (sh + c > 64 && limb < 3) v |= s.l[limb + 1] << (64 - sh);
    return (u32)(v & ((1ull << c) - 1));
}

// Signed digit of window w (|d| <= 2^(c-1)); carries ripple from window 0.
// Calls must go w = 0, 1, ... with the same `carry`.
__device__ __forceinline__ int next_digit(const fr& s, u32 w, u32 c, u32& carry) {
    int d = (int)(scalar_bits(s, w * c, c) + carry);
    carry = d > (1 << (c - 1));
    return carry ? d - (1 << c) : d;
}

// counts[w * nb + |d|] for nb = 2^(c-1) + 1 buckets per window (0 = skipped);
// folded, counts[|d|].
extern "C" __global__ void msm_count(const fr* s, u32 n, u32 c, u32 nwin, u32 fold, u32* counts) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fr k = s[i];
    u32 nb = (1u << (c - 1)) + 1, carry = 0;
    for (u32 w = 0; w < nwin; w++) {
        int d = next_digit(k, w, c, carry);
        if (d) atomicAdd(&counts[(fold ? 0 : w * nb) + (d < 0 ? -d : d)], 1);
    }
}

__device__ __forceinline__ u32 chunks_of(u32 count, u32 k) { return (count + k - 1) / k; }

// One block per window: exclusive scans of the counts (-> offsets, and the
// scatter cursors) and of the chunk counts (-> chunk_first); totals[w] =
// chunks, most[w] = the most chunks of one bucket.
extern "C" __global__ void msm_scan(const u32* counts, u32 nb, u32 k, u32* offsets, u32* cursor,
                                    u32* chunk_first, u32* totals, u32* most) {
    __shared__ u32 sp[1024], sc[1024];
    u32 w = blockIdx.x, t = threadIdx.x, per = (nb + blockDim.x - 1) / blockDim.x;
    const u32* cnt = counts + (size_t)w * nb;
    u32 lo = min(t * per, nb), hi = min(lo + per, nb), p = 0, q = 0, m = 0;
    for (u32 b = lo; b < hi; b++) {
        u32 ch = b ? chunks_of(cnt[b], k) : 0;
        p += cnt[b]; q += ch; m = max(m, ch);
    }
    atomicMax(&most[w], m);
    sp[t] = p; sc[t] = q;
    __syncthreads();
    for (u32 d = 1; d < blockDim.x; d *= 2) {  // Hillis-Steele inclusive scan
        u32 a = t >= d ? sp[t - d] : 0, b = t >= d ? sc[t - d] : 0;
        __syncthreads();
        sp[t] += a; sc[t] += b;
        __syncthreads();
    }
    p = sp[t] - p; q = sc[t] - q;
    for (u32 b = lo; b < hi; b++) {
        size_t i = (size_t)w * nb + b;
        offsets[i] = p; cursor[i] = p; chunk_first[i] = q;
        p += cnt[b]; q += b ? chunks_of(cnt[b], k) : 0;
    }
    if (t == blockDim.x - 1) totals[w] = sc[t];
}

// sorted[w * n + position] = point index | sign << 31, in bucket order;
// folded, sorted[position] = (w * stride + index) | sign << 31. The point
// index of scalar i is index[i], or i where `index` is null.
extern "C" __global__ void msm_scatter(const fr* s, const u32* index, u32 n, u32 c, u32 nwin,
                                       u32 fold, u32 stride, u32* cursor, u32* sorted) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fr k = s[i];
    u32 nb = (1u << (c - 1)) + 1, carry = 0, p = index ? index[i] : i;
    for (u32 w = 0; w < nwin; w++) {
        int d = next_digit(k, w, c, carry);
        if (d) {
            u32 pos = atomicAdd(&cursor[(fold ? 0 : w * nb) + (d < 0 ? -d : d)], 1);
            u32 point = fold ? w * stride + p : p;
            sorted[(fold ? 0 : (size_t)w * n) + pos] = point | (d < 0 ? 0x80000000u : 0);
        }
    }
}

// chunk_bucket[w * cap + chunk] = the bucket the chunk belongs to.
extern "C" __global__ void msm_chunk_map(const u32* counts, const u32* chunk_first, u32 nb, u32 k,
                                         u32 cap, u32 nwin, u32* chunk_bucket) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nwin * nb) return;
    u32 w = i / nb, b = i % nb;
    if (b == 0) return;
    u32 m = chunks_of(counts[i], k);
    for (u32 j = 0; j < m; j++) chunk_bucket[(size_t)w * cap + chunk_first[i] + j] = b;
}

// ------------------------------------------------------------------ points

// One thread per chunk (grid y = window): partial[w * cap + chunk].
template <class F>
__device__ void accumulate(const affine<F>* bases, const u32* sorted, const u32* counts,
                           const u32* offsets, const u32* chunk_first, const u32* chunk_bucket,
                           const u32* totals, u32 n, u32 nb, u32 k, u32 cap, xyzz<F>* partial) {
    u32 w = blockIdx.y, t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= totals[w]) return;
    u32 b = chunk_bucket[(size_t)w * cap + t];
    size_t i = (size_t)w * nb + b;
    u32 start = offsets[i] + (t - chunk_first[i]) * k;
    u32 end = min(start + k, offsets[i] + counts[i]);
    const u32* e = sorted + (size_t)w * n;
    xyzz<F> acc; set_inf(acc);
    for (u32 j = start; j < end; j++) {
        u32 v = e[j];
        affine<F> p = bases[v & 0x7fffffffu];
        if (is_zero(p.x) && is_zero(p.y)) continue;  // the seam's affine infinity
        add_affine(acc, p.x, v >> 31 ? neg(p.y) : p.y);
    }
    partial[(size_t)w * cap + t] = acc;
}

// Stride between the chunk sums a bucket of m chunks ends with: after the
// tree passes it joined (those with m > stride·tmax), at most tmax remain.
__device__ __forceinline__ u32 final_stride(u32 m, u32 g, u32 tmax) {
    u32 s = 1;
    while (m > s * tmax) s *= g;
    return s;
}

// One tree pass over the chunk sums of buckets with more than stride·tmax
// chunks (grid y = window): the chunk at position r ≡ 0 (mod g·stride) of
// its bucket adds chunks r + j·stride, j < g, into itself.
template <class F>
__device__ void tree_pass(xyzz<F>* partial, const u32* counts, const u32* chunk_first,
                          const u32* chunk_bucket, const u32* totals, u32 nb, u32 k, u32 cap,
                          u32 stride, u32 g, u32 tmax) {
    u32 w = blockIdx.y, t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= totals[w]) return;
    size_t i = (size_t)w * nb + chunk_bucket[(size_t)w * cap + t];
    u32 r = t - chunk_first[i], m = chunks_of(counts[i], k);
    if (m <= stride * tmax || r % (stride * g) || r + stride >= m) return;
    xyzz<F>* p = partial + (size_t)w * cap + chunk_first[i];
    xyzz<F> acc = p[r];
    for (u32 j = 1; j < g && r + j * stride < m; j++) add(acc, p[r + j * stride]);
    p[r] = acc;
}

// One thread per bucket b >= 1: buckets[w * (nb - 1) + b - 1] = Σ of its
// remaining (at most tmax) chunk sums.
template <class F>
__device__ void bucket_sum(const xyzz<F>* partial, const u32* counts, const u32* chunk_first,
                           u32 nb, u32 k, u32 cap, u32 nwin, u32 g, u32 tmax, xyzz<F>* buckets) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nwin * (nb - 1)) return;
    u32 w = i / (nb - 1), b = i % (nb - 1) + 1;
    size_t ci = (size_t)w * nb + b;
    u32 m = chunks_of(counts[ci], k), s = final_stride(m, g, tmax);
    const xyzz<F>* p = partial + (size_t)w * cap + chunk_first[ci];
    xyzz<F> acc; set_inf(acc);
    for (u32 r = 0; r < m; r += s) add(acc, p[r]);
    buckets[i] = acc;
}

// One thread per segment of `len` buckets (grid y = window):
// seg[w * segs + t] = Σ_{b in segment} b·B_b.
template <class F>
__device__ void window_segments(const xyzz<F>* buckets, u32 nbk, u32 len, xyzz<F>* seg) {
    u32 w = blockIdx.y, t = blockIdx.x * blockDim.x + threadIdx.x, segs = nbk / len;
    if (t >= segs) return;
    const xyzz<F>* bk = buckets + (size_t)w * nbk;
    xyzz<F> run, acc; set_inf(run); set_inf(acc);
    for (u32 j = len; j-- > 0;) {  // bucket numbers t*len+1 .. (t+1)*len, top down
        add(run, bk[t * len + j]);
        add(acc, run);
    }
    // acc = Σ (b - lo + 1)·B_b; add (lo - 1)·run, lo - 1 = t*len.
    u32 m = t * len;
    xyzz<F> r; set_inf(r);
    for (int bit = 31; bit >= 0; bit--) {
        dbl(r);
        if ((m >> bit) & 1) add(r, run);
    }
    add(acc, r);
    seg[(size_t)w * segs + t] = acc;
}

// out[w * ceil(m/g) + o] = Σ in[w * m + o*g .. +g] (grid y = window).
template <class F> __device__ void reduce(const xyzz<F>* in, u32 m, u32 g, xyzz<F>* out) {
    u32 w = blockIdx.y, o = blockIdx.x * blockDim.x + threadIdx.x, outs = (m + g - 1) / g;
    if (o >= outs) return;
    xyzz<F> acc; set_inf(acc);
    for (u32 j = o * g; j < min(o * g + g, m); j++) add(acc, in[(size_t)w * m + j]);
    out[(size_t)w * outs + o] = acc;
}

// One thread per `per` words of the bitmap `ones` (bit i: scalar i is 1):
// out[t] = Σ bases[i] over the set bits of its words.
template <class F> __device__ void bit_sum(const affine<F>* bases, const u64* ones, u32 words,
                                           u32 per, xyzz<F>* out) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x, lo = t * per;
    if (lo >= words) return;
    xyzz<F> acc; set_inf(acc);
    for (u32 w = lo; w < min(lo + per, words); w++) {
        for (u64 m = ones[w]; m; m &= m - 1) {
            affine<F> p = bases[(size_t)w * 64 + __ffsll((long long)m) - 1];
            if (is_zero(p.x) && is_zero(p.y)) continue;  // the seam's affine infinity
            add_affine(acc, p.x, p.y);
        }
    }
    out[t] = acc;
}

// ------------------------------------------------------------------ fixed bases

// a^(p-2) = 1/a for a != 0 (Fermat; once per point at upload).
__device__ fp inv(const fp& a) {
    fp r; set_one(r);
    for (int bit = FP_BITS - 1; bit >= 0; bit--) {
        r = sqr(r);
        u64 e = FP_P[bit / 64] - (bit < 64 ? 2 : 0);  // p - 2: no borrow (p's low limb is odd, > 2)
        if ((e >> (bit % 64)) & 1) r = mul(r, a);
    }
    return r;
}
__device__ fp2 inv(const fp2& a) {
    fp t = inv(add(sqr(a.c0), sqr(a.c1)));
    return {mul(a.c0, t), neg(mul(a.c1, t))};
}

// table[w * stride + i] = 2^(c·w)·table[i] for 0 < w < nwin (affine; the
// (0, 0) infinity stays infinity): c doublings per window in XYZZ, then one
// inversion per point shared by its windows (Montgomery's trick on ZZZ;
// 1/ZZ = (ZZ/ZZZ)^2).
#define FIXED_MAX_WINDOWS 22
template <class F> __device__ void precompute(affine<F>* table, u32 n, u32 stride, u32 c, u32 nwin) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || nwin > FIXED_MAX_WINDOWS) return;
    affine<F> p = table[i];
    if (is_zero(p.x) && is_zero(p.y)) {
        for (u32 w = 1; w < nwin; w++) table[(size_t)w * stride + i] = p;
        return;
    }
    xyzz<F> q[FIXED_MAX_WINDOWS];
    F prefix[FIXED_MAX_WINDOWS];
    xyzz<F> acc{p.x, p.y, F{}, F{}};
    set_one(acc.zz); set_one(acc.zzz);
    for (u32 w = 1; w < nwin; w++) {
        for (u32 j = 0; j < c; j++) dbl(acc);
        q[w] = acc;
        prefix[w] = w == 1 ? acc.zzz : mul(prefix[w - 1], acc.zzz);
    }
    if (nwin < 2) return;
    F t = inv(prefix[nwin - 1]);  // 1 / (ZZZ_1 ··· ZZZ_w) while walking down
    for (u32 w = nwin - 1; w >= 1; w--) {
        F izzz = w == 1 ? t : mul(t, prefix[w - 1]);
        t = mul(t, q[w].zzz);
        F iz = mul(q[w].zz, izzz), izz = sqr(iz);
        table[(size_t)w * stride + i] = affine<F>{mul(q[w].x, izz), mul(q[w].y, izzz)};
    }
}

#define MSM_KERNELS(G, F, BOUNDS)                                                                  \
    extern "C" __global__ void BOUNDS msm_accumulate_##G(const affine<F>* bases, const u32* sorted,       \
        const u32* counts, const u32* offsets, const u32* chunk_first, const u32* chunk_bucket,    \
        const u32* totals, u32 n, u32 nb, u32 k, u32 cap, xyzz<F>* partial) {                      \
        accumulate(bases, sorted, counts, offsets, chunk_first, chunk_bucket, totals, n, nb, k,    \
                   cap, partial);                                                                  \
    }                                                                                              \
    extern "C" __global__ void msm_tree_pass_##G(xyzz<F>* partial, const u32* counts,             \
        const u32* chunk_first, const u32* chunk_bucket, const u32* totals, u32 nb, u32 k,         \
        u32 cap, u32 stride, u32 g, u32 tmax) {                                                    \
        tree_pass(partial, counts, chunk_first, chunk_bucket, totals, nb, k, cap, stride, g, tmax);\
    }                                                                                              \
    extern "C" __global__ void msm_bucket_sum_##G(const xyzz<F>* partial, const u32* counts,       \
        const u32* chunk_first, u32 nb, u32 k, u32 cap, u32 nwin, u32 g, u32 tmax,                 \
        xyzz<F>* buckets) {                                                                        \
        bucket_sum(partial, counts, chunk_first, nb, k, cap, nwin, g, tmax, buckets);              \
    }                                                                                              \
    extern "C" __global__ void msm_window_segments_##G(const xyzz<F>* buckets, u32 nbk, u32 len,   \
                                                       xyzz<F>* seg) {                             \
        window_segments(buckets, nbk, len, seg);                                                   \
    }                                                                                              \
    extern "C" __global__ void msm_reduce_##G(const xyzz<F>* in, u32 m, u32 g, xyzz<F>* out) {     \
        reduce(in, m, g, out);                                                                     \
    }                                                                                              \
    extern "C" __global__ void msm_precompute_##G(affine<F>* table, u32 n, u32 stride, u32 c,      \
                                                  u32 nwin) {                                      \
        precompute(table, n, stride, c, nwin);                                                     \
    }                                                                                              \
    extern "C" __global__ void BOUNDS msm_bit_sum_##G(const affine<F>* bases, const u64* ones,    \
                                                      u32 words, u32 per, xyzz<F>* out) {          \
        bit_sum(bases, ones, words, per, out);                                                     \
    }

// G1: 3 blocks of 128 per SM (≤ 170 registers, a few bytes of spill) beat 2.
MSM_KERNELS(g1, fp, __launch_bounds__(128, 3))
MSM_KERNELS(g2, fp2, __launch_bounds__(128))
