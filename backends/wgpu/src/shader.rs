//! WGSL assembly: the multiply-accumulate variant (u32 emulation or 64-bit
//! integers), the generated field code for a curve's Fr and Fp, then the op
//! shaders. One source per op serves both curves: BLS12-381 and BN254 differ
//! only in the constants generated here (moduli, limb counts, the words of
//! a host element), and both keep Fr in 8 u32 words (R = 2^256).

use blst::blst_fp;
use zkpipe_core::{Curve, Fr, bn254};

use crate::{field, shape};

const MAC_U32: &str = include_str!("../shaders/mac_u32.wgsl");
const MAC_U64: &str = include_str!("../shaders/mac_u64.wgsl");
const NTT: &str = include_str!("../shaders/ntt.wgsl");
const MSM: &str = include_str!("../shaders/msm.wgsl");
const BASES: &str = include_str!("../shaders/bases.wgsl");
const SPMV: &str = include_str!("../shaders/spmv.wgsl");
const QUOTIENT: &str = include_str!("../shaders/quotient.wgsl");

/// Little-endian u32 limbs of little-endian u64 limbs.
pub(crate) fn u32_limbs(l: &[u64]) -> Vec<u32> {
    l.iter()
        .flat_map(|&v| [v as u32, (v >> 32) as u32])
        .collect()
}

fn wgsl_list(l: &[u32]) -> String {
    l.iter()
        .map(|v| format!("0x{v:08x}u"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn u64_limbs(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The curve's r: for BLS12-381 from blst (the canonical form of −1, plus
/// one), for BN254 from core.
fn fr_modulus(curve: Curve) -> Vec<u64> {
    match curve {
        Curve::Bls12_381 => {
            let mut l = u64_limbs(&Fr::one().neg().to_bytes_le());
            l[0] += 1; // r − 1 is even: no carry
            l
        }
        Curve::Bn254 => u64_limbs(&Curve::Bn254.scalar_modulus_le()),
    }
}

/// The curve's p: for BLS12-381 from blst (the canonical form of −1, plus
/// one), for BN254 from core.
fn fp_modulus(curve: Curve) -> Vec<u64> {
    match curve {
        Curve::Bls12_381 => {
            let one = fp_from_u64(1);
            let mut minus_one = blst::blst_fp::default();
            let mut bytes = [0u8; 48];
            // SAFETY: valid pointers to blst values; `bytes` has 48 bytes.
            unsafe {
                blst::blst_fp_cneg(&mut minus_one, &one, true);
                blst::blst_lendian_from_fp(bytes.as_mut_ptr(), &minus_one);
            }
            let mut l = u64_limbs(&bytes);
            l[0] += 1; // p − 1 is even
            l
        }
        Curve::Bn254 => bn254::Fp::MODULUS.to_vec(),
    }
}

fn field(prefix: &str, modulus: &[u64]) -> String {
    field::wgsl(prefix, &u32_limbs(modulus))
}

fn prelude(int64: bool, curve: Curve) -> String {
    let mac = if int64 { MAC_U64 } else { MAC_U32 };
    let r = fr_modulus(curve);
    // ntt.wgsl, msm.wgsl and the accessors here read Fr as 8 words.
    assert_eq!(r.len(), 4, "{curve:?}'s Fr is not 256-bit");
    format!("{mac}\n{}", field("Fr", &r))
}

/// Binding numbers of piece `k` of the NTT's data and of its table
/// (piece 0 at 0 and 1; the parameters at 2).
pub(crate) fn ntt_bindings(k: u32) -> (u32, u32) {
    if k == 0 { (0, 1) } else { (2 + k, 5 + k) }
}

/// The NTT's bindings and element accessors for data and table split over
/// `pieces` buffers each (one: no split).
fn ntt_io(pieces: u32) -> String {
    let mut s = "@group(0) @binding(2) var<uniform> prm: Params;\n".to_string();
    for k in 0..pieces {
        let (d, t) = ntt_bindings(k);
        s += &format!(
            "@group(0) @binding({d}) var<storage, read_write> data{k}: array<u32>;\n\
             @group(0) @binding({t}) var<storage, read> table{k}: array<u32>;\n"
        );
    }
    let fr = |buf: &str| {
        let w: Vec<String> = (0..8).map(|j| format!("{buf}[o + {j}u]")).collect();
        format!("Fr_t({})", w.join(", "))
    };
    // Element i of piece i >> piece_log, through a switch on the piece.
    let by_piece = |body: &dyn Fn(u32) -> String| {
        if pieces == 1 {
            return format!("  let o = 8u * i;\n  {}\n", body(0));
        }
        let mut c =
            "  let o = 8u * (i & ((1u << prm.piece_log) - 1u));\n  switch (i >> prm.piece_log) {\n"
                .to_string();
        for k in 1..pieces {
            c += &format!("    case {k}u: {{ {} }}\n", body(k));
        }
        c + &format!("    default: {{ {} }}\n  }}\n", body(0))
    };
    s += &format!(
        "fn ld(i: u32) -> Fr_t {{\n{}}}\n",
        by_piece(&|k| format!("return {};", fr(&format!("data{k}"))))
    );
    s += &format!(
        "fn st(i: u32, v: Fr_t) {{\n{}}}\n",
        by_piece(&|k| format!("for (var j = 0u; j < 8u; j++) {{ data{k}[o + j] = v[j]; }}"))
    );
    s += &format!(
        "fn tw(i: u32) -> Fr_t {{\n{}}}\n",
        by_piece(&|k| format!("return {};", fr(&format!("table{k}"))))
    );
    s
}

/// The NTT module over `curve`'s Fr; `int64`: multiply through 64-bit
/// integers (SHADER_INT64); tiles of 2^`tile_log` elements in workgroup
/// memory; data and tables in `pieces` buffers each (see ntt.rs).
pub(crate) fn ntt(curve: Curve, int64: bool, tile_log: u32, pieces: u32) -> String {
    format!(
        "{}\nconst TILE: u32 = {}u;\nconst TILE_WG: u32 = {}u;\n{NTT}\n{}",
        prelude(int64, curve),
        1u32 << tile_log,
        shape::tile_threads(tile_log),
        ntt_io(pieces),
    )
}

/// The SpMV module's bindings (see spmv.wgsl) and its witness accessor
/// `wit(j)`: variable j of `inputs ‖ aux`, the private part in
/// `aux_pieces` buffers of 2^`prm.aux_log` elements.
fn spmv_io(aux_pieces: u32) -> String {
    let mut s = "@group(0) @binding(0) var<uniform> prm: Params;\n\
                 @group(0) @binding(1) var<storage, read> starts: array<u32>;\n\
                 @group(0) @binding(2) var<storage, read> cols: array<u32>;\n\
                 @group(0) @binding(3) var<storage, read> vals: array<u32>;\n\
                 @group(0) @binding(4) var<storage, read_write> out: array<u32>;\n\
                 @group(0) @binding(5) var<storage, read> inp: array<u32>;\n"
        .to_string();
    for k in 0..aux_pieces {
        s += &format!(
            "@group(0) @binding({}) var<storage, read> aux{k}: array<u32>;\n",
            6 + k
        );
    }
    let fr = |buf: &str| {
        let w: Vec<String> = (0..8).map(|j| format!("{buf}[o + {j}u]")).collect();
        format!("return Fr_t({});", w.join(", "))
    };
    s += &format!(
        "fn wit(j: u32) -> Fr_t {{\n  if (j < prm.ni) {{ let o = 8u * j; {} }}\n  let i = j - prm.ni;\n",
        fr("inp")
    );
    if aux_pieces == 1 {
        return s + &format!("  let o = 8u * i;\n  {}\n}}\n", fr("aux0"));
    }
    s += "  let o = 8u * (i & ((1u << prm.aux_log) - 1u));\n  switch (i >> prm.aux_log) {\n";
    for k in 1..aux_pieces {
        s += &format!("    case {k}u: {{ {} }}\n", fr(&format!("aux{k}")));
    }
    s + &format!("    default: {{ {} }}\n  }}\n}}\n", fr("aux0"))
}

/// The SpMV module (spmv.wgsl) for a private witness in `aux_pieces`
/// buffers; `int64` as for [`ntt`].
pub(crate) fn spmv(int64: bool, aux_pieces: u32) -> String {
    format!(
        "{}\nconst SEG: u32 = {}u;\nconst ONE: u32 = 0x{:08x}u;\n{}{SPMV}",
        prelude(int64, Curve::Bls12_381),
        shape::SPMV_SEGMENT,
        shape::SPMV_ONE_BIT,
        spmv_io(aux_pieces),
    )
}

/// The quotient's pointwise module (quotient.wgsl); `int64` as for [`ntt`].
pub(crate) fn quotient(int64: bool) -> String {
    format!("{}\n{QUOTIENT}", prelude(int64, Curve::Bls12_381))
}

/// An element of a curve's Fp on the host, in that curve's Montgomery form:
/// blst's six limbs (H = 2^384) for BLS12-381, halo2curves' four (H =
/// 2^256) for BN254, the limbs above them zero.
pub(crate) type HostFp = [u64; 6];

fn bn254_fp(a: &HostFp) -> bn254::Fp {
    bn254::Fp {
        limbs: a[..4].try_into().unwrap(),
    }
}

fn padded(l: &[u64]) -> HostFp {
    let mut out = [0u64; 6];
    out[..l.len()].copy_from_slice(l);
    out
}

/// `a·b` in `curve`'s Fp (blst or halo2curves).
pub(crate) fn host_mul(curve: Curve, a: &HostFp, b: &HostFp) -> HostFp {
    match curve {
        Curve::Bls12_381 => {
            let mut out = blst_fp::default();
            // SAFETY: valid pointers to field elements.
            unsafe { blst::blst_fp_mul(&mut out, &blst_fp { l: *a }, &blst_fp { l: *b }) };
            out.l
        }
        Curve::Bn254 => padded(&bn254::Fp::from_h2c(bn254_fp(a).h2c() * bn254_fp(b).h2c()).limbs),
    }
}

/// The element `v` of `curve`'s Fp.
pub(crate) fn host_from_u64(curve: Curve, v: u64) -> HostFp {
    match curve {
        Curve::Bls12_381 => fp_from_u64(v).l,
        Curve::Bn254 => {
            let mut bytes = [0u8; 32];
            bytes[..8].copy_from_slice(&v.to_le_bytes());
            padded(&bn254::Fp::from_bytes_le(&bytes).expect("below p").limbs)
        }
    }
}

/// `1/a` for a nonzero `a` of `curve`'s Fp: blst's inverse, or a^(p−2)
/// for BN254 (halo2curves' `invert` is a trait method; the operators need
/// no import).
fn host_inverse(curve: Curve, a: &HostFp) -> HostFp {
    match curve {
        Curve::Bls12_381 => {
            let mut out = blst_fp::default();
            // SAFETY: valid pointers to blst values.
            unsafe { blst::blst_fp_inverse(&mut out, &blst_fp { l: *a }) };
            out.l
        }
        Curve::Bn254 => {
            let mut e = bn254::Fp::MODULUS;
            e[0] -= 2; // p is odd and its low limb above 2: no borrow
            let x = bn254_fp(a).h2c();
            let mut acc = bn254_fp(&host_from_u64(curve, 1)).h2c();
            for bit in (0..256).rev() {
                acc = acc * acc;
                if e[bit / 64] >> (bit % 64) & 1 == 1 {
                    acc *= x;
                }
            }
            padded(&bn254::Fp::from_h2c(acc).limbs)
        }
    }
}

/// How the MSM's shaders hold an element of a curve's Fp
/// (field::narrow_wgsl): limbs of 28 bits summed in 64-bit integers, or of
/// 13 bits in u32 ones, Montgomery form with R = 2^(bits·limbs), values in
/// [0, 2p).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FpLayout {
    pub curve: Curve,
    pub bits: u32,
    pub limbs: usize,
    /// Column sums in 64-bit integers (28-bit limbs), else in u32.
    wide: bool,
    /// u64 limbs of a host element: 6 for BLS12-381, 4 for BN254.
    host_limbs: usize,
    /// s = R/H in the host's form: the host limbs of e·s are the device's
    /// integer e·R mod p.
    scale: HostFp,
    /// 1/s in the host's form: a device value read by [`FpLayout::scaled`]
    /// times this is that value in the host's form.
    pub unscale: HostFp,
    /// p, the host's limbs.
    p: HostFp,
}

impl FpLayout {
    pub fn new(curve: Curve, int64: bool) -> FpLayout {
        let bits = if int64 {
            shape::FP_LIMB_BITS_INT64
        } else {
            shape::FP_LIMB_BITS_U32
        };
        let p = fp_modulus(curve);
        let host_limbs = p.len();
        let limbs = field::narrow_len(&u32_limbs(&p), bits);
        let shift = bits as usize * limbs - 64 * host_limbs;
        assert!(shift < 64, "{curve:?}: R/H = 2^{shift}");
        let scale = host_from_u64(curve, 1 << shift);
        FpLayout {
            curve,
            bits,
            limbs,
            wide: int64,
            host_limbs,
            scale,
            unscale: host_inverse(curve, &scale),
            p: padded(&p),
        }
    }

    /// Bytes of one element on the device.
    pub fn bytes(&self) -> u64 {
        4 * self.limbs as u64
    }

    /// u32 words of one element in the host's form, as bases arrive.
    pub fn host_words(&self) -> usize {
        2 * self.host_limbs
    }

    /// The device form of the element `e` (the host's form): the integer
    /// e·R mod p in limbs of `bits` bits.
    pub fn device_form(&self, e: &HostFp) -> Vec<u32> {
        let out = host_mul(self.curve, e, &self.scale);
        field::narrow_limbs(&u32_limbs(&out[..self.host_limbs]), self.bits, self.limbs)
    }

    /// A device element (limbs below 2^bits, value < 2p) as the host's form
    /// of that element times s = R/H: its integer, reduced below p.
    pub fn scaled(&self, limbs: &[u32]) -> HostFp {
        // 2p < 2^383 for either curve: six words hold the value.
        let mut w = [0u64; 7];
        let (mut acc, mut have, mut i) = (0u128, 0u32, 0usize);
        for &l in limbs {
            acc |= (l as u128) << have;
            have += self.bits;
            if have >= 64 {
                w[i] = acc as u64;
                (acc, have, i) = (acc >> 64, have - 64, i + 1);
            }
        }
        w[i] = acc as u64;
        let p = &self.p;
        let below_p = (0..6)
            .rev()
            .find(|&k| w[k] != p[k])
            .is_some_and(|k| w[k] < p[k]);
        if !below_p {
            let mut borrow = 0u64;
            for k in 0..6 {
                let (d, b1) = w[k].overflowing_sub(p[k]);
                let (d, b2) = d.overflowing_sub(borrow);
                (w[k], borrow) = (d, u64::from(b1 | b2));
            }
        }
        w[..6].try_into().unwrap()
    }
}

fn fp_from_u64(v: u64) -> blst_fp {
    let mut e = blst_fp::default();
    // SAFETY: blst reads six limbs.
    unsafe { blst::blst_fp_from_uint64(&mut e, [v, 0, 0, 0, 0, 0].as_ptr()) };
    e
}

/// The MSM's Fp code in `layout`, with FP_ONE and FP_CONV (bases.wgsl).
fn fp_narrow(layout: &FpLayout) -> String {
    let (bits, nl) = (layout.bits, layout.limbs);
    format!(
        "{}\n{}const FP_ONE = Fp_t({});\nconst FP_CONV = Fp_t({});\n",
        field::narrow_wgsl(
            "Fp",
            &u32_limbs(&layout.p[..layout.host_limbs]),
            bits,
            layout.wide
        ),
        field::narrow_from_words("Fp", layout.host_words(), bits, nl),
        wgsl_list(&layout.device_form(&host_from_u64(layout.curve, 1))),
        // R²/H is the device form of the element s = R/H.
        wgsl_list(&layout.device_form(&layout.scale)),
    )
}

/// The coordinate field Fq of the MSM's curve: Fp for G1, Fp2 = Fp[u]/(u² + 1)
/// for G2 (products by Karatsuba: three Fp products, a square two).
fn fq(g2: bool) -> &'static str {
    if g2 {
        "struct Fq_t { c0: Fp_t, c1: Fp_t }
const Fq_W: u32 = 2u * Fp_NL;
const FQ_ONE = Fq_t(FP_ONE, Fp_t());
fn Fq_is_zero(a: Fq_t) -> bool { return Fp_is_zero(a.c0) && Fp_is_zero(a.c1); }
fn Fq_add(a: Fq_t, b: Fq_t) -> Fq_t { return Fq_t(Fp_add(a.c0, b.c0), Fp_add(a.c1, b.c1)); }
fn Fq_sub(a: Fq_t, b: Fq_t) -> Fq_t { return Fq_t(Fp_sub(a.c0, b.c0), Fp_sub(a.c1, b.c1)); }
fn Fq_neg(a: Fq_t) -> Fq_t { return Fq_t(Fp_neg(a.c0), Fp_neg(a.c1)); }
fn Fq_mul(a: Fq_t, b: Fq_t) -> Fq_t {
  let t0 = Fp_mul(a.c0, b.c0); let t1 = Fp_mul(a.c1, b.c1);
  let t2 = Fp_mul(Fp_add(a.c0, a.c1), Fp_add(b.c0, b.c1));
  return Fq_t(Fp_sub(t0, t1), Fp_sub(Fp_sub(t2, t0), t1));
}
fn Fq_sqr(a: Fq_t) -> Fq_t {
  let t = Fp_mul(a.c0, a.c1);
  return Fq_t(Fp_mul(Fp_add(a.c0, a.c1), Fp_sub(a.c0, a.c1)), Fp_add(t, t));
}
"
    } else {
        "alias Fq_t = Fp_t;
const Fq_W: u32 = Fp_NL;
const FQ_ONE = FP_ONE;
fn Fq_is_zero(a: Fq_t) -> bool { return Fp_is_zero(a); }
fn Fq_add(a: Fq_t, b: Fq_t) -> Fq_t { return Fp_add(a, b); }
fn Fq_sub(a: Fq_t, b: Fq_t) -> Fq_t { return Fp_sub(a, b); }
fn Fq_neg(a: Fq_t) -> Fq_t { return Fp_neg(a); }
fn Fq_mul(a: Fq_t, b: Fq_t) -> Fq_t { return Fp_mul(a, b); }
fn Fq_sqr(a: Fq_t) -> Fq_t { return Fp_sqr(a); }
"
    }
}

/// Written-out loads (and stores) of one Fq element from (into) each of the
/// MSM's buffers: no loops (see field.rs on lavapipe's loop limit).
fn fq_access(nl: usize, g2: bool) -> String {
    let fp = |buf: &str, at: usize| {
        let words: Vec<String> = (at..at + nl).map(|k| format!("{buf}[o + {k}u]")).collect();
        format!("Fp_t({})", words.join(", "))
    };
    let put = |buf: &str, at: usize, v: &str| -> String {
        (0..nl)
            .map(|k| format!("{buf}[o + {}u] = {v}[{k}]; ", at + k))
            .collect()
    };
    let mut s = String::new();
    for (suffix, buf, store) in [
        ("bk", "buckets", true),
        ("ov", "overflow", true),
        ("pa", "partials", true),
        ("base", "bases", false),
    ] {
        let (load, put) = if g2 {
            (
                format!("Fq_t({}, {})", fp(buf, 0), fp(buf, nl)),
                put(buf, 0, "v.c0") + &put(buf, nl, "v.c1"),
            )
        } else {
            (fp(buf, 0), put(buf, 0, "v"))
        };
        s += &format!("fn ld_{suffix}(o: u32) -> Fq_t {{ return {load}; }}\n");
        if store {
            s += &format!("fn st_{suffix}(o: u32, v: Fq_t) {{ {put}}}\n");
        }
    }
    s
}

/// The MSM module over G1 or G2 (`g2`) of the curve whose Fp form is
/// `layout`; `int64` as for [`ntt`].
pub(crate) fn msm(int64: bool, layout: &FpLayout, g2: bool) -> String {
    format!(
        "{}\n{}{}const XYZZ_W: u32 = 4u * Fq_W;\nconst CHUNK: u32 = {}u;\nconst FAN: u32 = {}u;\n{}{MSM}",
        prelude(int64, layout.curve),
        fp_narrow(layout),
        fq(g2),
        shape::CHUNK,
        shape::FAN,
        fq_access(layout.limbs, g2),
    )
}

/// The module converting G1 or G2 (`g2`) bases from the host's form to the
/// MSM's Fp form `layout`.
pub(crate) fn bases(layout: &FpLayout, g2: bool) -> String {
    let coords = if g2 { 4 } else { 2 };
    format!(
        "{}const COORDS: u32 = {coords}u;\nconst RAW_W: u32 = {}u;\n{BASES}",
        fp_narrow(layout),
        layout.host_words(),
    )
}

/// Helpers for the device test of the MSM's Fp code (gpu.rs), which needs a
/// device and so lives above this module.
#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::field::minv;

    /// p in the device limbs of `l`.
    pub(crate) fn device_p(l: &FpLayout) -> Vec<u32> {
        field::narrow_limbs(&u32_limbs(&l.p), l.bits, l.limbs)
    }

    /// `a + b` in `curve`'s Fp.
    pub(crate) fn host_add(curve: Curve, a: &HostFp, b: &HostFp) -> HostFp {
        match curve {
            Curve::Bls12_381 => {
                let mut out = blst_fp::default();
                // SAFETY: valid pointers to field elements.
                unsafe { blst::blst_fp_add(&mut out, &blst_fp { l: *a }, &blst_fp { l: *b }) };
                out.l
            }
            Curve::Bn254 => {
                padded(&bn254::Fp::from_h2c(bn254_fp(a).h2c() + bn254_fp(b).h2c()).limbs)
            }
        }
    }

    /// `a − b` in `curve`'s Fp.
    pub(crate) fn host_sub(curve: Curve, a: &HostFp, b: &HostFp) -> HostFp {
        match curve {
            Curve::Bls12_381 => {
                let mut out = blst_fp::default();
                // SAFETY: valid pointers to field elements.
                unsafe { blst::blst_fp_sub(&mut out, &blst_fp { l: *a }, &blst_fp { l: *b }) };
                out.l
            }
            Curve::Bn254 => {
                padded(&bn254::Fp::from_h2c(bn254_fp(a).h2c() - bn254_fp(b).h2c()).limbs)
            }
        }
    }

    /// The MSM's Fp code in `l` followed by shaders/fp_test.wgsl.
    pub(crate) fn fp_test_source(l: &FpLayout) -> String {
        format!(
            "{}{}",
            fp_narrow(l),
            include_str!("../shaders/fp_test.wgsl")
        )
    }

    #[test]
    fn constants() {
        assert_eq!(
            fr_modulus(Curve::Bls12_381),
            [
                0xffffffff00000001,
                0x53bda402fffe5bfe,
                0x3339d80809a1d805,
                0x73eda753299d7d48
            ]
        );
        assert_eq!(fp_modulus(Curve::Bls12_381)[5], 0x1a0111ea397fe69a);
        assert_eq!(
            fr_modulus(Curve::Bn254),
            [
                0x43e1f593f0000001,
                0x2833e84879b97091,
                0xb85045b68181585d,
                0x30644e72e131a029
            ]
        );
        assert_eq!(minv(1), 0xffffffff);
        assert_eq!(minv(fp_modulus(Curve::Bls12_381)[0] as u32), 0xfffcfffd);
        // The u32 Fr code needs r < 2^256/2, the narrow Fp code R > 4p.
        for curve in Curve::ALL {
            assert!(fr_modulus(curve)[3] >> 63 == 0, "{curve:?}");
            for int64 in [false, true] {
                let l = FpLayout::new(curve, int64);
                let p = fp_modulus(curve);
                let top = 64 * (p.len() - 1) + 64 - p[p.len() - 1].leading_zeros() as usize;
                assert!(l.bits as usize * l.limbs >= top + 2, "{l:?}");
            }
        }
        // 1/s·s = 1 on either host field.
        for curve in Curve::ALL {
            let l = FpLayout::new(curve, true);
            let one = host_mul(curve, &l.scale, &l.unscale);
            assert_eq!(one, host_from_u64(curve, 1), "{curve:?}");
        }
    }

    /// The device limbs `d` plus p (with `d` below p: the same element as
    /// the shaders may hold it; with `d` = p: 2p).
    pub(crate) fn plus_p(l: &FpLayout, d: &[u32]) -> Vec<u32> {
        let p = device_p(l);
        let mut c = 0;
        d.iter()
            .zip(&p)
            .map(|(a, b)| {
                let x = a + b + c;
                c = x >> l.bits;
                x & ((1 << l.bits) - 1)
            })
            .collect()
    }

    /// Device limbs (value < 2p) as an element in the host's form.
    pub(crate) fn to_host(l: &FpLayout, v: &[u32]) -> HostFp {
        host_mul(l.curve, &l.scaled(v), &l.unscale)
    }

    /// Device values, reduced or up to p above, read back as the host's.
    #[test]
    fn fp_layouts_round_trip() {
        for curve in Curve::ALL {
            for int64 in [false, true] {
                let l = FpLayout::new(curve, int64);
                for e in [0u64, 1, 7, 12_345_678_901] {
                    let e = host_from_u64(curve, e);
                    let d = l.device_form(&e);
                    assert!(d.iter().all(|&v| v < 1 << l.bits));
                    assert_eq!(to_host(&l, &d), e, "{l:?} {e:x?}");
                    let plus_p = plus_p(&l, &d);
                    assert_ne!(plus_p, d);
                    assert_eq!(to_host(&l, &plus_p), e, "{l:?} {e:x?} + p");
                }
            }
        }
    }

    /// The integer of device limbs, as seven u64 words.
    pub(crate) fn integer(l: &FpLayout, limbs: &[u32]) -> [u64; 7] {
        let mut w = [0u64; 7];
        for (k, &v) in limbs.iter().enumerate() {
            for j in 0..l.bits as usize {
                let b = k * l.bits as usize + j;
                w[b / 64] |= u64::from(v >> j & 1) << (b % 64);
            }
        }
        w
    }

    /// Every variant is assembled (tests/device.rs compiles and runs them).
    #[test]
    fn substituted() {
        for curve in Curve::ALL {
            for int64 in [false, true] {
                for g2 in [false, true] {
                    let s = msm(int64, &FpLayout::new(curve, int64), g2);
                    assert!(s.contains("fn Fp_mul") && s.contains("fn Fr_mul"));
                    assert_eq!(s.contains("struct Fq_t"), g2);
                }
            }
        }
    }
}
