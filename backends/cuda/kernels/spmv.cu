// CSR SpMV over Fr for Groth16's a, b, c = A·w, B·w, C·w, and the check
// a·b = c. Column bit 31 marks a coefficient of one: the value is not read
// and the multiplication skipped. Rows of up to SPMV_SHORT entries take a
// thread each; longer ones (listed apart) a warp each, so one long row
// never holds up a warp of short ones. Field addition is exact, so the
// order of the sums does not change the result.
#include "fr.cuh"

#define SPMV_ONE 0x80000000u
#define SPMV_SHORT 32

__device__ __forceinline__ fr spmv_term(const u32* cols, const fr* vals, const fr* inp, const fr* aux,
                                        u32 ni, u64 k) {
    u32 c = cols[k], j = c & ~SPMV_ONE;
    fr x = j < ni ? inp[j] : aux[j - ni];
    return (c & SPMV_ONE) ? x : fr_mul(x, vals[k]);
}

// out[r] for every row r < n of the domain: rows < m from the matrix (long
// ones are spmv_long's), then `extra` rows of the inputs (bellman's
// input_i · 1 = 0 rows, in A), then zeros.
extern "C" __global__ void spmv_rows(fr* out, const u64* row_ptr, const u32* cols, const fr* vals,
                                     const fr* inp, const fr* aux, u32 ni, u32 m, u32 extra, u32 n) {
    u32 r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;
    fr acc{{0, 0, 0, 0}};
    if (r < m) {
        u64 lo = row_ptr[r], hi = row_ptr[r + 1];
        if (hi - lo > SPMV_SHORT) return;
        for (u64 k = lo; k < hi; k++) acc = fr_add(acc, spmv_term(cols, vals, inp, aux, ni, k));
    } else if (r - m < extra) {
        acc = inp[r - m];
    }
    out[r] = acc;
}

// The rows listed in `rows` (longer than SPMV_SHORT), one warp each: lanes
// stride the row, then a shuffle tree adds their sums.
extern "C" __global__ void spmv_long(fr* out, const u32* rows, u32 count, const u64* row_ptr,
                                     const u32* cols, const fr* vals, const fr* inp, const fr* aux,
                                     u32 ni) {
    u32 wid = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (wid >= count) return;  // whole warps: blockDim is a multiple of 32
    u32 r = rows[wid];
    u64 lo = row_ptr[r], hi = row_ptr[r + 1];
    fr acc{{0, 0, 0, 0}};
    for (u64 k = lo + lane; k < hi; k += 32) acc = fr_add(acc, spmv_term(cols, vals, inp, aux, ni, k));
#pragma unroll
    for (int d = 16; d; d >>= 1) {
        fr o;
#pragma unroll
        for (int i = 0; i < 4; i++) o.l[i] = __shfl_down_sync(0xffffffffu, acc.l[i], d);
        acc = fr_add(acc, o);
    }
    if (lane == 0) out[r] = acc;
}

// The first row r < m with a·b ≠ c, into *first (left as is when none).
// Values are reduced below p, so equality is equality of limbs.
extern "C" __global__ void r1cs_check(const fr* a, const fr* b, const fr* c, u32 m,
                                      unsigned long long* first) {
    u32 r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= m) return;
    fr p = fr_mul(a[r], b[r]), q = c[r];
    if ((p.l[0] ^ q.l[0]) | (p.l[1] ^ q.l[1]) | (p.l[2] ^ q.l[2]) | (p.l[3] ^ q.l[3]))
        atomicMin(first, (unsigned long long)r);
}
