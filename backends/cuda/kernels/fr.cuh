// Fr of BLS12-381: 4 x 64-bit limbs, Montgomery form with R = 2^256 (blst's layout).
#pragma once
#include "arith.cuh"

struct fr { u64 l[4]; };

__device__ __constant__ u64 FR_P[4] = {0xffffffff00000001ull, 0x53bda402fffe5bfeull,
                                      0x3339d80809a1d805ull, 0x73eda753299d7d48ull};
#define FR_INV 0xfffffffeffffffffull  // -p^-1 mod 2^64

__device__ __forceinline__ bool fr_geq_p(const u64 t[4]) {
    for (int i = 3; i >= 0; i--) {
        if (t[i] != FR_P[i]) return t[i] > FR_P[i];
    }
    return true;
}

__device__ __forceinline__ void fr_sub_p(u64 t[4]) {
    u64 borrow = 0;
    for (int i = 0; i < 4; i++) {
        u128 d = (u128)t[i] - FR_P[i] - borrow;
        t[i] = (u64)d;
        borrow = (u64)(d >> 64) & 1;
    }
}

__device__ __forceinline__ fr fr_add(fr a, fr b) {
    fr r; u64 c = 0;
    for (int i = 0; i < 4; i++) {
        u128 s = (u128)a.l[i] + b.l[i] + c;
        r.l[i] = (u64)s; c = (u64)(s >> 64);
    }
    if (c || fr_geq_p(r.l)) fr_sub_p(r.l);
    return r;
}

__device__ __forceinline__ fr fr_sub(fr a, fr b) {
    fr r; u64 borrow = 0;
    for (int i = 0; i < 4; i++) {
        u128 d = (u128)a.l[i] - b.l[i] - borrow;
        r.l[i] = (u64)d; borrow = (u64)(d >> 64) & 1;
    }
    if (borrow) {
        u64 c = 0;
        for (int i = 0; i < 4; i++) {
            u128 s = (u128)r.l[i] + FR_P[i] + c;
            r.l[i] = (u64)s; c = (u64)(s >> 64);
        }
    }
    return r;
}

__device__ __forceinline__ fr fr_mul(fr a, fr b) {
    u32 x[8], y[8], z[8];
    for (int i = 0; i < 4; i++) {
        x[2 * i] = (u32)a.l[i]; x[2 * i + 1] = (u32)(a.l[i] >> 32);
        y[2 * i] = (u32)b.l[i]; y[2 * i + 1] = (u32)(b.l[i] >> 32);
    }
    mont_mul<8>(z, x, y, (const u32*)FR_P, (u32)FR_INV);
    fr r;
    for (int i = 0; i < 4; i++) r.l[i] = (u64)z[2 * i + 1] << 32 | z[2 * i];
    return r;
}
