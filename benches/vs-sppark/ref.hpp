// The host side of sppark_bench: random inputs and the reference results
// the checks compare sppark against.
//
// BLS12-381 (ref.cpp): blst's public API. A separate translation unit
// because blst.h and sppark's blst_t.hpp (through blst's vect.h) declare
// `limb_t` as different 64-bit types. Every type here is blst's memory
// layout, which is also sppark's host layout: Montgomery form, 64-bit limbs,
// 6 per Fp, Fp2 = (c0, c1).
//
// BN254 (ref_bn254.cpp, built with -DFEATURE_BN254): blst has no BN254, so
// sppark's own host-side types (alt_bn128::fp_t/fr_t over blst's assembly,
// jacobian_t, Affine_t) do the work. Layout: Montgomery form, 64-bit limbs,
// 4 per Fp and per Fr. G1 only.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace ref {

#ifdef FEATURE_BN254
struct Fr { uint64_t l[4]; };        // alt_bn128::fr_t
struct G1Aff { uint64_t w[8]; };     // Affine_t<fp_t> (x, y); (0, 0) = infinity
struct G1Jac { uint64_t w[12]; };    // jacobian_t<fp_t> (X, Y, Z)
#else
struct Fr { uint64_t l[4]; };        // blst_fr
struct G1Aff { uint64_t w[12]; };    // blst_p1_affine (x, y); (0, 0) = infinity
struct G1Jac { uint64_t w[18]; };    // blst_p1 (X, Y, Z)
struct G2Aff { uint64_t w[24]; };    // blst_p2_affine
struct G2Jac { uint64_t w[36]; };    // blst_p2
#endif

// f(0) … f(n-1) on every hardware thread.
template<class F> void par_for(size_t n, F f)
{
    unsigned nt = std::max(1u, std::thread::hardware_concurrency());
    std::atomic<size_t> next{0};
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < nt; t++)
        ts.emplace_back([&] { for (size_t i; (i = next++) < n;) f(i); });
    for (auto& t : ts) t.join();
}

// splitmix64: fast, good enough for benchmark inputs.
struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed) {}
    uint64_t next()
    {
        uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
};

// Inputs are made in chunks of CHUNK values or points, each from a
// generator of its own, so that they do not depend on the thread count.
constexpr size_t CHUNK = 4096;
inline uint64_t chunk_seed(uint64_t seed, uint64_t tag, size_t chunk)
{
    return Rng(seed * 0x2545f4914f6cdd1dULL ^ tag ^ (chunk * 0x9e3779b97f4a7c15ULL)).next();
}

// Uniform below mod (4 little-endian limbs, top limb not 0), by rejection
// from as many random bits as mod has.
inline void random_below(uint64_t out[4], Rng& rng, const uint64_t mod[4])
{
    uint64_t mask = ~0ULL;
    while (mask >> 1 >= mod[3]) mask >>= 1;
    for (;;) {
        for (int i = 0; i < 4; i++) out[i] = rng.next();
        out[3] &= mask;
        for (int i = 3; i >= 0; i--) {
            if (out[i] < mod[i]) return;
            if (out[i] > mod[i]) break;
        }
    }
}

// Uniform field elements (as Montgomery-form values), seeded per chunk so
// the result does not depend on the thread count.
void random_frs(Fr* out, size_t n, uint64_t seed);
// Points of the prime-order subgroup, by random walks (see ref.cpp,
// ref_bn254.cpp).
void random_points(G1Aff* out, size_t n, uint64_t seed);
bool in_group(const G1Aff& p);   // BN254: on the curve (G1 has cofactor 1)
bool operator==(const G1Jac& a, const G1Jac& b);   // as points, any Z
// sum of sc[i] * pts[i], one scalar multiplication per point.
void msm_naive(G1Jac& out, const G1Aff* pts, const Fr* sc, size_t n);

#ifdef FEATURE_BN254
// The generator (1, 2) of BN254's G1.
G1Aff g1_generator();
// Point i of random_points(seed) made afresh: (k0 + j*k1)*G by double-and-add,
// k0, k1 its chunk's walk start and step, j its place in the chunk.
void walk_point(G1Jac& out, size_t i, uint64_t seed);
bool operator==(const G1Jac& a, const G1Aff& b);
// sum of sc[i] * random_points(seed)[i] without the points: t*G by
// double-and-add, t = sum sc[i]*(k0 + j*k1) in Fr (see walk_point).
void msm_of_walk(G1Jac& out, const Fr* sc, size_t n, uint64_t seed);
#else
void random_points(G2Aff* out, size_t n, uint64_t seed);
bool in_group(const G2Aff& p);
bool operator==(const G2Jac& a, const G2Jac& b);
void msm_naive(G2Jac& out, const G2Aff* pts, const Fr* sc, size_t n);
// sum of sc[i] * pts[i]: blst's Pippenger (on parts of the input in parallel).
void msm(G1Jac& out, const G1Aff* pts, const Fr* sc, size_t n);
void msm(G2Jac& out, const G2Aff* pts, const Fr* sc, size_t n);
#endif

Fr fr_from_u64(uint64_t v);
Fr fr_add(const Fr& a, const Fr& b);
Fr fr_mul(const Fr& a, const Fr& b);
Fr fr_neg(const Fr& a);
Fr fr_inverse(const Fr& a);
Fr fr_pow(Fr b, uint64_t e);
bool operator==(const Fr& a, const Fr& b);
// The primitive 2^k-th root of unity g^((r-1)/2^k), g generating Fr^*:
// 7 for BLS12-381, 5 for BN254 (sppark's tables use the same; --host-check).
Fr root_of_unity(unsigned k);
// sum_i a[i] * w^i: output j of a forward DFT when w = root^j.
Fr dft_at(const Fr* a, size_t n, const Fr& w);

}  // namespace ref
