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

__device__ __forceinline__ void fp_reduce_once(u64 t[6]) {
    u64 r[6], borrow = 0;
    for (int i = 0; i < 6; i++) {
        u128 d = (u128)t[i] - FP_P[i] - borrow;
        r[i] = (u64)d; borrow = (u64)(d >> 64) & 1;
    }
    if (!borrow) for (int i = 0; i < 6; i++) t[i] = r[i];
}

__device__ __forceinline__ fp add(const fp& a, const fp& b) {
    fp r; u64 c = 0;  // p < 2^382: the sum fits in six limbs
    for (int i = 0; i < 6; i++) {
        u128 s = (u128)a.l[i] + b.l[i] + c;
        r.l[i] = (u64)s; c = (u64)(s >> 64);
    }
    fp_reduce_once(r.l);
    return r;
}

__device__ __forceinline__ fp sub(const fp& a, const fp& b) {
    fp r; u64 borrow = 0;
    for (int i = 0; i < 6; i++) {
        u128 d = (u128)a.l[i] - b.l[i] - borrow;
        r.l[i] = (u64)d; borrow = (u64)(d >> 64) & 1;
    }
    if (borrow) {
        u64 c = 0;
        for (int i = 0; i < 6; i++) {
            u128 s = (u128)r.l[i] + FP_P[i] + c;
            r.l[i] = (u64)s; c = (u64)(s >> 64);
        }
    }
    return r;
}

__device__ __forceinline__ fp mul(const fp& a, const fp& b) {
    u32 x[12], y[12], z[12];
    for (int i = 0; i < 6; i++) {
        x[2 * i] = (u32)a.l[i]; x[2 * i + 1] = (u32)(a.l[i] >> 32);
        y[2 * i] = (u32)b.l[i]; y[2 * i + 1] = (u32)(b.l[i] >> 32);
    }
    mont_mul<12>(z, x, y, (const u32*)FP_P, (u32)FP_INV);
    fp r;
    for (int i = 0; i < 6; i++) r.l[i] = (u64)z[2 * i + 1] << 32 | z[2 * i];
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
