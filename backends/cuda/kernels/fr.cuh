// The scalar field Fr: 4 x 64-bit limbs, Montgomery form with R = 2^256, for
// the curve the translation unit is compiled for: BN254's (halo2curves'
// layout) where ZKPIPE_BN254 is defined, else BLS12-381's (blst's). The
// build compiles the sources once per curve, into modules with the same
// kernel names.
#pragma once
#include "arith.cuh"

struct fr { u64 l[4]; };

#ifdef ZKPIPE_BN254
__device__ __constant__ u64 FR_P[4] = {0x43e1f593f0000001ull, 0x2833e84879b97091ull,
                                      0xb85045b68181585dull, 0x30644e72e131a029ull};
#define FR_INV 0xc2e1f593efffffffull  // -r^-1 mod 2^64
#else
__device__ __constant__ u64 FR_P[4] = {0xffffffff00000001ull, 0x53bda402fffe5bfeull,
                                      0x3339d80809a1d805ull, 0x73eda753299d7d48ull};
#define FR_INV 0xfffffffeffffffffull  // -r^-1 mod 2^64
#endif

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
