//! What a backend says about itself: settings, devices, capabilities.

use abi_stable::{
    StableAbi,
    std_types::{ROption, RString, RVec},
};

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
    /// Groth16's quotient `h` from `a, b, c` in one call (see [`crate::plugin::Accelerator::quotient`]).
    pub const QUOTIENT: &str = "quotient";
    /// Host memory the backend moves fastest, lent to the caller (see
    /// [`crate::plugin::Accelerator::host_alloc`]).
    pub const HOST_MEMORY: &str = "host_memory";
    /// R1CS matrices kept in the backend and Groth16's quotient straight
    /// from a witness: SpMV, the satisfaction check and the quotient in one
    /// call (see [`crate::plugin::Accelerator::quotient_from_witness`]). Its size limit is
    /// the domain's log size.
    pub const SPMV: &str = "spmv";
    /// BN254's ops: the same ops as BLS12-381's, named `bn254.<op>`
    /// (BLS12-381's keep their bare names, as plugins built before a
    /// second curve list them).
    pub mod bn254 {
        /// G1 MSM over BN254 (see `Accelerator::bn254_msm_g1`).
        pub const MSM_G1: &str = "bn254.msm_g1";
        /// G2 MSM over BN254.
        pub const MSM_G2: &str = "bn254.msm_g2";
        /// NTT over BN254's Fr.
        pub const NTT: &str = "bn254.ntt";
        /// BN254 bases kept in the backend and referred to by handle
        /// (`Accelerator::bn254_upload_bases_g1`).
        pub const RESIDENT_BASES: &str = "bn254.resident_bases";
        /// Groth16's quotient as snarkjs makes it, in one call
        /// (`Accelerator::bn254_quotient`).
        pub const QUOTIENT: &str = "bn254.quotient";
        /// Every BN254 op name, in display order.
        pub const ALL: &[&str] = &[MSM_G1, MSM_G2, RESIDENT_BASES, NTT, QUOTIENT];
    }
    /// Every BLS12-381 op name, in display order.
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
/// [`crate::plugin::ErrorCode::UNSUPPORTED`]; callers compose or fall back.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, Default)]
pub struct Capabilities {
    /// Supported ops.
    pub ops: RVec<OpSupport>,
}

impl Capabilities {
    /// The curve an op name is for: `bn254.msm_g1` is BN254's, a bare name
    /// BLS12-381's.
    pub fn curve_of(op: &str) -> crate::Curve {
        match op.split_once('.') {
            Some((prefix, _)) => crate::Curve::from_name(prefix).unwrap_or_default(),
            None => crate::Curve::Bls12_381,
        }
    }

    /// The curves this backend serves at least one op of, in
    /// [`Curve::ALL`](crate::Curve::ALL)'s order.
    pub fn curves(&self) -> Vec<crate::Curve> {
        crate::Curve::ALL
            .into_iter()
            .filter(|c| self.ops.iter().any(|o| Self::curve_of(&o.op) == *c))
            .collect()
    }

    /// The ops this backend serves on `curve`, by their bare names.
    pub fn ops_on(&self, curve: crate::Curve) -> Vec<&str> {
        self.ops
            .iter()
            .filter(|o| Self::curve_of(&o.op) == curve)
            .map(|o| o.op.rsplit('.').next().unwrap_or(&o.op))
            .collect()
    }

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
