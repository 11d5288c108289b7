//! iden3's `.r1cs` (binary format v1), as circom writes it, into zkpipe's
//! recorded [`R1cs`].
//!
//! Sections: 1 header (field size, prime, wires, public outputs, public
//! inputs, private inputs, labels, constraints), 2 constraints (three linear
//! combinations each: a count, then `(wire u32, coefficient)` pairs), 3 the
//! wire-to-label map (a `u64` per wire). Wire 0 is the constant one, then
//! public outputs, public inputs, then the private wires: zkpipe's order
//! (inputs first, the one included, then aux), so wire w is column w.

use std::path::Path;

use crate::binfile::{BinFile, Reader};
use crate::field::{BLS12_381_R, check_prime, check_prime_for};
use zkpipe_core::r1cs::{Csr, R1cs};
use zkpipe_core::{Curve, Error, Fr, ScalarField};

/// A circom circuit's constraint system and its header, over BLS12-381's
/// scalar field unless `F` says otherwise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CircomR1cs<F = Fr> {
    /// The constraints, as zkpipe proves them.
    pub r1cs: R1cs<F>,
    /// Wires, the constant one included (`r1cs.num_inputs + r1cs.num_aux`).
    pub num_wires: usize,
    /// Public outputs (the first public signals).
    pub num_pub_out: usize,
    /// Public inputs (after the outputs).
    pub num_pub_in: usize,
    /// Private inputs.
    pub num_prv_in: usize,
    /// Labels (signals before circom's optimisation removed some).
    pub num_labels: u64,
}

/// The curve of an `.r1cs` file, from its header's prime.
///
/// # Errors
/// As [`BinFile::section`]; [`Error::InvalidInput`] for a prime of
/// neither curve.
pub fn r1cs_curve(f: &BinFile) -> Result<Curve, Error> {
    let mut h = f.section(1, "header")?;
    let n8 = h.u32("field size")? as usize;
    let prime = h.take(n8, "prime")?;
    Curve::from_scalar_modulus_le(prime).map_or_else(
        || check_prime(&h, prime, &BLS12_381_R, "prime").map(|()| Curve::Bls12_381),
        Ok,
    )
}

impl<F> CircomR1cs<F> {
    /// Public signals: outputs then inputs (snarkjs's `nPublic`).
    pub fn num_public(&self) -> usize {
        self.num_pub_out + self.num_pub_in
    }
}

impl CircomR1cs {
    /// Reads an `.r1cs` file.
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::InvalidEncoding`] for malformed bytes;
    /// [`Error::InvalidInput`] for a prime other than BLS12-381's r or a
    /// circuit with PLONK custom gates.
    pub fn load(path: &Path) -> Result<CircomR1cs, Error> {
        CircomR1cs::load_checked(path, |_, _| Ok(()))
    }

    /// [`CircomR1cs::load`], with `admit` asked about the constraint and
    /// wire counts the header declares before the constraints are read, so
    /// that a circuit too large for what follows is refused at once.
    ///
    /// # Errors
    /// As [`CircomR1cs::load`]; `admit`'s error.
    pub fn load_checked(
        path: &Path,
        admit: impl FnOnce(u64, u64) -> Result<(), Error>,
    ) -> Result<CircomR1cs, Error> {
        CircomR1cs::read(&BinFile::load(path, b"r1cs", &[1])?, admit)
    }

    /// Parses `.r1cs` bytes; `name` is used in messages.
    ///
    /// # Errors
    /// As [`CircomR1cs::load`].
    pub fn from_bytes(name: &str, bytes: Vec<u8>) -> Result<CircomR1cs, Error> {
        CircomR1cs::read(
            &BinFile::parse(name.into(), bytes, b"r1cs", &[1])?,
            |_, _| Ok(()),
        )
    }
}

impl<F: ScalarField> CircomR1cs<F> {
    /// Parses a loaded `.r1cs` over `F`'s prime; `admit` is asked about
    /// the constraint and wire counts before the constraints are read.
    ///
    /// # Errors
    /// As [`CircomR1cs::load`]; for BN254, [`Error::WrongCurve`] naming
    /// both curves when the file is over BLS12-381's prime.
    pub fn read(
        f: &BinFile,
        admit: impl FnOnce(u64, u64) -> Result<(), Error>,
    ) -> Result<CircomR1cs<F>, Error> {
        let mut h = f.section(1, "header")?;
        let n8 = h.u32("field size")? as usize;
        let prime = h.take(n8, "prime")?;
        check_prime_for::<F>(&h, prime)?;
        let num_wires = h.u32("wire count")? as usize;
        let num_pub_out = h.u32("public output count")? as usize;
        let num_pub_in = h.u32("public input count")? as usize;
        let num_prv_in = h.u32("private input count")? as usize;
        let num_labels = h.u64("label count")?;
        let num_constraints = h.u32("constraint count")? as u64;
        h.finish()?;
        let num_inputs = 1 + num_pub_out + num_pub_in;
        if num_wires < num_inputs + num_prv_in {
            return Err(h.error(format_args!(
                "{num_wires} wires cannot hold the one, {num_pub_out} public outputs, \
                 {num_pub_in} public inputs and {num_prv_in} private inputs"
            )));
        }
        if (num_wires as u64) > num_labels.max(1) {
            return Err(h.error(format_args!(
                "{num_wires} wires but only {num_labels} labels"
            )));
        }
        admit(num_constraints, num_wires as u64)?;
        for (ty, what) in [(4, "custom gates list"), (5, "custom gates applied")] {
            if f.has(ty) {
                return Err(Error::InvalidInput(format!(
                    "{}: has a {what} section: PLONK custom gates have no Groth16 proof",
                    f.name
                )));
            }
        }

        let mut c = f.section(2, "constraints")?;
        let [mut a, mut b, mut cc] = [(); 3].map(|()| Csr::new());
        for row in 0..num_constraints {
            for (m, which) in [(&mut a, "A"), (&mut b, "B"), (&mut cc, "C")] {
                read_lc(&mut c, m, row, which, num_wires)?;
            }
        }
        c.finish()?;

        let mut labels = f.section(3, "wire-to-label map")?;
        let map = labels.items(num_wires as u64, 8, "labels")?;
        labels.finish()?;
        if let Some((w, l)) = map
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .enumerate()
            .find(|&(_, l)| l >= num_labels)
        {
            return Err(labels.error(format_args!(
                "wire {w} maps to label {l}, past the {num_labels} labels"
            )));
        }
        Ok(CircomR1cs {
            r1cs: R1cs {
                num_inputs,
                num_aux: num_wires - num_inputs,
                a,
                b,
                c: cc,
            },
            num_wires,
            num_pub_out,
            num_pub_in,
            num_prv_in,
            num_labels,
        })
    }
}

/// One linear combination, appended to `m` as row `row`.
fn read_lc<F: ScalarField>(
    r: &mut Reader<'_>,
    m: &mut Csr<F>,
    row: u64,
    which: &str,
    num_wires: usize,
) -> Result<(), Error> {
    let what = || format!("constraint {row}, {which}");
    let nnz = r.u32(&what())?;
    let terms = r.items(nnz.into(), 4 + 32, &what())?;
    for t in terms.chunks_exact(36) {
        let wire = u32::from_le_bytes(t[..4].try_into().unwrap());
        if wire as usize >= num_wires {
            return Err(r.error(format_args!(
                "{}: wire {wire}, past the {num_wires} wires",
                what()
            )));
        }
        m.cols.push(wire);
        let value = F::from_bytes_le(t[4..].try_into().expect("36-byte term"));
        m.vals.push(value.map_err(|_| {
            Error::InvalidEncoding(format!(
                "{} ({}): coefficient: not below r",
                r.name(),
                what()
            ))
        })?);
    }
    m.row_ptr.push(m.cols.len() as u64);
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::binfile::tests::container;
    use zkpipe_core::bn254;

    /// `.r1cs` bytes for `x·x = y` with y public (wires: one, y, x), over `prime`.
    pub fn square_r1cs(prime: &[u8; 32]) -> Vec<u8> {
        let mut header = 32u32.to_le_bytes().to_vec();
        header.extend(prime);
        for v in [3u32, 1, 0, 1] {
            header.extend(v.to_le_bytes());
        }
        header.extend(3u64.to_le_bytes());
        header.extend(1u32.to_le_bytes());
        let one = {
            let mut b = [0u8; 32];
            b[0] = 1;
            b
        };
        let mut cons = Vec::new();
        for wire in [2u32, 2, 1] {
            cons.extend(1u32.to_le_bytes());
            cons.extend(wire.to_le_bytes());
            cons.extend(one);
        }
        let labels: Vec<u8> = (0u64..3).flat_map(|l| l.to_le_bytes()).collect();
        container(b"r1cs", 1, &[(1, header), (2, cons), (3, labels)])
    }

    #[test]
    fn reads_a_small_circuit() {
        let c = CircomR1cs::from_bytes("t", square_r1cs(&BLS12_381_R)).unwrap();
        assert_eq!((c.r1cs.num_inputs, c.r1cs.num_aux), (2, 1));
        assert_eq!(c.r1cs.num_constraints(), 1);
        assert_eq!(c.r1cs.a.cols, vec![2]);
        assert_eq!(c.r1cs.c.vals, vec![Fr::one()]);
        let w = zkpipe_core::r1cs::Witness {
            inputs: vec![Fr::one(), Fr::from_u64(9)],
            aux: vec![Fr::from_u64(3)],
        };
        assert_eq!(c.r1cs.first_unsatisfied(&w).unwrap(), None);
    }

    #[test]
    fn bn254_is_named_and_refused() {
        let bn = crate::field::tests_support::bn254_r();
        let e = CircomR1cs::from_bytes("t", square_r1cs(&bn)).unwrap_err();
        assert!(e.to_string().contains("BN254 is not supported yet"), "{e}");
    }

    #[test]
    fn bn254_reads_over_bn254_and_a_bls12_381_file_is_refused_naming_both() {
        let parse = |prime| BinFile::parse("t".into(), square_r1cs(prime), b"r1cs", &[1]).unwrap();
        let bn = crate::field::tests_support::bn254_r();
        let f = parse(&bn);
        assert_eq!(r1cs_curve(&f).unwrap(), Curve::Bn254);
        let c = CircomR1cs::<bn254::Fr>::read(&f, |_, _| Ok(())).unwrap();
        assert_eq!((c.r1cs.num_inputs, c.r1cs.num_aux), (2, 1));
        assert_eq!(c.r1cs.c.vals, vec![bn254::Fr::one()]);
        let f = parse(&BLS12_381_R);
        assert_eq!(r1cs_curve(&f).unwrap(), Curve::Bls12_381);
        let e = CircomR1cs::<bn254::Fr>::read(&f, |_, _| Ok(())).unwrap_err();
        assert!(matches!(e, Error::WrongCurve { .. }), "{e}");
        assert!(
            e.to_string().contains("BLS12-381") && e.to_string().contains("BN254"),
            "{e}"
        );
        let bytes = square_r1cs(&bn);
        for cut in 0..bytes.len() {
            let read = BinFile::parse("t".into(), bytes[..cut].to_vec(), b"r1cs", &[1])
                .and_then(|f| CircomR1cs::<bn254::Fr>::read(&f, |_, _| Ok(())));
            assert!(read.is_err(), "{cut}");
        }
    }

    #[test]
    fn every_truncation_and_a_bad_wire_are_errors() {
        let bytes = square_r1cs(&BLS12_381_R);
        for cut in 0..bytes.len() {
            assert!(
                CircomR1cs::from_bytes("t", bytes[..cut].to_vec()).is_err(),
                "{cut}"
            );
        }
        // The first term's wire (after the 12-byte container, the section
        // headers and the 64-byte header section, then its count).
        let at = 12 + 12 + 64 + 12 + 4;
        let mut bad = bytes.clone();
        bad[at] = 7;
        let e = CircomR1cs::from_bytes("t", bad).unwrap_err();
        assert!(e.to_string().contains("wire 7"), "{e}");
    }
}
