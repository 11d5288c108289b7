// sppark's MSM and NTT timed the way `zkpipe bench` times its own (one
// warm-up, then the median of R runs, wall clock to a synchronise), so that
// run.sh can put both in one table from one run on one GPU. Inputs live in
// pinned host memory. Before each family's timings (G1 MSM, G2 MSM, NTT)
// sppark's results are checked on the host; a mismatch stops the run.
//
// One source, two binaries: sppark_bench (BLS12-381: inputs and reference
// results from blst, ref.cpp) and, built with -DFEATURE_BN254,
// sppark_bench_bn254 (G1 and NTT only; inputs and reference results from
// sppark's own host-side types, ref_bn254.cpp).
//
// sppark (crate 0.1.16) and blst (crate 0.3.17) are used from their cargo
// registry copies, as their own users include them; nothing of theirs is
// copied here. Build: benches/vs-sppark/build.sh. Usage: --help.
//
// Output (stdout), one line per timing and per check:
//   sppark <op> log=<k> median_ms=<x> min_ms=<x> max_ms=<x> runs=<R>
//   check <what> log=<k> ok      |  check <what> log=<k> FAIL (<why>)
// <op>: g1_msm_resident, g1_msm_host, g2_msm_resident, ntt_nn_device,
// ntt_nr_device, ntt_nn_host. Exit status: 0 done, 1 a check failed or
// CUDA/sppark reported an error, 2 no usable CUDA device or bad arguments.

#define TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE   // RustError carries the text

#include <cuda.h>
#ifdef FEATURE_BN254
# include <ff/alt_bn128.hpp>
# define CURVE "BN254"
# define REF "linear_identity"   // the reference the MSM checks are named after
#else
# define FEATURE_BLS12_381
# include <ff/bls12-381-fp2.hpp>
# define CURVE "BLS12-381"
# define REF "blst"
#endif
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

// The type names pippenger.cuh instantiates its kernels for (G1), as
// sppark's users declare them; G2 uses the fp2 variants through msm_t.
typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
#ifndef FEATURE_BN254
typedef jacobian_t<fp2_t> point_fp2_t;
typedef xyzz_t<fp2_t> bucket_fp2_t;
typedef bucket_fp2_t::affine_t affine_fp2_t;
#endif
typedef fr_t scalar_t;

#include <msm/pippenger.cuh>
#include <ntt/ntt.cuh>

#include "ref.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#ifndef SPPARK_VERSION
# define SPPARK_VERSION "unknown"
#endif

// sppark's host types are blst's memory layout (Montgomery form, 64-bit
// limbs): inputs made by ref.cpp / ref_bn254.cpp go to sppark as they are,
// results come back to them for the checks. (Host pass only: on the device
// an fp2_t is the half of an Fp2 that one of a pair of threads holds.)
#ifndef __CUDA_ARCH__
static_assert(sizeof(affine_t) == sizeof(ref::G1Aff), "G1 affine layout");
static_assert(sizeof(point_t) == sizeof(ref::G1Jac), "G1 Jacobian layout");
static_assert(sizeof(scalar_t) == sizeof(ref::Fr), "Fr layout");
# ifndef FEATURE_BN254
static_assert(sizeof(affine_fp2_t) == sizeof(ref::G2Aff), "G2 affine layout");
static_assert(sizeof(point_fp2_t) == sizeof(ref::G2Jac), "G2 Jacobian layout");
# endif
#endif

using ref::par_for;

// msm_t::invoke with no bases uses the ones its constructor uploaded (its
// overload taking scalars alone does not compile in sppark 0.1.16).
template<class A> static const A* const no_bases = nullptr;

// ---------------------------------------------------------------- helpers

[[noreturn]] static void die(int code, const std::string& msg)
{
    std::fflush(stdout);
    std::fprintf(stderr, "sppark_bench: %s\n", msg.c_str());
    std::exit(code);
}

static void ok_or_die(const RustError& e, const char* what)
{
    if (e.code != 0)
        die(1, std::string(what) + " failed: sppark error " + std::to_string(e.code) +
               (e.message ? std::string(": ") + e.message : std::string()));
}

static void cuda_or_die(cudaError_t e, const char* what)
{
    if (e != cudaSuccess)
        die(1, std::string(what) + " failed: " + cudaGetErrorString(e));
}

// msm_t's constructor copies the bases on a stream of its own, and from
// pinned memory that copy is asynchronous; invoke's streams do not wait for
// it. Wait here, outside the timing, so no call reads half-copied bases.
static void bases_uploaded()
{   cuda_or_die(cudaDeviceSynchronize(), "uploading the bases");   }

// Page-locked host buffer (cudaHostAlloc), as SupraSeal pins its inputs.
template<class T> class HostBuf {
    T* p = nullptr;
public:
    explicit HostBuf(size_t n)
    {   cuda_or_die(cudaHostAlloc((void**)&p, n * sizeof(T), cudaHostAllocDefault), "cudaHostAlloc");   }
    ~HostBuf() { (void)cudaFreeHost(p); }
    HostBuf(const HostBuf&) = delete;
    HostBuf& operator=(const HostBuf&) = delete;
    T* data() const { return p; }
    T& operator[](size_t i) const { return p[i]; }
};

// ------------------------------------------------------------ timing

using Clock = std::chrono::steady_clock;
static double ms_since(Clock::time_point t)
{   return std::chrono::duration<double, std::milli>(Clock::now() - t).count();   }

struct Stat { double median, min, max; int runs; };

// One warm-up, then `runs` timed calls of f (each ends synchronised); as
// zkpipe's `measure`, at most 3 runs where the warm-up took over 5 s, and
// the median is the sorted times' element runs/2.
template<class F> static Stat measure(int runs, F&& f)
{
    auto t0 = Clock::now();
    f();
    if (ms_since(t0) > 5000) runs = std::min(runs, 3);
    std::vector<double> t;
    for (int r = 0; r < runs; r++) {
        auto s = Clock::now();
        f();
        t.push_back(ms_since(s));
    }
    std::sort(t.begin(), t.end());
    return {t[t.size() / 2], t.front(), t.back(), runs};
}

static void report(const char* op, int log, const Stat& s)
{
    std::printf("sppark %s log=%d median_ms=%.3f min_ms=%.3f max_ms=%.3f runs=%d\n",
                op, log, s.median, s.min, s.max, s.runs);
    std::fflush(stdout);
}

static int failures = 0;
static void check(const char* what, int log, bool ok, const char* why = "")
{
    if (ok) {
        std::printf("check %s log=%d ok\n", what, log);
    } else {
        std::printf("check %s log=%d FAIL (%s)\n", what, log, why);
        failures++;
    }
    std::fflush(stdout);
}

// ------------------------------------------------------------ options

struct Options {
    std::vector<int> g1_resident{16, 18, 20, 22, 24};
    std::vector<int> g1_host{20, 22, 24};
    std::vector<int> ntt_nn{20, 22, 24, 26};
#ifdef FEATURE_BN254
    std::vector<int> g2_resident{};   // no G2 here
    std::vector<int> ntt_nr{};
#else
    std::vector<int> g2_resident{16, 18, 20, 22};
    std::vector<int> ntt_nr{24, 26};
#endif
    std::vector<int> ntt_host{24, 26};
    int runs = 5;
    uint64_t seed = 1;
    bool checks = true;
    bool host_check = false;
};

static void usage(int code)
{
    std::fprintf(code ? stderr : stdout,
#ifdef FEATURE_BN254
"usage: sppark_bench_bn254 [options]   (sppark over BN254: G1 MSM and NTT)\n"
"  --g1-resident LIST  G1 MSM, bases uploaded once per size (default 16,18,20,22,24)\n"
"  --g1-host LIST      G1 MSM, bases from pinned host memory per call (default 20,22,24)\n"
"  --ntt-nn LIST       forward NTT, natural in and out, data on the GPU (default 20,22,24,26)\n"
"  --ntt-nr LIST       forward NTT, natural in, bit-reversed out, on the GPU (default none)\n"
"  --ntt-host LIST     forward NTT NN, pinned host buffer in and out (default 24,26)\n"
"  --runs R            timed runs after one warm-up (default 5)\n"
"  --seed S            seed of the random inputs (default 1)\n"
"  --no-check          skip the correctness checks on the host\n"
"  --host-check        no GPU: check this program's host side (points, the\n"
"                      MSM identity, roots of unity, the DFT) and exit\n"
#else
"usage: sppark_bench [options]   (sppark over BLS12-381)\n"
"  --g1-resident LIST  G1 MSM, bases uploaded once per size (default 16,18,20,22,24)\n"
"  --g1-host LIST      G1 MSM, bases from pinned host memory per call (default 20,22,24)\n"
"  --g2-resident LIST  G2 MSM, bases uploaded once per size (default 16,18,20,22)\n"
"  --ntt-nn LIST       forward NTT, natural in and out, data on the GPU (default 20,22,24,26)\n"
"  --ntt-nr LIST       forward NTT, natural in, bit-reversed out, on the GPU (default 24,26)\n"
"  --ntt-host LIST     forward NTT NN, pinned host buffer in and out (default 24,26)\n"
"  --runs R            timed runs after one warm-up (default 5)\n"
"  --seed S            seed of the random inputs (default 1)\n"
"  --no-check          skip the correctness checks against blst\n"
"  --host-check        no GPU: check this program's host side (points, blst,\n"
"                      roots of unity) and exit\n"
#endif
"LIST: log2 sizes, comma-separated, or 'none'.\n");
    std::exit(code);
}

static std::vector<int> parse_list(const char* s)
{
    std::vector<int> v;
    if (!std::strcmp(s, "none") || !*s) return v;
    for (const char* p = s; *p;) {
        char* end;
        long k = std::strtol(p, &end, 10);
        if (end == p || k < 1 || k > 28) die(2, std::string("bad size list: ") + s);
        v.push_back((int)k);
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') die(2, std::string("bad size list: ") + s);
    }
    return v;
}

static Options parse(int argc, char** argv)
{
    Options o;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto val = [&]() -> const char* {
            if (i + 1 >= argc) die(2, "missing value after " + a);
            return argv[++i];
        };
        if (a == "--g1-resident")      o.g1_resident = parse_list(val());
        else if (a == "--g1-host")     o.g1_host = parse_list(val());
        else if (a == "--g2-resident") o.g2_resident = parse_list(val());
        else if (a == "--ntt-nn")      o.ntt_nn = parse_list(val());
        else if (a == "--ntt-nr")      o.ntt_nr = parse_list(val());
        else if (a == "--ntt-host")    o.ntt_host = parse_list(val());
        else if (a == "--runs")        { o.runs = std::atoi(val()); if (o.runs < 1) die(2, "--runs must be >= 1"); }
        else if (a == "--seed")        o.seed = std::strtoull(val(), nullptr, 10);
        else if (a == "--no-check")    o.checks = false;
        else if (a == "--host-check")  o.host_check = true;
        else if (a == "--help" || a == "-h") usage(0);
        else { std::fprintf(stderr, "sppark_bench: unknown option %s\n", a.c_str()); usage(2); }
    }
#ifdef FEATURE_BN254
    if (!o.g2_resident.empty()) die(2, "no G2 MSM in the BN254 build (--g2-resident none)");
#endif
    return o;
}

static int max_of(const std::vector<int>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

// ------------------------------------------------------------ checks

template<class Aff> static bool in_group_sampled(const Aff* pts, size_t n, size_t samples)
{
    for (size_t j = 0; j < samples; j++)
        if (!ref::in_group(pts[(n - 1) * j / std::max<size_t>(samples - 1, 1)])) return false;
    return true;
}

// No GPU: that the roots of unity the NTT checks use are the ones sppark's
// forward/inverse transforms use (its tables), and the DFT helper.
static void ntt_host_checks(const Options& o)
{
    const ref::Fr one = ref::fr_from_u64(1), minus_one = ref::fr_neg(one);
    for (unsigned k : {1u, 2u, 10u, 20u, 24u, 26u, 28u}) {
        ref::Fr w = ref::root_of_unity(k), wi = ref::fr_inverse(w);
        check("root_of_unity_order", (int)k, ref::fr_pow(w, 1ull << (k - 1)) == minus_one);
        check("root_of_unity_is_sppark_table", (int)k,
              !std::memcmp(&w, &forward_roots_of_unity[k], sizeof(w)) &&
              !std::memcmp(&wi, &inverse_roots_of_unity[k], sizeof(wi)));
    }
    {   // by hand: x = (1, 2, 3, 4), w^2 = -1: X_j = sum x_i w^(ij) is
        // (10, -2(1 + w), -2, -2(1 - w))
        ref::Fr x[4] = {ref::fr_from_u64(1), ref::fr_from_u64(2), ref::fr_from_u64(3), ref::fr_from_u64(4)};
        ref::Fr w = ref::root_of_unity(2), m2 = ref::fr_neg(ref::fr_from_u64(2));
        ref::Fr want[4] = {ref::fr_from_u64(10), ref::fr_mul(m2, ref::fr_add(one, w)), m2,
                           ref::fr_mul(m2, ref::fr_add(one, ref::fr_neg(w)))};
        bool ok = true;
        for (unsigned j = 0; j < 4; j++) ok &= ref::dft_at(x, 4, ref::fr_pow(w, j)) == want[j];
        check("naive_dft_by_hand", 2, ok);
    }
    {   // the DFT helper: the inverse DFT of the DFT is the input
        const size_t m = 64;
        std::vector<ref::Fr> a(m), f(m);
        ref::random_frs(a.data(), m, o.seed);
        ref::Fr w = ref::root_of_unity(6), wi = ref::fr_inverse(w);
        ref::Fr minv = ref::fr_inverse(ref::fr_from_u64(m));
        for (size_t j = 0; j < m; j++) f[j] = ref::dft_at(a.data(), m, ref::fr_pow(w, j));
        bool ok = true;
        for (size_t j = 0; j < m; j++)
            ok &= ref::fr_mul(ref::dft_at(f.data(), m, ref::fr_pow(wi, j)), minv) == a[j];
        check("naive_dft_round_trip", 6, ok);
    }
}

#ifdef FEATURE_BN254
// No GPU: this program's host side. The random walk's points against
// double-and-add from their scalars, and the MSM reference (t*G, from the
// walks' scalars) against the plain sum of k_i * P_i, across chunks.
static int host_check(const Options& o)
{
    std::printf("sppark_bench_bn254 --host-check: host side only, no GPU used\n");
    const ref::G1Aff g = ref::g1_generator();
    check("g1_generator_on_curve", 0, ref::in_group(g));
    const size_t n = 2 * ref::CHUNK + 100;   // three chunks
    std::vector<ref::G1Aff> pts(n);
    ref::random_points(pts.data(), n, o.seed);
    check("g1_points_on_curve", 13, in_group_sampled(pts.data(), n, n));
    bool ok = true;
    for (size_t i : {size_t(0), size_t(1), ref::CHUNK - 1, ref::CHUNK, ref::CHUNK + 1, n - 1}) {
        ref::G1Jac p;
        ref::walk_point(p, i, o.seed);
        ok &= p == pts[i];
    }
    check("g1_walk_vs_double_and_add_6_points", 13, ok);

    const size_t m = ref::CHUNK + 64;   // two chunks
    std::vector<ref::Fr> sc(m);
    ref::random_frs(sc.data(), m, o.seed + 7);
    ref::G1Jac by_identity, naive;
    ref::msm_of_walk(by_identity, sc.data(), m, o.seed);
    ref::msm_naive(naive, pts.data(), sc.data(), m);
    check("g1_msm_linear_identity_vs_naive", 12, by_identity == naive);
    sc[m - 1] = ref::fr_from_u64(1);   // and the identity notices a change
    ref::msm_of_walk(by_identity, sc.data(), m, o.seed);
    check("g1_msm_linear_identity_sees_a_change", 12, !(by_identity == naive));

    ntt_host_checks(o);
    return failures ? 1 : 0;
}
#else
// blst's Pippenger against the plain sum of k_i * P_i: checks the inputs
// and the scalar conversion that the GPU checks rely on.
template<class Aff, class Jac> static bool pippenger_vs_naive(size_t n, uint64_t seed)
{
    std::vector<Aff> pts(n);
    std::vector<ref::Fr> sc(n);
    ref::random_points(pts.data(), n, seed);
    ref::random_frs(sc.data(), n, seed + 1);
    Jac fast, slow;
    ref::msm(fast, pts.data(), sc.data(), n);
    ref::msm_naive(slow, pts.data(), sc.data(), n);
    return fast == slow;
}

// No GPU: this program's own host side, and that the roots of unity the
// NTT checks use are the ones sppark's forward/inverse transforms use.
static int host_check(const Options& o)
{
    std::printf("sppark_bench --host-check: host side only, no GPU used\n");
    const size_t n = 1 << 12;
    std::vector<ref::G1Aff> p1(n);
    ref::random_points(p1.data(), n, o.seed);
    check("g1_points_in_group", 12, in_group_sampled(p1.data(), n, n));
    std::vector<ref::G2Aff> p2(n);
    ref::random_points(p2.data(), n, o.seed);
    check("g2_points_in_group_64_sampled", 12, in_group_sampled(p2.data(), n, 64));
    // (sizes of 2 or more parts of 1024 where there are 2 or more threads)
    check("g1_blst_pippenger_vs_naive", 12, pippenger_vs_naive<ref::G1Aff, ref::G1Jac>(1 << 12, o.seed + 7));
    check("g2_blst_pippenger_vs_naive", 11, pippenger_vs_naive<ref::G2Aff, ref::G2Jac>(1 << 11, o.seed + 7));
    ntt_host_checks(o);
    return failures ? 1 : 0;
}
#endif

// Checks run before each family's timings; a failure stops the program.
static void stop_on_failures(const char* what)
{
    if (failures)
        die(1, std::to_string(failures) + " check(s) FAILED (" + what + "); not timing");
}

// sppark's resident and one-shot G1 MSMs against blst's Pippenger (BN254:
// against t*G, t = sum s_i*(k0 + j*k1) from the random walks' scalars, by
// double-and-add on the host); at 2^18 sppark splits the MSM into 4
// batches, as it does at the timed sizes.
static void g1_checks(const Options& o)
{
    for (int log : {10, 18}) {
        size_t n = size_t(1) << log;
        HostBuf<ref::G1Aff> pts(n);
        HostBuf<ref::Fr> sc(n);
        ref::random_points(pts.data(), n, o.seed + 100 + log);
        ref::random_frs(sc.data(), n, o.seed + 200 + log);
        ref::G1Jac want;
#ifdef FEATURE_BN254
        ref::msm_of_walk(want, sc.data(), n, o.seed + 100 + log);
#else
        ref::msm(want, pts.data(), sc.data(), n);
#endif

        auto* bases = (const affine_t*)pts.data();
        auto* scalars = (const scalar_t*)sc.data();
        point_t got;
        {
            msm_t<bucket_t, point_t, affine_t, scalar_t> msm{bases, n};
            bases_uploaded();
            ok_or_die(msm.invoke(got, no_bases<affine_t>, n, scalars, true), "G1 MSM (resident), check");
        }
        check("g1_msm_resident_vs_" REF, log, (const ref::G1Jac&)got == want, "differs from " REF);
        ok_or_die(mult_pippenger<bucket_t>(&got, bases, n, scalars, true), "G1 MSM (host bases), check");
        check("g1_msm_host_vs_" REF, log, (const ref::G1Jac&)got == want, "differs from " REF);
    }
    stop_on_failures("sppark G1 MSM against " REF);
}

#ifndef FEATURE_BN254   // (no G2 in the BN254 build)
// sppark's resident G2 MSM (fp2 kernels) against blst's Pippenger.
static void g2_checks(const Options& o)
{
    {
        const int log = 10;
        size_t n = size_t(1) << log;
        HostBuf<ref::G2Aff> pts(n);
        HostBuf<ref::Fr> sc(n);
        ref::random_points(pts.data(), n, o.seed + 300);
        ref::random_frs(sc.data(), n, o.seed + 301);
        ref::G2Jac want;
        ref::msm(want, pts.data(), sc.data(), n);
        point_fp2_t got;
        msm_t<bucket_fp2_t, point_fp2_t, affine_fp2_t, scalar_t> msm{(const affine_fp2_t*)pts.data(), n};
        bases_uploaded();
        ok_or_die(msm.invoke(got, no_bases<affine_fp2_t>, n, (const scalar_t*)sc.data(), true),
                  "G2 MSM (resident), check");
        check("g2_msm_resident_vs_blst", log, (const ref::G2Jac&)got == want, "differs from blst");
    }
    stop_on_failures("sppark G2 MSM against blst");
}

#endif

// sppark's forward NN against the DFT by definition: every output at 2^10
// (host to host), three outputs at 2^20 (on the device); and the inverse
// NN of each brings the input back.
static void ntt_checks(const Options& o, const gpu_t& gpu)
{
    using IO = NTT::InputOutputOrder;
    const auto fwd = NTT::Direction::forward, inv = NTT::Direction::inverse;
    const auto std_ = NTT::Type::standard;
    {
        const int log = 10;
        const size_t n = size_t(1) << log;
        HostBuf<ref::Fr> a(n), f(n);
        ref::random_frs(a.data(), n, o.seed + 400);
        std::memcpy(f.data(), a.data(), n * sizeof(ref::Fr));
        ok_or_die(NTT::Base(gpu, (fr_t*)f.data(), log, IO::NN, fwd, std_), "NTT forward NN, check");
        ref::Fr w = ref::root_of_unity(log);
        std::vector<char> good(n);   // a byte each: written from several threads
        par_for(n, [&](size_t j) { good[j] = ref::dft_at(a.data(), n, ref::fr_pow(w, j)) == f[j]; });
        check("ntt_nn_forward_vs_dft", log, std::count(good.begin(), good.end(), 1) == (long)n,
              "differs from the DFT by definition");
        ok_or_die(NTT::Base(gpu, (fr_t*)f.data(), log, IO::NN, inv, std_), "NTT inverse NN, check");
        check("ntt_nn_round_trip", log, !std::memcmp(f.data(), a.data(), n * sizeof(ref::Fr)),
              "inverse(forward(x)) != x");
    }
    {
        const int log = 20;
        const size_t n = size_t(1) << log;
        HostBuf<ref::Fr> a(n), f(n);
        ref::random_frs(a.data(), n, o.seed + 500);
        fr_t* d;
        cuda_or_die(cudaMalloc(&d, n * sizeof(fr_t)), "cudaMalloc");
        stream_t& s = gpu[0];
        cuda_or_die(cudaMemcpy(d, a.data(), n * sizeof(fr_t), cudaMemcpyHostToDevice), "copy in");
        NTT::Base_dev_ptr(s, d, log, IO::NN, fwd, std_);
        s.sync();
        cuda_or_die(cudaMemcpy(f.data(), d, n * sizeof(fr_t), cudaMemcpyDeviceToHost), "copy out");
        ref::Fr w = ref::root_of_unity(log);
        bool ok = true;
        for (size_t j : {size_t(0), size_t(1), n / 2 + 12345})
            ok &= ref::dft_at(a.data(), n, ref::fr_pow(w, j)) == f[j];
        check("ntt_nn_device_forward_vs_dft_3_outputs", log, ok, "differs from the DFT by definition");
        NTT::Base_dev_ptr(s, d, log, IO::NN, inv, std_);
        s.sync();
        cuda_or_die(cudaMemcpy(f.data(), d, n * sizeof(fr_t), cudaMemcpyDeviceToHost), "copy out");
        cuda_or_die(cudaFree(d), "cudaFree");
        check("ntt_nn_device_round_trip", log, !std::memcmp(f.data(), a.data(), n * sizeof(ref::Fr)),
              "inverse(forward(x)) != x");
    }
    stop_on_failures("sppark NTT against the DFT");
}

// ------------------------------------------------------------ benches

static void bench_g1(const Options& o)
{
    int max = std::max(max_of(o.g1_resident), max_of(o.g1_host));
    if (!max) return;
    if (o.checks) g1_checks(o);
    size_t nmax = size_t(1) << max;
    auto t = Clock::now();
    HostBuf<ref::G1Aff> pts(nmax);
    HostBuf<ref::Fr> sc(nmax);
    ref::random_points(pts.data(), nmax, o.seed);
    ref::random_frs(sc.data(), nmax, o.seed + 1);
    std::fprintf(stderr, "generated 2^%d G1 bases and scalars in %.1f s\n", max, ms_since(t) / 1e3);
    check("g1_bases_in_group_64_sampled", max, in_group_sampled(pts.data(), nmax, 64));
    stop_on_failures("G1 bases");

    auto* bases = (const affine_t*)pts.data();
    auto* scalars = (const scalar_t*)sc.data();
    // One msm_t per size, constructed (bases uploaded, window chosen for
    // that size) outside the timing; each call copies its scalars in.
    for (int log : o.g1_resident) {
        size_t n = size_t(1) << log;
        msm_t<bucket_t, point_t, affine_t, scalar_t> msm{bases, n};
        bases_uploaded();
        point_t out;
        report("g1_msm_resident", log, measure(o.runs, [&] {
            ok_or_die(msm.invoke(out, no_bases<affine_t>, n, scalars, true), "G1 MSM (resident)");
        }));
    }
    // sppark's one-shot entry point: device buffers, bases and scalars per call.
    for (int log : o.g1_host) {
        size_t n = size_t(1) << log;
        point_t out;
        report("g1_msm_host", log, measure(o.runs, [&] {
            ok_or_die(mult_pippenger<bucket_t>(&out, bases, n, scalars, true), "G1 MSM (host bases)");
        }));
    }
}

#ifndef FEATURE_BN254
static void bench_g2(const Options& o)
{
    int max = max_of(o.g2_resident);
    if (!max) return;
    if (o.checks) g2_checks(o);
    size_t nmax = size_t(1) << max;
    auto t = Clock::now();
    HostBuf<ref::G2Aff> pts(nmax);
    HostBuf<ref::Fr> sc(nmax);
    ref::random_points(pts.data(), nmax, o.seed);
    ref::random_frs(sc.data(), nmax, o.seed + 1);
    std::fprintf(stderr, "generated 2^%d G2 bases and scalars in %.1f s\n", max, ms_since(t) / 1e3);
    check("g2_bases_in_group_16_sampled", max, in_group_sampled(pts.data(), nmax, 16));
    stop_on_failures("G2 bases");

    auto* bases = (const affine_fp2_t*)pts.data();
    auto* scalars = (const scalar_t*)sc.data();
    for (int log : o.g2_resident) {
        size_t n = size_t(1) << log;
        msm_t<bucket_fp2_t, point_fp2_t, affine_fp2_t, scalar_t> msm{bases, n};
        bases_uploaded();
        point_fp2_t out;
        report("g2_msm_resident", log, measure(o.runs, [&] {
            ok_or_die(msm.invoke(out, no_bases<affine_fp2_t>, n, scalars, true), "G2 MSM (resident)");
        }));
    }
}

#endif

static void bench_ntt(const Options& o, const gpu_t& gpu)
{
    using IO = NTT::InputOutputOrder;
    const auto fwd = NTT::Direction::forward;
    const auto std_ = NTT::Type::standard;
    int max_dev = std::max(max_of(o.ntt_nn), max_of(o.ntt_nr));
    int max = std::max(max_dev, max_of(o.ntt_host));
    if (!max) return;
    if (o.checks) ntt_checks(o, gpu);
    size_t nmax = size_t(1) << max;
    HostBuf<ref::Fr> in(nmax);
    ref::random_frs(in.data(), nmax, o.seed + 2);

    if (max_dev) {
        fr_t* d;
        cuda_or_die(cudaMalloc(&d, (size_t(1) << max_dev) * sizeof(fr_t)), "cudaMalloc");
        stream_t& s = gpu[0];
        // Transform only: the data stays on the GPU and each run transforms
        // the previous output (as random as the input); timed to a synchronise.
        auto run = [&](const char* op, const std::vector<int>& logs, IO order) {
            for (int log : logs) {
                size_t n = size_t(1) << log;
                cuda_or_die(cudaMemcpy(d, in.data(), n * sizeof(fr_t), cudaMemcpyHostToDevice), "copy in");
                report(op, log, measure(o.runs, [&] {
                    NTT::Base_dev_ptr(s, d, log, order, fwd, std_);
                    s.sync();
                }));
            }
        };
        run("ntt_nn_device", o.ntt_nn, IO::NN);
        run("ntt_nr_device", o.ntt_nr, IO::NR);
        cuda_or_die(cudaFree(d), "cudaFree");
    }
    // Host to host through sppark's NTT::Base (device buffer, copy in,
    // transform, copy out, synchronise), on the pinned host buffer.
    for (int log : o.ntt_host)
        report("ntt_nn_host", log, measure(o.runs, [&] {
            ok_or_die(NTT::Base(gpu, (fr_t*)in.data(), log, IO::NN, fwd, std_), "NTT NN host to host");
        }));
}

// ------------------------------------------------------------ main

int main(int argc, char** argv)
{
    Options o = parse(argc, argv);
    if (o.host_check) return host_check(o);

    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess)
        die(2, std::string("no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")");
    if (count == 0 || ngpus() == 0)
        die(2, "no CUDA device that sppark can use (compute capability >= 7 with cooperative launch)");

    try {
        const gpu_t& gpu = select_gpu(0);
        int drv = 0, rt = 0;
        (void)cudaDriverGetVersion(&drv);
        (void)cudaRuntimeGetVersion(&rt);
        const auto& p = gpu.props();
        std::printf("sppark_bench: sppark %s, " CURVE "; device 0: %s, %d SMs, sm_%d%d, %.0f MiB; "
                    "CUDA driver %d, runtime %d; %u host threads; %d runs after 1 warm-up; seed %llu\n",
                    SPPARK_VERSION, p.name, p.multiProcessorCount, p.major, p.minor,
                    p.totalGlobalMem / 1048576.0, drv, rt, std::thread::hardware_concurrency(),
                    o.runs, (unsigned long long)o.seed);
        std::fflush(stdout);

        bench_g1(o);
#ifndef FEATURE_BN254
        bench_g2(o);
#endif
        bench_ntt(o, gpu);
        cuda_or_die(cudaDeviceSynchronize(), "final synchronise");
    } catch (const sppark_error& e) {
        die(1, std::string("CUDA/sppark error: ") + e.what());
    } catch (const std::exception& e) {
        die(1, std::string("error: ") + e.what());
    }
    if (failures) die(1, std::to_string(failures) + " check(s) FAILED");
    std::printf("sppark_bench: done\n");
    return 0;
}
