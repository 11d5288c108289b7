// The host side of sppark_bench that calls blst's public API: random inputs
// and the reference results the checks compare sppark against. A separate
// translation unit because blst.h and sppark's blst_t.hpp (through blst's
// vect.h) declare `limb_t` as different 64-bit types.
//
// Every type here is blst's memory layout, which is also sppark's host
// layout: Montgomery form, 64-bit limbs, 6 per Fp, Fp2 = (c0, c1).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace ref {

struct Fr { uint64_t l[4]; };        // blst_fr
struct G1Aff { uint64_t w[12]; };    // blst_p1_affine (x, y); (0, 0) = infinity
struct G1Jac { uint64_t w[18]; };    // blst_p1 (X, Y, Z)
struct G2Aff { uint64_t w[24]; };    // blst_p2_affine
struct G2Jac { uint64_t w[36]; };    // blst_p2

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

// Uniform field elements (as Montgomery-form values), seeded per chunk so
// the result does not depend on the thread count.
void random_frs(Fr* out, size_t n, uint64_t seed);
// Points of the prime-order subgroup, by random walks (see ref.cpp).
void random_points(G1Aff* out, size_t n, uint64_t seed);
void random_points(G2Aff* out, size_t n, uint64_t seed);

bool in_group(const G1Aff& p);
bool in_group(const G2Aff& p);
bool operator==(const G1Jac& a, const G1Jac& b);   // as points, any Z
bool operator==(const G2Jac& a, const G2Jac& b);

// sum of sc[i] * pts[i]: blst's Pippenger (on parts of the input in
// parallel), or one scalar multiplication per point.
void msm(G1Jac& out, const G1Aff* pts, const Fr* sc, size_t n);
void msm(G2Jac& out, const G2Aff* pts, const Fr* sc, size_t n);
void msm_naive(G1Jac& out, const G1Aff* pts, const Fr* sc, size_t n);
void msm_naive(G2Jac& out, const G2Aff* pts, const Fr* sc, size_t n);

Fr fr_from_u64(uint64_t v);
Fr fr_mul(const Fr& a, const Fr& b);
Fr fr_neg(const Fr& a);
Fr fr_inverse(const Fr& a);
Fr fr_pow(Fr b, uint64_t e);
bool operator==(const Fr& a, const Fr& b);
// The primitive 2^k-th root of unity 7^((r-1)/2^k), 7 generating Fr^*.
Fr root_of_unity(unsigned k);
// sum_i a[i] * w^i: output j of a forward DFT when w = root^j.
Fr dft_at(const Fr* a, size_t n, const Fr& w);

}  // namespace ref
