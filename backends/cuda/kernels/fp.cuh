// Fp of BLS12-381 (6 x 64-bit limbs, Montgomery form, R = 2^384: blst's
// layout) and Fp2 = Fp[i]/(i^2 + 1). Values are kept fully reduced, so
// equality is limb equality.
#pragma once
#include "fr.cuh"

struct fp { u64 l[6]; };
struct fp2 { fp c0, c1; };

__device__ __constant__ u64 FP_P[6] = {0xb9feffffffffaaabull, 0x1eabfffeb153ffffull,
                                      0x6730d2a0f6b0f624ull, 0x64774b84f38512bfull,
                                      0x4b1ba7b6434bacd7ull, 0x1a0111ea397fe69aull};
// 2^384 mod p: one in Montgomery form.
__device__ __constant__ u64 FP_ONE[6] = {0x760900000002fffdull, 0xebf4000bc40c0002ull,
                                        0x5f48985753c758baull, 0x77ce585370525745ull,
                                        0x5c071a97a256ec6dull, 0x15f65ec3fa80e493ull};
#define FP_INV 0x89f3fffcfffcfffdull  // -p^-1 mod 2^64

__device__ __forceinline__ fp add(const fp& a, const fp& b) {
    u32 x[12], y[12], z[12];
    to_words<6>(x, a.l); to_words<6>(y, b.l);
    mod_add<12>(z, x, y, (const u32*)FP_P);
    fp r;
    from_words<6>(r.l, z);
    return r;
}

__device__ __forceinline__ fp sub(const fp& a, const fp& b) {
    u32 x[12], y[12], z[12];
    to_words<6>(x, a.l); to_words<6>(y, b.l);
    mod_sub<12>(z, x, y, (const u32*)FP_P);
    fp r;
    from_words<6>(r.l, z);
    return r;
}

__device__ __forceinline__ fp mul(const fp& a, const fp& b) {
    u32 x[12], y[12], z[12];
    to_words<6>(x, a.l); to_words<6>(y, b.l);
    mont_mul<12>(z, x, y, (const u32*)FP_P, (u32)FP_INV);
    fp r;
    from_words<6>(r.l, z);
    return r;
}

__device__ __forceinline__ fp sqr(const fp& a) { return mul(a, a); }
__device__ __forceinline__ bool is_zero(const fp& a) {
    u64 x = 0;
    for (int i = 0; i < 6; i++) x |= a.l[i];
    return x == 0;
}
__device__ __forceinline__ fp neg(const fp& a) { return is_zero(a) ? a : sub(fp{}, a); }
__device__ __forceinline__ void set_one(fp& a) { for (int i = 0; i < 6; i++) a.l[i] = FP_ONE[i]; }

// 2^(3·384) mod p: turns the plain inverse of a Montgomery form aR into
// a^-1·R (one Montgomery product).
__device__ __constant__ u64 FP_R3[6] = {0xed48ac6bd94ca1e0ull, 0x315f831e03a7adf8ull,
                                       0x9a53352a615e29ddull, 0x34c04e5e921e1761ull,
                                       0x2512d43565724728ull, 0x0aa6346091755d4dull};

// x >>= 1 over 6 limbs (top limb gets `top` as its high bit).
__device__ __forceinline__ void shr1(u64* x, u64 top) {
    for (int i = 0; i < 5; i++) x[i] = x[i] >> 1 | x[i + 1] << 63;
    x[5] = x[5] >> 1 | top << 63;
}
// x/2 mod p for x < p: x >> 1, or (x + p) >> 1 when x is odd (x + p < 2^382).
__device__ __forceinline__ void half_mod(u64* x) {
    if (!(x[0] & 1)) { shr1(x, 0); return; }
    u64 c = 0;
    for (int i = 0; i < 6; i++) {
        u128 t = (u128)x[i] + FP_P[i] + c;
        x[i] = (u64)t; c = (u64)(t >> 64);
    }
    shr1(x, c);
}
__device__ __forceinline__ bool is_one_plain(const u64* x) {
    u64 r = x[0] ^ 1;
    for (int i = 1; i < 6; i++) r |= x[i];
    return r == 0;
}
// x −= y for x ≥ y.
__device__ __forceinline__ void sub_plain(u64* x, const u64* y) {
    u64 b = 0;
    for (int i = 0; i < 6; i++) {
        u128 t = (u128)x[i] - y[i] - b;
        x[i] = (u64)t; b = (u64)(t >> 64) & 1;
    }
}
__device__ __forceinline__ bool geq_plain(const u64* x, const u64* y) {
    for (int i = 5; i >= 0; i--)
        if (x[i] != y[i]) return x[i] > y[i];
    return true;
}

// 1/a of a Montgomery form (0 for 0) by the binary extended Euclidean
// algorithm: ~2·381 short, variable-time steps where Fermat takes 570
// dependent products, for the one inversion a whole batch waits on.
__device__ fp inv_euclid(const fp& a) {
    if (is_zero(a)) return a;
    fp x1{}, x2{};
    u64 u[6], v[6];
    for (int i = 0; i < 6; i++) { u[i] = a.l[i]; v[i] = FP_P[i]; }
    x1.l[0] = 1;
    while (!is_one_plain(u) && !is_one_plain(v)) {
        while (!(u[0] & 1)) { shr1(u, 0); half_mod(x1.l); }
        while (!(v[0] & 1)) { shr1(v, 0); half_mod(x2.l); }
        if (geq_plain(u, v)) { sub_plain(u, v); x1 = sub(x1, x2); }
        else { sub_plain(v, u); x2 = sub(x2, x1); }
    }
    fp r3;
    for (int i = 0; i < 6; i++) r3.l[i] = FP_R3[i];
    return mul(is_one_plain(u) ? x1 : x2, r3);  // (aR)^-1 · R^3 / R = a^-1·R
}

__device__ __forceinline__ fp2 add(const fp2& a, const fp2& b) { return {add(a.c0, b.c0), add(a.c1, b.c1)}; }
__device__ __forceinline__ fp2 sub(const fp2& a, const fp2& b) { return {sub(a.c0, b.c0), sub(a.c1, b.c1)}; }
// Not inlined: keeps the G2 kernels' code (and NVRTC's compile time) small.
__device__ __noinline__ fp2 mul(const fp2& a, const fp2& b) {
    fp t0 = mul(a.c0, b.c0), t1 = mul(a.c1, b.c1);
    fp m = mul(add(a.c0, a.c1), add(b.c0, b.c1));
    return {sub(t0, t1), sub(sub(m, t0), t1)};
}
__device__ __noinline__ fp2 sqr(const fp2& a) {
    fp m = mul(a.c0, a.c1);
    return {mul(add(a.c0, a.c1), sub(a.c0, a.c1)), add(m, m)};
}
__device__ __forceinline__ bool is_zero(const fp2& a) { return is_zero(a.c0) && is_zero(a.c1); }
__device__ __forceinline__ fp2 neg(const fp2& a) { return {neg(a.c0), neg(a.c1)}; }
__device__ __forceinline__ void set_one(fp2& a) { set_one(a.c0); a.c1 = fp{}; }
