//! The verifying key of a snarkjs Groth16 zkey on BN254 (circom's default
//! prime): sections 1 (protocol), 2 (header) and 3 (IC), laid out as
//! [`crate::zkey`] reads them for BLS12-381, with 32-byte coordinates in
//! Montgomery form (R = 2^256: the limbs of zkpipe's BN254 types).

use zkpipe_core::bn254::groth16::VerifyingKey;
use zkpipe_core::bn254::{Fp, Fp2, G1Affine, G2Affine};
use zkpipe_core::{Curve, Error};

use crate::binfile::{BinFile, Reader};
use crate::zkey::ZkeyHeader;

/// The curve of a zkey, from its header's scalar field prime.
///
/// # Errors
/// As [`BinFile::section`]; [`Error::InvalidInput`] for a prime of
/// neither curve.
pub fn zkey_curve(f: &BinFile) -> Result<Curve, Error> {
    let mut h = f.section(2, "groth16 header")?;
    let n8q = h.u32("Fq size")? as usize;
    h.take(n8q, "Fq prime")?;
    let n8r = h.u32("Fr size")? as usize;
    let r = h.take(n8r, "Fr prime")?;
    Curve::from_scalar_modulus_le(r).ok_or_else(|| {
        h.error("its scalar field is neither BLS12-381's nor BN254's (a zkey for another curve)")
    })
}

fn fp(bytes: &[u8]) -> Fp {
    Fp {
        limbs: std::array::from_fn(|i| {
            u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().unwrap())
        }),
    }
}

/// Whether `f`'s limbs are below q, compared from the top limb down.
fn below_q(f: &Fp) -> bool {
    f.limbs.iter().rev().cmp(Fp::MODULUS.iter().rev()) == std::cmp::Ordering::Less
}

/// Refuses a point whose coordinates are not below q, or that is off the
/// curve or (with `valid`'s second answer) out of the subgroup; `what`
/// names it in the error (made only then: keys hold millions of points).
fn check(
    coordinates: &[Fp],
    valid: impl FnOnce() -> (bool, bool),
    what: impl Fn() -> String,
) -> Result<(), Error> {
    if !coordinates.iter().all(below_q) {
        return Err(Error::InvalidEncoding(format!(
            "{}: a coordinate is not below q",
            what()
        )));
    }
    match valid() {
        (false, _) => Err(Error::NotOnCurve(what())),
        (true, false) => Err(Error::NotInSubgroup(what())),
        _ => Ok(()),
    }
}

/// Refuses a G1 point of a zkey that is not one (G1 is the whole curve).
///
/// # Errors
/// [`Error::InvalidEncoding`] for a coordinate not below q,
/// [`Error::NotOnCurve`].
pub(crate) fn check_g1(p: &G1Affine, what: impl Fn() -> String) -> Result<(), Error> {
    check(&[p.x, p.y], || (p.is_on_curve(), true), what)
}

/// Refuses a G2 point of a zkey off the curve or, with `subgroup`, out of
/// the subgroup (254 doublings: kept for keys).
///
/// # Errors
/// As [`check_g1`]; [`Error::NotInSubgroup`].
pub(crate) fn check_g2(
    p: &G2Affine,
    subgroup: bool,
    what: impl Fn() -> String,
) -> Result<(), Error> {
    check(
        &[p.x.c[0], p.x.c[1], p.y.c[0], p.y.c[1]],
        || (p.is_on_curve(), !subgroup || p.is_in_subgroup()),
        what,
    )
}

/// A G1 point from 64 zkey bytes (x, y in Montgomery form).
pub(crate) fn g1_of(b: &[u8], what: impl Fn() -> String) -> Result<G1Affine, Error> {
    let p = G1Affine {
        x: fp(&b[..32]),
        y: fp(&b[32..]),
    };
    check_g1(&p, what).map(|()| p)
}

fn g1(r: &mut Reader<'_>, what: &str) -> Result<G1Affine, Error> {
    let b = r.take(64, what)?;
    g1_of(b, || format!("{}: {what}", r.name()))
}

fn g2(r: &mut Reader<'_>, what: &str) -> Result<G2Affine, Error> {
    let b = r.take(128, what)?;
    g2_of(b, true, || format!("{}: {what}", r.name()))
}

/// A G2 point from 128 zkey bytes (x.c0, x.c1, y.c0, y.c1), checked as
/// [`check_g2`] does.
pub(crate) fn g2_of(
    b: &[u8],
    subgroup: bool,
    what: impl Fn() -> String,
) -> Result<G2Affine, Error> {
    let c: [Fp; 4] = std::array::from_fn(|i| fp(&b[32 * i..32 * i + 32]));
    let p = G2Affine {
        x: Fp2 { c: [c[0], c[1]] },
        y: Fp2 { c: [c[2], c[3]] },
    };
    check_g2(&p, subgroup, what).map(|()| p)
}

/// The counts and verifying key of a BN254 zkey, every point checked on
/// the curve and in the subgroup.
///
/// # Errors
/// [`Error::InvalidEncoding`], [`Error::NotOnCurve`],
/// [`Error::NotInSubgroup`]; [`Error::InvalidInput`] for another protocol;
/// [`Error::WrongCurve`] for a BLS12-381 zkey.
pub fn zkey_vk(f: &BinFile) -> Result<(ZkeyHeader, VerifyingKey), Error> {
    zkey_parts(f).map(|(header, vk, ..)| (header, vk))
}

/// [`zkey_vk`] with β and δ in G1, which a prover needs too.
pub(crate) fn zkey_parts(
    f: &BinFile,
) -> Result<(ZkeyHeader, VerifyingKey, G1Affine, G1Affine), Error> {
    crate::zkey::check_protocol(f)?;
    Curve::Bn254.expect(zkey_curve(f)?, &f.name)?;
    let mut h = f.section(2, "groth16 header")?;
    for what in ["Fq", "Fr"] {
        let n8 = h.u32(what)? as usize;
        if n8 != 32 {
            return Err(h.error(format_args!(
                "{what} elements of {n8} bytes, not BN254's 32"
            )));
        }
        h.take(32, what)?;
    }
    let header = ZkeyHeader {
        num_vars: h.u32("variable count")? as usize,
        num_public: h.u32("public signal count")? as usize,
        domain_size: h.u32("domain size")? as usize,
    };
    let alpha_g1 = g1(&mut h, "alpha_1")?;
    let beta_g1 = g1(&mut h, "beta_1")?;
    let beta_g2 = g2(&mut h, "beta_2")?;
    let gamma_g2 = g2(&mut h, "gamma_2")?;
    let delta_g1 = g1(&mut h, "delta_1")?;
    let delta_g2 = g2(&mut h, "delta_2")?;
    h.finish()?;
    if header.num_vars <= header.num_public {
        return Err(h.error(format_args!(
            "{} variables cannot hold the one and {} public signals",
            header.num_vars, header.num_public
        )));
    }
    let mut s = f.section(3, "IC")?;
    // Sized against the section before anything is allocated.
    let bytes = s.items(header.num_public as u64 + 1, 64, "IC")?;
    s.finish()?;
    let ic = bytes
        .chunks_exact(64)
        .enumerate()
        .map(|(i, b)| g1_of(b, || format!("{}: IC point {i}", s.name())))
        .collect::<Result<Vec<_>, _>>()?;
    let vk = VerifyingKey {
        alpha_g1,
        beta_g2,
        gamma_g2,
        delta_g2,
        ic,
    };
    if let Some(defect) = vk.defect() {
        return Err(Error::InvalidEncoding(format!("{}: {defect}", f.name)));
    }
    Ok((header, vk, beta_g1, delta_g1))
}
