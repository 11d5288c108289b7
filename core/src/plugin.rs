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
