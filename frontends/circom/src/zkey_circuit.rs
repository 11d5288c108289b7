//! A circuit from a zkey alone, as snarkjs and rapidsnark prove: the zkey's
//! coefficients (section 4) hold A and B, row by row, and one `1·signalᵢ`
//! row in A per public input after the constraints; C is not in a zkey.
//! Their provers take `C·w = (A·w)∘(B·w)`, which holds for every witness
//! that satisfies the circuit; [`products_as_c`] gives zkpipe's prover the
//! same, so the pipeline runs unchanged.

use zkpipe_core::r1cs::{Csr, R1cs, Witness};
use zkpipe_core::{Error, Fr};

use crate::binfile::BinFile;
use crate::field::{fr_canonical, zkey_coefficient_scale};
use crate::r1cs::CircomR1cs;
use crate::zkey::ZkeyHeader;
use zkpipe_core::groth16::domain_log_size;

/// The circuit a zkey's coefficients describe, with an empty C. The zkey
/// does not say which public signals are outputs: all count as outputs.
///
/// # Errors
/// [`Error::InvalidEncoding`] for a term out of range or a coefficient not
/// below r; [`Error::InvalidInput`] for coefficients that do not end with
/// the public inputs' rows, or a domain that does not fit the rows.
pub(crate) fn circuit_of(f: &BinFile, header: ZkeyHeader) -> Result<CircomR1cs, Error> {
    let num_inputs = header.num_public + 1;
    let mut s = f.section(4, "coefficients")?;
    let count = s.u32("coefficient count")? as u64;
    let bytes = s.items(count, 44, "coefficients")?;
    s.finish()?;
    let scale: Fr = zkey_coefficient_scale();
    let mut terms = Vec::with_capacity(count as usize);
    for (i, t) in bytes.chunks_exact(44).enumerate() {
        let word = |k: usize| u32::from_le_bytes(t[4 * k..4 * k + 4].try_into().unwrap());
        let (matrix, row, col) = (word(0), word(1) as usize, word(2) as usize);
        if matrix > 1 || row >= header.domain_size || col >= header.num_vars {
            return Err(s.error(format_args!(
                "coefficient {i} is (matrix {matrix}, row {row}, signal {col}): past matrix B, \
                 the {} rows or the {} signals",
                header.domain_size, header.num_vars
            )));
        }
        let value = fr_canonical(&t[12..], || format!("{}: coefficient {i}", s.name()))?;
        terms.push((matrix, row, col as u32, value.mul(&scale)));
    }
    let not_groth16 = |why: String| {
        Error::InvalidInput(format!(
            "{}: {why}: a Groth16 zkey's coefficients end with one `1·signal` row in A per \
             public input",
            f.name
        ))
    };
    // The last row is the last public input's: the constraints are the rows before the inputs'.
    let rows = terms.iter().map(|t| t.1 + 1).max().unwrap_or(0);
    let constraints = rows
        .checked_sub(num_inputs)
        .ok_or_else(|| not_groth16(format!("{rows} rows cannot hold {num_inputs} inputs' rows")))?;
    let mut input_rows = vec![false; num_inputs];
    for &(matrix, row, col, value) in terms.iter().filter(|t| t.1 >= constraints) {
        let input = row - constraints;
        if matrix != 0 || col as usize != input || value != Fr::one() || input_rows[input] {
            return Err(not_groth16(format!(
                "row {row} holds ({}, signal {col}) where input {input}'s row is",
                ["A", "B"][matrix as usize]
            )));
        }
        input_rows[input] = true;
    }
    if let Some(missing) = input_rows.iter().position(|seen| !seen) {
        return Err(not_groth16(format!("input {missing} has no row")));
    }
    let log_n = domain_log_size(constraints, num_inputs);
    if 1usize.checked_shl(log_n) != Some(header.domain_size) {
        return Err(Error::InvalidInput(format!(
            "{}: a domain of {} for {constraints} constraints and {num_inputs} inputs, which \
             need 2^{log_n}",
            f.name, header.domain_size
        )));
    }
    let matrix = |which: u32| {
        csr_by_rows(
            constraints,
            terms
                .iter()
                .filter(|t| t.0 == which && t.1 < constraints)
                .map(|&(_, row, col, value)| (row, col, value)),
        )
    };
    Ok(CircomR1cs {
        r1cs: R1cs {
            num_inputs,
            num_aux: header.num_vars - num_inputs,
            a: matrix(0),
            b: matrix(1),
            c: csr_by_rows(constraints, std::iter::empty()),
        },
        num_wires: header.num_vars,
        num_pub_out: header.num_public,
        num_pub_in: 0,
        num_prv_in: 0,
        num_labels: 0,
    })
}

/// A `rows`-row matrix of `(row, col, value)` terms in any row order; the
/// terms of one row keep their order.
fn csr_by_rows(rows: usize, terms: impl Iterator<Item = (usize, u32, Fr)> + Clone) -> Csr {
    let mut row_ptr = vec![0u64; rows + 1];
    for (row, _, _) in terms.clone() {
        row_ptr[row + 1] += 1;
    }
    for r in 0..rows {
        row_ptr[r + 1] += row_ptr[r];
    }
    let nnz = row_ptr[rows] as usize;
    let (mut cols, mut vals) = (vec![0u32; nnz], vec![Fr::ZERO; nnz]);
    let mut next: Vec<u64> = row_ptr[..rows].to_vec();
    for (row, col, value) in terms {
        let k = next[row] as usize;
        (cols[k], vals[k]) = (col, value);
        next[row] += 1;
    }
    Csr {
        row_ptr,
        cols,
        vals,
    }
}

/// Sets `r1cs`'s C to `(A·w)∘(B·w)` on the constant wire, for the witness
/// `w`: what a zkey's prover takes for `C·w`. Nothing is checked: a
/// witness that does not satisfy the circuit gives a proof that does not
/// verify.
///
/// # Errors
/// [`Error::InvalidInput`] for a witness of another shape.
pub fn products_as_c(r1cs: &mut R1cs, w: &Witness) -> Result<(), Error> {
    r1cs.check_witness(w)?;
    let a = r1cs.a.mul_split(&w.inputs, &w.aux);
    let b = r1cs.b.mul_split(&w.inputs, &w.aux);
    let products = a.iter().zip(&b).enumerate().filter_map(|(row, (x, y))| {
        let p = x.mul(y);
        (p != Fr::ZERO).then_some((row, 0u32, p))
    });
    r1cs.c = csr_by_rows(r1cs.num_constraints(), products);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binfile::tests::container;
    use crate::zkey_write::zkey_sections;
    use zkpipe_core::groth16::{HQuery, setup_for};
    use zkpipe_core::util::progress::Silent;

    /// Rows of `(wire, coefficient)` terms.
    fn csr(rows: &[&[(u32, u64)]]) -> Csr {
        csr_by_rows(
            rows.len(),
            rows.iter()
                .enumerate()
                .flat_map(|(r, terms)| terms.iter().map(move |&(c, v)| (r, c, Fr::from_u64(v)))),
        )
    }

    /// Wires: one, y (public), x1…x5. `x1·x2 = x3`, `(x3 + 2·x1)·(x4 + 1) =
    /// x5`, `x5·x5 = y + 3·x1`, and an empty last row.
    fn circuit() -> (CircomR1cs, Witness) {
        let r1cs = R1cs {
            num_inputs: 2,
            num_aux: 5,
            a: csr(&[&[(2, 1)], &[(4, 1), (2, 2)], &[(6, 1)], &[]]),
            b: csr(&[&[(3, 1)], &[(5, 1), (0, 1)], &[(6, 1)], &[]]),
            c: csr(&[&[(4, 1)], &[(6, 1)], &[(1, 1), (2, 3)], &[]]),
        };
        let [x1, x2, x4] = [3u64, 5, 7].map(Fr::from_u64);
        let x3 = x1.mul(&x2);
        let x5 = x3.add(&x1.add(&x1)).mul(&x4.add(&Fr::one()));
        let y = x5.mul(&x5).sub(&x1.mul(&Fr::from_u64(3)));
        let w = Witness {
            inputs: vec![Fr::one(), y],
            aux: vec![x1, x2, x3, x4, x5],
        };
        assert_eq!(r1cs.first_unsatisfied(&w).unwrap(), None);
        let c = CircomR1cs {
            r1cs,
            num_wires: 7,
            num_pub_out: 1,
            num_pub_in: 0,
            num_prv_in: 0,
            num_labels: 7,
        };
        (c, w)
    }

    fn zkey_of(c: &CircomR1cs, edit: impl FnOnce(&mut Vec<u8>)) -> BinFile {
        let params = setup_for(&c.r1cs, 9, HQuery::OddCoset, &Silent);
        let mut sections = zkey_sections(&params, c).unwrap();
        edit(&mut sections.iter_mut().find(|s| s.0 == 4).unwrap().1);
        BinFile::parse(
            "t.zkey".into(),
            container(b"zkey", 1, &sections),
            b"zkey",
            &[1],
        )
        .unwrap()
    }

    fn read(f: &BinFile) -> Result<CircomR1cs, Error> {
        circuit_of(f, crate::zkey::read_vk(f)?.0)
    }

    fn domain(r1cs: &R1cs, w: &Witness) -> [Vec<Fr>; 3] {
        let mut abc = [(); 3].map(|()| vec![Fr::ZERO; 8]);
        let [a, b, c] = &mut abc;
        r1cs.domain_evaluations_into(&w.inputs, &w.aux, [a, b, c])
            .unwrap();
        abc
    }

    #[test]
    fn a_zkey_alone_gives_its_circuits_a_and_b_and_the_provers_c() {
        let (c, w) = circuit();
        let mut back = read(&zkey_of(&c, |_| {})).unwrap();
        assert_eq!(
            (back.r1cs.a.clone(), back.r1cs.b.clone()),
            (c.r1cs.a.clone(), c.r1cs.b.clone())
        );
        assert_eq!((back.num_wires, back.num_public()), (7, 1));
        products_as_c(&mut back.r1cs, &w).unwrap();
        assert_eq!(domain(&back.r1cs, &w), domain(&c.r1cs, &w));
    }

    #[test]
    fn products_follow_the_witness_even_an_unsatisfying_one() {
        let (c, mut w) = circuit();
        let mut back = read(&zkey_of(&c, |_| {})).unwrap();
        w.aux[0] = Fr::from_u64(4);
        products_as_c(&mut back.r1cs, &w).unwrap();
        let [a, b, cc] = domain(&back.r1cs, &w);
        assert!((0..8).all(|i| a[i].mul(&b[i]) == cc[i]));
        assert_ne!(domain(&back.r1cs, &w)[2], domain(&c.r1cs, &w)[2]);
        w.aux.pop();
        assert!(products_as_c(&mut back.r1cs, &w).is_err());
    }

    /// Section 4: the count, then 44-byte terms (matrix, row, signal, value).
    fn set_term(s: &mut [u8], i: usize, word: usize, v: u32) {
        let at = 4 + 44 * i + 4 * word;
        s[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }

    type Edit<'a> = Box<dyn Fn(&mut Vec<u8>) + 'a>;

    #[test]
    fn coefficients_without_the_inputs_rows_or_out_of_range_are_refused() {
        let (c, _) = circuit();
        let count = |s: &[u8]| u32::from_le_bytes(s[..4].try_into().unwrap()) as usize;
        let dropped = |s: &mut Vec<u8>| {
            let n = count(s) - 1;
            s.truncate(4 + 44 * n);
            s[..4].copy_from_slice(&(n as u32).to_le_bytes());
        };
        let cases: [(&str, Edit<'_>); 4] = [
            ("one `1·signal` row in A per", Box::new(dropped)),
            (
                "past matrix B",
                Box::new(|s: &mut Vec<u8>| set_term(s, 0, 0, 2)),
            ),
            (
                "past matrix B",
                Box::new(|s: &mut Vec<u8>| set_term(s, 0, 2, 7)),
            ),
            (
                "where input 0's row is",
                Box::new(|s: &mut Vec<u8>| {
                    let last = count(s) - 2;
                    set_term(s, last, 0, 1)
                }),
            ),
        ];
        for (want, edit) in cases {
            let e = read(&zkey_of(&c, edit)).unwrap_err();
            assert!(e.to_string().contains(want), "{want}: {e}");
        }
    }
}
