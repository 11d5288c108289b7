// Multi-word arithmetic on 32-bit limbs with PTX carry chains, shared by Fr
// and Fp. Built for the host too (tests/field_host.rs checks it against blst):
// there the carry flag is emulated.
#pragma once
typedef unsigned long long u64;
typedef unsigned __int128 u128;
typedef unsigned int u32;

#ifndef __CUDACC__
#define __device__
#define __forceinline__ inline
#define __noinline__
#define __constant__
static u32 host_cf;  // the emulated CC.CF flag
#endif

// One PTX instruction each; the `c` forms consume the carry flag, the `_cc`
// forms set it. Chains rely on nothing between them touching the flag, hence
// `volatile` (keeps their order).
#ifdef __CUDACC__
#define ASM3(op, d, a, b) asm volatile(op " %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b))
#define ASM4(op, d, a, b, c) asm volatile(op " %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c))
__device__ __forceinline__ u32 add_cc(u32 a, u32 b) { u32 d; ASM3("add.cc.u32", d, a, b); return d; }
__device__ __forceinline__ u32 addc_cc(u32 a, u32 b) { u32 d; ASM3("addc.cc.u32", d, a, b); return d; }
__device__ __forceinline__ u32 addc(u32 a, u32 b) { u32 d; ASM3("addc.u32", d, a, b); return d; }
__device__ __forceinline__ u32 sub_cc(u32 a, u32 b) { u32 d; ASM3("sub.cc.u32", d, a, b); return d; }
__device__ __forceinline__ u32 subc_cc(u32 a, u32 b) { u32 d; ASM3("subc.cc.u32", d, a, b); return d; }
__device__ __forceinline__ u32 subc(u32 a, u32 b) { u32 d; ASM3("subc.u32", d, a, b); return d; }
__device__ __forceinline__ u32 mad_lo_cc(u32 a, u32 b, u32 c) { u32 d; ASM4("mad.lo.cc.u32", d, a, b, c); return d; }
__device__ __forceinline__ u32 madc_lo_cc(u32 a, u32 b, u32 c) { u32 d; ASM4("madc.lo.cc.u32", d, a, b, c); return d; }
__device__ __forceinline__ u32 madc_hi_cc(u32 a, u32 b, u32 c) { u32 d; ASM4("madc.hi.cc.u32", d, a, b, c); return d; }
__device__ __forceinline__ u32 madc_hi(u32 a, u32 b, u32 c) { u32 d; ASM4("madc.hi.u32", d, a, b, c); return d; }
__device__ __forceinline__ u32 mul_hi(u32 a, u32 b) { return __umulhi(a, b); }
#undef ASM3
#undef ASM4
#else
inline u32 host_add(u64 s) { host_cf = (u32)(s >> 32); return (u32)s; }
inline u32 add_cc(u32 a, u32 b) { return host_add((u64)a + b); }
inline u32 addc_cc(u32 a, u32 b) { return host_add((u64)a + b + host_cf); }
inline u32 addc(u32 a, u32 b) { return a + b + host_cf; }
inline u32 host_sub(u64 a, u64 b) { u64 d = a - b; host_cf = (u32)(d >> 63); return (u32)d; }
inline u32 sub_cc(u32 a, u32 b) { return host_sub(a, b); }
inline u32 subc_cc(u32 a, u32 b) { return host_sub(a, (u64)b + host_cf); }
inline u32 subc(u32 a, u32 b) { return a - b - host_cf; }
inline u32 mad_lo_cc(u32 a, u32 b, u32 c) { return host_add((u64)(a * b) + c); }
inline u32 madc_lo_cc(u32 a, u32 b, u32 c) { return host_add((u64)(a * b) + c + host_cf); }
inline u32 madc_hi_cc(u32 a, u32 b, u32 c) { return host_add(((u64)a * b >> 32) + c + host_cf); }
inline u32 madc_hi(u32 a, u32 b, u32 c) { return (u32)((u64)a * b >> 32) + c + host_cf; }
inline u32 mul_hi(u32 a, u32 b) { return (u32)((u64)a * b >> 32); }
#endif

// L u64 limbs as 2L u32 words, and back (register moves only).
template <int L>
__device__ __forceinline__ void to_words(u32* w, const u64* l) {
    for (int i = 0; i < L; i++) { w[2 * i] = (u32)l[i]; w[2 * i + 1] = (u32)(l[i] >> 32); }
}
template <int L>
__device__ __forceinline__ void from_words(u64* l, const u32* w) {
    for (int i = 0; i < L; i++) l[i] = (u64)w[2 * i + 1] << 32 | w[2 * i];
}

// r = a + b mod p for a, b < p < 2^(32N−1), without branches: the sum,
// then the sum minus p where that does not borrow.
template <int N>
__device__ __forceinline__ void mod_add(u32* r, const u32* a, const u32* b, const u32* p) {
    u32 s[N], d[N];
    s[0] = add_cc(a[0], b[0]);
#pragma unroll
    for (int k = 1; k < N - 1; k++) s[k] = addc_cc(a[k], b[k]);
    s[N - 1] = addc(a[N - 1], b[N - 1]);
    d[0] = sub_cc(s[0], p[0]);
#pragma unroll
    for (int k = 1; k < N; k++) d[k] = subc_cc(s[k], p[k]);
    u32 borrow = subc(0, 0);
#pragma unroll
    for (int k = 0; k < N; k++) r[k] = borrow ? s[k] : d[k];
}

// r = a − b mod p for a, b < p: the difference, plus p where it borrowed
// (p masked by the borrow: no branch).
template <int N>
__device__ __forceinline__ void mod_sub(u32* r, const u32* a, const u32* b, const u32* p) {
    u32 d[N], q[N];
    d[0] = sub_cc(a[0], b[0]);
#pragma unroll
    for (int k = 1; k < N; k++) d[k] = subc_cc(a[k], b[k]);
    u32 mask = subc(0, 0);
#pragma unroll
    for (int k = 0; k < N; k++) q[k] = p[k] & mask;
    r[0] = add_cc(d[0], q[0]);
#pragma unroll
    for (int k = 1; k < N - 1; k++) r[k] = addc_cc(d[k], q[k]);
    r[N - 1] = addc(d[N - 1], q[N - 1]);
}

// Montgomery multiplication r = a·b / 2^(32N) mod p for p < 2^(32N−1) and
// a, b < p (CIOS, one 32-bit word of b per round). A row of products a_j·b_i
// puts its low halves at positions i+j and high halves at i+j+1, so the
// even-j and odd-j products each form one unbroken carry chain: they go to
// two accumulators, `lo` (limb k at position k) and `hi` (limb k at position
// k+1). The shift by one word after each reduction swaps their alignment,
// which the next round absorbs by reading its addends one limb over, so no
// round merges the two; only the end does. About 4N² + 8N instructions.
template <int N>
__device__ __forceinline__ void mont_mul(u32* r, const u32* a, const u32* b, const u32* p, u32 pinv) {
    u32 lo[N], hi[N];
#pragma unroll
    for (int j = 0; j < N; j += 2) {
        lo[j] = a[j] * b[0]; lo[j + 1] = mul_hi(a[j], b[0]);
        hi[j] = a[j + 1] * b[0]; hi[j + 1] = mul_hi(a[j + 1], b[0]);
    }
#pragma unroll
    for (int i = 0; i < N; i++) {
        // Reduce: add m·p with m making position 0 vanish.
        u32 m = lo[0] * pinv;
        hi[0] = mad_lo_cc(p[1], m, hi[0]); hi[1] = madc_hi_cc(p[1], m, hi[1]);
#pragma unroll
        for (int j = 2; j < N - 2; j += 2) {
            hi[j] = madc_lo_cc(p[j + 1], m, hi[j]); hi[j + 1] = madc_hi_cc(p[j + 1], m, hi[j + 1]);
        }
        hi[N - 2] = madc_lo_cc(p[N - 1], m, hi[N - 2]); hi[N - 1] = madc_hi(p[N - 1], m, hi[N - 1]);
        lo[0] = mad_lo_cc(p[0], m, lo[0]); lo[1] = madc_hi_cc(p[0], m, lo[1]);
#pragma unroll
        for (int j = 2; j < N; j += 2) {
            lo[j] = madc_lo_cc(p[j], m, lo[j]); lo[j + 1] = madc_hi_cc(p[j], m, lo[j + 1]);
        }
        hi[N - 1] = addc(hi[N - 1], 0);
        if (i == N - 1) break;  // fully unrolled: a compile-time test
        // Divide by 2^32 (lo[0] is 0): hi[k] is now at position k, lo[k] at
        // k−1. Add row i+1: even-j products onto hi (the new lo), odd-j onto
        // lo read two limbs up (the new hi); lo[1] joins position 0.
        u32 nlo[N], nhi[N], bi = b[i + 1];
        nlo[0] = add_cc(hi[0], lo[1]);
#pragma unroll
        for (int j = 0; j < N - 2; j += 2) {
            nhi[j] = madc_lo_cc(a[j + 1], bi, lo[j + 2]); nhi[j + 1] = madc_hi_cc(a[j + 1], bi, lo[j + 3]);
        }
        nhi[N - 2] = madc_lo_cc(a[N - 1], bi, 0); nhi[N - 1] = madc_hi(a[N - 1], bi, 0);
        nlo[0] = mad_lo_cc(a[0], bi, nlo[0]); nlo[1] = madc_hi_cc(a[0], bi, hi[1]);
#pragma unroll
        for (int j = 2; j < N; j += 2) {
            nlo[j] = madc_lo_cc(a[j], bi, hi[j]); nlo[j + 1] = madc_hi_cc(a[j], bi, hi[j + 1]);
        }
        nhi[N - 1] = addc(nhi[N - 1], 0);
#pragma unroll
        for (int k = 0; k < N; k++) { lo[k] = nlo[k]; hi[k] = nhi[k]; }
    }
    // Last shift and merge: t = hi + lo/2^32 < 2p; subtract p once if t ≥ p.
    u32 t[N], s[N];
    t[0] = add_cc(hi[0], lo[1]);
    for (int k = 1; k < N - 1; k++) t[k] = addc_cc(hi[k], lo[k + 1]);
    t[N - 1] = addc(hi[N - 1], 0);
    s[0] = sub_cc(t[0], p[0]);
    for (int k = 1; k < N; k++) s[k] = subc_cc(t[k], p[k]);
    u32 borrow = subc(0, 0);
    for (int k = 0; k < N; k++) r[k] = borrow ? t[k] : s[k];
}
