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
        if (is_zero(p.x) && is_zero(p.y)) continue;  // blst's affine infinity
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
            if (is_zero(p.x) && is_zero(p.y)) continue;  // blst's affine infinity
            add_affine(acc, p.x, p.y);
        }
    }
    out[t] = acc;
}

// ------------------------------------------------------------------ fixed bases

// a^(p-2) = 1/a for a != 0 (Fermat; once per point at upload).
__device__ fp inv(const fp& a) {
    fp r; set_one(r);
    for (int bit = 380; bit >= 0; bit--) {
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
// The same by Euclid (`inv_euclid`): for one thread alone, not for many.
__device__ fp inv_alone(const fp& a) { return inv_euclid(a); }
__device__ fp2 inv_alone(const fp2& a) {
    fp t = inv_euclid(add(sqr(a.c0), sqr(a.c1)));
    return {mul(a.c0, t), neg(mul(a.c1, t))};
}

// table[w * stride + i] = 2^(c·w)·table[i] for 0 < w < nwin (affine; blst's
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

// ------------------------------------------------------------------ batch-affine chunk sums

// Instead of `accumulate` (`accumulate=affine`): a chunk's k = 2^R points
// are summed in R rounds of affine pair additions, λ = Δy/Δx, each round's
// inversions shared by every chunk of a batch (Montgomery's trick: each
// thread's running product, then the threads' products by inv_up / inv_one
// / inv_down): ~6 field products per addition against XYZZ's 10. One
// thread per chunk; round r's pair i of thread f sits at i·threads + f of
// interleaved buffers. Round r's prefixes are taken ascending for odd r
// (its step walks its pairs descending) and descending for even r; a step
// takes the next round's prefixes as its outputs appear. A prefix stored
// as 0 marks a thread's first factor (products of nonzero d are nonzero).

enum { PAIR_INF, PAIR_LEFT, PAIR_RIGHT, PAIR_ADD, PAIR_DBL };

template <class F> __device__ __forceinline__ bool is_inf(const affine<F>& p) {
    return is_zero(p.x) && is_zero(p.y);  // blst's affine infinity
}

// How p + q is formed, and for ADD / DBL the d to invert: q.x − p.x, 2·p.y.
template <class F> __device__ __forceinline__ int pair_kind(const affine<F>& p, const affine<F>& q, F& d) {
    if (is_inf(q)) return is_inf(p) ? PAIR_INF : PAIR_LEFT;
    if (is_inf(p)) return PAIR_RIGHT;
    d = sub(q.x, p.x);
    if (!is_zero(d)) return PAIR_ADD;
    if (is_zero(sub(q.y, p.y)) && !is_zero(p.y)) { d = dbl_f(p.y); return PAIR_DBL; }
    return PAIR_INF;  // q = −p
}

// p + q of the given kind, with inv_d = 1/d for ADD and DBL.
template <class F> __device__ __forceinline__ affine<F> pair_sum(int kind, const affine<F>& p, const affine<F>& q,
                                                                const F& inv_d) {
    if (kind == PAIR_LEFT) return p;
    if (kind == PAIR_RIGHT) return q;
    if (kind == PAIR_INF) return affine<F>{F{}, F{}};
    F num;
    if (kind == PAIR_ADD) num = sub(q.y, p.y);
    else { F x2 = sqr(p.x); num = add(dbl_f(x2), x2); }
    F l = mul(num, inv_d);
    F x3 = sub(sub(sqr(l), p.x), q.x);
    return affine<F>{x3, sub(mul(l, sub(p.x, x3)), p.y)};
}

// A coordinate from global memory in 16-byte loads (points are 32-byte aligned).
template <class F> __device__ __forceinline__ F load_f(const F* p) {
    F r;
    u64* w = reinterpret_cast<u64*>(&r);
    const ulonglong2* s = reinterpret_cast<const ulonglong2*>(p);
#pragma unroll
    for (int i = 0; i < (int)(sizeof(F) / 16); i++) {
        ulonglong2 t = __ldg(s + i);
        w[2 * i] = t.x; w[2 * i + 1] = t.y;
    }
    return r;
}

// Chunk f of a batch (chunk slots c0 .. c0 + span of every set, set-major).
struct chunk_at {
    size_t slot;     // w·cap + t: where its sum goes
    const u32* e;    // its set's sorted entries
    u32 start, end;  // its entries
};

__device__ __forceinline__ bool find_chunk(u32 f, u32 c0, u32 span, const u32* sorted, const u32* counts,
                                           const u32* offsets, const u32* chunk_first, const u32* chunk_bucket,
                                           const u32* totals, u32 n, u32 nb, u32 k, u32 cap, chunk_at& ch) {
    u32 w = f / span, t = c0 + f % span;
    if (t >= cap || t >= totals[w]) return false;
    ch.slot = (size_t)w * cap + t;
    size_t i = (size_t)w * nb + chunk_bucket[ch.slot];
    ch.start = offsets[i] + (t - chunk_first[i]) * k;
    ch.end = min(ch.start + k, offsets[i] + counts[i]);
    ch.e = sorted + (size_t)w * n;
    return true;
}

// Point j of a chunk: a base, negated for a negative digit; past its end, infinity.
template <class F> __device__ __forceinline__ affine<F> chunk_point(const affine<F>* bases, const chunk_at& ch, u32 j) {
    u32 pos = ch.start + j;
    if (pos >= ch.end) return affine<F>{F{}, F{}};
    u32 v = ch.e[pos];
    const affine<F>* b = bases + (v & 0x7fffffffu);
    affine<F> p{load_f(&b->x), load_f(&b->y)};
    if (v >> 31) p.y = neg(p.y);
    return p;
}

// The x of point j of a chunk (0 past its end).
template <class F> __device__ __forceinline__ F chunk_x(const affine<F>* bases, const chunk_at& ch, u32 j) {
    u32 pos = ch.start + j;
    return pos < ch.end ? load_f(&bases[ch.e[pos] & 0x7fffffffu].x) : F{};
}

#define CHUNK_ARGS const u32 *sorted, const u32 *counts, const u32 *offsets, const u32 *chunk_first, \
    const u32 *chunk_bucket, const u32 *totals, u32 n, u32 nb, u32 k, u32 cap, u32 c0, u32 span, u32 threads
#define CHUNK_PASS sorted, counts, offsets, chunk_first, chunk_bucket, totals, n, nb, k, cap, c0, span, threads
#define FIND_CHUNK(f, ch) find_chunk(f, c0, span, sorted, counts, offsets, chunk_first, chunk_bucket, totals, \
                                     n, nb, k, cap, ch)

// Round 1's prefixes (ascending) and each thread's product.
template <class F> __device__ void affine_up(const affine<F>* bases, CHUNK_ARGS, F* pre, F* tot) {
    u32 f = blockIdx.x * blockDim.x + threadIdx.x;
    if (f >= threads) return;
    F run; set_one(run);
    bool any = false;
    chunk_at ch;
    if (FIND_CHUNK(f, ch)) {
        for (u32 i = 0; i < k / 2 && ch.start + 2 * i < ch.end; i++) {
            // Two nonzero, different x: an addition (neither is infinity),
            // known from the x alone; anything else from the whole points.
            F px = chunk_x(bases, ch, 2 * i), qx = chunk_x(bases, ch, 2 * i + 1), d = sub(qx, px);
            int kind = PAIR_ADD;
            if (is_zero(px) || is_zero(qx) || is_zero(d))
                kind = pair_kind(chunk_point(bases, ch, 2 * i), chunk_point(bases, ch, 2 * i + 1), d);
            if (kind < PAIR_ADD) continue;
            pre[(size_t)i * threads + f] = any ? run : F{};
            run = any ? mul(run, d) : d;
            any = true;
        }
    }
    tot[f] = run;
}

// Round r: its k >> r pairs (inputs: the chunk's points for r = 1, else
// `src`) into `dst`, or into the chunk's sum when one pair is left; tot[f]
// holds 1/(the thread's product) on entry and the next round's product on exit.
template <class F> __device__ void affine_step(const affine<F>* bases, CHUNK_ARGS, u32 r, const affine<F>* src,
                                               affine<F>* dst, const F* pre, F* pre_next, F* tot,
                                               xyzz<F>* partial) {
    u32 f = blockIdx.x * blockDim.x + threadIdx.x;
    if (f >= threads) return;
    u32 pairs = k >> r;
    F run; set_one(run);
    bool any = false, down = r & 1;
    chunk_at ch;
    if (FIND_CHUNK(f, ch)) {
        F acc = tot[f];
        affine<F> prev;
        for (u32 s = 0; s < pairs; s++) {
            u32 i = down ? pairs - 1 - s : s;
            affine<F> p, q;
            if (r == 1) { p = chunk_point(bases, ch, 2 * i); q = chunk_point(bases, ch, 2 * i + 1); }
            else { p = src[(size_t)(2 * i) * threads + f]; q = src[(size_t)(2 * i + 1) * threads + f]; }
            F d, inv_d{};
            int kind = pair_kind(p, q, d);
            if (kind >= PAIR_ADD) {
                F pr = pre[(size_t)i * threads + f];
                inv_d = is_zero(pr) ? acc : mul(acc, pr);
                acc = mul(acc, d);
            }
            affine<F> o = pair_sum(kind, p, q, inv_d);
            if (pairs == 1) {
                xyzz<F> x{o.x, o.y, F{}, F{}};
                if (!is_inf(o)) { set_one(x.zz); set_one(x.zzz); }
                partial[ch.slot] = x;
                return;
            }
            dst[(size_t)i * threads + f] = o;
            if (s & 1) {  // outputs i and the previous one are the next round's pair i / 2
                F d2;
                int kind2 = down ? pair_kind(o, prev, d2) : pair_kind(prev, o, d2);
                if (kind2 >= PAIR_ADD) {
                    pre_next[(size_t)(i / 2) * threads + f] = any ? run : F{};
                    run = any ? mul(run, d2) : d2;
                    any = true;
                }
            }
            prev = o;
        }
    }
    if (pairs > 1) tot[f] = run;
}

// Montgomery's trick over v[0 .. m), `per` values per thread: pre[j] = the
// product before v[j] in its thread's run, tot[u] = the run's product.
template <class F> __device__ void inv_up(const F* v, u32 m, u32 per, F* pre, F* tot) {
    u32 u = blockIdx.x * blockDim.x + threadIdx.x;
    size_t lo = (size_t)u * per, hi = min(lo + per, (size_t)m);
    if (lo >= m) return;
    F run; set_one(run);
    for (size_t j = lo; j < hi; j++) { pre[j] = run; run = mul(run, v[j]); }
    tot[u] = run;
}

// v[j] = 1/v[j], given tot_inv[u] = 1/(the run's product).
template <class F> __device__ void inv_down(F* v, u32 m, u32 per, const F* pre, const F* tot_inv) {
    u32 u = blockIdx.x * blockDim.x + threadIdx.x;
    size_t lo = (size_t)u * per, hi = min(lo + per, (size_t)m);
    if (lo >= m) return;
    F acc = tot_inv[u];
    for (size_t j = hi; j-- > lo;) {
        F t = mul(acc, pre[j]);
        acc = mul(acc, v[j]);
        v[j] = t;
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
    }                                                                                              \
    extern "C" __global__ void BOUNDS msm_affine_up_##G(const affine<F>* bases, CHUNK_ARGS, F* pre,  \
                                                        F* tot) {                                  \
        affine_up(bases, CHUNK_PASS, pre, tot);                                                    \
    }                                                                                              \
    extern "C" __global__ void BOUNDS msm_affine_step_##G(const affine<F>* bases, CHUNK_ARGS, u32 r, \
        const affine<F>* src, affine<F>* dst, const F* pre, F* pre_next, F* tot, xyzz<F>* partial) { \
        affine_step(bases, CHUNK_PASS, r, src, dst, pre, pre_next, tot, partial);                  \
    }                                                                                              \
    extern "C" __global__ void msm_inv_up_##G(const F* v, u32 m, u32 per, F* pre, F* tot) {        \
        inv_up(v, m, per, pre, tot);                                                               \
    }                                                                                              \
    extern "C" __global__ void msm_inv_down_##G(F* v, u32 m, u32 per, const F* pre,                \
                                                const F* tot_inv) {                                \
        inv_down(v, m, per, pre, tot_inv);                                                         \
    }                                                                                              \
    extern "C" __global__ void msm_inv_one_##G(F* v) {                                            \
        if (blockIdx.x == 0 && threadIdx.x == 0) v[0] = inv_alone(v[0]);                                \
    }

// G1: 3 blocks of 128 per SM (≤ 170 registers, a few bytes of spill) beat 2.
MSM_KERNELS(g1, fp, __launch_bounds__(128, 3))
MSM_KERNELS(g2, fp2, __launch_bounds__(128))
