//! The QAP coefficients of an R1CS as snarkjs's zkey lists them: what a
//! BN254 or BLS12-381 circom key holds for proving and what the provers
//! read back.

use crate::ScalarField;

use super::R1cs;

/// A zkey's QAP coefficients for `r1cs` in snarkjs's order, as
/// `(matrix: 0 = A, 1 = B; row; signal; value)`: per constraint its A terms,
/// then its B terms, then `1·signalᵢ` in A at row constraints + i for the
/// one and each public signal. Rows past `u32` wrap: writers check first.
pub fn qap_coefficients<F: ScalarField>(
    r1cs: &R1cs<F>,
) -> impl Iterator<Item = (u32, u32, u32, F)> + '_ {
    let rows = r1cs.num_constraints();
    (0..rows)
        .flat_map(move |row| {
            [(0u32, &r1cs.a), (1u32, &r1cs.b)]
                .into_iter()
                .flat_map(move |(tag, m)| {
                    (m.row_ptr[row] as usize..m.row_ptr[row + 1] as usize)
                        .map(move |k| (tag, row as u32, m.cols[k], m.vals[k]))
                })
        })
        .chain((0..r1cs.num_inputs).map(move |i| (0, (rows + i) as u32, i as u32, F::one())))
}
