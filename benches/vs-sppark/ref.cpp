// blst's side of sppark_bench: inputs and reference results (see ref.hpp).
#include "ref.hpp"

#include <blst.h>

#include <cstring>

namespace ref {

static_assert(sizeof(Fr) == sizeof(blst_fr), "Fr layout");
static_assert(sizeof(G1Aff) == sizeof(blst_p1_affine), "G1 affine layout");
static_assert(sizeof(G1Jac) == sizeof(blst_p1), "G1 Jacobian layout");
static_assert(sizeof(G2Aff) == sizeof(blst_p2_affine), "G2 affine layout");
static_assert(sizeof(G2Jac) == sizeof(blst_p2), "G2 Jacobian layout");

static const uint64_t R_MOD[4] = {   // r, the order of G1, G2 and Fr
    0xffffffff00000001ULL, 0x53bda402fffe5bfeULL,
    0x3339d80809a1d805ULL, 0x73eda753299d7d48ULL};

void random_frs(Fr* out, size_t n, uint64_t seed)
{
    par_for((n + CHUNK - 1) / CHUNK, [&](size_t c) {
        Rng rng(chunk_seed(seed, 0x5ca1, c));
        for (size_t i = c * CHUNK; i < std::min(n, (c + 1) * CHUNK); i++)
            random_below(out[i].l, rng, R_MOD);   // 255 bits, ~9.5 % rejected
    });
}

// blst's calls for one group, so that the generator and the MSMs are
// written once for G1 and G2.
namespace {
struct B1 {
    using P = blst_p1;
    using A = blst_p1_affine;
    static const P* gen() { return blst_p1_generator(); }
    static void mult(P* o, const P* p, const byte* s) { blst_p1_mult(o, p, s, 255); }
    static void add(P* o, const P* a, const P* b) { blst_p1_add_or_double(o, a, b); }
    static void add_aff(P* o, const P* a, const A* b) { blst_p1_add_or_double_affine(o, a, b); }
    static void to_aff(A* o, const P* p) { blst_p1_to_affine(o, p); }
    static void from_aff(P* o, const A* a) { blst_p1_from_affine(o, a); }
    static void batch_aff(A* o, const P* p, size_t n)
    {   const P* v[2] = {p, nullptr}; blst_p1s_to_affine(o, v, n);   }
    static size_t scratch(size_t n) { return blst_p1s_mult_pippenger_scratch_sizeof(n); }
    static void pippenger(P* o, const A* const* p, size_t n, const byte* const* s, limb_t* scr)
    {   blst_p1s_mult_pippenger(o, p, n, s, 255, scr);   }
};
struct B2 {
    using P = blst_p2;
    using A = blst_p2_affine;
    static const P* gen() { return blst_p2_generator(); }
    static void mult(P* o, const P* p, const byte* s) { blst_p2_mult(o, p, s, 255); }
    static void add(P* o, const P* a, const P* b) { blst_p2_add_or_double(o, a, b); }
    static void add_aff(P* o, const P* a, const A* b) { blst_p2_add_or_double_affine(o, a, b); }
    static void to_aff(A* o, const P* p) { blst_p2_to_affine(o, p); }
    static void from_aff(P* o, const A* a) { blst_p2_from_affine(o, a); }
    static void batch_aff(A* o, const P* p, size_t n)
    {   const P* v[2] = {p, nullptr}; blst_p2s_to_affine(o, v, n);   }
    static size_t scratch(size_t n) { return blst_p2s_mult_pippenger_scratch_sizeof(n); }
    static void pippenger(P* o, const A* const* p, size_t n, const byte* const* s, limb_t* scr)
    {   blst_p2s_mult_pippenger(o, p, n, s, 255, scr);   }
};
}  // namespace

// A scalar multiplication per point would take minutes at 2^24. Instead
// each chunk of 4096 is a random walk: a random start k0*G, then one mixed
// addition of a random step k1*G per point, normalised to affine with one
// batch inversion per chunk. The points are distinct and unrelated-looking
// to Pippenger, which is all timing needs (zkpipe's bench inputs are made
// the same way, in chunks of 1024).
template<class B> static void walk_points(typename B::A* out, size_t n, uint64_t seed)
{
    par_for((n + CHUNK - 1) / CHUNK, [&](size_t c) {
        Rng rng(chunk_seed(seed, 0x9017, c));
        size_t len = std::min(CHUNK, n - c * CHUNK);
        blst_scalar k[2];
        for (auto& s : k) {
            uint64_t v[4];
            random_below(v, rng, R_MOD);
            blst_scalar_from_uint64(&s, v);
        }
        std::vector<typename B::P> walk(len);
        typename B::P step;
        typename B::A step_aff;
        B::mult(&walk[0], B::gen(), k[0].b);
        B::mult(&step, B::gen(), k[1].b);
        B::to_aff(&step_aff, &step);
        for (size_t i = 1; i < len; i++)
            B::add_aff(&walk[i], &walk[i - 1], &step_aff);
        B::batch_aff(out + c * CHUNK, walk.data(), len);
    });
}

void random_points(G1Aff* out, size_t n, uint64_t seed)
{   walk_points<B1>(reinterpret_cast<blst_p1_affine*>(out), n, seed);   }
void random_points(G2Aff* out, size_t n, uint64_t seed)
{   walk_points<B2>(reinterpret_cast<blst_p2_affine*>(out), n, seed);   }

bool in_group(const G1Aff& p)
{   return blst_p1_affine_in_g1(reinterpret_cast<const blst_p1_affine*>(&p));   }
bool in_group(const G2Aff& p)
{   return blst_p2_affine_in_g2(reinterpret_cast<const blst_p2_affine*>(&p));   }

bool operator==(const G1Jac& a, const G1Jac& b)
{   return blst_p1_is_equal(reinterpret_cast<const blst_p1*>(&a), reinterpret_cast<const blst_p1*>(&b));   }
bool operator==(const G2Jac& a, const G2Jac& b)
{   return blst_p2_is_equal(reinterpret_cast<const blst_p2*>(&a), reinterpret_cast<const blst_p2*>(&b));   }

// Canonical little-endian bytes, as blst's multiplications read scalars.
static std::vector<byte> scalar_bytes(const Fr* s, size_t n)
{
    std::vector<byte> out(n * 32);
    for (size_t i = 0; i < n; i++) {
        blst_scalar t;
        blst_scalar_from_fr(&t, reinterpret_cast<const blst_fr*>(&s[i]));
        std::memcpy(&out[i * 32], t.b, 32);
    }
    return out;
}

// Pippenger on parts of the input, one per thread, then the parts' sum.
template<class B> static void pippenger(typename B::P* out, const typename B::A* pts,
                                        const Fr* sc, size_t n)
{
    auto bytes = scalar_bytes(sc, n);
    size_t parts = std::max<size_t>(1, std::min<size_t>(std::thread::hardware_concurrency(), n / 1024));
    std::vector<typename B::P> sums(parts);
    par_for(parts, [&](size_t i) {
        size_t lo = n * i / parts, len = n * (i + 1) / parts - lo;
        std::vector<limb_t> scratch(B::scratch(len) / sizeof(limb_t) + 1);
        const typename B::A* pv[2] = {pts + lo, nullptr};   // one flat array
        const byte* sv[2] = {&bytes[lo * 32], nullptr};
        B::pippenger(&sums[i], pv, len, sv, scratch.data());
    });
    *out = sums[0];
    for (size_t i = 1; i < parts; i++) B::add(out, out, &sums[i]);
}

template<class B> static void naive(typename B::P* out, const typename B::A* pts,
                                    const Fr* sc, size_t n)
{
    auto bytes = scalar_bytes(sc, n);
    typename B::P p, t;
    std::memset(out, 0, sizeof(*out));   // Z = 0: infinity
    for (size_t i = 0; i < n; i++) {
        B::from_aff(&p, &pts[i]);
        B::mult(&t, &p, &bytes[i * 32]);
        B::add(out, out, &t);
    }
}

void msm(G1Jac& out, const G1Aff* pts, const Fr* sc, size_t n)
{   pippenger<B1>(reinterpret_cast<blst_p1*>(&out), reinterpret_cast<const blst_p1_affine*>(pts), sc, n);   }
void msm(G2Jac& out, const G2Aff* pts, const Fr* sc, size_t n)
{   pippenger<B2>(reinterpret_cast<blst_p2*>(&out), reinterpret_cast<const blst_p2_affine*>(pts), sc, n);   }
void msm_naive(G1Jac& out, const G1Aff* pts, const Fr* sc, size_t n)
{   naive<B1>(reinterpret_cast<blst_p1*>(&out), reinterpret_cast<const blst_p1_affine*>(pts), sc, n);   }
void msm_naive(G2Jac& out, const G2Aff* pts, const Fr* sc, size_t n)
{   naive<B2>(reinterpret_cast<blst_p2*>(&out), reinterpret_cast<const blst_p2_affine*>(pts), sc, n);   }

// ---------------------------------------------------------------- Fr

static const blst_fr* F(const Fr& a) { return reinterpret_cast<const blst_fr*>(&a); }
static blst_fr* F(Fr& a) { return reinterpret_cast<blst_fr*>(&a); }

Fr fr_from_u64(uint64_t v)
{
    uint64_t a[4] = {v, 0, 0, 0};
    Fr r;
    blst_fr_from_uint64(F(r), a);
    return r;
}

Fr fr_add(const Fr& a, const Fr& b) { Fr r; blst_fr_add(F(r), F(a), F(b)); return r; }
Fr fr_mul(const Fr& a, const Fr& b) { Fr r; blst_fr_mul(F(r), F(a), F(b)); return r; }
Fr fr_neg(const Fr& a) { Fr r; blst_fr_cneg(F(r), F(a), true); return r; }
Fr fr_inverse(const Fr& a) { Fr r; blst_fr_inverse(F(r), F(a)); return r; }
bool operator==(const Fr& a, const Fr& b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }

Fr fr_pow(Fr b, uint64_t e)
{
    Fr r = fr_from_u64(1);
    for (; e; e >>= 1) {
        if (e & 1) blst_fr_mul(F(r), F(r), F(b));
        blst_fr_sqr(F(b), F(b));
    }
    return r;
}

Fr root_of_unity(unsigned k)
{
    uint64_t e[4];   // (r-1) >> 32; r-1 has 32 trailing zero bits
    for (int i = 0; i < 3; i++) e[i] = (R_MOD[i] >> 32) | (R_MOD[i + 1] << 32);
    e[3] = R_MOD[3] >> 32;
    Fr acc = fr_from_u64(1), g = fr_from_u64(7);
    for (int bit = 255; bit >= 0; bit--) {
        blst_fr_sqr(F(acc), F(acc));
        if ((e[bit / 64] >> (bit % 64)) & 1) blst_fr_mul(F(acc), F(acc), F(g));
    }
    for (unsigned i = k; i < 32; i++) blst_fr_sqr(F(acc), F(acc));   // 2^32-th -> 2^k-th
    return acc;
}

Fr dft_at(const Fr* a, size_t n, const Fr& w)
{
    Fr acc = fr_from_u64(0);
    for (size_t i = n; i--;) {   // Horner
        blst_fr_mul(F(acc), F(acc), F(w));
        blst_fr_add(F(acc), F(acc), F(a[i]));
    }
    return acc;
}

}  // namespace ref
