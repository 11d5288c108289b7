//! Replays a recorded R1CS and witness into bellperson's constraint system
//! (bellperson speaks bellpepper-core 0.2, zkpipe's circuits 0.4). Shared by
//! `tests/interop.rs` and `examples/bellperson_prove.rs`.

use blstrs::Scalar;
use std::sync::Arc;
use zkpipe::Fr;
use zkpipe::r1cs::{R1cs, Witness};

/// The bellperson scalar with the same bits.
pub fn scalar(x: &Fr) -> Scalar {
    Scalar::from(*x.as_blst())
}

/// Replays a recorded R1CS and witness into bellperson's constraint system.
#[derive(Clone)]
pub struct Replay {
    /// The constraints.
    pub r1cs: Arc<R1cs>,
    /// The assignment.
    pub witness: Arc<Witness>,
}

impl bellperson::Circuit<Scalar> for Replay {
    fn synthesize<CS: bellperson::ConstraintSystem<Scalar>>(
        self,
        cs: &mut CS,
    ) -> Result<(), bellperson::SynthesisError> {
        let mut vars = vec![CS::one()];
        for x in &self.witness.inputs[1..] {
            vars.push(cs.alloc_input(|| "input", || Ok(scalar(x)))?);
        }
        for x in &self.witness.aux {
            vars.push(cs.alloc(|| "aux", || Ok(scalar(x)))?);
        }
        let lc = |m: &zkpipe::r1cs::Csr, row: usize| {
            let mut lc = bellperson::LinearCombination::zero();
            for k in m.row_ptr[row] as usize..m.row_ptr[row + 1] as usize {
                lc = lc + (scalar(&m.vals[k]), vars[m.cols[k] as usize]);
            }
            lc
        };
        for row in 0..self.r1cs.num_constraints() {
            let (a, b, c) = (
                lc(&self.r1cs.a, row),
                lc(&self.r1cs.b, row),
                lc(&self.r1cs.c, row),
            );
            cs.enforce(|| "row", |_| a, |_| b, |_| c);
        }
        Ok(())
    }
}
