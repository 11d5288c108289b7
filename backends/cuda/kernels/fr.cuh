// Fr of BLS12-381: 4 x 64-bit limbs, Montgomery form with R = 2^256 (blst's layout).
#pragma once
typedef unsigned long long u64;
typedef unsigned __int128 u128;
typedef unsigned int u32;

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

// CIOS Montgomery multiplication.
__device__ __forceinline__ fr fr_mul(fr a, fr b) {
    u64 t[6] = {0, 0, 0, 0, 0, 0};
    for (int i = 0; i < 4; i++) {
        u64 c = 0;
        for (int j = 0; j < 4; j++) {
            u128 s = (u128)a.l[j] * b.l[i] + t[j] + c;
            t[j] = (u64)s; c = (u64)(s >> 64);
        }
        u128 s = (u128)t[4] + c;
        t[4] = (u64)s; t[5] = (u64)(s >> 64);
        u64 m = t[0] * FR_INV;
        s = (u128)m * FR_P[0] + t[0];
        c = (u64)(s >> 64);
        for (int j = 1; j < 4; j++) {
            s = (u128)m * FR_P[j] + t[j] + c;
            t[j - 1] = (u64)s; c = (u64)(s >> 64);
        }
        s = (u128)t[4] + c;
        t[3] = (u64)s;
        t[4] = t[5] + (u64)(s >> 64);
    }
    fr r = {{t[0], t[1], t[2], t[3]}};
    if (t[4] || fr_geq_p(r.l)) fr_sub_p(r.l);
    return r;
}
