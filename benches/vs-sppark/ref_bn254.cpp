// The BN254 side of sppark_bench's host code (see ref.hpp): inputs and the
// reference results, with sppark's own host-side types (blst has no BN254):
// alt_bn128::fp_t / fr_t (blst_256_t over blst's assembly), jacobian_t and
// its Affine_t. Built with -DFEATURE_BN254; plain C++, nothing of sppark's
// device code.
#ifndef FEATURE_BN254
# error "ref_bn254.cpp is the BN254 build's (-DFEATURE_BN254)"
#endif
#include "ref.hpp"

#include <ff/alt_bn128.hpp>
#include <ec/jacobian_t.hpp>

#include <cstring>

namespace ref {

using alt_bn128::fp_t;
using alt_bn128::fr_t;
typedef jacobian_t<fp_t> jac_t;
typedef jac_t::affine_t aff_t;
struct JacXYZ { fp_t X, Y, Z; };   // jacobian_t's layout, coordinates readable
struct AffXY { fp_t X, Y; };       // Affine_t's

static_assert(sizeof(Fr) == sizeof(fr_t), "Fr layout");
static_assert(sizeof(G1Aff) == sizeof(aff_t) && sizeof(aff_t) == sizeof(AffXY), "G1 affine layout");
static_assert(sizeof(G1Jac) == sizeof(jac_t) && sizeof(jac_t) == sizeof(JacXYZ), "G1 Jacobian layout");

// The same bytes as another type (the layouts above).
template<class To, class From> static To as(const From& f)
{
    static_assert(sizeof(To) == sizeof(From), "same size");
    To t;
    std::memcpy(static_cast<void*>(&t), static_cast<const void*>(&f), sizeof(t));
    return t;
}

static const uint64_t R_MOD[4] = {   // r, the order of G1 and Fr
    0x43e1f593f0000001ULL, 0x2833e84879b97091ULL,
    0xb85045b68181585dULL, 0x30644e72e131a029ULL};

void random_frs(Fr* out, size_t n, uint64_t seed)
{
    par_for((n + CHUNK - 1) / CHUNK, [&](size_t c) {
        Rng rng(chunk_seed(seed, 0x5ca1, c));
        for (size_t i = c * CHUNK; i < std::min(n, (c + 1) * CHUNK); i++)
            random_below(out[i].l, rng, R_MOD);   // 254 bits, ~24 % rejected
    });
}

// ---------------------------------------------------------------- G1

static const fp_t& one() { static const fp_t v = fp_t::one(); return v; }
static fr_t fr_zero() { fr_t z; z.zero(); return z; }

G1Aff g1_generator()
{   return as<G1Aff>(aff_t(one(), one() + one()));   }   // (1, 2)

// k*p, double-and-add over k's canonical bits (sppark's non-constant-time
// add-or-double with an affine point, and its doubling).
static jac_t mul(const aff_t& p, const fr_t& k)
{
    fr_t::pow_t bits;   // little-endian bytes of k, out of Montgomery form
    k.to_scalar(bits);
    jac_t acc(one(), one(), true);   // infinity (Z = 0)
    for (int b = 255; b >= 0; b--) {
        acc.dbl();
        if ((bits[b / 8] >> (b % 8)) & 1) acc.add(p);
    }
    return acc;
}

// Chunk c's walk: start k0*G, step k1*G (random k0, k1 in Fr).
static void walk_keys(uint64_t seed, size_t c, fr_t& k0, fr_t& k1)
{
    Rng rng(chunk_seed(seed, 0x9017, c));
    uint64_t v[4];
    random_below(v, rng, R_MOD);
    k0 = as<fr_t>(v);
    random_below(v, rng, R_MOD);
    k1 = as<fr_t>(v);
}

// A scalar multiplication per point would take minutes at 2^24. Instead
// each chunk of CHUNK is a random walk, point j = (k0 + j*k1)*G: one mixed
// addition per point, then to affine with one batch inversion of the Z's
// per chunk (a product of prefixes, one inversion, then back). Z = 0
// (infinity) would need k0 + j*k1 = 0 for a random k0, k1: not handled.
void random_points(G1Aff* out, size_t n, uint64_t seed)
{
    const aff_t g = as<aff_t>(g1_generator());
    par_for((n + CHUNK - 1) / CHUNK, [&](size_t c) {
        size_t len = std::min(CHUNK, n - c * CHUNK);
        fr_t k0, k1;
        walk_keys(seed, c, k0, k1);
        const aff_t step = static_cast<aff_t>(mul(g, k1));
        std::vector<JacXYZ> walk(len);
        jac_t p = mul(g, k0);
        for (size_t j = 0; j < len; j++) {
            walk[j] = as<JacXYZ>(p);
            p.add(step);
        }
        std::vector<fp_t> prefix(len);   // prefix[j] = Z_0 * ... * Z_{j-1}
        fp_t acc = one();
        for (size_t j = 0; j < len; j++) {
            prefix[j] = acc;
            acc *= walk[j].Z;
        }
        fp_t inv = 1 / acc;               // 1 / (Z_0 * ... * Z_j) as j goes down
        for (size_t j = len; j--;) {
            fp_t zi = inv * prefix[j];    // 1 / Z_j
            inv *= walk[j].Z;
            fp_t zi2 = zi * zi;
            out[c * CHUNK + j] = as<G1Aff>(aff_t(walk[j].X * zi2, walk[j].Y * (zi2 * zi)));
        }
    });
}

void walk_point(G1Jac& out, size_t i, uint64_t seed)
{
    fr_t k0, k1;
    walk_keys(seed, i / CHUNK, k0, k1);
    fr_t k = k0 + as<fr_t>(fr_from_u64(i % CHUNK)) * k1;
    out = as<G1Jac>(mul(as<aff_t>(g1_generator()), k));
}

void msm_of_walk(G1Jac& out, const Fr* sc, size_t n, uint64_t seed)
{
    fr_t t = fr_zero();
    for (size_t c = 0; c * CHUNK < n; c++) {
        fr_t k0, k1, s_sum = fr_zero(), js_sum = fr_zero(), j = fr_zero();
        walk_keys(seed, c, k0, k1);
        for (size_t i = c * CHUNK; i < std::min(n, (c + 1) * CHUNK); i++) {
            fr_t s = as<fr_t>(sc[i]);
            s_sum += s;
            js_sum += j * s;
            j += fr_t::one();
        }
        t += k0 * s_sum + k1 * js_sum;
    }
    out = as<G1Jac>(mul(as<aff_t>(g1_generator()), t));
}

bool in_group(const G1Aff& p)   // y^2 = x^3 + 3, or (0, 0); G1 = E(Fp)
{
    AffXY a = as<AffXY>(p);
    if (a.X.is_zero() && a.Y.is_zero()) return true;
    fp_t three = one() + one() + one();
    return a.Y * a.Y == a.X * a.X * a.X + three;
}

bool operator==(const G1Jac& a, const G1Jac& b)
{   return as<jac_t>(a) == as<jac_t>(b);   }
bool operator==(const G1Jac& a, const G1Aff& b)
{   return as<jac_t>(a) == as<aff_t>(b);   }

void msm_naive(G1Jac& out, const G1Aff* pts, const Fr* sc, size_t n)
{
    jac_t acc(one(), one(), true);
    for (size_t i = 0; i < n; i++)
        acc.add(mul(as<aff_t>(pts[i]), as<fr_t>(sc[i])));
    out = as<G1Jac>(acc);
}

// ---------------------------------------------------------------- Fr

Fr fr_from_u64(uint64_t v) { return as<Fr>(fr_t(alt_bn128::fr_mont(v))); }   // to Montgomery form
Fr fr_add(const Fr& a, const Fr& b) { return as<Fr>(fr_t(as<fr_t>(a) + as<fr_t>(b))); }
Fr fr_mul(const Fr& a, const Fr& b) { return as<Fr>(fr_t(as<fr_t>(a) * as<fr_t>(b))); }
Fr fr_neg(const Fr& a) { return as<Fr>(fr_t(-as<fr_t>(a))); }
Fr fr_inverse(const Fr& a) { return as<Fr>(fr_t(1 / as<fr_t>(a))); }
bool operator==(const Fr& a, const Fr& b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }

Fr fr_pow(Fr b, uint64_t e)
{
    fr_t r = fr_t::one(), x = as<fr_t>(b);
    for (; e; e >>= 1) {
        if (e & 1) r *= x;
        x *= x;
    }
    return as<Fr>(r);
}

Fr root_of_unity(unsigned k)
{
    uint64_t e[4];   // (r-1) >> 28; r-1 has 28 trailing zero bits
    for (int i = 0; i < 3; i++) e[i] = (R_MOD[i] >> 28) | (R_MOD[i + 1] << 36);
    e[3] = R_MOD[3] >> 28;   // (r's low bit, the 1 of r-1, is shifted out)
    fr_t acc = fr_t::one(), g = as<fr_t>(fr_from_u64(5));
    for (int bit = 255; bit >= 0; bit--) {
        acc *= acc;
        if ((e[bit / 64] >> (bit % 64)) & 1) acc *= g;
    }
    for (unsigned i = k; i < 28; i++) acc *= acc;   // 2^28-th -> 2^k-th
    return as<Fr>(acc);
}

Fr dft_at(const Fr* a, size_t n, const Fr& w)
{
    fr_t acc = fr_zero(), x = as<fr_t>(w);
    for (size_t i = n; i--;)   // Horner
        acc = acc * x + as<fr_t>(a[i]);
    return as<Fr>(acc);
}

}  // namespace ref
