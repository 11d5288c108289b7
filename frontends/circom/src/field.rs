//! Field elements and points as circom and snarkjs encode them.
//!
//! - `.r1cs` and `.wtns`: Fr elements as canonical little-endian integers.
//! - `.zkey` points: coordinates in Montgomery form with R = 2^384, little-
//!   endian, x then y (G2: each as c0 then c1), the identity as all zeros;
//!   that is blst's in-memory layout of `blst_fp`, so bytes become limbs.
//! - `.zkey` QAP coefficients: the integer `v·R²` (R = 2^256) for a value v,
//!   the form ffjavascript's Montgomery multiplication by a canonical
//!   witness value turns into `v·w`.
//! - JSON: decimal strings of canonical integers.

use blst::*;

use crate::binfile::Reader;
use zkpipe_core::types::{Fp, Fp2};
use zkpipe_core::util::decimal::{decimal_to_limbs, limbs_to_decimal};
use zkpipe_core::{Curve, Error, Fr, G1Affine, G2Affine, ScalarField};

/// BLS12-381's scalar field r, little-endian bytes.
pub const BLS12_381_R: [u8; 32] =
    le_hex("73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001");
/// BLS12-381's base field p, little-endian bytes.
pub const BLS12_381_P: [u8; 48] = le_hex(
    "1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab",
);

/// Primes circom and snarkjs know, to name the one a file was made for.
const KNOWN: &[(&str, &str)] = &[
    (
        "BN254 (bn128)'s scalar field",
        "30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001",
    ),
    (
        "BN254 (bn128)'s base field",
        "30644e72e131a029b85045b68181585d97816a916871ca8d3c208c16d87cfd47",
    ),
    ("Goldilocks", "ffffffff00000001"),
    (
        "BLS12-377's scalar field",
        "12ab655e9a2ca55660b44d1e5c37b00159aa76fed00000010a11800000000001",
    ),
    (
        "Pallas's base field",
        "40000000000000000000000000000000224698fc094cf91b992d30ed00000001",
    ),
    (
        "Vesta's base field",
        "40000000000000000000000000000000224698fc0994a8dd8c46eb2100000001",
    ),
];

/// Little-endian bytes of a big-endian hex constant (compile time).
const fn le_hex<const N: usize>(hex: &str) -> [u8; N] {
    let h = hex.as_bytes();
    let mut out = [0u8; N];
    let mut i = 0;
    while i < N {
        let hi = h.len() - 2 * i - 2;
        out[i] = nibble(h[hi]) << 4 | nibble(h[hi + 1]);
        i += 1;
    }
    out
}

const fn nibble(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => panic!("not hex"),
    }
}

/// Refuses any prime but `want` (r or p of BLS12-381), naming the one found.
///
/// # Errors
/// [`Error::InvalidInput`]: "BN254 is not supported yet" and the like.
pub fn check_prime(r: &Reader<'_>, found: &[u8], want: &[u8], what: &str) -> Result<(), Error> {
    if found == want {
        return Ok(());
    }
    let trimmed: Vec<u8> = {
        let mut v = found.to_vec();
        while v.len() > 1 && v.last() == Some(&0) {
            v.pop();
        }
        v
    };
    let hex: String = trimmed.iter().rev().map(|b| format!("{b:02x}")).collect();
    let name = KNOWN
        .iter()
        .find(|(_, h)| h.trim_start_matches('0') == hex.trim_start_matches('0'))
        .map(|(n, _)| *n);
    let base = match name {
        Some(n) if n.starts_with("BN254") => format!(
            "its {what} is {n}: BN254 is not supported yet on this path; BN254 proves from \
             snarkjs's zkey and the witness alone (`zkpipe groth16 prove circuit.zkey witness.wtns`), \
             or compile with `circom --prime bls12381` for BLS12-381"
        ),
        Some(n) => format!(
            "its {what} is {n}: not supported; zkpipe proves over BLS12-381 (`circom --prime bls12381`)"
        ),
        None => format!(
            "its {what} is 0x{hex}, not BLS12-381's; zkpipe proves over BLS12-381 (`circom --prime bls12381`)"
        ),
    };
    Err(Error::InvalidInput(format!("{}: {base}", r.name())))
}

/// Refuses any prime but the r of `F`'s curve. For BLS12-381 as
/// [`check_prime`] (its message names BN254's other ways in); for BN254 a
/// BLS12-381 file is [`Error::WrongCurve`], naming both.
///
/// # Errors
/// As above; [`Error::InvalidEncoding`] for a prime of neither curve.
pub fn check_prime_for<F: ScalarField>(r: &Reader<'_>, found: &[u8]) -> Result<(), Error> {
    match Curve::from_scalar_modulus_le(found) {
        _ if F::CURVE == Curve::Bls12_381 => check_prime(r, found, &BLS12_381_R, "prime"),
        Some(c) => F::CURVE.expect(c, r.name()),
        None => Err(r.error("its prime is neither BLS12-381's r nor BN254's r")),
    }
}

/// A canonical little-endian Fr.
///
/// # Errors
/// [`Error::InvalidEncoding`] for a value ≥ r.
pub fn fr_canonical(bytes: &[u8], what: impl FnOnce() -> String) -> Result<Fr, Error> {
    let b: &[u8; 32] = bytes.try_into().expect("32 bytes");
    Fr::from_bytes_le(b).map_err(|_| Error::InvalidEncoding(format!("{}: not below r", what())))
}

/// `(R²)⁻¹` for R = 2^256 mod r (either curve's r): undoes a zkey
/// coefficient's `v·R²`.
pub fn zkey_coefficient_scale<F: ScalarField>() -> F {
    let r_mod = F::from_u64(2).square_times(8);
    r_mod.mul(&r_mod).inverse().expect("R is invertible mod r")
}

/// An Fp from 48 Montgomery bytes (R = 2^384, as blst keeps it).
fn fp_montgomery(bytes: &[u8]) -> Option<Fp> {
    let limbs: [u64; 6] =
        std::array::from_fn(|i| u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().unwrap()));
    below(&limbs, &BLS12_381_P).then_some(Fp { limbs })
}

/// Whether the little-endian limbs are below the little-endian bytes `m`.
fn below(limbs: &[u64], m: &[u8]) -> bool {
    for i in (0..limbs.len()).rev() {
        let mi = u64::from_le_bytes(m[8 * i..8 * i + 8].try_into().unwrap());
        if limbs[i] != mi {
            return limbs[i] < mi;
        }
    }
    false
}

/// A G1 point from 96 zkey bytes: on the curve, and with `subgroup` in it.
///
/// # Errors
/// [`Error::InvalidEncoding`] for a coordinate ≥ p, [`Error::NotOnCurve`],
/// [`Error::NotInSubgroup`], naming `what`.
pub fn g1_montgomery(
    bytes: &[u8],
    subgroup: bool,
    what: &dyn Fn() -> String,
) -> Result<G1Affine, Error> {
    let (x, y) = (fp_montgomery(&bytes[..48]), fp_montgomery(&bytes[48..96]));
    let (Some(x), Some(y)) = (x, y) else {
        return Err(Error::InvalidEncoding(format!(
            "{}: a coordinate is not below p",
            what()
        )));
    };
    let p = G1Affine { x, y };
    check_point(
        p.is_identity(),
        p.is_on_curve(),
        subgroup && !p.is_in_subgroup(),
        what,
    )?;
    Ok(p)
}

/// A G2 point from 192 zkey bytes (x.c0, x.c1, y.c0, y.c1).
///
/// # Errors
/// As [`g1_montgomery`].
pub fn g2_montgomery(
    bytes: &[u8],
    subgroup: bool,
    what: &dyn Fn() -> String,
) -> Result<G2Affine, Error> {
    let c: Vec<Option<Fp>> = bytes.chunks(48).take(4).map(fp_montgomery).collect();
    let (Some(x0), Some(x1), Some(y0), Some(y1)) = (c[0], c[1], c[2], c[3]) else {
        return Err(Error::InvalidEncoding(format!(
            "{}: a coordinate is not below p",
            what()
        )));
    };
    let p = G2Affine {
        x: Fp2 { c: [x0, x1] },
        y: Fp2 { c: [y0, y1] },
    };
    check_point(
        p.is_identity(),
        p.is_on_curve(),
        subgroup && !p.is_in_subgroup(),
        what,
    )?;
    Ok(p)
}

fn check_point(
    identity: bool,
    on_curve: bool,
    outside: bool,
    what: &dyn Fn() -> String,
) -> Result<(), Error> {
    if identity {
        return Ok(());
    }
    if !on_curve {
        return Err(Error::NotOnCurve(what()));
    }
    if outside {
        return Err(Error::NotInSubgroup(what()));
    }
    Ok(())
}

/// An Fp's canonical value in decimal.
pub fn fp_to_decimal(x: &Fp) -> String {
    let mut limbs = [0u64; 6];
    // SAFETY: blst writes six limbs; `x` is a valid field element.
    unsafe { blst_uint64_from_fp(limbs.as_mut_ptr(), x.as_blst()) };
    limbs_to_decimal(&limbs)
}

/// An Fp from a canonical decimal string.
///
/// # Errors
/// [`Error::InvalidEncoding`] for a non-decimal string or a value ≥ p.
pub fn fp_from_decimal(s: &str) -> Result<Fp, Error> {
    let limbs = decimal_to_limbs::<6>(s)
        .filter(|l| below(l, &BLS12_381_P))
        .ok_or_else(|| Error::InvalidEncoding(format!("`{s}` is not a decimal element of Fp")))?;
    let mut out = Fp::default();
    // SAFETY: blst reads six limbs and writes one field element.
    unsafe { blst_fp_from_uint64(out.as_blst_mut(), limbs.as_ptr()) };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_match_blst() {
        // p − 1 in decimal round-trips, p does not parse.
        let p = limbs_to_decimal(&std::array::from_fn::<u64, 6, _>(|i| {
            u64::from_le_bytes(BLS12_381_P[8 * i..8 * i + 8].try_into().unwrap())
        }));
        assert!(p.starts_with("4002409555221667393417789825735904156556882819939007885332058136124031650490837864442687629129015664037894272559787"));
        assert!(fp_from_decimal(&p).is_err());
        let one = fp_from_decimal("1").unwrap();
        assert_eq!(fp_to_decimal(&one), "1");
        let g = G1Affine::generator();
        assert_eq!(fp_from_decimal(&fp_to_decimal(&g.x)).unwrap(), g.x);
        // r's bytes are what zkpipe's Fr refuses first.
        let mut r_minus_1 = BLS12_381_R;
        r_minus_1[0] -= 1;
        assert!(Fr::from_bytes_le(&r_minus_1).is_ok());
        assert!(Fr::from_bytes_le(&BLS12_381_R).is_err());
    }

    #[test]
    fn montgomery_bytes_are_blst_limbs() {
        let g = G1Affine::generator();
        let mut bytes = Vec::new();
        for l in g.x.limbs.iter().chain(&g.y.limbs) {
            bytes.extend(l.to_le_bytes());
        }
        assert_eq!(g1_montgomery(&bytes, true, &|| "g".into()).unwrap(), g);
        bytes[0] ^= 1;
        assert!(matches!(
            g1_montgomery(&bytes, false, &|| "g".into()),
            Err(Error::NotOnCurve(_))
        ));
        assert!(
            g1_montgomery(&[0; 96], true, &|| "0".into())
                .unwrap()
                .is_identity()
        );
        assert!(g1_montgomery(&[0xff; 96], true, &|| "ff".into()).is_err());
    }

    #[test]
    fn coefficient_scale_undoes_r_squared() {
        let v = Fr::from_u64(12345);
        let r_mod = Fr::from_u64(2).pow(&[256]);
        assert_eq!(
            v.mul(&r_mod)
                .mul(&r_mod)
                .mul(&zkey_coefficient_scale::<Fr>()),
            v
        );
    }
}

#[cfg(test)]
pub(crate) mod tests_support {
    /// BN254's scalar field, little-endian (what `circom` writes by default).
    pub fn bn254_r() -> [u8; 32] {
        super::le_hex(super::KNOWN[0].1)
    }
}
