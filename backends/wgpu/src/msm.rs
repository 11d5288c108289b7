//! G1 and G2 MSMs of BLS12-381 and BN254 on the device (shaders/msm.wgsl,
//! one source, the curve's fields generated in): the device sorts points
//! into signed-digit buckets, sums the buckets in chunks and the chunk sums
//! in a tree, weighs the buckets in short ranges and merges neighbouring
//! ranges until a few per window are left; the host finishes those (blst
//! for BLS12-381, halo2curves for BN254) and combines the windows. MSMs
//! larger than the adapter's binding limit run in pieces.

use blst::{blst_fp, blst_fp_mul, blst_fp_sqr, blst_fp2, blst_fp2_mul, blst_fp2_sqr};
use zkpipe_core::plugin::{AccelError, ops};
use zkpipe_core::{Curve, Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, bn254};

use crate::gpu::{Gpu, as_bytes};
use crate::shader::FpLayout;
use crate::shape::{CHUNK, FAN, MSM_REDUCE_WORKGROUP_THREADS};

/// Buckets one reduce thread weighs (a power of two): 2·span dependent
/// additions. A thread per 64 buckets that also multiplied its sum by the
/// range's start (~2·(c − 1) more) left a large GPU mostly idle: too few
/// threads, each too long.
const REDUCE_SPAN: u32 = 8;
/// Merge passes run until at most this many groups per window are left for
/// the host.
const HOST_GROUPS: u32 = 64;

/// Window size, window count, buckets per window, reduce threads per window.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    pub c: u32,
    pub windows: u32,
    pub buckets: u32,
    pub threads: u32,
}

impl Plan {
    /// A plan for `n` points; `window_bits` 0 chooses.
    pub fn new(n: usize, window_bits: u32) -> Plan {
        // Widths whose top window keeps several bits (8: 7, 13: 8, 16: 15):
        // with 11, 12, 14 or 15 the top window's few buckets take n/8 to n/2
        // points each, which was orders of magnitude slower when one thread
        // summed one bucket.
        let c = if window_bits == 0 {
            match n {
                0..=2048 => 8,
                2049..=131072 => 13,
                _ => 16,
            }
        } else {
            window_bits.clamp(2, 20)
        };
        // Digits of a scalar < 2^255: the top window absorbs the last carry
        // unless 255 is a multiple of c.
        let windows = 255u32.div_ceil(c) + u32::from(255 % c == 0);
        let buckets = 1u32 << (c - 1);
        let span = buckets.min(REDUCE_SPAN);
        Plan {
            c,
            windows,
            buckets,
            threads: buckets / span,
        }
    }
}

/// A group the MSM shaders run over: a curve's G1 (coordinates in Fp) or
/// G2 (in Fp2).
pub(crate) trait Group {
    /// Affine points as the seam has them (the host's Montgomery limbs).
    type Affine: Copy;
    type Proj: Copy + Send;
    /// Scalars as the seam has them: 4 u64 Montgomery limbs, R = 2^256.
    type Scalar: Copy;
    const CURVE: Curve;
    /// Coordinates in Fp2 (the shaders' `g2` variant).
    const G2: bool;
    /// The op, for a refusal.
    const OP: &'static str;
    fn identity() -> Self::Proj;
    fn add(a: &Self::Proj, b: &Self::Proj) -> Self::Proj;
    fn double(a: &Self::Proj) -> Self::Proj;
    /// A device XYZZ point (4 coordinates of Fp elements as [`FpLayout`]
    /// holds them) in the seam's projective coordinates.
    fn from_xyzz(words: &[u32], fp: &FpLayout) -> Self::Proj;
}

/// BLS12-381's groups.
pub(crate) struct G1;
pub(crate) struct G2;
/// BN254's groups.
pub(crate) struct Bn254G1;
pub(crate) struct Bn254G2;

/// The little-endian u32 words of a device buffer.
fn words(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
        .collect()
}

// XYZZ (device form) → blst Jacobian: Z' = ZZZ, X' = X·ZZ², Y' = Y·ZZZ².
// As read ([`FpLayout::scaled`]) every Fp element carries a factor s =
// 2^(log2 R − 384) (in Fp2 both halves do: the element times s ∈ Fp);
// (X·ZZ²·s³, Y·ZZZ²·s³, ZZZ·s) is the right point scaled by λ = s but for
// one s too many in X': one multiplication by 1/s fixes it.

impl Group for G1 {
    type Affine = G1Affine;
    type Proj = G1Projective;
    type Scalar = zkpipe_core::Fr;
    const CURVE: Curve = Curve::Bls12_381;
    const G2: bool = false;
    const OP: &'static str = ops::MSM_G1;
    fn identity() -> G1Projective {
        G1Projective::identity()
    }
    fn add(a: &G1Projective, b: &G1Projective) -> G1Projective {
        a.add(b)
    }
    fn double(a: &G1Projective) -> G1Projective {
        a.double()
    }
    fn from_xyzz(words: &[u32], fp: &FpLayout) -> G1Projective {
        let c = |i: usize| blst_fp {
            l: fp.scaled(&words[i * fp.limbs..(i + 1) * fp.limbs]),
        };
        let (x, y, zz, zzz) = (c(0), c(1), c(2), c(3));
        if zz.l == [0; 6] {
            return G1Projective::identity();
        }
        let unscale = blst_fp { l: fp.unscale };
        let [mut t, mut xs, mut xo, mut yo] = [blst_fp::default(); 4];
        // SAFETY: valid pointers to initialised field elements below p.
        unsafe {
            blst_fp_sqr(&mut t, &zz);
            blst_fp_mul(&mut xs, &x, &t);
            blst_fp_mul(&mut xo, &xs, &unscale);
            blst_fp_sqr(&mut t, &zzz);
            blst_fp_mul(&mut yo, &y, &t);
        }
        G1Projective {
            x: Fp { limbs: xo.l },
            y: Fp { limbs: yo.l },
            z: Fp { limbs: zzz.l },
        }
    }
}

impl Group for G2 {
    type Affine = G2Affine;
    type Proj = G2Projective;
    type Scalar = zkpipe_core::Fr;
    const CURVE: Curve = Curve::Bls12_381;
    const G2: bool = true;
    const OP: &'static str = ops::MSM_G2;
    fn identity() -> G2Projective {
        G2Projective::identity()
    }
    fn add(a: &G2Projective, b: &G2Projective) -> G2Projective {
        a.add(b)
    }
    fn double(a: &G2Projective) -> G2Projective {
        a.double()
    }
    fn from_xyzz(words: &[u32], fp: &FpLayout) -> G2Projective {
        let l = fp.limbs;
        let e = |k: usize| blst_fp {
            l: fp.scaled(&words[k * l..(k + 1) * l]),
        };
        let c = |i: usize| blst_fp2 {
            fp: [e(2 * i), e(2 * i + 1)],
        };
        let (x, y, zz, zzz) = (c(0), c(1), c(2), c(3));
        if zz.fp.iter().all(|e| e.l == [0; 6]) {
            return G2Projective::identity();
        }
        let unscale = blst_fp { l: fp.unscale };
        let [mut t, mut xs, mut xo, mut yo] = [blst_fp2::default(); 4];
        // SAFETY: valid pointers to initialised field elements below p.
        unsafe {
            blst_fp2_sqr(&mut t, &zz);
            blst_fp2_mul(&mut xs, &x, &t);
            for k in 0..2 {
                blst_fp_mul(&mut xo.fp[k], &xs.fp[k], &unscale);
            }
            blst_fp2_sqr(&mut t, &zzz);
            blst_fp2_mul(&mut yo, &y, &t);
        }
        let fp2 = |e: blst_fp2| Fp2 {
            c: e.fp.map(|f| Fp { limbs: f.l }),
        };
        G2Projective {
            x: fp2(xo),
            y: fp2(yo),
            z: fp2(zzz),
        }
    }
}

// XYZZ (device form) → BN254's homogeneous projective: (X·ZZZ, Y·ZZ,
// ZZ·ZZZ), since x = X/ZZ and y = Y/ZZZ. Every element as read carries the
// factor s = R/H (Fp2: both halves), so each coordinate carries s²: the
// same point, with no correction.

/// BN254's Fp element `k` (device limbs) of `words`, times s, in halo2curves' form.
fn bn254_fp(words: &[u32], k: usize, fp: &FpLayout) -> bn254::Fp {
    let l = fp.scaled(&words[k * fp.limbs..(k + 1) * fp.limbs]);
    bn254::Fp {
        limbs: l[..4].try_into().unwrap(),
    }
}

impl Group for Bn254G1 {
    type Affine = bn254::G1Affine;
    type Proj = bn254::G1Projective;
    type Scalar = bn254::Fr;
    const CURVE: Curve = Curve::Bn254;
    const G2: bool = false;
    const OP: &'static str = ops::bn254::MSM_G1;
    fn identity() -> bn254::G1Projective {
        bn254::G1Projective::identity()
    }
    fn add(a: &bn254::G1Projective, b: &bn254::G1Projective) -> bn254::G1Projective {
        a.add(b)
    }
    fn double(a: &bn254::G1Projective) -> bn254::G1Projective {
        a.add(a) // halo2curves' addition is complete
    }
    fn from_xyzz(words: &[u32], fp: &FpLayout) -> bn254::G1Projective {
        let [x, y, zz, zzz] = [0, 1, 2, 3].map(|k| bn254_fp(words, k, fp));
        if zz.limbs == [0; 4] {
            return bn254::G1Projective::identity();
        }
        let (x, y, zz, zzz) = (x.h2c(), y.h2c(), zz.h2c(), zzz.h2c());
        bn254::G1Projective {
            x: bn254::Fp::from_h2c(x * zzz),
            y: bn254::Fp::from_h2c(y * zz),
            z: bn254::Fp::from_h2c(zz * zzz),
        }
    }
}

impl Group for Bn254G2 {
    type Affine = bn254::G2Affine;
    type Proj = bn254::G2Projective;
    type Scalar = bn254::Fr;
    const CURVE: Curve = Curve::Bn254;
    const G2: bool = true;
    const OP: &'static str = ops::bn254::MSM_G2;
    fn identity() -> bn254::G2Projective {
        bn254::G2Projective::identity()
    }
    fn add(a: &bn254::G2Projective, b: &bn254::G2Projective) -> bn254::G2Projective {
        a.add(b)
    }
    fn double(a: &bn254::G2Projective) -> bn254::G2Projective {
        a.add(a) // halo2curves' addition is complete
    }
    fn from_xyzz(words: &[u32], fp: &FpLayout) -> bn254::G2Projective {
        let c = |i: usize| bn254::Fp2 {
            c: [bn254_fp(words, 2 * i, fp), bn254_fp(words, 2 * i + 1, fp)],
        };
        let [x, y, zz, zzz] = [0, 1, 2, 3].map(c);
        if zz.c.iter().all(|e| e.limbs == [0; 4]) {
            return bn254::G2Projective::identity();
        }
        let (x, y, zz, zzz) = (x.h2c(), y.h2c(), zz.h2c(), zzz.h2c());
        bn254::G2Projective {
            x: bn254::Fp2::from_h2c(x * zzz),
            y: bn254::Fp2::from_h2c(y * zz),
            z: bn254::Fp2::from_h2c(zz * zzz),
        }
    }
}

/// Bases on one device, in buffers of at most one storage binding each
/// (lengths in points, every buffer but the last full).
pub(crate) struct DeviceBases {
    pub pieces: Vec<(wgpu::Buffer, usize)>,
    pub len: usize,
    pub curve: Curve,
    /// G2 points (else G1).
    pub g2: bool,
}

/// Overflow chunk slots per window for `n` points: Σ_b (⌈count_b/CHUNK⌉ − 1)
/// < n/CHUNK; at least the pairs of the first merge pass, which reuses them.
fn overflow_slots(n: u64, plan: &Plan) -> u64 {
    let ocap = n.div_ceil(CHUNK as u64);
    ocap.max(2 * (plan.threads as u64).div_ceil(FAN as u64))
}

/// Fp elements in one coordinate: 1 in G1, 2 in G2.
fn coord_fps(g2: bool) -> u64 {
    if g2 { 2 } else { 1 }
}

impl Gpu {
    /// Bytes of one XYZZ point of `G` on the device.
    fn xyzz_bytes<G: Group>(&self) -> u64 {
        4 * coord_fps(G::G2) * self.fp(G::CURVE).bytes()
    }

    /// Bytes of one affine base of `G` on the device.
    fn base_bytes<G: Group>(&self) -> u64 {
        2 * coord_fps(G::G2) * self.fp(G::CURVE).bytes()
    }

    /// Points a bases binding may start at: offsets are multiples of the
    /// adapter's storage offset alignment.
    fn point_align<G: Group>(&self) -> usize {
        let a = self.limits.min_storage_buffer_offset_alignment.max(1) as usize;
        let b = self.base_bytes::<G>() as usize;
        let (mut x, mut y) = (a, b);
        while y != 0 {
            (x, y) = (y, x % y);
        }
        a / x // lcm(a, b) / b
    }

    /// Checks that every buffer of an MSM of `n` points fits one binding.
    ///
    /// # Errors
    /// `INVALID_INPUT` naming the first buffer that does not.
    fn check_msm_bindings<G: Group>(&self, n: u64, window_bits: u32) -> Result<(), AccelError> {
        let plan = Plan::new(n as usize, window_bits);
        let (w, nb, nt) = (
            plan.windows as u64,
            plan.buckets as u64,
            plan.threads as u64,
        );
        let xyzz_bytes = self.xyzz_bytes::<G>();
        self.check_binding("the MSM's bases", n * self.base_bytes::<G>())?;
        self.check_binding("the MSM's sorted indices", w * n * 4)?;
        self.check_binding("the MSM's bucket tables", (3 * w * nb + w) * 4)?;
        self.check_binding("the MSM's buckets", w * nb * xyzz_bytes)?;
        self.check_binding("the MSM's partials", 2 * w * nt * xyzz_bytes)?;
        self.check_binding(
            "the MSM's chunk sums",
            w * overflow_slots(n, &plan) * xyzz_bytes,
        )
    }

    /// Points per piece and window bits for an MSM of `n` points whose
    /// buffers each fit one binding: the whole MSM if it fits, else pieces
    /// halved (bindable offsets apart) until one does; when even the
    /// smallest piece does not (the bucket tables alone are too large, as
    /// for G2 under a 1 MiB cap) and the window is automatic, narrower
    /// windows, then pieces as large as that window allows.
    ///
    /// # Errors
    /// `INVALID_INPUT` naming the buffer that does not fit.
    fn msm_shape<G: Group>(&self, n: usize, window_bits: u32) -> Result<(usize, u32), AccelError> {
        let fits = |piece: usize, bits: u32| self.check_msm_bindings::<G>(piece as u64, bits);
        let align = self.point_align::<G>();
        let mut piece = n;
        let mut bits = window_bits;
        while let Err(e) = fits(piece, bits) {
            if piece > align {
                piece = (piece / 2 / align).max(1) * align;
                continue;
            }
            let c = Plan::new(piece, bits).c;
            if window_bits != 0 || c <= 2 {
                return Err(e);
            }
            bits = c - 1;
            while fits(piece, bits).is_ok() && piece < n && fits((2 * piece).min(n), bits).is_ok() {
                piece = (2 * piece).min(n);
            }
        }
        // Every piece, a shorter last one too, runs this window.
        Ok((piece, Plan::new(piece, bits).c))
    }

    /// `Σ scalars[i]·bases[i]` over the first `scalars.len()` points of
    /// `bases`. Runs in pieces of as many points as fit the binding limit
    /// (halved until they do), added on the host.
    ///
    /// # Errors
    /// `INVALID_INPUT` when even a piece of a few points does not fit (a
    /// window too wide for the limit); device errors.
    pub(crate) fn msm<G: Group>(
        &self,
        bases: &DeviceBases,
        scalars: &[G::Scalar],
        window_bits: u32,
    ) -> Result<G::Proj, AccelError> {
        let n = scalars.len();
        if n >= 1 << 31 {
            return Err(AccelError::invalid_input("MSM of 2^31 points or more"));
        }
        if (bases.curve, bases.g2) != (G::CURVE, G::G2) {
            let group = |curve: Curve, g2: bool| format!("{} G{}", curve.name(), 1 + u8::from(g2));
            return Err(AccelError::invalid_input(format!(
                "the resident bases are {} points, the MSM is over {}",
                group(bases.curve, bases.g2),
                group(G::CURVE, G::G2)
            )));
        }
        let (piece, window_bits) = self.msm_shape::<G>(n, window_bits)?;
        let mut sum = G::identity();
        let base_bytes = self.base_bytes::<G>();
        let mut first = 0; // of the current buffer
        for (buffer, len) in &bases.pieces {
            let end = (first + len).min(n);
            for lo in (first..end).step_by(piece.max(1)) {
                let hi = (lo + piece).min(end);
                let binding = wgpu::BufferBinding {
                    buffer,
                    offset: (lo - first) as u64 * base_bytes,
                    size: wgpu::BufferSize::new((hi - lo) as u64 * base_bytes),
                };
                let piece = self.msm_piece::<G>(binding, &scalars[lo..hi], window_bits)?;
                sum = G::add(&sum, &piece);
            }
            first += len;
            if first >= n {
                break;
            }
        }
        Ok(sum)
    }

    /// One piece of [`Gpu::msm`]: `bases` binds exactly `scalars.len()`
    /// points, and every buffer fits a binding.
    fn msm_piece<G: Group>(
        &self,
        bases: wgpu::BufferBinding<'_>,
        scalars: &[G::Scalar],
        window_bits: u32,
    ) -> Result<G::Proj, AccelError> {
        let n = scalars.len();
        let plan = Plan::new(n, window_bits);
        let (w, nb, nt) = (
            plan.windows as u64,
            plan.buckets as u64,
            plan.threads as u64,
        );
        let ocap = (n as u64).div_ceil(CHUNK as u64);
        // Merge passes (shaders/msm.wgsl): groups per window and their
        // width before each, as m | log2(width) << 24 | direction << 31.
        let mut merges = Vec::new();
        let (mut m, mut wlog) = (plan.threads, (plan.buckets / plan.threads).ilog2());
        while m > HOST_GROUPS {
            merges.push(m | wlog << 24 | (merges.len() as u32 % 2) << 31);
            m = m.div_ceil(FAN);
            wlog += FAN.ilog2();
        }
        let host_groups = m as u64;
        let xyzz_bytes = self.xyzz_bytes::<G>();
        let oslots = overflow_slots(n as u64, &plan);
        let k = self.msm_kernels(G::CURVE, G::G2)?;
        let fp = self.fp(G::CURVE);
        let busy = self.busy.lock().unwrap();
        let partial_bytes = 2 * w * host_groups * xyzz_bytes;
        // After an odd number of merges the groups are in `overflow`.
        let in_overflow = merges.len() % 2 == 1;
        let out = self.scoped(|| {
            use wgpu::BufferUsages as U;
            let sc = self.scratch("msm scalars", n as u64 * 32, U::COPY_DST);
            self.write(&sc, as_bytes(scalars))?;
            // Bucket sizes are counted up from zero; nothing else is read
            // before it is written.
            let table_bytes = (3 * w * nb + w) * 4;
            let tables = self.scratch("msm tables", table_bytes, U::COPY_DST);
            let mut enc = self.device.create_command_encoder(&Default::default());
            enc.clear_buffer(&tables, 0, Some(table_bytes));
            self.queue.submit([enc.finish()]);
            let sorted = self.scratch("msm sorted", w * n as u64 * 4, U::empty());
            let buckets = self.scratch("msm buckets", w * nb * xyzz_bytes, U::empty());
            let overflow = self.scratch("msm chunk sums", w * oslots * xyzz_bytes, U::COPY_SRC);
            let partials = self.scratch("msm partials", 2 * w * nt * xyzz_bytes, U::COPY_SRC);
            // One bind group per tree stride (the only parameter that changes).
            let bind = |stride: u32| {
                let prm = self.params([
                    n as u32,
                    plan.c,
                    plan.windows,
                    plan.buckets,
                    plan.threads,
                    plan.buckets / plan.threads,
                    ocap as u32,
                    stride,
                ]);
                self.bind_group(
                    &k,
                    &[
                        (0, prm.as_entire_binding()),
                        (1, sc.as_entire_binding()),
                        (2, wgpu::BindingResource::Buffer(bases.clone())),
                        (3, tables.as_entire_binding()),
                        (4, sorted.as_entire_binding()),
                        (5, buckets.as_entire_binding()),
                        (6, overflow.as_entire_binding()),
                        (7, partials.as_entire_binding()),
                    ],
                )
            };
            let main = bind(0);
            // Strides 1, FAN, FAN², … below the most chunks a bucket can have;
            // a window whose buckets are done skips the rest at once.
            let trees: Vec<wgpu::BindGroup> = std::iter::successors(Some(1u32), |s| Some(s * FAN))
                .take_while(|&s| (s as u64) < ocap)
                .map(bind)
                .collect();
            let chunks = self.grid(w * (nb + ocap));
            let mut steps = vec![
                ("digits", &main, self.grid(n as u64)),
                ("scan", &main, (plan.windows, 1)),
                ("scatter", &main, self.grid(n as u64)),
                ("chunk", &main, chunks),
            ];
            steps.extend(trees.iter().map(|bg| ("tree", bg, chunks)));
            let reduce_groups = (w * nt).div_ceil(MSM_REDUCE_WORKGROUP_THREADS) as u32;
            steps.push(("reduce", &main, (reduce_groups, 1)));
            let merge_steps: Vec<(wgpu::BindGroup, u32)> = merges
                .iter()
                .map(|&f| {
                    let m = (f & 0xff_ffff) as u64;
                    let threads = w * m.div_ceil(FAN as u64);
                    (
                        bind(f),
                        threads.div_ceil(MSM_REDUCE_WORKGROUP_THREADS) as u32,
                    )
                })
                .collect();
            steps.extend(merge_steps.iter().map(|(bg, x)| ("merge", bg, (*x, 1))));
            let enc = self.dispatch(&k, &steps)?;
            let result = if in_overflow { &overflow } else { &partials };
            self.finish_and_read(enc, result, partial_bytes)
        })?;
        drop(busy); // the rest is host work
        // Window sums from the groups (A_i, R_i) of width 2^wlog, as a merge
        // pass would: Σ A_i + 2^wlog·Σ i·R_i (one thread per window), then
        // Horner from the top: acc·2^c + S_w.
        let t = std::time::Instant::now();
        let window_sum = |win: &[u8]| {
            let pairs: Vec<(G::Proj, G::Proj)> = win
                .chunks_exact(2 * xyzz_bytes as usize)
                .map(|p| {
                    let (a, r) = p.split_at(xyzz_bytes as usize);
                    (G::from_xyzz(&words(a), fp), G::from_xyzz(&words(r), fp))
                })
                .collect();
            let (mut run, mut weighted) = (G::identity(), G::identity());
            for (_, r) in pairs.iter().skip(1).rev() {
                run = G::add(&run, r);
                weighted = G::add(&weighted, &run);
            }
            for _ in 0..wlog {
                weighted = G::double(&weighted);
            }
            pairs.iter().fold(weighted, |acc, (a, _)| G::add(&acc, a))
        };
        let windows = out.chunks_exact((2 * host_groups * xyzz_bytes) as usize);
        let sums: Vec<G::Proj> = if host_groups < 16 {
            windows.map(window_sum).collect() // a thread would cost more
        } else {
            std::thread::scope(|sc| {
                let threads: Vec<_> = windows
                    .map(|win| sc.spawn(move || window_sum(win)))
                    .collect();
                threads
                    .into_iter()
                    .map(|h| h.join().expect("a window sum panicked"))
                    .collect()
            })
        };
        let mut acc = G::identity();
        for sum in sums.iter().rev() {
            for _ in 0..plan.c {
                acc = G::double(&acc);
            }
            acc = G::add(&acc, sum);
        }
        if std::env::var_os("ZKPIPE_WGPU_TRACE").is_some() {
            let ms = t.elapsed().as_secs_f64() * 1e3;
            eprintln!(
                "wgpu: msm host sum of {} groups {ms:.3} ms",
                out.len() / (2 * xyzz_bytes) as usize
            );
        }
        Ok(acc)
    }

    /// Copies bases to the device in the MSM's Fp form (shaders/bases.wgsl),
    /// in buffers of one binding each.
    ///
    /// # Errors
    /// `OUT_OF_MEMORY`; device errors.
    pub(crate) fn upload_bases<G: Group>(
        &self,
        bases: &[G::Affine],
    ) -> Result<DeviceBases, AccelError> {
        // Whole multiples of the offset alignment, so that MSM pieces start
        // on bindable offsets. The host's form (blst's 96 bytes a G1 point,
        // 192 a G2 one; halo2curves' 64 and 128) is the smaller one.
        let align = self.point_align::<G>();
        let base_bytes = self.base_bytes::<G>();
        let per_buffer = ((self.max_binding / base_bytes) as usize / align * align).max(align);
        let k = self.bases_kernels(G::CURVE, G::G2)?;
        let pieces = bases
            .chunks(per_buffer)
            .map(|c| {
                let buf = self.scoped(|| {
                    let raw = self.upload(
                        "bases (host form)",
                        as_bytes(c),
                        wgpu::BufferUsages::empty(),
                    )?;
                    let out = self.buffer(
                        "bases",
                        c.len() as u64 * base_bytes,
                        wgpu::BufferUsages::empty(),
                    );
                    let prm = self.params([c.len() as u32, 0, 0, 0, 0, 0, 0, 0]);
                    let bg = self.bind_group(
                        &k,
                        &[
                            (0, prm.as_entire_binding()),
                            (1, raw.as_entire_binding()),
                            (2, out.as_entire_binding()),
                        ],
                    );
                    let enc = self.dispatch(&k, &[("convert", &bg, self.grid(c.len() as u64))])?;
                    self.queue.submit([enc.finish()]);
                    Ok(out)
                })?;
                Ok((buf, c.len()))
            })
            .collect::<Result<_, AccelError>>()?;
        Ok(DeviceBases {
            pieces,
            len: bases.len(),
            curve: G::CURVE,
            g2: G::G2,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Plan;

    #[test]
    fn plans() {
        for n in [1usize, 2, 3, 5, 100, 4097, 1 << 20, 1 << 26] {
            let p = Plan::new(n, 0);
            assert!(p.c * p.windows >= 255, "{n}: {p:?}");
            assert_eq!(p.buckets % p.threads, 0);
        }
        assert_eq!(Plan::new(1 << 20, 0).c, 16);
        assert_eq!(Plan::new(1 << 20, 0).windows, 16);
        assert_eq!(Plan::new(4096, 15).windows, 18);
    }
}
