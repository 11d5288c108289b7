//! zkpipe's proving [`Parameters`] (odd-coset H, from
//! [`setup_for`](zkpipe_core::groth16::setup_for)) as a snarkjs Groth16
//! `.zkey`, the inverse of [`crate::zkey`]: so `snarkjs groth16 prove` and
//! zkpipe prove with the same test keys, without a powers-of-tau ceremony.
//!
//! The layout is [`crate::zkey`]'s; section 10 (the ceremony's
//! contributions) holds a zero circuit hash and no contributions, so
//! `snarkjs zkey verify` refuses the file — as it should refuse any key
//! whose toxic waste someone knows.

use std::io::Write;
use std::path::Path;

use crate::field::{BLS12_381_P, zkey_coefficient_scale};
use crate::r1cs::CircomR1cs;
use zkpipe_core::bn254::groth16::KeyPoints;
use zkpipe_core::groth16::{HQuery, Parameters, domain_log_size};
use zkpipe_core::util::fsutil::write_atomically_with;
use zkpipe_core::{Error, Fp, G1Affine, G2Affine, ScalarField, bn254};

fn fp(out: &mut Vec<u8>, x: &Fp) {
    for l in x.limbs {
        out.extend(l.to_le_bytes());
    }
}

fn g1(out: &mut Vec<u8>, p: &G1Affine) {
    fp(out, &p.x);
    fp(out, &p.y);
}

fn g2(out: &mut Vec<u8>, p: &G2Affine) {
    for c in [&p.x.c[0], &p.x.c[1], &p.y.c[0], &p.y.c[1]] {
        fp(out, c);
    }
}

/// Montgomery form, as for BLS12-381: the seam's limbs.
fn bn_fp(out: &mut Vec<u8>, x: &bn254::Fp) {
    for l in x.limbs {
        out.extend(l.to_le_bytes());
    }
}

fn bn_g1(out: &mut Vec<u8>, p: &bn254::G1Affine) {
    bn_fp(out, &p.x);
    bn_fp(out, &p.y);
}

fn bn_g2(out: &mut Vec<u8>, p: &bn254::G2Affine) {
    for c in [&p.x.c[0], &p.x.c[1], &p.y.c[0], &p.y.c[1]] {
        bn_fp(out, c);
    }
}

/// `points`, each written by `put`, one after another.
fn all<P>(points: &[P], put: fn(&mut Vec<u8>, &P)) -> Vec<u8> {
    let mut out = Vec::new();
    points.iter().for_each(|p| put(&mut out, p));
    out
}

fn u32_of(n: usize, what: &str) -> Result<u32, Error> {
    u32::try_from(n)
        .map_err(|_| Error::InvalidInput(format!("{what} {n} does not fit a zkey's 32-bit field")))
}

/// Per variable, `dense[j]` picks the next of `points`, else the identity.
fn spread<P: Copy>(points: &[P], dense: &[bool], identity: P) -> Result<Vec<P>, Error> {
    let mut it = points.iter();
    let out: Vec<P> = dense
        .iter()
        .map(|&d| {
            if d {
                it.next().copied()
            } else {
                Some(identity)
            }
        })
        .collect::<Option<_>>()
        .ok_or_else(|| {
            Error::InvalidInput("the key has fewer query points than the circuit uses".into())
        })?;
    if it.next().is_some() {
        return Err(Error::InvalidInput(
            "the key has more query points than the circuit uses".into(),
        ));
    }
    Ok(out)
}

/// A key's points as the zkey stores them, each section already encoded.
struct Points {
    /// The base field prime, little-endian (its length is the element size).
    q: Vec<u8>,
    /// α₁, β₁, β₂, γ₂, δ₁, δ₂.
    vk: Vec<u8>,
    ic: Vec<u8>,
    a: Vec<u8>,
    b_g1: Vec<u8>,
    b_g2: Vec<u8>,
    c: Vec<u8>,
    h: Vec<u8>,
}

/// The sections of a zkey for `circuit` with `points`, in file order.
fn sections<F: ScalarField>(
    circuit: &CircomR1cs<F>,
    points: Points,
) -> Result<Vec<(u32, Vec<u8>)>, Error> {
    let r1cs = &circuit.r1cs;
    let n = 1usize << domain_log_size(r1cs.num_constraints(), r1cs.num_inputs);
    let mut header = Vec::new();
    header.extend(u32_of(points.q.len(), "Fq size")?.to_le_bytes());
    header.extend(&points.q);
    header.extend(32u32.to_le_bytes());
    header.extend(F::CURVE.scalar_modulus_le());
    header.extend(u32_of(circuit.num_wires, "variable count")?.to_le_bytes());
    header.extend(u32_of(circuit.num_public(), "public signal count")?.to_le_bytes());
    header.extend(u32_of(n, "domain size")?.to_le_bytes());
    header.extend(&points.vk);

    // Values times R² (snarkjs keeps them in Montgomery form twice over).
    let r2 = zkey_coefficient_scale::<F>()
        .inverse()
        .expect("R² is invertible mod r");
    let count = r1cs.a.nnz() + r1cs.b.nnz() + r1cs.num_inputs;
    u32_of(r1cs.num_constraints() + r1cs.num_inputs, "constraint")?;
    let mut coefs = Vec::with_capacity(4 + 44 * count);
    coefs.extend(u32_of(count, "coefficient count")?.to_le_bytes());
    for (m, row, col, v) in zkpipe_core::r1cs::qap_coefficients(r1cs) {
        coefs.extend(m.to_le_bytes());
        coefs.extend(row.to_le_bytes());
        coefs.extend(col.to_le_bytes());
        coefs.extend(v.mul(&r2).to_bytes_le());
    }

    let mut contributions = vec![0u8; 64];
    contributions.extend(0u32.to_le_bytes());
    Ok(vec![
        (1, 1u32.to_le_bytes().to_vec()),
        (2, header),
        (3, points.ic),
        (4, coefs),
        (5, points.a),
        (6, points.b_g1),
        (7, points.b_g2),
        (8, points.c),
        (9, points.h),
        (10, contributions),
    ])
}

/// The sections of a zkey for `params` and `circuit`, in file order.
///
/// # Errors
/// [`Error::InvalidInput`] when `params` is not an odd-coset key of
/// `circuit`'s shape.
pub fn zkey_sections(
    params: &Parameters,
    circuit: &CircomR1cs,
) -> Result<Vec<(u32, Vec<u8>)>, Error> {
    let r1cs = &circuit.r1cs;
    if params.h_query != HQuery::OddCoset {
        return Err(Error::InvalidInput(
            "a zkey needs snarkjs's odd-coset H query (`setup_for(…, HQuery::OddCoset, …)`)".into(),
        ));
    }
    params
        .check_shape(r1cs)
        .map_err(|e| Error::InvalidInput(format!("the key does not fit the circuit: {e}")))?;
    let vk = &params.vk;
    let mut vk_points = Vec::new();
    g1(&mut vk_points, &vk.alpha_g1);
    g1(&mut vk_points, &vk.beta_g1);
    g2(&mut vk_points, &vk.beta_g2);
    g2(&mut vk_points, &vk.gamma_g2);
    g1(&mut vk_points, &vk.delta_g1);
    g2(&mut vk_points, &vk.delta_g2);
    let d = r1cs.density();
    let in_a: Vec<bool> = std::iter::repeat_n(true, r1cs.num_inputs)
        .chain(d.a_aux.iter().copied())
        .collect();
    let in_b: Vec<bool> = d.b_input.iter().chain(&d.b_aux).copied().collect();
    let a = spread(&params.a, &in_a, G1Affine::identity())?;
    let b1 = spread(&params.b_g1, &in_b, G1Affine::identity())?;
    let b2 = spread(&params.b_g2, &in_b, G2Affine::identity())?;
    sections(
        circuit,
        Points {
            q: BLS12_381_P.to_vec(),
            vk: vk_points,
            ic: all(&vk.ic, g1),
            a: all(&a, g1),
            b_g1: all(&b1, g1),
            b_g2: all(&b2, g2),
            c: all(&params.l, g1),
            h: all(&params.h, g1),
        },
    )
}

/// The sections of a BN254 zkey for `key` and `circuit`, in file order.
///
/// # Errors
/// [`Error::InvalidInput`] when `key` does not have `circuit`'s shape.
pub fn zkey_sections_bn254(
    key: &KeyPoints,
    circuit: &CircomR1cs<bn254::Fr>,
) -> Result<Vec<(u32, Vec<u8>)>, Error> {
    let r1cs = &circuit.r1cs;
    let vars = r1cs.num_inputs + r1cs.num_aux;
    let n = 1usize << domain_log_size(r1cs.num_constraints(), r1cs.num_inputs);
    let shape = [
        ("IC", key.vk.ic.len(), r1cs.num_inputs),
        ("A", key.a.len(), vars),
        ("B in G1", key.b_g1.len(), vars),
        ("B in G2", key.b_g2.len(), vars),
        ("C", key.c.len(), r1cs.num_aux),
        ("H", key.h.len(), n),
    ];
    if let Some((what, got, want)) = shape.iter().find(|(_, got, want)| got != want) {
        return Err(Error::InvalidInput(format!(
            "the key does not fit the circuit: {got} {what} points, the circuit needs {want}"
        )));
    }
    let vk = &key.vk;
    let mut vk_points = Vec::new();
    bn_g1(&mut vk_points, &vk.alpha_g1);
    bn_g1(&mut vk_points, &key.beta_g1);
    bn_g2(&mut vk_points, &vk.beta_g2);
    bn_g2(&mut vk_points, &vk.gamma_g2);
    bn_g1(&mut vk_points, &key.delta_g1);
    bn_g2(&mut vk_points, &vk.delta_g2);
    sections(
        circuit,
        Points {
            q: bn254::Fp::MODULUS
                .iter()
                .flat_map(|l| l.to_le_bytes())
                .collect(),
            vk: vk_points,
            ic: all(&vk.ic, bn_g1),
            a: all(&key.a, bn_g1),
            b_g1: all(&key.b_g1, bn_g1),
            b_g2: all(&key.b_g2, bn_g2),
            c: all(&key.c, bn_g1),
            h: all(&key.h, bn_g1),
        },
    )
}

/// Writes `sections` as a zkey at `path`, atomically.
fn write_sections(path: &Path, sections: &[(u32, Vec<u8>)]) -> Result<(), Error> {
    write_atomically_with(path, |w| {
        w.write_all(b"zkey")?;
        w.write_all(&1u32.to_le_bytes())?;
        w.write_all(&(sections.len() as u32).to_le_bytes())?;
        for (ty, data) in sections {
            w.write_all(&ty.to_le_bytes())?;
            w.write_all(&(data.len() as u64).to_le_bytes())?;
            w.write_all(data)?;
        }
        Ok(())
    })
}

/// Writes `params` for `circuit` as a snarkjs zkey at `path`, atomically.
///
/// # Errors
/// As [`zkey_sections`]; [`Error::Io`] naming `path`.
pub fn write_zkey(path: &Path, params: &Parameters, circuit: &CircomR1cs) -> Result<(), Error> {
    write_sections(path, &zkey_sections(params, circuit)?)
}

/// Writes a BN254 `key` for `circuit` as a snarkjs zkey at `path`, atomically.
///
/// # Errors
/// As [`zkey_sections_bn254`]; [`Error::Io`] naming `path`.
pub fn write_zkey_bn254(
    path: &Path,
    key: &KeyPoints,
    circuit: &CircomR1cs<bn254::Fr>,
) -> Result<(), Error> {
    write_sections(path, &zkey_sections_bn254(key, circuit)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binfile::BinFile;
    use crate::binfile::tests::container;
    use crate::field::BLS12_381_R;
    use crate::r1cs::tests::square_r1cs;
    use zkpipe_core::groth16::setup_for;
    use zkpipe_core::util::progress::Silent;

    #[test]
    fn a_written_zkey_reads_back_as_the_same_key() {
        let c = CircomR1cs::from_bytes("t", square_r1cs(&BLS12_381_R)).unwrap();
        let params = setup_for(&c.r1cs, 4, HQuery::OddCoset, &Silent);
        let bytes = container(b"zkey", 1, &zkey_sections(&params, &c).unwrap());
        let back = crate::zkey_from_bytes("t.zkey", bytes, &c, "t.r1cs").unwrap();
        assert_eq!(back, params);
    }

    #[test]
    fn a_bn254_key_reads_back_as_the_same_verifying_key() {
        let bytes = square_r1cs(&crate::field::tests_support::bn254_r());
        let f = BinFile::parse("t".into(), bytes, b"r1cs", &[1]).unwrap();
        let c = CircomR1cs::<bn254::Fr>::read(&f, |_, _| Ok(())).unwrap();
        let key = zkpipe_core::bn254::setup::setup(&c.r1cs, 4, &Silent);
        let zkey = container(b"zkey", 1, &zkey_sections_bn254(&key, &c).unwrap());
        let f = BinFile::parse("t.zkey".into(), zkey, b"zkey", &[1]).unwrap();
        let (header, vk) = crate::zkey_bn254::zkey_vk(&f).unwrap();
        assert_eq!(vk, key.vk);
        assert_eq!(
            (header.num_vars, header.num_public, header.domain_size),
            (3, 1, 4)
        );
        let mut short = key.clone();
        short.h.pop();
        let e = zkey_sections_bn254(&short, &c).unwrap_err();
        assert!(
            e.to_string().contains("3 H points, the circuit needs 4"),
            "{e}"
        );
    }

    #[test]
    fn a_bellman_key_is_refused() {
        let c = CircomR1cs::from_bytes("t", square_r1cs(&BLS12_381_R)).unwrap();
        let params = setup_for(&c.r1cs, 4, HQuery::TauPowers, &Silent);
        let e = zkey_sections(&params, &c).unwrap_err();
        assert!(e.to_string().contains("odd-coset"), "{e}");
    }
}
