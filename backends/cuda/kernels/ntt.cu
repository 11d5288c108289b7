// Radix-2 NTT over Fr: one launch per stage; permutation and scaling kernels.
#include "fr.cuh"

// One butterfly per thread; blocks of 2*half elements, twiddle w^(j*stride).
extern "C" __global__ void ntt_stage(fr* v, const fr* tw, u32 n, u32 half, u32 stride, int dit) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n / 2) return;
    u32 j = t % half;
    u32 i0 = (t / half) * 2 * half + j, i1 = i0 + half;
    fr w = tw[(unsigned long long)j * stride];
    fr a = v[i0], b = v[i1];
    if (dit) {
        fr x = fr_mul(b, w);
        v[i0] = fr_add(a, x);
        v[i1] = fr_sub(a, x);
    } else {
        v[i0] = fr_add(a, b);
        v[i1] = fr_mul(fr_sub(a, b), w);
    }
}

extern "C" __global__ void bit_reverse(fr* v, u32 n, u32 log_n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u32 j = __brev(i) >> (32 - log_n);
    if (i < j) { fr x = v[i]; v[i] = v[j]; v[j] = x; }
}

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
