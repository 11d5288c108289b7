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
