// Fr of BLS12-381: 4 x 64-bit limbs, Montgomery form with R = 2^256 (blst's layout).
#pragma once
#include "arith.cuh"

struct fr { u64 l[4]; };

__device__ __constant__ u64 FR_P[4] = {0xffffffff00000001ull, 0x53bda402fffe5bfeull,
                                      0x3339d80809a1d805ull, 0x73eda753299d7d48ull};
#define FR_INV 0xfffffffeffffffffull  // -p^-1 mod 2^64

__device__ __forceinline__ fr fr_add(fr a, fr b) {
    u32 x[8], y[8], z[8];
    to_words<4>(x, a.l); to_words<4>(y, b.l);
    mod_add<8>(z, x, y, (const u32*)FR_P);
    fr r;
    from_words<4>(r.l, z);
    return r;
}

__device__ __forceinline__ fr fr_sub(fr a, fr b) {
    u32 x[8], y[8], z[8];
    to_words<4>(x, a.l); to_words<4>(y, b.l);
    mod_sub<8>(z, x, y, (const u32*)FR_P);
    fr r;
    from_words<4>(r.l, z);
    return r;
}

__device__ __forceinline__ fr fr_mul(fr a, fr b) {
    u32 x[8], y[8], z[8];
    to_words<4>(x, a.l); to_words<4>(y, b.l);
    mont_mul<8>(z, x, y, (const u32*)FR_P, (u32)FR_INV);
    fr r;
    from_words<4>(r.l, z);
    return r;
}
