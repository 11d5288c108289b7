//! The accelerator plugin ABI: what a backend shared library exports and how
//! the host talks to it.
//!
//! A backend is a `cdylib` that implements [`AcceleratorImpl`] (plain Rust
//! types) and exports it with [`export_backend!`](crate::export_backend). The
//! macro wraps the implementation in [`Guarded`], which validates arguments,
//! catches panics and turns everything into the FFI-safe [`Accelerator`]
//! trait object that crosses the seam. The host loads libraries with
//! [`crate::loader`] and calls them through [`crate::Backend`].
//!
//! Compatibility: [`BackendMod`] and the [`Accelerator`] vtable are abi_stable
//! prefix types, so ops can be appended after the last prefix field without
//! breaking plugins built earlier. abi_stable checks layouts and the core
//! crate's version at load time; [`ABI_VERSION`] is zkpipe's own check on the
//! meaning of the calls.

#![allow(non_local_definitions)] // emitted by #[sabi_trait] on Rust ≥ 1.80

use abi_stable::{
    StableAbi, declare_root_module_statics,
    library::RootModule,
    package_version_strings, sabi_trait,
    sabi_types::VersionStrings,
    std_types::{RBox, ROption, RResult, RSlice, RSliceMut, RStr, RString, RVec},
};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::types::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};

/// zkpipe's plugin ABI version. Bump it when the meaning of a call changes;
/// the loader refuses plugins whose version differs.
pub const ABI_VERSION: u32 = 2;

// ------------------------------------------------------------------ errors

/// What kind of failure a backend reports. A `u32` rather than an enum so a
/// newer plugin's codes still read as *some* error on an older host.
#[repr(transparent)]
#[derive(StableAbi, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub u32);

impl ErrorCode {
    /// The backend does not implement this op (the caller may fall back).
    pub const UNSUPPORTED: ErrorCode = ErrorCode(1);
    /// Arguments the op cannot use (lengths, sizes, unknown handle, bad config).
    pub const INVALID_INPUT: ErrorCode = ErrorCode(2);
    /// Host or device memory ran out; retrying later may succeed.
    pub const OUT_OF_MEMORY: ErrorCode = ErrorCode(3);
    /// The device is missing, lost or its driver failed to start.
    pub const DEVICE_UNAVAILABLE: ErrorCode = ErrorCode(4);
    /// A bug or an unexpected failure inside the backend (including a caught panic).
    pub const INTERNAL: ErrorCode = ErrorCode(5);

    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::UNSUPPORTED => "unsupported",
            Self::INVALID_INPUT => "invalid input",
            Self::OUT_OF_MEMORY => "out of memory",
            Self::DEVICE_UNAVAILABLE => "device unavailable",
            Self::INTERNAL => "internal error",
            _ => "unknown error",
        }
    }
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}

/// An error crossing the seam: a code the caller can act on and a message for people.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct AccelError {
    /// What kind of failure.
    pub code: ErrorCode,
    /// What happened, in words.
    pub message: RString,
}

impl AccelError {
    /// An error with the given code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        AccelError {
            code,
            message: RString::from(message.into()),
        }
    }
    /// [`ErrorCode::UNSUPPORTED`] for the named op.
    pub fn unsupported(op: &str) -> Self {
        Self::new(
            ErrorCode::UNSUPPORTED,
            format!("{op} is not supported by this backend"),
        )
    }
    /// [`ErrorCode::INVALID_INPUT`].
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_INPUT, message)
    }
}

impl fmt::Display for AccelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.name(), self.message)
    }
}

impl std::error::Error for AccelError {}

/// Result type of every op at the seam.
pub type AccelResult<T> = RResult<T, AccelError>;

// ------------------------------------------------------------------ descriptions

/// A backend-specific setting, passed through untouched (e.g. `window_bits=16`).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct KeyValue {
    /// Setting name.
    pub key: RString,
    /// Setting value, as text.
    pub value: RString,
}

/// Looks a key up in a list of backend-specific settings.
pub fn ext_get<'a>(ext: &'a [KeyValue], key: &str) -> Option<&'a str> {
    ext.iter()
        .rev()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.as_str())
}

/// Settings for creating a backend instance.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, Default)]
pub struct BackendConfig {
    /// Host threads the backend may use; `None` means all cores. `Some(0)` is invalid.
    pub threads: ROption<u32>,
    /// Backend-only settings (see each backend's docs).
    pub ext: RVec<KeyValue>,
}

/// What a device is.
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    /// Host CPU cores.
    Cpu,
    /// A discrete or integrated GPU.
    Gpu,
    /// Anything else (FPGA, software emulator, …).
    Other,
}

/// One device a backend can run on.
#[repr(C)]
#[derive(StableAbi, Clone, Debug)]
pub struct DeviceInfo {
    /// Index to pass as `device` in op configs.
    pub id: u32,
    /// Human-readable name (CPU model, GPU name).
    pub name: RString,
    /// What the device is.
    pub kind: DeviceKind,
    /// Memory the device can use, in bytes.
    pub memory_bytes: u64,
    /// Threads (CPU) or compute units / SMs (GPU).
    pub compute_units: u32,
}

/// Who a backend is and what it runs on.
#[repr(C)]
#[derive(StableAbi, Clone, Debug)]
pub struct BackendInfo {
    /// Registry name (`cpu`, `cuda`, `wgpu`).
    pub name: RString,
    /// Backend version.
    pub version: RString,
    /// Devices found; may be empty (then `notes` says why).
    pub devices: RVec<DeviceInfo>,
    /// Anything worth telling a user: why no device was found, compile cache state, …
    pub notes: RString,
}

/// Names of the ops a backend may declare in [`Capabilities`].
pub mod ops {
    /// G1 multi-scalar multiplication.
    pub const MSM_G1: &str = "msm_g1";
    /// G2 multi-scalar multiplication.
    pub const MSM_G2: &str = "msm_g2";
    /// Many G1 MSMs over one base set.
    pub const MSM_G1_BATCH: &str = "msm_g1_batch";
    /// Many G2 MSMs over one base set.
    pub const MSM_G2_BATCH: &str = "msm_g2_batch";
    /// Bases kept in the backend and referred to by handle.
    pub const RESIDENT_BASES: &str = "resident_bases";
    /// NTT / inverse NTT over Fr, all orders, cosets.
    pub const NTT: &str = "ntt";
    /// Groth16's quotient `h` from `a, b, c` in one call (see [`Accelerator::quotient`]).
    pub const QUOTIENT: &str = "quotient";
    /// Host memory the backend moves fastest, lent to the caller (see
    /// [`Accelerator::host_alloc`]).
    pub const HOST_MEMORY: &str = "host_memory";
    /// R1CS matrices kept in the backend and Groth16's quotient straight
    /// from a witness: SpMV, the satisfaction check and the quotient in one
    /// call (see [`Accelerator::quotient_from_witness`]). Its size limit is
    /// the domain's log size.
    pub const SPMV: &str = "spmv";
    /// Every op name, in display order.
    pub const ALL: &[&str] = &[
        MSM_G1,
        MSM_G2,
        MSM_G1_BATCH,
        MSM_G2_BATCH,
        RESIDENT_BASES,
        NTT,
        QUOTIENT,
        HOST_MEMORY,
        SPMV,
    ];
}

/// One supported op and its limits.
#[repr(C)]
#[derive(StableAbi, Clone, Debug)]
pub struct OpSupport {
    /// Op name (see [`ops`]).
    pub op: RString,
    /// Largest supported input, as log2 of the element count.
    pub max_log_size: u32,
    /// Device memory the op allocates besides its inputs and resident
    /// bases, by log2 of the element count: entry `k` is for inputs of up to
    /// 2^k elements. Empty: none (a host backend) or not known. The
    /// scheduler admits device work with these numbers, so a backend knows
    /// its own layout and core never guesses it.
    pub scratch_bytes: RVec<u64>,
}

impl OpSupport {
    /// `op` up to 2^`max_log_size` elements, with no device scratch declared.
    pub fn new(op: &str, max_log_size: u32) -> Self {
        OpSupport {
            op: op.into(),
            max_log_size,
            scratch_bytes: RVec::new(),
        }
    }

    /// With scratch `bytes(n)` for each size n = 2^k, k ≤ `max_log_size`.
    pub fn with_scratch(mut self, bytes: impl Fn(u64) -> u64) -> Self {
        self.scratch_bytes = (0..=self.max_log_size).map(|k| bytes(1 << k)).collect();
        self
    }
}

/// The ops a backend implements. An op missing here answers
/// [`ErrorCode::UNSUPPORTED`]; callers compose or fall back.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, Default)]
pub struct Capabilities {
    /// Supported ops.
    pub ops: RVec<OpSupport>,
}

impl Capabilities {
    /// Whether `op` is supported.
    pub fn supports(&self, op: &str) -> bool {
        self.ops.iter().any(|o| o.op.as_str() == op)
    }

    /// Whether `op` is supported for inputs of 2^`log_size` elements.
    pub fn supports_size(&self, op: &str, log_size: u32) -> bool {
        self.ops
            .iter()
            .any(|o| o.op.as_str() == op && o.max_log_size >= log_size)
    }

    /// Device scratch bytes the backend declares for `op` on `n` elements
    /// (the entry for the next power of two; the last entry past the
    /// table); 0 when it declares none.
    pub fn scratch_bytes(&self, op: &str, n: u64) -> u64 {
        let k = n.max(1).next_power_of_two().trailing_zeros() as usize;
        self.ops
            .iter()
            .find(|o| o.op.as_str() == op)
            .and_then(|o| o.scratch_bytes.get(k).or(o.scratch_bytes.last()).copied())
            .unwrap_or(0)
    }
}

// ------------------------------------------------------------------ op inputs

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

/// NTT settings. The domain is the 2^k-th roots of unity ω (k = log2 of the
/// input length, which must be a power of two), optionally shifted to the
/// coset g·⟨ω⟩.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, Default)]
pub struct NttConfig {
    /// Device index.
    pub device: u32,
    /// Forward or inverse.
    pub direction: NttDirection,
    /// Input/output orders.
    pub order: NttOrder,
    /// Coset shift g (bellperson uses 7, Fr's multiplicative generator); `None` for ⟨ω⟩.
    pub coset: ROption<Fr>,
    /// Backend-only settings.
    pub ext: RVec<KeyValue>,
}

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

// ------------------------------------------------------------------ the trait at the seam

/// The FFI-safe accelerator interface (one object per backend instance).
///
/// Plugin authors do not implement this directly: implement
/// [`AcceleratorImpl`] and export it with [`export_backend!`](crate::export_backend).
#[sabi_trait]
pub trait Accelerator: Send + Sync {
    /// Name, version and devices.
    fn info(&self) -> BackendInfo;
    /// Supported ops.
    fn capabilities(&self) -> Capabilities;
    /// `Σ scalars[i]·bases[i]` in G1.
    fn msm_g1(
        &self,
        bases: BasesRef<'_, G1Affine>,
        scalars: RSlice<'_, Fr>,
        config: &MsmConfig,
    ) -> AccelResult<G1Projective>;
    /// `Σ scalars[i]·bases[i]` in G2.
    fn msm_g2(
        &self,
        bases: BasesRef<'_, G2Affine>,
        scalars: RSlice<'_, Fr>,
        config: &MsmConfig,
    ) -> AccelResult<G2Projective>;
    /// One G1 MSM per scalar vector, all over the same bases.
    fn msm_g1_batch(
        &self,
        bases: BasesRef<'_, G1Affine>,
        scalars: RSlice<'_, RSlice<'_, Fr>>,
        config: &MsmConfig,
    ) -> AccelResult<RVec<G1Projective>>;
    /// One G2 MSM per scalar vector, all over the same bases.
    fn msm_g2_batch(
        &self,
        bases: BasesRef<'_, G2Affine>,
        scalars: RSlice<'_, RSlice<'_, Fr>>,
        config: &MsmConfig,
    ) -> AccelResult<RVec<G2Projective>>;
    /// Copies G1 bases into the backend (device memory for GPUs) and returns a handle.
    fn upload_bases_g1(&self, bases: RSlice<'_, G1Affine>, device: u32)
    -> AccelResult<BasesHandle>;
    /// Copies G2 bases into the backend and returns a handle.
    fn upload_bases_g2(&self, bases: RSlice<'_, G2Affine>, device: u32)
    -> AccelResult<BasesHandle>;
    /// Frees resident bases.
    fn drop_bases(&self, handle: BasesHandle) -> AccelResult<()>;
    /// In-place NTT of `values` (length a power of two).
    #[sabi(last_prefix_field)]
    fn ntt(&self, values: RSliceMut<'_, Fr>, config: &NttConfig) -> AccelResult<()>;
    /// Groth16's quotient in one call. `a, b, c` are evaluations over the
    /// n-th roots of unity (natural order, equal power-of-two lengths); on
    /// return `a` holds the coefficients of `h = (A·B − C)/Z`, computed on the
    /// coset g·⟨ω⟩ with `Z(g·ω^i) = gⁿ − 1` (the last coefficient is zero).
    /// Hosts call it only where [`Capabilities`] lists it (a plugin may
    /// leave it out and keep the default `UNSUPPORTED`).
    fn quotient(
        &self,
        a: RSliceMut<'_, Fr>,
        b: RSlice<'_, Fr>,
        c: RSlice<'_, Fr>,
        config: &QuotientConfig,
    ) -> AccelResult<()>;
    /// Host memory of `bytes` bytes (aligned to 64, contents unspecified)
    /// that this backend's copies read and write fastest: page-locked for
    /// a GPU, so inputs placed there skip its staging copies. Returns the
    /// address. Listed as [`ops::HOST_MEMORY`]. Added after `quotient`: a
    /// plugin built before it has a shorter vtable, which the loader's
    /// layout check refuses ("incompatible plugin interface"; rebuild it).
    fn host_alloc(&self, bytes: u64) -> AccelResult<u64>;
    /// Frees memory from [`Accelerator::host_alloc`]; the caller has no op
    /// in flight on it. `INVALID_INPUT` for an address it did not return.
    fn host_free(&self, address: u64) -> AccelResult<()>;
    /// Copies R1CS matrices into the backend (device memory for GPUs) for
    /// [`Accelerator::quotient_from_witness`]; they count against the
    /// device's memory like resident bases. Listed as [`ops::SPMV`].
    /// Added after `host_free`: a plugin built before it has a shorter
    /// vtable, which the loader's layout check refuses ("incompatible
    /// plugin interface"; rebuild it).
    fn upload_r1cs(&self, r1cs: R1csRef<'_>, device: u32) -> AccelResult<R1csHandle>;
    /// Frees uploaded matrices. `INVALID_INPUT` for an unknown handle.
    fn drop_r1cs(&self, handle: R1csHandle) -> AccelResult<()>;
    /// Groth16's quotient from a witness `w = inputs ‖ aux` (two slices:
    /// joining them would cost the host copy this op exists to avoid), over
    /// the domain of n = `h_out.len()` = 2^`config.log_n` points: `a, b, c`
    /// = `A·w, B·w, C·w` on the constraints' rows, then bellman's rows
    /// `input_i · 1 = 0` (the inputs in `a`), then zeros; with
    /// `config.check`, the first constraint where `a·b ≠ c` is returned as
    /// `Some(row)` and `h_out`'s contents are unspecified (a host backend
    /// may have used it for `a`); else `h_out` gets what
    /// [`Accelerator::quotient`] gives for `a, b, c` and the result is
    /// `None`. The vectors stay inside the backend. `INVALID_INPUT` for an
    /// unknown or dropped handle, one of another device, a witness of
    /// another shape, or a domain too small for the rows.
    fn quotient_from_witness(
        &self,
        handle: R1csHandle,
        inputs: RSlice<'_, Fr>,
        aux: RSlice<'_, Fr>,
        h_out: RSliceMut<'_, Fr>,
        config: &SpmvConfig,
    ) -> AccelResult<ROption<u64>>;
}

/// An owned accelerator trait object, as returned by a plugin's `new`.
pub type AcceleratorBox = Accelerator_TO<'static, RBox<()>>;

// ------------------------------------------------------------------ the Rust-side trait

/// What a backend implements, in plain Rust types. Every op has a default
/// that answers [`ErrorCode::UNSUPPORTED`]. Arguments arrive validated by
/// [`Guarded`] (equal host lengths, NTT length a power of two); panics are
/// caught there too, so implementations may use ordinary Rust.
pub trait AcceleratorImpl: Send + Sync + 'static {
    /// Name, version and devices.
    fn info(&self) -> BackendInfo;
    /// Supported ops.
    fn capabilities(&self) -> Capabilities;
    /// See [`Accelerator::msm_g1`].
    ///
    /// # Errors
    /// Any [`AccelError`]; `INVALID_INPUT` for a resident set shorter than `scalars`.
    fn msm_g1(
        &self,
        _bases: BasesRef<'_, G1Affine>,
        _scalars: &[Fr],
        _config: &MsmConfig,
    ) -> Result<G1Projective, AccelError> {
        Err(AccelError::unsupported(ops::MSM_G1))
    }
    /// See [`Accelerator::msm_g2`].
    ///
    /// # Errors
    /// Any [`AccelError`].
    fn msm_g2(
        &self,
        _bases: BasesRef<'_, G2Affine>,
        _scalars: &[Fr],
        _config: &MsmConfig,
    ) -> Result<G2Projective, AccelError> {
        Err(AccelError::unsupported(ops::MSM_G2))
    }
    /// See [`Accelerator::msm_g1_batch`]; the default runs one MSM per vector.
    ///
    /// # Errors
    /// Any [`AccelError`].
    fn msm_g1_batch(
        &self,
        bases: BasesRef<'_, G1Affine>,
        scalars: &[RSlice<'_, Fr>],
        config: &MsmConfig,
    ) -> Result<Vec<G1Projective>, AccelError> {
        scalars
            .iter()
            .map(|s| self.msm_g1(bases, s.as_slice(), config))
            .collect()
    }
    /// See [`Accelerator::msm_g2_batch`]; the default runs one MSM per vector.
    ///
    /// # Errors
    /// Any [`AccelError`].
    fn msm_g2_batch(
        &self,
        bases: BasesRef<'_, G2Affine>,
        scalars: &[RSlice<'_, Fr>],
        config: &MsmConfig,
    ) -> Result<Vec<G2Projective>, AccelError> {
        scalars
            .iter()
            .map(|s| self.msm_g2(bases, s.as_slice(), config))
            .collect()
    }
    /// See [`Accelerator::upload_bases_g1`].
    ///
    /// # Errors
    /// `OUT_OF_MEMORY` when the set does not fit; any other [`AccelError`].
    fn upload_bases_g1(
        &self,
        _bases: &[G1Affine],
        _device: u32,
    ) -> Result<BasesHandle, AccelError> {
        Err(AccelError::unsupported(ops::RESIDENT_BASES))
    }
    /// See [`Accelerator::upload_bases_g2`].
    ///
    /// # Errors
    /// `OUT_OF_MEMORY` when the set does not fit; any other [`AccelError`].
    fn upload_bases_g2(
        &self,
        _bases: &[G2Affine],
        _device: u32,
    ) -> Result<BasesHandle, AccelError> {
        Err(AccelError::unsupported(ops::RESIDENT_BASES))
    }
    /// See [`Accelerator::drop_bases`].
    ///
    /// # Errors
    /// `INVALID_INPUT` for an unknown handle.
    fn drop_bases(&self, _handle: BasesHandle) -> Result<(), AccelError> {
        Err(AccelError::unsupported(ops::RESIDENT_BASES))
    }
    /// See [`Accelerator::ntt`].
    ///
    /// # Errors
    /// Any [`AccelError`].
    fn ntt(&self, _values: &mut [Fr], _config: &NttConfig) -> Result<(), AccelError> {
        Err(AccelError::unsupported(ops::NTT))
    }
    /// See [`Accelerator::quotient`].
    ///
    /// # Errors
    /// Any [`AccelError`].
    fn quotient(
        &self,
        _a: &mut [Fr],
        _b: &[Fr],
        _c: &[Fr],
        _config: &QuotientConfig,
    ) -> Result<(), AccelError> {
        Err(AccelError::unsupported(ops::QUOTIENT))
    }
    /// See [`Accelerator::host_alloc`].
    ///
    /// # Errors
    /// `OUT_OF_MEMORY` when the memory cannot be had.
    fn host_alloc(&self, _bytes: u64) -> Result<u64, AccelError> {
        Err(AccelError::unsupported(ops::HOST_MEMORY))
    }
    /// See [`Accelerator::host_free`].
    ///
    /// # Errors
    /// `INVALID_INPUT` for an address this backend did not lend.
    fn host_free(&self, _address: u64) -> Result<(), AccelError> {
        Err(AccelError::unsupported(ops::HOST_MEMORY))
    }
    /// See [`Accelerator::upload_r1cs`]; the matrices arrive checked
    /// ([`R1csRef::check`]).
    ///
    /// # Errors
    /// `OUT_OF_MEMORY` when they do not fit; any other [`AccelError`].
    fn upload_r1cs(&self, _r1cs: R1csRef<'_>, _device: u32) -> Result<R1csHandle, AccelError> {
        Err(AccelError::unsupported(ops::SPMV))
    }
    /// See [`Accelerator::drop_r1cs`].
    ///
    /// # Errors
    /// `INVALID_INPUT` for an unknown handle.
    fn drop_r1cs(&self, _handle: R1csHandle) -> Result<(), AccelError> {
        Err(AccelError::unsupported(ops::SPMV))
    }
    /// See [`Accelerator::quotient_from_witness`]; `h_out` arrives of
    /// length 2^`config.log_n` and the coset shift nonzero. Check the rest
    /// with [`R1csShape::check_call`].
    ///
    /// # Errors
    /// `INVALID_INPUT` as listed there; any other [`AccelError`].
    fn quotient_from_witness(
        &self,
        _handle: R1csHandle,
        _inputs: &[Fr],
        _aux: &[Fr],
        _h_out: &mut [Fr],
        _config: &SpmvConfig,
    ) -> Result<Option<u64>, AccelError> {
        Err(AccelError::unsupported(ops::SPMV))
    }
}

/// Adapts an [`AcceleratorImpl`] to the seam: checks arguments, then runs
/// the op under `catch_unwind` (a panic crossing the seam would abort the
/// host) and converts results to FFI types.
#[derive(Debug)]
pub struct Guarded<T>(pub T);

/// Runs `f`, turning a panic into an [`ErrorCode::INTERNAL`] error.
pub fn guard<R>(op: &str, f: impl FnOnce() -> Result<R, AccelError>) -> AccelResult<R> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.into(),
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".into());
            RResult::RErr(AccelError::new(
                ErrorCode::INTERNAL,
                format!("panic in {op}: {msg}"),
            ))
        }
    }
}

fn check_msm_lengths<T>(
    op: &str,
    bases: &BasesRef<'_, T>,
    scalars: usize,
) -> Result<(), AccelError> {
    match bases {
        BasesRef::Host(b) if b.len() != scalars => Err(AccelError::invalid_input(format!(
            "{op}: {} bases but {scalars} scalars (lengths must be equal)",
            b.len()
        ))),
        _ => Ok(()),
    }
}

fn check_ntt_length(len: usize) -> Result<(), AccelError> {
    if len == 0 || !len.is_power_of_two() {
        return Err(AccelError::invalid_input(format!(
            "ntt: length {len} is not a power of two"
        )));
    }
    if len.trailing_zeros() > crate::types::FR_TWO_ADICITY {
        return Err(AccelError::invalid_input(format!(
            "ntt: length 2^{} exceeds Fr's 2^32 roots of unity",
            len.trailing_zeros()
        )));
    }
    Ok(())
}

impl<T: AcceleratorImpl> Accelerator for Guarded<T> {
    fn info(&self) -> BackendInfo {
        // Infallible at the seam: a panic here becomes an info record that says so.
        match guard("info", || Ok(self.0.info())) {
            RResult::ROk(i) => i,
            RResult::RErr(e) => BackendInfo {
                name: "unknown".into(),
                version: "?".into(),
                devices: RVec::new(),
                notes: e.message,
            },
        }
    }
    fn capabilities(&self) -> Capabilities {
        guard("capabilities", || Ok(self.0.capabilities())).unwrap_or_default()
    }
    fn msm_g1(
        &self,
        bases: BasesRef<'_, G1Affine>,
        scalars: RSlice<'_, Fr>,
        config: &MsmConfig,
    ) -> AccelResult<G1Projective> {
        guard(ops::MSM_G1, || {
            check_msm_lengths(ops::MSM_G1, &bases, scalars.len())?;
            self.0.msm_g1(bases, scalars.as_slice(), config)
        })
    }
    fn msm_g2(
        &self,
        bases: BasesRef<'_, G2Affine>,
        scalars: RSlice<'_, Fr>,
        config: &MsmConfig,
    ) -> AccelResult<G2Projective> {
        guard(ops::MSM_G2, || {
            check_msm_lengths(ops::MSM_G2, &bases, scalars.len())?;
            self.0.msm_g2(bases, scalars.as_slice(), config)
        })
    }
    fn msm_g1_batch(
        &self,
        bases: BasesRef<'_, G1Affine>,
        scalars: RSlice<'_, RSlice<'_, Fr>>,
        config: &MsmConfig,
    ) -> AccelResult<RVec<G1Projective>> {
        guard(ops::MSM_G1_BATCH, || {
            for s in scalars.iter() {
                check_msm_lengths(ops::MSM_G1_BATCH, &bases, s.len())?;
            }
            self.0
                .msm_g1_batch(bases, scalars.as_slice(), config)
                .map(RVec::from)
        })
    }
    fn msm_g2_batch(
        &self,
        bases: BasesRef<'_, G2Affine>,
        scalars: RSlice<'_, RSlice<'_, Fr>>,
        config: &MsmConfig,
    ) -> AccelResult<RVec<G2Projective>> {
        guard(ops::MSM_G2_BATCH, || {
            for s in scalars.iter() {
                check_msm_lengths(ops::MSM_G2_BATCH, &bases, s.len())?;
            }
            self.0
                .msm_g2_batch(bases, scalars.as_slice(), config)
                .map(RVec::from)
        })
    }
    fn upload_bases_g1(
        &self,
        bases: RSlice<'_, G1Affine>,
        device: u32,
    ) -> AccelResult<BasesHandle> {
        guard("upload_bases_g1", || {
            self.0.upload_bases_g1(bases.as_slice(), device)
        })
    }
    fn upload_bases_g2(
        &self,
        bases: RSlice<'_, G2Affine>,
        device: u32,
    ) -> AccelResult<BasesHandle> {
        guard("upload_bases_g2", || {
            self.0.upload_bases_g2(bases.as_slice(), device)
        })
    }
    fn drop_bases(&self, handle: BasesHandle) -> AccelResult<()> {
        guard("drop_bases", || self.0.drop_bases(handle))
    }
    fn ntt(&self, mut values: RSliceMut<'_, Fr>, config: &NttConfig) -> AccelResult<()> {
        guard(ops::NTT, || {
            check_ntt_length(values.len())?;
            self.0.ntt(values.as_mut_slice(), config)
        })
    }
    fn quotient(
        &self,
        mut a: RSliceMut<'_, Fr>,
        b: RSlice<'_, Fr>,
        c: RSlice<'_, Fr>,
        config: &QuotientConfig,
    ) -> AccelResult<()> {
        guard(ops::QUOTIENT, || {
            check_ntt_length(a.len())?;
            if b.len() != a.len() || c.len() != a.len() {
                return Err(AccelError::invalid_input(format!(
                    "quotient: lengths {}, {}, {} differ",
                    a.len(),
                    b.len(),
                    c.len()
                )));
            }
            if config.coset.is_zero() {
                return Err(AccelError::invalid_input(
                    "quotient: coset shift must be nonzero",
                ));
            }
            self.0
                .quotient(a.as_mut_slice(), b.as_slice(), c.as_slice(), config)
        })
    }
    fn host_alloc(&self, bytes: u64) -> AccelResult<u64> {
        guard(ops::HOST_MEMORY, || {
            if bytes == 0 || bytes > isize::MAX as u64 {
                return Err(AccelError::invalid_input(format!(
                    "host_alloc: {bytes} bytes (1 to isize::MAX allowed)"
                )));
            }
            self.0.host_alloc(bytes)
        })
    }
    fn host_free(&self, address: u64) -> AccelResult<()> {
        guard(ops::HOST_MEMORY, || self.0.host_free(address))
    }
    fn upload_r1cs(&self, r1cs: R1csRef<'_>, device: u32) -> AccelResult<R1csHandle> {
        guard("upload_r1cs", || {
            r1cs.check()?;
            self.0.upload_r1cs(r1cs, device)
        })
    }
    fn drop_r1cs(&self, handle: R1csHandle) -> AccelResult<()> {
        guard("drop_r1cs", || self.0.drop_r1cs(handle))
    }
    fn quotient_from_witness(
        &self,
        handle: R1csHandle,
        inputs: RSlice<'_, Fr>,
        aux: RSlice<'_, Fr>,
        mut h_out: RSliceMut<'_, Fr>,
        config: &SpmvConfig,
    ) -> AccelResult<ROption<u64>> {
        guard("quotient_from_witness", || {
            if config.log_n > crate::types::FR_TWO_ADICITY
                || h_out.len() as u64 != 1u64 << config.log_n
            {
                return Err(AccelError::invalid_input(format!(
                    "quotient_from_witness: h_out holds {} elements, not the 2^{} of the domain",
                    h_out.len(),
                    config.log_n
                )));
            }
            if config.coset.is_zero() {
                return Err(AccelError::invalid_input(
                    "quotient_from_witness: coset shift must be nonzero",
                ));
            }
            self.0
                .quotient_from_witness(
                    handle,
                    inputs.as_slice(),
                    aux.as_slice(),
                    h_out.as_mut_slice(),
                    config,
                )
                .map(ROption::from)
        })
    }
}

/// Wraps an implementation as a seam trait object (what plugins export; the
/// host can also use it to run a statically linked backend through the same path).
pub fn into_accelerator<T: AcceleratorImpl>(backend: T) -> AcceleratorBox {
    Accelerator_TO::from_value(Guarded(backend), abi_stable::sabi_trait::TD_Opaque)
}

// ------------------------------------------------------------------ the root module

/// What every backend library exports (its abi_stable root module).
#[allow(missing_debug_implementations)]
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = BackendModRef)))]
#[sabi(missing_field(panic))]
pub struct BackendMod {
    /// The [`ABI_VERSION`] the plugin was built with.
    pub abi_version: extern "C" fn() -> u32,
    /// The backend's registry name (`cpu`, `cuda`, …).
    pub name: extern "C" fn() -> RStr<'static>,
    /// Creates a backend instance. Never panics (errors are returned).
    #[sabi(last_prefix_field)]
    pub new: extern "C" fn(config: &BackendConfig) -> AccelResult<AcceleratorBox>,
}

impl RootModule for BackendModRef {
    declare_root_module_statics! {BackendModRef}
    const BASE_NAME: &'static str = "zkpipe_backend";
    const NAME: &'static str = "zkpipe_backend";
    const VERSION_STRINGS: VersionStrings = package_version_strings!();
}

/// A backend's constructor, as the export macro needs it.
pub trait BackendPlugin: AcceleratorImpl + Sized {
    /// Registry name (`cpu`, `cuda`, `wgpu`): what `--backend` matches.
    const NAME: &'static str;
    /// Creates an instance.
    ///
    /// # Errors
    /// `INVALID_INPUT` for a bad config, `DEVICE_UNAVAILABLE` when the runtime is missing.
    fn create(config: &BackendConfig) -> Result<Self, AccelError>;
}

/// Exports a [`BackendPlugin`] as this library's root module. Use once per
/// backend `cdylib`:
///
/// ```ignore
/// zkpipe_core::export_backend!(CpuBackend);
/// ```
///
/// The hidden `abi_version = N` form exists for the loader's tests (a plugin
/// claiming another ABI version).
#[macro_export]
macro_rules! export_backend {
    ($backend:ty) => {
        $crate::export_backend!($backend, abi_version = $crate::plugin::ABI_VERSION);
    };
    ($backend:ty, abi_version = $abi:expr) => {
        #[::abi_stable::export_root_module]
        pub fn zkpipe_backend_root_module() -> $crate::plugin::BackendModRef {
            use ::abi_stable::prefix_type::PrefixTypeTrait;
            extern "C" fn abi_version() -> u32 {
                $abi
            }
            extern "C" fn name() -> ::abi_stable::std_types::RStr<'static> {
                <$backend as $crate::plugin::BackendPlugin>::NAME.into()
            }
            extern "C" fn new(
                config: &$crate::plugin::BackendConfig,
            ) -> $crate::plugin::AccelResult<$crate::plugin::AcceleratorBox> {
                $crate::plugin::guard("new", || {
                    <$backend as $crate::plugin::BackendPlugin>::create(config)
                        .map($crate::plugin::into_accelerator)
                })
            }
            $crate::plugin::BackendMod {
                abi_version,
                name,
                new,
            }
            .leak_into_prefix()
        }
    };
}
