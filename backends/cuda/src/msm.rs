//! Host side of the Pippenger MSM (`kernels/msm.cu`): window choice, buffer
//! sizes, the launch sequence, and combining the window sums with blst.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use zkpipe_core::bn254;
use zkpipe_core::plugin::AccelError;
use zkpipe_core::{Fp, Fp2, Fr, G1Affine, G1Projective, G2Affine, G2Projective};

use crate::error::driver_err;
use crate::lane::{Lane, Profile, grid};
use crate::msm_bits::BitSplit;
use crate::msm_kernels::{MsmKernels, PointKernels};
use crate::words::{DeviceScalar, limbs};

/// Points of a bucket one thread sums before the tree passes.
const CHUNK: u32 = 32;
/// Bitmap words (64 scalars) one thread of `msm_bit_sum` takes.
const BIT_SUM_WORDS: u32 = 4;
/// Fan-in of the tree passes over a bucket's chunk sums.
const TREE_FAN_IN: u32 = 8;
/// Chunk sums one thread adds per bucket after the tree passes (buckets
/// with at most this many chunks, all of them for random scalars, skip the
/// passes: a pass's active threads are sparse within warps).
const BUCKET_SERIAL: u32 = 32;
/// Threads per block for the point kernels (≈ 170–255 registers each).
const POINT_BLOCK: u32 = 128;
/// Window segment sums are reduced `REDUCE_FAN_IN` at a time (a pass's
/// serial depth; one serial XYZZ addition costs tens of microseconds).
const REDUCE_FAN_IN: u32 = 8;

/// What the MSM needs to know about a group.
pub(crate) trait Curve {
    type Affine: Copy;
    type Proj: Copy;
    /// The scalars' field (it also names the kernel module).
    type Scalar: DeviceScalar;
    /// `u64` words per coordinate (BLS12-381: 6 for Fp, 12 for Fp2;
    /// BN254: 4 and 8).
    const WORDS: usize;
    /// The group's name in messages: "BLS12-381 G1", "BN254 G2"…
    const GROUP: &'static str;
    fn kernels(k: &MsmKernels) -> &PointKernels;
    /// The host's projective point from device XYZZ words `[X, Y, ZZ, ZZZ]`.
    fn from_xyzz(words: &[u64]) -> Self::Proj;
    fn identity() -> Self::Proj;
    fn double(p: &Self::Proj) -> Self::Proj;
    fn add(p: &Self::Proj, q: &Self::Proj) -> Self::Proj;
}

fn fp(words: &[u64]) -> Fp {
    Fp {
        limbs: words.try_into().expect("6 words"),
    }
}

fn fp2(words: &[u64]) -> Fp2 {
    Fp2 {
        c: [fp(&words[..6]), fp(&words[6..])],
    }
}

/// Jacobian (X·ZZ², Y·ZZZ², ZZZ) represents the same point as XYZZ (X, Y, ZZ, ZZZ).
macro_rules! xyzz_to_jacobian {
    ($field:ty, $read:ident, $mul:ident, $sqr:ident, $w:expr, $words:expr) => {{
        let w = $words;
        let (x, y, zz, zzz) = (
            $read(&w[..$w]),
            $read(&w[$w..2 * $w]),
            $read(&w[2 * $w..3 * $w]),
            $read(&w[3 * $w..]),
        );
        let (mut zz2, mut zzz2, mut px, mut py) = (
            <$field>::default(),
            <$field>::default(),
            <$field>::default(),
            <$field>::default(),
        );
        // SAFETY: blst field ops on valid, distinct pointers of the seam types' blst layout.
        unsafe {
            blst::$sqr(zz2.as_blst_mut(), zz.as_blst());
            blst::$sqr(zzz2.as_blst_mut(), zzz.as_blst());
            blst::$mul(px.as_blst_mut(), x.as_blst(), zz2.as_blst());
            blst::$mul(py.as_blst_mut(), y.as_blst(), zzz2.as_blst());
        }
        (px, py, zzz)
    }};
}

pub(crate) struct G1;
pub(crate) struct G2;

impl Curve for G1 {
    type Affine = G1Affine;
    type Proj = G1Projective;
    type Scalar = Fr;
    const WORDS: usize = 6;
    const GROUP: &'static str = "BLS12-381 G1";
    fn kernels(k: &MsmKernels) -> &PointKernels {
        &k.g1
    }
    fn from_xyzz(words: &[u64]) -> G1Projective {
        let (x, y, z) = xyzz_to_jacobian!(Fp, fp, blst_fp_mul, blst_fp_sqr, 6, words);
        G1Projective { x, y, z }
    }
    fn identity() -> G1Projective {
        G1Projective::identity()
    }
    fn double(p: &G1Projective) -> G1Projective {
        p.double()
    }
    fn add(p: &G1Projective, q: &G1Projective) -> G1Projective {
        p.add(q)
    }
}

impl Curve for G2 {
    type Affine = G2Affine;
    type Proj = G2Projective;
    type Scalar = Fr;
    const WORDS: usize = 12;
    const GROUP: &'static str = "BLS12-381 G2";
    fn kernels(k: &MsmKernels) -> &PointKernels {
        &k.g2
    }
    fn from_xyzz(words: &[u64]) -> G2Projective {
        let (x, y, z) = xyzz_to_jacobian!(Fp2, fp2, blst_fp2_mul, blst_fp2_sqr, 12, words);
        G2Projective { x, y, z }
    }
    fn identity() -> G2Projective {
        G2Projective::identity()
    }
    fn double(p: &G2Projective) -> G2Projective {
        p.double()
    }
    fn add(p: &G2Projective, q: &G2Projective) -> G2Projective {
        p.add(q)
    }
}

pub(crate) struct Bn254G1;
pub(crate) struct Bn254G2;

fn bn254_fp(words: &[u64]) -> bn254::Fp {
    bn254::Fp {
        limbs: words.try_into().expect("4 words"),
    }
}

fn bn254_fp2(words: &[u64]) -> bn254::Fp2 {
    bn254::Fp2 {
        c: [bn254_fp(&words[..4]), bn254_fp(&words[4..])],
    }
}

/// Homogeneous (X·ZZZ, Y·ZZ, ZZ·ZZZ), BN254's host form, represents the
/// same point as XYZZ (X, Y, ZZ, ZZZ) with ZZ ≠ 0. ZZ = 0 (the identity)
/// becomes (0 : 1 : 0): (0 : 0 : 0) is no point, and halo2curves' complete
/// addition formulas turn any sum with it into (0 : 0 : 0).
macro_rules! bn254_from_xyzz {
    ($proj:ident, $base:ty, $read:ident, $w:expr, $words:expr) => {{
        let w = $words;
        if w[2 * $w..3 * $w].iter().all(|&l| l == 0) {
            return bn254::$proj::identity();
        }
        let (x, y, zz, zzz) = (
            $read(&w[..$w]).h2c(),
            $read(&w[$w..2 * $w]).h2c(),
            $read(&w[2 * $w..3 * $w]).h2c(),
            $read(&w[3 * $w..]).h2c(),
        );
        bn254::$proj {
            x: <$base>::from_h2c(x * zzz),
            y: <$base>::from_h2c(y * zz),
            z: <$base>::from_h2c(zz * zzz),
        }
    }};
}

impl Curve for Bn254G1 {
    type Affine = bn254::G1Affine;
    type Proj = bn254::G1Projective;
    type Scalar = bn254::Fr;
    const WORDS: usize = 4;
    const GROUP: &'static str = "BN254 G1";
    fn kernels(k: &MsmKernels) -> &PointKernels {
        &k.g1
    }
    fn from_xyzz(words: &[u64]) -> bn254::G1Projective {
        bn254_from_xyzz!(G1Projective, bn254::Fp, bn254_fp, 4, words)
    }
    fn identity() -> bn254::G1Projective {
        bn254::G1Projective::identity()
    }
    fn double(p: &bn254::G1Projective) -> bn254::G1Projective {
        p.add(p)
    }
    fn add(p: &bn254::G1Projective, q: &bn254::G1Projective) -> bn254::G1Projective {
        p.add(q)
    }
}

impl Curve for Bn254G2 {
    type Affine = bn254::G2Affine;
    type Proj = bn254::G2Projective;
    type Scalar = bn254::Fr;
    const WORDS: usize = 8;
    const GROUP: &'static str = "BN254 G2";
    fn kernels(k: &MsmKernels) -> &PointKernels {
        &k.g2
    }
    fn from_xyzz(words: &[u64]) -> bn254::G2Projective {
        bn254_from_xyzz!(G2Projective, bn254::Fp2, bn254_fp2, 8, words)
    }
    fn identity() -> bn254::G2Projective {
        bn254::G2Projective::identity()
    }
    fn double(p: &bn254::G2Projective) -> bn254::G2Projective {
        p.add(p)
    }
    fn add(p: &bn254::G2Projective, q: &bn254::G2Projective) -> bn254::G2Projective {
        p.add(q)
    }
}

/// Window size: from 2^15 points on, the best measured on a GPU (13 bits
/// up to 2^18, 16 up to 2^24, then 18 up to 2^26 and a bit more per
/// doubling; odd sizes leave a top window of few huge buckets; the sweeps
/// are in docs/bench-log.md), and below that the size minimising the
/// additions (n per window for the buckets, about 3 per bucket for the
/// bucket and window sums). Above 2^24 buckets of 1,024 points
/// (`BUCKET_SERIAL` chunks) or more take the tree pass, so the window
/// grows with n.
pub fn auto_window(n: usize) -> u32 {
    match n {
        0..32768 => (2..=16u32)
            .min_by_key(|&c| windows(c) as u64 * (n as u64 + 3 * (1u64 << (c - 1))))
            .unwrap(),
        32768..=262144 => 13,
        262145..=16777216 => 16,
        _ => (n.next_power_of_two().trailing_zeros() - 8).max(18),
    }
}

/// Window size for bases with precomputed multiples (one set of buckets
/// for every window): the fewest additions, n per window plus about four
/// per bucket for the bucket and window sums, among windows of at most 20
/// bits whose buckets hold at least 100 points on average, as measured
/// (G1 2^22 and 2^24, G2 2^20 and 2^22, c = 16…22): emptier buckets
/// leave the one-thread-per-chunk sums partly idle, and past 2^19 buckets
/// the one-block scan and the window sums cost more than a window saves.
pub fn fixed_base_window(n: usize) -> u32 {
    let n = n as u64;
    (12..=20u32)
        .filter(|&c| c == 12 || windows(c) as u64 * n >= 100 << (c - 1))
        .min_by_key(|&c| windows(c) as u64 * n + (4u64 << (c - 1)))
        .expect("c = 12 always qualifies")
}

/// Signed c-bit windows covering a 255-bit scalar and its final carry.
pub(crate) fn windows(c: u32) -> u32 {
    255 / c + 1
}

/// Most windows a precomputed table may have (the kernel's local arrays).
pub(crate) const FIXED_MAX_WINDOWS: u32 = 22;

/// Whether `n` bases with c-bit precomputed multiples fit one folded set:
/// its windows·n sorted entries are indexed with 32 bits.
pub(crate) fn folded_fits(n: usize, c: u32) -> bool {
    windows(c) as u64 * n as u64 <= u32::MAX as u64
}

/// Buffer sizes of one MSM (element counts).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    pub n: u32,
    /// Window bits.
    pub c: u32,
    /// Digit windows of each scalar.
    pub windows: u32,
    /// Bucket sets: one per window, or one for all (precomputed bases).
    pub sets: u32,
    /// Sorted entries per set: n, or windows·n when folded.
    pub per_set: u32,
    /// Buckets per set including the unused bucket 0.
    pub nb: u32,
    /// Chunk slots per set: an upper bound on Σ chunks.
    pub cap: u32,
    /// Buckets per window-sum segment, and segments per set.
    pub seg_len: u32,
    pub segs: u32,
}

impl Plan {
    /// A plan for `n` ≤ 2^28 scalars with c-bit windows; `folded` when the
    /// bases have precomputed multiples for each window (then
    /// [`folded_fits`] holds: tables are only made when it does).
    pub(crate) fn new(n: usize, c: u32, folded: bool) -> Plan {
        let windows = windows(c);
        let sets = if folded { 1 } else { windows };
        let per_set = n as u32 * (windows / sets);
        let buckets = 1u32 << (c - 1);
        // Enough segments to fill the device (~32k threads), at most 64 buckets each.
        let per = ((buckets as u64 * sets as u64) >> 15).clamp(1, 64) as u32;
        let seg_len = 1 << (31 - per.leading_zeros());
        let seg_len = seg_len.min(buckets);
        Plan {
            n: n as u32,
            c,
            windows,
            sets,
            per_set,
            nb: buckets + 1,
            cap: per_set.div_ceil(CHUNK) + buckets + 1,
            seg_len,
            segs: buckets / seg_len,
        }
    }

    /// Device bytes the MSM allocates besides the bases.
    pub(crate) fn device_bytes(&self, point_words: usize) -> usize {
        let (sets, xyzz) = (self.sets as usize, point_words * 8 * 4);
        let tables = 4 * sets * self.nb as usize * 4;
        let sorted = self.windows as usize * self.n as usize * 4;
        let chunks = sets * self.cap as usize * (4 + xyzz);
        let buckets = sets * (self.nb as usize - 1) * xyzz;
        let segments = 2 * sets * self.segs as usize * xyzz;
        self.n as usize * 32 + tables + sorted + chunks + buckets + segments
    }
}

fn grid_2d(count: u32, rows: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (count.div_ceil(POINT_BLOCK).max(1), rows, 1),
        block_dim: (POINT_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// An MSM's bases (`u64` words of affine points in blst's layout): on this
/// device, or on the host — then copied in while the scalar kernels run.
pub(crate) enum MsmBases<'a> {
    Device(&'a CudaSlice<u64>),
    Host(&'a [u64]),
    /// On this device with precomputed multiples (see [`Lane::precompute`]).
    Fixed(&'a FixedBases),
}

/// Bases on a device with their multiples for every window of a c-bit
/// MSM: point `w·len + i` is 2^(c·w)·P_i, so points `0..len` are the bases.
pub(crate) struct FixedBases {
    pub words: CudaSlice<u64>,
    pub len: usize,
    pub c: u32,
}

impl Lane<'_> {
    /// Σ scalars[i]·bases[i] over the first `scalars.len()` bases of `bases`
    /// with c-bit windows (0: [`auto_window`] of the scalars Pippenger
    /// gets; with [`MsmBases::Fixed`], the table's). Bit-heavy scalars are
    /// split first ([`BitSplit`]).
    ///
    /// # Errors
    /// `OUT_OF_MEMORY` when the buffers do not fit; driver errors.
    pub(crate) fn msm<C: Curve>(
        &self,
        bases: MsmBases<'_>,
        scalars: &[C::Scalar],
        c: u32,
    ) -> Result<C::Proj, AccelError> {
        let Some(split) = BitSplit::of(scalars) else {
            return self.pippenger::<C>(bases, scalars, None, c);
        };
        let copied;
        let (words, rest_bases) = match bases {
            MsmBases::Device(b) => (b, MsmBases::Device(b)),
            MsmBases::Fixed(f) => (&f.words, MsmBases::Fixed(f)),
            MsmBases::Host(w) => {
                copied = self.upload(&w[..scalars.len() * 2 * C::WORDS])?;
                (&copied, MsmBases::Device(&copied))
            }
        };
        let ones = self.bit_sum::<C>(words, &split.ones)?;
        if split.rest.is_empty() {
            return Ok(ones);
        }
        let index = self.upload(&split.packed_index())?;
        let rest = self.pippenger::<C>(rest_bases, &split.rest, Some(&index), c)?;
        Ok(C::add(&ones, &rest))
    }

    /// Σ bases[i] over the set bits i of `ones`: one thread per
    /// `BIT_SUM_WORDS` words, then reduced on the device.
    fn bit_sum<C: Curve>(
        &self,
        bases: &CudaSlice<u64>,
        ones: &[u64],
    ) -> Result<C::Proj, AccelError> {
        let xw = 4 * C::WORDS;
        let words = ones.len() as u32;
        let outs = words.div_ceil(BIT_SUM_WORDS);
        self.check_free(ones.len() * 8 + 2 * outs as usize * xw * 8)?;
        let s = &self.stream;
        let mut prof = Profile::new(s);
        let e = |what| driver_err(what);
        let bits = self.upload(ones)?;
        prof.mark("copy in");
        let pk = C::kernels(&self.kernels(C::Scalar::KERNELS)?.msm);
        let mut sums = s
            .alloc_zeros::<u64>(outs as usize * xw)
            .map_err(e("allocating"))?;
        let mut l = s.launch_builder(&pk.bit_sum);
        l.arg(bases)
            .arg(&bits)
            .arg(&words)
            .arg(&BIT_SUM_WORDS)
            .arg(&mut sums);
        // SAFETY: bit i of `ones` is set only for i < the MSM's size ≤ the bases' count.
        unsafe { l.launch(grid_2d(outs, 1)) }.map_err(e("msm_bit_sum"))?;
        prof.mark("msm_bit_sum");
        let sum = self.reduce_rows::<C>(sums, outs, 1, &mut prof)?;
        prof.report(&format!("msm bits words={words}"));
        Ok(C::from_xyzz(&sum))
    }

    /// `rows` sums of `m` XYZZ points each (row-major in `cur`), reduced
    /// on the device and read back: `rows` points' words.
    fn reduce_rows<C: Curve>(
        &self,
        mut cur: CudaSlice<u64>,
        mut m: u32,
        rows: u32,
        prof: &mut Profile<'_>,
    ) -> Result<Vec<u64>, AccelError> {
        let s = &self.stream;
        let e = |what| driver_err(what);
        let pk = C::kernels(&self.kernels(C::Scalar::KERNELS)?.msm);
        let xw = 4 * C::WORDS;
        while m > 1 {
            let outs = m.div_ceil(REDUCE_FAN_IN);
            let mut out = s
                .alloc_zeros::<u64>(rows as usize * outs as usize * xw)
                .map_err(e("allocating"))?;
            let mut l = s.launch_builder(&pk.reduce);
            l.arg(&cur).arg(&m).arg(&REDUCE_FAN_IN).arg(&mut out);
            // SAFETY: reads m points per row, writes ceil(m / fan-in).
            unsafe { l.launch(grid_2d(outs, rows)) }.map_err(e("msm_reduce"))?;
            prof.mark("msm_reduce");
            cur = out;
            m = outs;
        }
        let mut host = vec![0u64; rows as usize * xw];
        s.memcpy_dtoh(&cur, host.as_mut_slice())
            .map_err(e("copying sums"))?;
        s.synchronize().map_err(e("synchronising"))?;
        prof.mark("copy out");
        Ok(host)
    }

    /// Pippenger over `scalars`, scalar i's point being `index[i]` (u32s)
    /// where given, else i.
    fn pippenger<C: Curve>(
        &self,
        bases: MsmBases<'_>,
        scalars: &[C::Scalar],
        index: Option<&CudaSlice<u64>>,
        c: u32,
    ) -> Result<C::Proj, AccelError> {
        let (c, fold, stride) = match bases {
            MsmBases::Fixed(f) => (f.c, 1u32, f.len as u32),
            _ if c == 0 => (auto_window(scalars.len()), 0, 0),
            _ => (c, 0, 0),
        };
        let plan = Plan::new(scalars.len(), c, fold == 1);
        let host_bytes = match bases {
            MsmBases::Host(w) => std::mem::size_of_val(w),
            MsmBases::Device(_) | MsmBases::Fixed(_) => 0,
        };
        self.check_free(plan.device_bytes(C::WORDS) + host_bytes)?;
        let Plan {
            n,
            c,
            windows,
            sets,
            per_set,
            nb,
            cap,
            seg_len,
            segs,
        } = plan;
        let s = &self.stream;
        let mut prof = Profile::new(s);
        let mk = &self.kernels(C::Scalar::KERNELS)?.msm;
        let k = &mk.scalar;
        let e = |what| driver_err(what);
        let chunk = CHUNK;
        let tables = (sets * nb) as usize;

        let mut sc = self.upload(limbs(scalars))?;
        prof.mark("copy in");
        let mut l = s.launch_builder(&k.from_mont);
        l.arg(&mut sc).arg(&n);
        // SAFETY: n scalars of 4 words.
        unsafe { l.launch(grid(n as usize)) }.map_err(e("msm_from_mont"))?;
        prof.mark("msm_from_mont");

        let mut counts = s.alloc_zeros::<u32>(tables).map_err(e("allocating"))?;
        let mut l = s.launch_builder(&k.count);
        l.arg(&sc)
            .arg(&n)
            .arg(&c)
            .arg(&windows)
            .arg(&fold)
            .arg(&mut counts);
        // SAFETY: indices (w·nb, or 0 folded) + |d| < sets·nb since |d| ≤ 2^(c−1).
        unsafe { l.launch(grid(n as usize)) }.map_err(e("msm_count"))?;
        prof.mark("msm_count");

        let mut offsets = s.alloc_zeros::<u32>(tables).map_err(e("allocating"))?;
        let mut cursor = s.alloc_zeros::<u32>(tables).map_err(e("allocating"))?;
        let mut chunk_first = s.alloc_zeros::<u32>(tables).map_err(e("allocating"))?;
        let mut totals = s
            .alloc_zeros::<u32>(sets as usize)
            .map_err(e("allocating"))?;
        let mut most = s
            .alloc_zeros::<u32>(sets as usize)
            .map_err(e("allocating"))?;
        let mut l = s.launch_builder(&k.scan);
        l.arg(&counts)
            .arg(&nb)
            .arg(&chunk)
            .arg(&mut offsets)
            .arg(&mut cursor)
            .arg(&mut chunk_first)
            .arg(&mut totals)
            .arg(&mut most);
        let scan_cfg = LaunchConfig {
            grid_dim: (sets, 1, 1),
            block_dim: (1024, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: one block per set over its nb entries.
        unsafe { l.launch(scan_cfg) }.map_err(e("msm_scan"))?;
        prof.mark("msm_scan");

        let mut sorted = s
            .alloc_zeros::<u32>(windows as usize * n as usize)
            .map_err(e("allocating"))?;
        let null = 0u64;
        let mut l = s.launch_builder(&k.scatter);
        l.arg(&sc);
        match index {
            Some(i) => l.arg(i),
            None => l.arg(&null),
        };
        l.arg(&n)
            .arg(&c)
            .arg(&windows)
            .arg(&fold)
            .arg(&stride)
            .arg(&mut cursor)
            .arg(&mut sorted);
        // SAFETY: positions stay below each set's per_set entries (its counts
        // sum to ≤ per_set); `index` holds n point indices below the bases' count.
        unsafe { l.launch(grid(n as usize)) }.map_err(e("msm_scatter"))?;
        prof.mark("msm_scatter");

        let mut chunk_bucket = s
            .alloc_zeros::<u32>(sets as usize * cap as usize)
            .map_err(e("allocating"))?;
        let mut l = s.launch_builder(&k.chunk_map);
        l.arg(&counts)
            .arg(&chunk_first)
            .arg(&nb)
            .arg(&chunk)
            .arg(&cap)
            .arg(&sets)
            .arg(&mut chunk_bucket);
        // SAFETY: chunk indices are below `cap` (Σ chunks ≤ n/CHUNK + buckets).
        unsafe { l.launch(grid(tables)) }.map_err(e("msm_chunk_map"))?;
        prof.mark("msm_chunk_map");

        // Host bases go in now, on a stream of their own: on this one the
        // transfer would queue behind the scalar kernels above instead of
        // running beside them. Held by the lane, so they are freed only
        // after this stream is done with them.
        let copied;
        let bases = match bases {
            MsmBases::Device(b) => b,
            MsmBases::Fixed(f) => &f.words,
            MsmBases::Host(w) => {
                let copy = self.ctx.new_stream().map_err(e("creating a stream"))?;
                copied = self.hold(&Arc::new(self.upload_on(&copy, w)?));
                let on_device = copy.record_event(None).map_err(e("recording an event"))?;
                s.wait(&on_device).map_err(e("waiting for the bases"))?;
                prof.mark("copy bases");
                &*copied
            }
        };
        let pk = C::kernels(mk);
        let xw = 4 * C::WORDS;
        let mut partial = s
            .alloc_zeros::<u64>(sets as usize * cap as usize * xw)
            .map_err(e("allocating"))?;
        let mut l = s.launch_builder(&pk.accumulate);
        l.arg(bases)
            .arg(&sorted)
            .arg(&counts)
            .arg(&offsets)
            .arg(&chunk_first)
            .arg(&chunk_bucket)
            .arg(&totals)
            .arg(&per_set)
            .arg(&nb)
            .arg(&chunk)
            .arg(&cap)
            .arg(&mut partial);
        // SAFETY: reads point indices < n (folded: < windows·stride, the
        // table's size), writes chunk slots < cap.
        unsafe { l.launch(grid_2d(cap, sets)) }.map_err(e("msm_accumulate"))?;
        prof.mark("msm_accumulate");

        // Tree passes while some bucket has more than stride·BUCKET_SERIAL
        // chunks (the largest count is read back: a few bytes).
        let mut most_host = vec![0u32; sets as usize];
        s.memcpy_dtoh(&most, most_host.as_mut_slice())
            .map_err(e("reading chunk counts"))?;
        s.synchronize().map_err(e("synchronising"))?;
        let most = most_host.into_iter().max().unwrap_or(0);
        let mut stride = 1u32;
        while stride.saturating_mul(BUCKET_SERIAL) < most {
            let mut l = s.launch_builder(&pk.tree_pass);
            l.arg(&mut partial)
                .arg(&counts)
                .arg(&chunk_first)
                .arg(&chunk_bucket)
                .arg(&totals)
                .arg(&nb)
                .arg(&chunk)
                .arg(&cap)
                .arg(&stride)
                .arg(&TREE_FAN_IN)
                .arg(&BUCKET_SERIAL);
            // SAFETY: each thread reads and writes chunk slots of its own bucket (< cap).
            unsafe { l.launch(grid_2d(cap, sets)) }.map_err(e("msm_tree_pass"))?;
            prof.mark("msm_tree_pass");
            stride = stride.saturating_mul(TREE_FAN_IN);
        }

        let nbk = nb - 1;
        let mut buckets = s
            .alloc_zeros::<u64>(sets as usize * nbk as usize * xw)
            .map_err(e("allocating"))?;
        let mut l = s.launch_builder(&pk.bucket_sum);
        l.arg(&partial)
            .arg(&counts)
            .arg(&chunk_first)
            .arg(&nb)
            .arg(&chunk)
            .arg(&cap)
            .arg(&sets)
            .arg(&TREE_FAN_IN)
            .arg(&BUCKET_SERIAL)
            .arg(&mut buckets);
        // SAFETY: one thread per (set, bucket ≥ 1), reading its own chunk slots.
        unsafe { l.launch(grid_2d(sets * nbk, 1)) }.map_err(e("msm_bucket_sum"))?;
        prof.mark("msm_bucket_sum");
        drop(partial);

        let mut cur = s
            .alloc_zeros::<u64>(sets as usize * segs as usize * xw)
            .map_err(e("allocating"))?;
        let mut l = s.launch_builder(&pk.window_segments);
        l.arg(&buckets).arg(&nbk).arg(&seg_len).arg(&mut cur);
        // SAFETY: segs·seg_len = nbk buckets per set.
        unsafe { l.launch(grid_2d(segs, sets)) }.map_err(e("msm_window_segments"))?;
        prof.mark("msm_window_segments");

        let host = self.reduce_rows::<C>(cur, segs, sets, &mut prof)?;
        prof.report(&format!(
            "msm n={n} c={c} windows={windows}{}",
            if fold == 1 { " folded" } else { "" }
        ));

        // Σ_w 2^(c·w)·W_w, top window first (folded: the one sum is the result).
        let mut acc = C::identity();
        for w in host.chunks_exact(xw).rev() {
            for _ in 0..c {
                acc = C::double(&acc);
            }
            acc = C::add(&acc, &C::from_xyzz(w));
        }
        Ok(acc)
    }

    /// `bases` (affine words) on this device with their multiples for
    /// c-bit windows, built here: ~c·windows doublings and one inversion
    /// per point.
    ///
    /// # Errors
    /// `OUT_OF_MEMORY` when the table does not fit; driver errors.
    pub(crate) fn precompute<C: Curve>(
        &self,
        bases: &[u64],
        c: u32,
    ) -> Result<FixedBases, AccelError> {
        let words_per_point = 2 * C::WORDS;
        let len = bases.len() / words_per_point;
        let nwin = windows(c);
        if nwin > FIXED_MAX_WINDOWS || len as u64 * nwin as u64 >= 1 << 31 {
            return Err(AccelError::invalid_input(format!(
                "precomputed bases: {len} points × {nwin} windows is past the table's limit"
            )));
        }
        self.check_free((nwin as usize + 1) * std::mem::size_of_val(bases))?;
        let s = &self.stream;
        let e = |what| driver_err(what);
        let mut prof = Profile::new(s);
        let plain = self.upload(bases)?;
        // SAFETY: points 0..len are copied below, the rest written by the kernel.
        let mut words = unsafe { s.alloc::<u64>(nwin as usize * bases.len()) }
            .map_err(e("allocating device memory"))?;
        s.memcpy_dtod(&plain, &mut words.slice_mut(..bases.len()))
            .map_err(e("copying on the device"))?;
        drop(plain);
        prof.mark("copy in");
        let (len32, stride) = (len as u32, len as u32);
        let pk = C::kernels(&self.kernels(C::Scalar::KERNELS)?.msm);
        let mut l = s.launch_builder(&pk.precompute);
        l.arg(&mut words)
            .arg(&len32)
            .arg(&stride)
            .arg(&c)
            .arg(&nwin);
        // SAFETY: one thread per point i < len writes entries w·len + i < nwin·len.
        unsafe { l.launch(grid_2d(len32, 1)) }.map_err(e("msm_precompute"))?;
        s.synchronize().map_err(e("synchronising"))?;
        prof.mark("msm_precompute");
        prof.report(&format!("precompute n={len} c={c} windows={nwin}"));
        Ok(FixedBases { words, len, c })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// BN254's XYZZ words as the host's points: a point with ZZ = ZZZ = 1
    /// is its affine self, and the identity (ZZ = 0) adds as the identity
    /// (as (0 : 0 : 0) it turned every window sum it met into itself).
    #[test]
    fn bn254_xyzz_words_become_host_points() {
        use halo2curves::ff::Field;
        let one = bn254::Fp::from_h2c(halo2curves::bn256::Fq::ONE).limbs;
        let g1 = bn254::G1Affine::generator();
        let words: Vec<u64> = [g1.x.limbs, g1.y.limbs, one, one].concat();
        assert_eq!(Bn254G1::from_xyzz(&words).to_affine(), g1);
        let id = Bn254G1::from_xyzz(&[0; 16]);
        let sum = Bn254G1::add(&id, &g1.to_projective());
        assert_eq!(
            Bn254G1::double(&sum).to_affine(),
            g1.mul(&bn254::Fr::from_u64(2)).to_affine()
        );

        let g2 = bn254::G2Affine::generator();
        let zero = [0u64; 4];
        let words: Vec<u64> = [
            g2.x.c[0].limbs,
            g2.x.c[1].limbs,
            g2.y.c[0].limbs,
            g2.y.c[1].limbs,
        ]
        .into_iter()
        .chain([one, zero, one, zero])
        .flatten()
        .collect();
        assert_eq!(Bn254G2::from_xyzz(&words).to_affine(), g2);
        let id = Bn254G2::from_xyzz(&[0; 32]);
        assert_eq!(Bn254G2::add(&id, &g2.to_projective()).to_affine(), g2);
    }

    #[test]
    fn plans_cover_every_bucket_and_bit() {
        for log_n in 0..=28 {
            let n = 1usize << log_n;
            let c = auto_window(n);
            let f = fixed_base_window(n);
            assert!((12..=20).contains(&f) && windows(f) <= FIXED_MAX_WINDOWS);
            for (c, folded) in [(c, false), (f, true), (12, true), (22, true)] {
                if folded && !folded_fits(n, c) {
                    continue;
                }
                let p = Plan::new(n, c, folded);
                assert!(p.windows * c >= 256, "signed digits need 256 bits");
                assert_eq!(p.segs * p.seg_len, p.nb - 1);
                let entries = p.sets as u64 * p.per_set as u64;
                assert_eq!(entries, p.windows as u64 * p.n as u64);
            }
        }
        // The fewest additions whose buckets keep ≥ 100 points on average.
        assert_eq!(
            [16, 20, 22, 24].map(|log| fixed_base_window(1 << log)),
            [14, 18, 20, 20]
        );
        assert_eq!((auto_window(1 << 10), auto_window(1 << 16)), (7, 13));
        let above = |log: u32| auto_window((1 << log) + 1);
        assert_eq!([above(18), above(24), above(25)], [16, 18, 18]);
        assert_eq!([auto_window(1 << 27), above(27)], [19, 20]);
        assert_eq!(auto_window(1 << 24), 16);
        // 2^28 points fold only with windows of 18 bits and more (15 windows).
        assert!(folded_fits(1 << 28, 18) && !folded_fits(1 << 28, 17));
        assert!(folded_fits(1 << 28, fixed_base_window(1 << 28)));
    }
}
