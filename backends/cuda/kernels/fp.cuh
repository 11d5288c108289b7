// The base field Fp (FP_LIMBS x 64-bit limbs, Montgomery form with
// R = 2^(64·FP_LIMBS)) of the curve compiled for, and Fp2 = Fp[i]/(i^2 + 1)
// (both curves' G2 is over this Fp2). BLS12-381: 6 limbs, blst's layout;
// BN254: 4 limbs, halo2curves'. Values are kept fully reduced, so equality
// is limb equality.
#pragma once
#include "fr.cuh"

#ifdef ZKPIPE_BN254
#define FP_LIMBS 4
#define FP_BITS 254
__device__ __constant__ u64 FP_P[4] = {0x3c208c16d87cfd47ull, 0x97816a916871ca8dull,
                                      0xb85045b68181585dull, 0x30644e72e131a029ull};
// 2^256 mod p: one in Montgomery form.
__device__ __constant__ u64 FP_ONE[4] = {0xd35d438dc58f0d9dull, 0x0a78eb28f5c70b3dull,
                                        0x666ea36f7879462cull, 0x0e0a77c19a07df2full};
#define FP_INV 0x87d20782e4866389ull  // -p^-1 mod 2^64
#else
#define FP_LIMBS 6
#define FP_BITS 381
__device__ __constant__ u64 FP_P[6] = {0xb9feffffffffaaabull, 0x1eabfffeb153ffffull,
                                      0x6730d2a0f6b0f624ull, 0x64774b84f38512bfull,
                                      0x4b1ba7b6434bacd7ull, 0x1a0111ea397fe69aull};
// 2^384 mod p: one in Montgomery form.
__device__ __constant__ u64 FP_ONE[6] = {0x760900000002fffdull, 0xebf4000bc40c0002ull,
                                        0x5f48985753c758baull, 0x77ce585370525745ull,
                                        0x5c071a97a256ec6dull, 0x15f65ec3fa80e493ull};
#define FP_INV 0x89f3fffcfffcfffdull  // -p^-1 mod 2^64
#endif
#define FP_WORDS (2 * FP_LIMBS)

struct fp { u64 l[FP_LIMBS]; };
struct fp2 { fp c0, c1; };

__device__ __forceinline__ fp add(const fp& a, const fp& b) {
    u32 x[FP_WORDS], y[FP_WORDS], z[FP_WORDS];
    to_words<FP_LIMBS>(x, a.l); to_words<FP_LIMBS>(y, b.l);
    mod_add<FP_WORDS>(z, x, y, (const u32*)FP_P);
    fp r;
    from_words<FP_LIMBS>(r.l, z);
    return r;
}

__device__ __forceinline__ fp sub(const fp& a, const fp& b) {
    u32 x[FP_WORDS], y[FP_WORDS], z[FP_WORDS];
    to_words<FP_LIMBS>(x, a.l); to_words<FP_LIMBS>(y, b.l);
    mod_sub<FP_WORDS>(z, x, y, (const u32*)FP_P);
    fp r;
    from_words<FP_LIMBS>(r.l, z);
    return r;
}

__device__ __forceinline__ fp mul(const fp& a, const fp& b) {
    u32 x[FP_WORDS], y[FP_WORDS], z[FP_WORDS];
    to_words<FP_LIMBS>(x, a.l); to_words<FP_LIMBS>(y, b.l);
    mont_mul<FP_WORDS>(z, x, y, (const u32*)FP_P, (u32)FP_INV);
    fp r;
    from_words<FP_LIMBS>(r.l, z);
    return r;
}

__device__ __forceinline__ fp sqr(const fp& a) { return mul(a, a); }
__device__ __forceinline__ bool is_zero(const fp& a) {
    u64 x = 0;
    for (int i = 0; i < FP_LIMBS; i++) x |= a.l[i];
    return x == 0;
}
__device__ __forceinline__ fp neg(const fp& a) { return is_zero(a) ? a : sub(fp{}, a); }
__device__ __forceinline__ void set_one(fp& a) { for (int i = 0; i < FP_LIMBS; i++) a.l[i] = FP_ONE[i]; }

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
