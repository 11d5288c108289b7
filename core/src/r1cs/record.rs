//! Synthesis into zkpipe's types: recording a circuit's constraints into
//! CSR matrices (once per shape), and witness-only synthesis (per proof).
//!
//! [`R1csBuilder`] is the recording half every front end shares: a
//! bellpepper-core 0.4 constraint system here, bellperson 0.27's (0.2) in
//! the Filecoin front end.

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::{Csr, R1cs, fr};
use crate::Error;
use crate::types::Fr;

/// While recording, aux columns carry this bit; they are renumbered after
/// the inputs once their count is known.
const AUX_BIT: u32 = 1 << 31;

/// A variable as a constraint system names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    /// Public input `i` (0 is the constant one).
    Input(usize),
    /// Private variable `i`.
    Aux(usize),
}

/// Builds an [`R1cs`] constraint by constraint.
#[derive(Debug)]
pub struct R1csBuilder {
    r1cs: R1cs,
}

impl Default for R1csBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl R1csBuilder {
    /// An empty system with the constant one as input 0.
    pub fn new() -> Self {
        R1csBuilder {
            r1cs: R1cs {
                num_inputs: 1,
                num_aux: 0,
                a: Csr::new(),
                b: Csr::new(),
                c: Csr::new(),
            },
        }
    }

    /// Adds a public input and returns its index.
    pub fn alloc_input(&mut self) -> usize {
        self.r1cs.num_inputs += 1;
        self.r1cs.num_inputs - 1
    }

    /// Adds a private variable and returns its index.
    pub fn alloc_aux(&mut self) -> usize {
        self.r1cs.num_aux += 1;
        self.r1cs.num_aux - 1
    }

    /// Adds the constraint `a · b = c`, each side a list of terms.
    pub fn enforce<'a>(
        &mut self,
        a: impl IntoIterator<Item = (Column, &'a Scalar)>,
        b: impl IntoIterator<Item = (Column, &'a Scalar)>,
        c: impl IntoIterator<Item = (Column, &'a Scalar)>,
    ) {
        self.r1cs.a.push_row(a);
        self.r1cs.b.push_row(b);
        self.r1cs.c.push_row(c);
    }

    /// The recorded system, aux columns numbered after the inputs.
    pub fn finish(self) -> R1cs {
        let mut r1cs = self.r1cs;
        let n_in = r1cs.num_inputs as u32;
        for m in [&mut r1cs.a, &mut r1cs.b, &mut r1cs.c] {
            m.cols.par_iter_mut().for_each(|c| {
                if *c & AUX_BIT != 0 {
                    *c = (*c & !AUX_BIT) + n_in;
                }
            });
        }
        r1cs
    }
}

impl Csr {
    fn push_row<'a>(&mut self, terms: impl IntoIterator<Item = (Column, &'a Scalar)>) {
        for (var, coeff) in terms {
            self.cols.push(match var {
                Column::Input(i) => i as u32,
                Column::Aux(i) => AUX_BIT | i as u32,
            });
            self.vals.push(fr(*coeff));
        }
        self.row_ptr.push(self.cols.len() as u64);
    }
}

fn terms(lc: &LinearCombination<Scalar>) -> impl Iterator<Item = (Column, &Scalar)> {
    lc.iter().map(|(var, coeff)| {
        let col = match var.get_unchecked() {
            Index::Input(i) => Column::Input(i),
            Index::Aux(i) => Column::Aux(i),
        };
        (col, coeff)
    })
}

/// A full assignment: `inputs[0]` is one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Witness {
    /// Public inputs, the constant one first.
    pub inputs: Vec<Fr>,
    /// Private (auxiliary) variables.
    pub aux: Vec<Fr>,
}

impl Witness {
    /// Runs `circuit` in witness-only mode: values are computed, constraints are not built.
    ///
    /// # Errors
    /// [`Error::Synthesis`] when the circuit fails (e.g. a missing assignment).
    pub fn generate<C: Circuit<Scalar>>(circuit: C) -> Result<Witness, Error> {
        let mut cs = WitnessCs {
            inputs: vec![Scalar::ONE],
            aux: vec![],
        };
        circuit.synthesize(&mut cs).map_err(synthesis)?;
        Ok(Witness {
            inputs: cs.inputs.into_iter().map(fr).collect(),
            aux: cs.aux.into_iter().map(fr).collect(),
        })
    }

    /// `inputs ‖ aux`, the vector the matrices multiply.
    pub fn full(&self) -> Vec<Fr> {
        [self.inputs.as_slice(), self.aux.as_slice()].concat()
    }

    /// The public inputs a verifier is given (without the leading one).
    pub fn public_inputs(&self) -> &[Fr] {
        &self.inputs[1..]
    }
}

fn synthesis(e: SynthesisError) -> Error {
    Error::Synthesis(e.to_string())
}

impl R1cs {
    /// Synthesizes `circuit`, recording its constraints and its assignment.
    ///
    /// # Errors
    /// [`Error::Synthesis`] when the circuit fails.
    pub fn record<C: Circuit<Scalar>>(circuit: C) -> Result<(R1cs, Witness), Error> {
        let mut cs = RecordingCs {
            builder: R1csBuilder::new(),
            witness: Witness {
                inputs: vec![Fr::one()],
                aux: vec![],
            },
        };
        circuit.synthesize(&mut cs).map_err(synthesis)?;
        Ok((cs.builder.finish(), cs.witness))
    }
}

/// Records constraints and values.
struct RecordingCs {
    builder: R1csBuilder,
    witness: Witness,
}

impl ConstraintSystem<Scalar> for RecordingCs {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.witness.aux.push(fr(f()?));
        Ok(Variable::new_unchecked(Index::Aux(
            self.builder.alloc_aux(),
        )))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.witness.inputs.push(fr(f()?));
        Ok(Variable::new_unchecked(Index::Input(
            self.builder.alloc_input(),
        )))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let (a, b, c) = (
            a(LinearCombination::zero()),
            b(LinearCombination::zero()),
            c(LinearCombination::zero()),
        );
        self.builder.enforce(terms(&a), terms(&b), terms(&c));
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// Computes values only.
struct WitnessCs {
    inputs: Vec<Scalar>,
    aux: Vec<Scalar>,
}

impl ConstraintSystem<Scalar> for WitnessCs {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_witness_generator(&self) -> bool {
        true
    }

    fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
        self.inputs.extend_from_slice(new_inputs);
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        self.aux.extend_from_slice(new_aux);
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        let (a0, i0) = (self.aux.len(), self.inputs.len());
        self.aux.resize(a0 + aux_n, Scalar::ZERO);
        self.inputs.resize(i0 + inputs_n, Scalar::ZERO);
        (&mut self.aux[a0..], &mut self.inputs[i0..])
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Scalar] {
        let i0 = self.inputs.len();
        self.inputs.resize(i0 + n, Scalar::ZERO);
        &mut self.inputs[i0..]
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Scalar] {
        let a0 = self.aux.len();
        self.aux.resize(a0 + n, Scalar::ZERO);
        &mut self.aux[a0..]
    }

    fn inputs_slice(&self) -> &[Scalar] {
        &self.inputs
    }

    fn aux_slice(&self) -> &[Scalar] {
        &self.aux
    }
}
