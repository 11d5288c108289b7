//! A BN254 snarkjs zkey read into the core's
//! [`zkpipe_core::bn254::prover::ProvingKey`], its `.wtns`, and
//! the check of a key against its circuit's r1cs. The prover itself is the
//! core's [`bn254::prover`](zkpipe_core::bn254::prover).

use rayon::prelude::*;
use std::path::Path;
use zkpipe_core::Error;
use zkpipe_core::bn254::groth16::KeyPoints;
use zkpipe_core::bn254::prover::{Coefficient, ProvingKey};
use zkpipe_core::bn254::{Fr, G1Affine, G2Affine};

use crate::binfile::{BinFile, Words};
use crate::field::zkey_coefficient_scale;
use crate::r1cs::CircomR1cs;
use crate::zkey::ZkeyHeader;
use crate::zkey_bn254::{check_g1, check_g2, zkey_parts};
use zkpipe_core::groth16::domain_log_size;
use zkpipe_core::r1cs::qap_coefficients;

// SAFETY: `#[repr(C)]` pairs of `#[repr(C)]` arrays of `u64` limbs; every
// bit pattern is a value (the checks below refuse the ones that are no point).
unsafe impl Words for G1Affine {}
// SAFETY: as for G1Affine, with Fp2 coordinates (two Fp each).
unsafe impl Words for G2Affine {}

/// Section `section` as `count` points, read straight into their vector
/// and then each passed to `check` (with its name for errors), side by side.
fn points<T: Words>(
    f: &BinFile,
    section: u32,
    what: &str,
    count: usize,
    check: impl Fn(&T, &dyn Fn() -> String) -> Result<(), Error> + Sync,
) -> Result<Vec<T>, Error> {
    let points: Vec<T> = f.read_items(section, what, count)?;
    points
        .par_iter()
        .enumerate()
        .try_for_each(|(i, p)| check(p, &|| format!("{} ({what} section): point {i}", f.name)))?;
    Ok(points)
}

fn g1s(f: &BinFile, section: u32, what: &str, count: usize) -> Result<Vec<G1Affine>, Error> {
    points(f, section, what, count, |p, name| check_g1(p, name))
}

/// What a task of [`load_zkey`]'s scope read (every task has run when
/// the scope ends).
fn read<T>(slot: Option<Result<T, Error>>) -> Result<T, Error> {
    slot.unwrap_or_else(|| Err(Error::Failed("a zkey section was not read".into())))
}

fn coefficients(f: &BinFile, header: ZkeyHeader) -> Result<Vec<Coefficient>, Error> {
    f.read_section(4, "coefficients", |mut s| {
        let count = s.u32("coefficient count")? as u64;
        let bytes = s.items(count, 44, "coefficients")?;
        s.finish()?;
        let scale: Fr = zkey_coefficient_scale();
        bytes
            .par_chunks_exact(44)
            .enumerate()
            .map(|(i, t)| {
                let word = |k: usize| u32::from_le_bytes(t[4 * k..4 * k + 4].try_into().unwrap());
                let (matrix, row, col) = (word(0), word(1), word(2));
                if matrix > 1 || row as usize >= header.domain_size || col as usize >= header.num_vars
                {
                    return Err(s.error(format_args!(
                        "coefficient {i} is (matrix {matrix}, row {row}, signal {col}): past matrix B, \
                         the {} rows or the {} signals",
                        header.domain_size, header.num_vars
                    )));
                }
                let value = Fr::from_bytes_le(t[12..].try_into().unwrap())
                    .map_err(|_| s.error(format_args!("coefficient {i} is not below r")))?;
                Ok(Coefficient {
                    matrix,
                    row,
                    signal: col,
                    value: value.mul(&scale),
                })
            })
            .collect()
    })
}

/// Reads a BN254 zkey: its key, coefficients and queries (G1 points on
/// the curve, which is G1; B's G2 points on the curve: the proof is
/// verified before it is returned).
///
/// # Errors
/// As [`crate::zkey_bn254::zkey_vk`]; sections of the wrong size; a key
/// the prover cannot take ([`ProvingKey::defect`]: a domain of 2^28 points
/// or more, as BN254's NTTs stop at 2^28 and the odd coset needs twice the
/// domain).
pub fn load_zkey(path: &Path) -> Result<ProvingKey, Error> {
    // The header and IC in memory; the coefficients and points (most of
    // the file) read from it section by section, all sections at once.
    let f = BinFile::load_sections(path, b"zkey", &[1], &[1, 2, 3])?;
    let (header, vk, beta_g1, delta_g1) = zkey_parts(&f)?;
    let n = header.domain_size;
    let vars = header.num_vars;
    let (mut b_g2, mut coefficients) = (None, None);
    let [mut a, mut b_g1, mut c, mut h] = [None, None, None, None];
    rayon::scope(|s| {
        s.spawn(|_| {
            b_g2 = Some(points(&f, 7, "B in G2", vars, |p, name| {
                check_g2(p, false, name)
            }));
        });
        s.spawn(|_| coefficients = Some(self::coefficients(&f, header)));
        s.spawn(|_| a = Some(g1s(&f, 5, "A", vars)));
        s.spawn(|_| b_g1 = Some(g1s(&f, 6, "B in G1", vars)));
        s.spawn(|_| c = Some(g1s(&f, 8, "C", vars - header.num_public - 1)));
        s.spawn(|_| h = Some(g1s(&f, 9, "H", n)));
    });
    // Errors in section order, whichever thread finished first.
    let b_g2 = read(b_g2)?;
    let key = ProvingKey {
        coefficients: read(coefficients)?,
        domain_size: n,
        num_public: header.num_public,
        num_vars: vars,
        points: KeyPoints {
            a: read(a)?,
            b_g1: read(b_g1)?,
            b_g2,
            c: read(c)?,
            h: read(h)?,
            vk,
            beta_g1,
            delta_g1,
        },
    };
    match key.defect() {
        Some(d) => Err(Error::InvalidInput(format!("{}: {d}", f.name))),
        None => Ok(key),
    }
}

/// A BN254 `.wtns` (snarkjs's layout, BN254's r).
///
/// # Errors
/// As [`BinFile::load`]; [`Error::WrongCurve`] for a witness over another
/// prime; values not below r.
pub fn load_wtns(path: &Path) -> Result<Vec<Fr>, Error> {
    crate::wtns::read_wtns(&BinFile::load(path, b"wtns", &[2])?)
}

/// Checks that `zkey` is a key of `circuit` (the r1cs it came from):
/// variables, public signals, domain and every QAP coefficient.
///
/// # Errors
/// [`Error::InvalidInput`] naming both files and the first disagreement.
pub fn check_circuit(
    zkey: &ProvingKey,
    circuit: &CircomR1cs<Fr>,
    zkey_name: &str,
    r1cs_name: &str,
) -> Result<(), Error> {
    let disagree = |msg: String| {
        Error::InvalidInput(format!(
            "{zkey_name} and {r1cs_name} disagree: {msg} (a key for another circuit?)"
        ))
    };
    let r1cs = &circuit.r1cs;
    let n = 1usize << domain_log_size(r1cs.num_constraints(), r1cs.num_inputs);
    for (what, ours, theirs) in [
        ("variables", zkey.num_vars, circuit.num_wires),
        ("public signals", zkey.num_public, circuit.num_public()),
        ("domain size", zkey.domain_size, n),
        (
            "QAP coefficients",
            zkey.coefficients.len(),
            r1cs.a.nnz() + r1cs.b.nnz() + r1cs.num_inputs,
        ),
    ] {
        if ours != theirs {
            return Err(disagree(format!(
                "the zkey has {what} {ours}, the r1cs {theirs}"
            )));
        }
    }
    match zkey
        .coefficients
        .iter()
        .zip(qap_coefficients(r1cs))
        .position(|(z, r)| (z.matrix, z.row, z.signal, z.value) != r)
    {
        Some(i) => Err(disagree(format!("QAP coefficient {i} differs"))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binfile::tests::container;
    use crate::r1cs::tests::square_r1cs;
    use crate::zkey_write::zkey_sections_bn254;
    use zkpipe_core::util::progress::Silent;

    /// A BN254 zkey of the squaring circuit, section by section.
    fn sections() -> (Vec<(u32, Vec<u8>)>, KeyPoints) {
        let bytes = square_r1cs(&crate::field::tests_support::bn254_r());
        let f = BinFile::parse("t".into(), bytes, b"r1cs", &[1]).unwrap();
        let c = CircomR1cs::<Fr>::read(&f, |_, _| Ok(())).unwrap();
        let key = zkpipe_core::bn254::setup::setup(&c.r1cs, 4, &Silent);
        (zkey_sections_bn254(&key, &c).unwrap(), key)
    }

    fn load(dir: &tempfile::TempDir, sections: &[(u32, Vec<u8>)]) -> Result<ProvingKey, Error> {
        let p = dir.path().join("t.zkey");
        std::fs::write(&p, container(b"zkey", 1, sections)).unwrap();
        load_zkey(&p)
    }

    /// The points read straight from the file are the key's; a point off
    /// the curve, a coordinate not below q, a section of the wrong length,
    /// bytes after the last section and every cut are refused.
    #[test]
    fn points_read_from_disk_are_the_keys_and_bad_ones_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let (good, key) = sections();
        let back = load(&d, &good).unwrap();
        assert_eq!(back.points, key);
        let with = |ty: u32, edit: &dyn Fn(&mut Vec<u8>)| {
            let mut s = good.clone();
            edit(&mut s.iter_mut().find(|(t, _)| *t == ty).unwrap().1);
            load(&d, &s).unwrap_err().to_string()
        };
        // A's second point moved off the curve (y + 1, still below q).
        let e = with(5, &|b| b[64 + 32] ^= 1);
        assert!(
            e.contains("(A section): point 1") && e.contains("not on the curve"),
            "{e}"
        );
        // H's first x set to q's bytes.
        let q: Vec<u8> = zkpipe_core::bn254::Fp::MODULUS
            .iter()
            .flat_map(|l| l.to_le_bytes())
            .collect();
        let e = with(9, &|b| b[..32].copy_from_slice(&q));
        assert!(
            e.contains("(H section): point 0: a coordinate is not below q"),
            "{e}"
        );
        let e = with(7, &|b| b[5] ^= 1);
        assert!(e.contains("(B in G2 section): point 0"), "{e}");
        let e = with(8, &|b| b.truncate(b.len() - 64));
        assert!(e.contains("(C section)") && e.contains("truncated"), "{e}");
        let e = with(6, &|b| b.extend([0; 64]));
        assert!(e.contains("64 bytes after its content"), "{e}");
        let p = d.path().join("t.zkey");
        let bytes = container(b"zkey", 1, &good);
        let mut longer = bytes.clone();
        longer.push(0);
        std::fs::write(&p, &longer).unwrap();
        let e = load_zkey(&p).unwrap_err().to_string();
        assert!(e.contains("1 bytes after the last section"), "{e}");
        for cut in 0..bytes.len() {
            std::fs::write(&p, &bytes[..cut]).unwrap();
            assert!(load_zkey(&p).is_err(), "a cut at {cut} bytes was read");
        }
    }
}
