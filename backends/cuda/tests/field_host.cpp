// Host build of the kernels' field code for tests/field_host.rs: reads
// "<op> <limbs of a> <limbs of b>" lines (hex u64 limbs, little-endian) and
// prints the result's limbs. Built once per curve (-DZKPIPE_BN254 for BN254).
#include <cstdio>
#include <cstring>
#include "fp.cuh"

template <class T> static bool read(T& x, int n) {
    for (int i = 0; i < n; i++)
        if (scanf("%llx", &x.l[i]) != 1) return false;
    return true;
}
template <class T> static void print(const T& x, int n) {
    for (int i = 0; i < n; i++) printf(i ? " %llx" : "%llx", x.l[i]);
    printf("\n");
}

int main() {
    char op[16];
    while (scanf("%15s", op) == 1) {
        if (!strncmp(op, "fp_", 3)) {
            fp a, b;
            if (!read(a, FP_LIMBS) || !read(b, FP_LIMBS)) return 2;
            fp r = !strcmp(op, "fp_mul") ? mul(a, b) : !strcmp(op, "fp_add") ? add(a, b) : sub(a, b);
            print(r, FP_LIMBS);
        } else {
            fr a, b;
            if (!read(a, 4) || !read(b, 4)) return 2;
            fr r = !strcmp(op, "fr_mul") ? fr_mul(a, b) : !strcmp(op, "fr_add") ? fr_add(a, b) : fr_sub(a, b);
            print(r, 4);
        }
    }
    return 0;
}
