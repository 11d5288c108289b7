// Radix-2 NTT over Fr in shared-memory passes of up to 10 stages (the
// bit-reversal permutation folded into the last); scaling kernels.
#include "fr.cuh"

// The radix-2 stages whose butterflies pair indices differing in one bit of
// [lo, lo + s) run in shared memory: a block loads a tile of 2^w elements,
// runs the stages on it and stores once. Tile bits [0, low) are index bits
// [0, low) (neighbouring columns, so that neighbouring threads touch
// neighbouring elements), tile bits [low, w) index bits [lo, lo + w - low)
// (the stage bits, then w - low - s bits of independent rows); the block
// number fills index bits [low, lo) and those from lo + w - low up.
// dit: stages upward, Cooley-Tukey (a + w·b, a − w·b); else downward,
// Gentleman-Sande (a + b, (a − b)·w), w = ω_(2·half)^(i0 mod half).
// TOP (a lowest pass, lo = low = 0, that writes bit-reversed): tile bits
// [s, w) are the top index bits instead, the block number the bits between,
// so that the reversed writes land in runs of 2^(w−s) elements.
struct Tile { u32 g, low, lo, w, s, log_n; };
template <bool TOP>
__device__ __forceinline__ u32 tile_index(u32 q, const Tile& t) {
    if (TOP) return (q & ((1u << t.s) - 1)) | (t.g << t.s) | ((q >> t.s) << (t.log_n - (t.w - t.s)));
    u32 gap = t.lo - t.low;
    return (q & ((1u << t.low) - 1)) | ((t.g & ((1u << gap) - 1)) << t.low) | ((q >> t.low) << t.lo) |
           ((t.g >> gap) << (t.lo + t.w - t.low));
}

// Where tile position q sits in shared memory. TOP's store loop reads the
// rows of one run together, 2^s positions apart (one bank when s ≥ 4):
// XOR-ing the row into the low bits spreads them over neighbouring banks.
template <bool TOP>
__device__ __forceinline__ u32 slot(u32 q, u32 s) { return TOP ? q ^ (q >> s) : q; }

// Shared memory holds the tile limb-major (limb k of element i at
// k·size + i): neighbouring threads then hit neighbouring banks, where 32-byte
// elements side by side put every fourth thread on the same bank.
__device__ __forceinline__ fr tile_ld(const u64* t, u32 i, u32 size) {
    return fr{{t[i], t[size + i], t[2 * size + i], t[3 * size + i]}};
}
__device__ __forceinline__ void tile_st(u64* t, u32 i, u32 size, const fr& v) {
    for (int k = 0; k < 4; k++) t[k * size + i] = v.l[k];
}

// Index of the factor of the butterfly at tile position i0 in stage gh in
// the stage-major twiddle table (entry half + j holds ω_(2·half)^j).
template <bool TOP>
__device__ __forceinline__ u32 stage_twiddle(u32 i0, const Tile& t, u32 gh) {
    return (1u << gh) + (tile_index<TOP>(i0, t) & ((1u << gh) - 1));
}

// Reads `src` and writes `dst` (at bit-reversed indices when `rev`: the
// permutation, done by the last pass, which then must not be in place
// unless it is the only block); 2^w elements of dynamic shared memory,
// 2^(w−1) threads (one butterfly each per stage).
template <bool TOP>
__device__ __forceinline__ void ntt_pass_body(const fr* src, fr* dst, const fr* tw, u32 log_n, u32 lo,
                                              u32 s, u32 w, u32 low, int dit, int rev) {
    extern __shared__ u64 tile[];
    const Tile t{blockIdx.x, low, lo, w, s, log_n};
    u32 size = 1u << w, b = threadIdx.x;
    for (u32 q = b; q < size; q += blockDim.x) {
        u32 i = tile_index<TOP>(q, t);
        tile_st(tile, slot<TOP>(q, s), size, src[i]);
    }
    __syncthreads();
    for (u32 k = 0; k < s; k++) {
        u32 e = dit ? k : s - 1 - k, lh = low + e;
        u32 i0 = ((b >> lh) << (lh + 1)) | (b & ((1u << lh) - 1)), i1 = i0 + (1u << lh);
        fr f = tw[stage_twiddle<TOP>(i0, t, lo + e)];
        u32 p0 = slot<TOP>(i0, s), p1 = slot<TOP>(i1, s);
        fr a = tile_ld(tile, p0, size), c = tile_ld(tile, p1, size);
        if (dit) {
            fr x = fr_mul(c, f);
            tile_st(tile, p0, size, fr_add(a, x)); tile_st(tile, p1, size, fr_sub(a, x));
        } else {
            tile_st(tile, p0, size, fr_add(a, c)); tile_st(tile, p1, size, fr_mul(fr_sub(a, c), f));
        }
        __syncthreads();
    }
    // With TOP, neighbouring threads take neighbouring rows: their reversed
    // indices are neighbours.
    u32 rows = w - s;
    for (u32 v = b; v < size; v += blockDim.x) {
        u32 q = TOP ? (v >> rows) | ((v & ((1u << rows) - 1)) << s) : v;
        u32 i = tile_index<TOP>(q, t);
        dst[rev ? __brev(i) >> (32 - log_n) : i] = tile_ld(tile, slot<TOP>(q, s), size);
    }
}

#define NTT_PASS_ARGS const fr *src, fr *dst, const fr *tw, u32 log_n, u32 lo, u32 s, u32 w, u32 low, int dit, int rev
extern "C" __global__ void __launch_bounds__(512) ntt_pass(NTT_PASS_ARGS) {
    ntt_pass_body<false>(src, dst, tw, log_n, lo, s, w, low, dit, rev);
}
extern "C" __global__ void __launch_bounds__(512) ntt_pass_top(NTT_PASS_ARGS) {
    ntt_pass_body<true>(src, dst, tw, log_n, lo, s, w, low, dit, rev);
}
#undef NTT_PASS_ARGS

// v[p] *= s[natural index of p]: the coset and 1/n factors.
extern "C" __global__ void scale(fr* v, const fr* s, u32 n, u32 log_n, int reversed) {
    u32 p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n) return;
    u32 idx = reversed && log_n ? __brev(p) >> (32 - log_n) : p;
    v[p] = fr_mul(v[p], s[idx]);
}

// The quotient's pointwise step on the coset: a = (a·b − c)·z_inv.
extern "C" __global__ void quotient_combine(fr* a, const fr* b, const fr* c, u64 z0, u64 z1,
                                            u64 z2, u64 z3, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    a[i] = fr_mul(fr_sub(fr_mul(a[i], b[i]), c[i]), fr{{z0, z1, z2, z3}});
}

// out[i] = c·x^i for i < n, `per` consecutive entries per thread, each
// thread starting from one exponentiation x^(t·per) (left to right from its
// top bit): the tables of a first use, built here instead of on the host.
extern "C" __global__ void powers(fr* out, u64 x0, u64 x1, u64 x2, u64 x3, u64 c0, u64 c1, u64 c2,
                                  u64 c3, u32 n, u32 per) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x, first = t * per;
    if (first >= n) return;
    const fr x{{x0, x1, x2, x3}};
    fr acc{{c0, c1, c2, c3}};
    if (first) {
        fr r = x;
        for (int b = 30 - __clz(first); b >= 0; b--) {
            r = fr_mul(r, r);
            if ((first >> b) & 1) r = fr_mul(r, x);
        }
        acc = fr_mul(acc, r);
    }
    for (u32 i = first; i < min(first + per, n); i++) {
        out[i] = acc;
        acc = fr_mul(acc, x);
    }
}

// The stage-major twiddle table's lower stages from its top one (entry
// half + j = ω^j, half = 2^(log_n − 1)): entry 2^h + j = entry half + j·2^(log_n−1−h),
// for 1 ≤ 2^h + j < half; entry 0 stays unused.
extern "C" __global__ void twiddle_lower(fr* table, u32 log_n) {
    u32 e = blockIdx.x * blockDim.x + threadIdx.x, half = 1u << (log_n - 1);
    if (e == 0 || e >= half) return;
    u32 h = 31 - __clz(e), j = e - (1u << h);
    table[e] = table[half + (j << (log_n - 1 - h))];
}
