//! The ops' inputs and settings as they cross the seam.

use abi_stable::{
    StableAbi,
    std_types::{ROption, RSlice, RVec},
};

use super::*;
use crate::types::Fr;

/// Identifies a base set kept inside a backend ([`Accelerator::upload_bases_g1`]).
#[repr(transparent)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BasesHandle(pub u64);

/// Where an MSM's bases are.
#[repr(C, u8)]
#[derive(StableAbi, Clone, Copy, Debug)]
pub enum BasesRef<'a, T> {
    /// In host memory, one base per scalar.
    Host(RSlice<'a, T>),
    /// Resident in the backend; the MSM uses the first `scalars.len()` bases.
    Resident(BasesHandle),
}

/// MSM settings.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, Default)]
pub struct MsmConfig {
    /// Device index (see [`BackendInfo::devices`]).
    pub device: u32,
    /// Pippenger window in bits; 0 lets the backend choose.
    pub window_bits: u32,
    /// Backend-only settings.
    pub ext: RVec<KeyValue>,
}

/// Transform direction.
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum NttDirection {
    /// Coefficients → evaluations: `y_k = Σ a_i (g·ω^k)^i`.
    #[default]
    Forward,
    /// Evaluations → coefficients (scaled by 1/n).
    Inverse,
}

/// Element orders of input and output: N = natural, R = bit-reversed.
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum NttOrder {
    /// Natural in, natural out.
    #[default]
    NN,
    /// Natural in, bit-reversed out.
    NR,
    /// Bit-reversed in, natural out.
    RN,
    /// Bit-reversed in, bit-reversed out.
    RR,
}

impl NttOrder {
    /// All four orders.
    pub const ALL: [NttOrder; 4] = [NttOrder::NN, NttOrder::NR, NttOrder::RN, NttOrder::RR];
    /// Whether the input is bit-reversed.
    pub fn input_reversed(self) -> bool {
        matches!(self, NttOrder::RN | NttOrder::RR)
    }
    /// Whether the output is bit-reversed.
    pub fn output_reversed(self) -> bool {
        matches!(self, NttOrder::NR | NttOrder::RR)
    }
    /// How a radix-2 NTT meets this order: decimation in time takes
    /// bit-reversed input to natural output, in frequency the opposite; the
    /// one that needs no permutation is picked, else the input is permuted once.
    pub fn radix2(self) -> Radix2 {
        let (permute_first, dit) = match self {
            NttOrder::RN => (false, true),
            NttOrder::NR => (false, false),
            NttOrder::NN => (true, true),
            NttOrder::RR => (true, false),
        };
        Radix2 { permute_first, dit }
    }
}

/// A radix-2 NTT's schedule for one [`NttOrder`] (see [`NttOrder::radix2`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Radix2 {
    /// Bit-reverse the input in place before the butterflies.
    pub permute_first: bool,
    /// Decimation in time (else in frequency).
    pub dit: bool,
}

impl Radix2 {
    /// Butterfly half-widths of the stages of a 2^log_n transform, in order:
    /// 1, 2, 4, … for DIT, …, 4, 2, 1 for DIF.
    pub fn halves(self, log_n: u32) -> impl Iterator<Item = u32> {
        let dit = self.dit;
        (0..log_n).map(move |k| 1 << if dit { k } else { log_n - 1 - k })
    }
}

/// NTT settings over the scalar field `F` of a curve. The domain is the
/// 2^k-th roots of unity ω (k = log2 of the input length, which must be a
/// power of two), optionally shifted to the coset g·⟨ω⟩.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, Default)]
pub struct NttConfigOf<F> {
    /// Device index.
    pub device: u32,
    /// Forward or inverse.
    pub direction: NttDirection,
    /// Input/output orders.
    pub order: NttOrder,
    /// Coset shift g (bellperson uses 7, Fr's multiplicative generator); `None` for ⟨ω⟩.
    pub coset: ROption<F>,
    /// Backend-only settings.
    pub ext: RVec<KeyValue>,
}

/// NTT settings over BLS12-381's Fr.
pub type NttConfig = NttConfigOf<Fr>;

/// Settings of the fused quotient.
#[repr(C)]
#[derive(StableAbi, Clone, Debug)]
pub struct QuotientConfig {
    /// Device index.
    pub device: u32,
    /// Coset shift g (bellperson: 7).
    pub coset: Fr,
    /// Backend-only settings.
    pub ext: RVec<KeyValue>,
}

/// Identifies R1CS matrices kept inside a backend ([`Accelerator::upload_r1cs`]).
/// Backends mint them with [`HandleMint`], so a handle of another backend
/// instance is refused as unknown rather than taken for one of its own.
#[repr(transparent)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct R1csHandle(pub u64);

/// One sparse matrix in compressed sparse row form, borrowed for a call:
/// row `r`'s entries are `row_ptr[r]..row_ptr[r + 1]` of `cols` (the
/// variable, an index into `inputs ‖ aux`) and `vals` (its coefficient).
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug)]
pub struct CsrRef<'a> {
    /// Row starts, one more than the rows; the first 0, the last `cols.len()`.
    pub row_ptr: RSlice<'a, u64>,
    /// Column of each entry.
    pub cols: RSlice<'a, u32>,
    /// Coefficient of each entry.
    pub vals: RSlice<'a, Fr>,
}

impl CsrRef<'_> {
    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.row_ptr.len().saturating_sub(1)
    }

    /// Bytes of its three arrays.
    pub fn bytes(&self) -> u64 {
        (8 * self.row_ptr.len() + 4 * self.cols.len() + 32 * self.vals.len()) as u64
    }

    fn check(&self, name: &str, vars: u64) -> Result<(), AccelError> {
        let bad = |what: String| AccelError::invalid_input(format!("upload_r1cs: {name}: {what}"));
        let (ptr, nnz) = (self.row_ptr.as_slice(), self.cols.len());
        if ptr.first() != Some(&0) {
            return Err(bad("row_ptr must start with 0".into()));
        }
        if self.vals.len() != nnz {
            return Err(bad(format!(
                "{nnz} columns but {} coefficients",
                self.vals.len()
            )));
        }
        if let Some(r) = ptr.windows(2).position(|w| w[0] > w[1]) {
            return Err(bad(format!("row_ptr decreases at row {r}")));
        }
        if ptr.last() != Some(&(nnz as u64)) {
            return Err(bad(format!(
                "row_ptr ends at {:?}, not at the {nnz} entries",
                ptr.last()
            )));
        }
        use rayon::prelude::*;
        if let Some(k) = self
            .cols
            .as_slice()
            .par_iter()
            .with_min_len(1 << 16)
            .position_first(|&c| c as u64 >= vars)
        {
            return Err(bad(format!(
                "entry {k} names variable {} of {vars}",
                self.cols[k]
            )));
        }
        Ok(())
    }
}

/// A recorded constraint system borrowed for [`Accelerator::upload_r1cs`]:
/// `A·w ∘ B·w = C·w` row by row for `w = inputs ‖ aux`.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug)]
pub struct R1csRef<'a> {
    /// Left factors, one row per constraint.
    pub a: CsrRef<'a>,
    /// Right factors.
    pub b: CsrRef<'a>,
    /// Products.
    pub c: CsrRef<'a>,
    /// Public inputs, the constant one included.
    pub num_inputs: u64,
    /// Private variables.
    pub num_aux: u64,
}

impl R1csRef<'_> {
    /// Its size, as ops check calls against it.
    pub fn shape(&self) -> R1csShape {
        R1csShape {
            rows: self.a.rows() as u64,
            num_inputs: self.num_inputs,
            num_aux: self.num_aux,
        }
    }

    /// Bytes of the three matrices' arrays.
    pub fn bytes(&self) -> u64 {
        self.a.bytes() + self.b.bytes() + self.c.bytes()
    }

    /// Checks that the matrices are well-formed CSR of one row count whose
    /// columns name variables that exist ([`Guarded`] runs it before a
    /// backend sees the matrices, so kernels may index without checks).
    ///
    /// # Errors
    /// `INVALID_INPUT`, saying what is wrong.
    pub fn check(&self) -> Result<(), AccelError> {
        let vars = self
            .num_inputs
            .checked_add(self.num_aux)
            .ok_or_else(|| AccelError::invalid_input("upload_r1cs: variable count overflows"))?;
        for (name, m) in [("A", &self.a), ("B", &self.b), ("C", &self.c)] {
            m.check(name, vars)?;
        }
        if self.b.rows() != self.a.rows() || self.c.rows() != self.a.rows() {
            return Err(AccelError::invalid_input(format!(
                "upload_r1cs: A, B and C have {}, {} and {} rows",
                self.a.rows(),
                self.b.rows(),
                self.c.rows()
            )));
        }
        Ok(())
    }
}

/// The size of uploaded matrices: what a witness and a domain must fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct R1csShape {
    /// Constraints.
    pub rows: u64,
    /// Public inputs, the constant one included.
    pub num_inputs: u64,
    /// Private variables.
    pub num_aux: u64,
}

impl R1csShape {
    /// Checks a [`Accelerator::quotient_from_witness`] call against this
    /// shape: the witness's lengths, and a domain of `n` holding the
    /// constraints and bellman's one row per input.
    ///
    /// # Errors
    /// `INVALID_INPUT`, saying what does not fit.
    pub fn check_call(&self, inputs: usize, aux: usize, n: usize) -> Result<(), AccelError> {
        if inputs as u64 != self.num_inputs || aux as u64 != self.num_aux {
            return Err(AccelError::invalid_input(format!(
                "quotient_from_witness: witness of {inputs} inputs and {aux} aux; \
                 the R1CS has {} and {}",
                self.num_inputs, self.num_aux
            )));
        }
        if (n as u64) < self.rows + self.num_inputs {
            return Err(AccelError::invalid_input(format!(
                "quotient_from_witness: a domain of {n} cannot hold {} constraints and {} input rows",
                self.rows, self.num_inputs
            )));
        }
        Ok(())
    }
}

/// Mints handles unique to one backend instance: a random tag in the top
/// 32 bits, a counter below. Handles of another instance (or another
/// backend, whose counter starts at the same place) then miss its table.
#[derive(Debug)]
pub struct HandleMint {
    tag: u64,
    next: std::sync::atomic::AtomicU64,
}

impl Default for HandleMint {
    fn default() -> Self {
        use std::hash::BuildHasher;
        // RandomState's keys differ per instance: no RNG dependency needed.
        let random = std::collections::hash_map::RandomState::new().hash_one(0u8);
        HandleMint {
            tag: (random | 1) << 32,
            next: std::sync::atomic::AtomicU64::new(1),
        }
    }
}

impl HandleMint {
    /// A handle value not returned before by this mint.
    pub fn next(&self) -> u64 {
        self.tag | (self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) & 0xffff_ffff)
    }
}

/// Settings of [`Accelerator::quotient_from_witness`].
#[repr(C)]
#[derive(StableAbi, Clone, Debug)]
pub struct SpmvConfig {
    /// Device index: where the matrices were uploaded.
    pub device: u32,
    /// Coset shift g (bellperson: 7).
    pub coset: Fr,
    /// The domain's log size: `h_out` holds 2^`log_n` elements.
    pub log_n: u32,
    /// Check `(A·w)·(B·w) = C·w` on every constraint first, and report the
    /// first that fails instead of computing `h`.
    pub check: bool,
    /// Backend-only settings.
    pub ext: RVec<KeyValue>,
}
