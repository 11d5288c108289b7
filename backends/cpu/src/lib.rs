//! zkpipe's CPU backend: blst's Pippenger MSM and a radix-2 NTT for
//! BLS12-381, halo2curves' for BN254 (see [`bn254`]), run on a rayon pool
//! this backend owns (each plugin has its own rayon globals, so
//! the host's thread settings never reach it).
//!
//! Config: `threads` (default: all cores). Backend-only setting:
//! `devices=N` shows N logical devices, each a pool of `threads / N`
//! threads with its own resident bases and `1/N` of the memory, so that
//! multi-device placement and residency are exercised without GPUs.
//! `fault=corrupt:N` / `fault=fail:N` injects a wrong or failed result every
//! Nth G1 MSM (either curve), `fault=r1cs-oom` refuses matrices (see [`fault`]), for
//! testing what sits above the backend.
//! It is both a fast backend and, with [`zkpipe_core::backend::reference`], the
//! oracle other backends are checked against.

pub mod bn254;
pub mod fault;
pub mod msm;
pub mod ntt;

use std::sync::Arc;

use zkpipe_core::plugin::LentMemory;
use zkpipe_core::plugin::{
    AccelError, AcceleratorImpl, BackendConfig, BackendInfo, BackendPlugin, BasesHandle, BasesRef,
    Capabilities, DeviceInfo, DeviceKind, ErrorCode, Handles, MsmConfig, NttConfig, OpSupport,
    R1csHandle, R1csRef, SpmvConfig, ops,
};
use zkpipe_core::r1cs::R1cs;
use zkpipe_core::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};

/// Bases kept across calls (cheap to clone: shared).
#[derive(Debug, Clone)]
enum Bases {
    G1(Arc<Vec<G1Affine>>),
    G2(Arc<Vec<G2Affine>>),
    Bn254G1(Arc<Vec<zkpipe_core::bn254::G1Affine>>),
    Bn254G2(Arc<Vec<zkpipe_core::bn254::G2Affine>>),
}

impl Bases {
    fn group(&self) -> &'static str {
        match self {
            Bases::G1(_) => "BLS12-381 G1",
            Bases::G2(_) => "BLS12-381 G2",
            Bases::Bn254G1(_) => "BN254 G1",
            Bases::Bn254G2(_) => "BN254 G2",
        }
    }
}

/// A group whose bases a [`Bases`] may hold.
trait Held: Sized {
    const GROUP: &'static str;
    fn of(b: &Bases) -> Option<&Arc<Vec<Self>>>;
    fn wrap(b: Vec<Self>) -> Bases;
}

macro_rules! held {
    ($t:ty, $variant:ident, $name:literal) => {
        impl Held for $t {
            const GROUP: &'static str = $name;
            fn of(b: &Bases) -> Option<&Arc<Vec<Self>>> {
                match b {
                    Bases::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn wrap(b: Vec<Self>) -> Bases {
                Bases::$variant(Arc::new(b))
            }
        }
    };
}
held!(G1Affine, G1, "BLS12-381 G1");
held!(G2Affine, G2, "BLS12-381 G2");
held!(zkpipe_core::bn254::G1Affine, Bn254G1, "BN254 G1");
held!(zkpipe_core::bn254::G2Affine, Bn254G2, "BN254 G2");

/// Bases kept on one logical device.
#[derive(Debug)]
struct Resident {
    device: u32,
    bases: Bases,
}

/// Most logical devices a `devices=N` setting may ask for.
const MAX_DEVICES: usize = 64;

/// The CPU backend.
#[derive(Debug)]
pub struct CpuBackend {
    /// One pool per logical device (one unless `devices=N`).
    pools: Vec<rayon::ThreadPool>,
    resident: Handles<Resident>,
    twiddles: ntt::Twiddles<zkpipe_core::Fr>,
    bn254_twiddles: ntt::Twiddles<zkpipe_core::bn254::Fr>,
    faults: fault::Faults,
    /// Heap blocks lent through `host_alloc` (the prover reuses them
    /// across proofs instead of faulting fresh pages in each time).
    lent: LentMemory,
    /// Uploaded R1CS matrices and the logical device of each.
    matrices: Handles<(u32, R1cs)>,
}

impl BackendPlugin for CpuBackend {
    const NAME: &'static str = "cpu";

    fn create(config: &BackendConfig) -> Result<Self, AccelError> {
        let threads = match config.threads.into_option() {
            Some(0) => {
                return Err(AccelError::invalid_input(
                    "threads must be at least 1 (omit it to use all cores)",
                ));
            }
            Some(t) => t as usize,
            None => std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
        };
        let mut devices = 1;
        let mut faults = fault::Faults::default();
        for kv in config.ext.iter() {
            match kv.key.as_str() {
                "devices" => {
                    devices = kv
                        .value
                        .as_str()
                        .parse::<usize>()
                        .ok()
                        .filter(|d| (1..=MAX_DEVICES).contains(d))
                        .ok_or_else(|| {
                            AccelError::invalid_input(format!(
                                "devices must be a number from 1 to {MAX_DEVICES}, not `{}`",
                                kv.value
                            ))
                        })?;
                }
                "fault" => faults = fault::Faults::parse(kv.value.as_str())?,
                other => {
                    return Err(AccelError::invalid_input(format!(
                        "unknown cpu backend setting `{other}` (known: devices, fault)"
                    )));
                }
            }
        }
        let per_device = threads.div_ceil(devices).max(1);
        let pools = (0..devices)
            .map(|d| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(per_device)
                    .thread_name(move |i| format!("zkpipe-cpu{d}-{i}"))
                    .build()
                    .map_err(|e| {
                        AccelError::new(
                            zkpipe_core::plugin::ErrorCode::INTERNAL,
                            format!("thread pool: {e}"),
                        )
                    })
            })
            .collect::<Result<_, _>>()?;
        Ok(CpuBackend {
            pools,
            resident: Handles::new("bases"),
            twiddles: ntt::Twiddles::default(),
            bn254_twiddles: ntt::Twiddles::default(),
            lent: LentMemory::default(),
            faults,
            matrices: Handles::new("r1cs"),
        })
    }
}

/// Bytes of RAM, from /proc/meminfo (0 when unknown).
fn total_memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

impl CpuBackend {
    /// The pool of logical device `device`.
    fn pool(&self, device: u32) -> Result<&rayon::ThreadPool, AccelError> {
        self.pools.get(device as usize).ok_or_else(|| {
            AccelError::invalid_input(format!(
                "cpu backend has {} device(s), numbered from 0; there is no device {device}",
                self.pools.len()
            ))
        })
    }
    /// The first `n` of the `T` bases behind `h`, which must live on `device`.
    fn resident<T: Held>(
        &self,
        h: BasesHandle,
        device: u32,
        n: usize,
    ) -> Result<Arc<Vec<T>>, AccelError> {
        let r = self.resident.get(h.0)?;
        if r.device != device {
            return Err(AccelError::invalid_input(format!(
                "bases handle {:#x} lives on device {}, not on device {device}",
                h.0, r.device
            )));
        }
        match T::of(&r.bases) {
            Some(b) if b.len() >= n => Ok(b.clone()),
            Some(b) => Err(short_bases(h, b.len(), n)),
            None => Err(AccelError::invalid_input(format!(
                "bases handle {:#x} holds {} points, not {}",
                h.0,
                r.bases.group(),
                T::GROUP
            ))),
        }
    }
    /// Keeps a copy of `bases` for `device`.
    fn insert<T: Held + Clone>(&self, device: u32, bases: &[T]) -> Result<BasesHandle, AccelError> {
        self.pool(device)?;
        let bases = T::wrap(bases.to_vec());
        Ok(BasesHandle(
            self.resident.insert(Resident { device, bases }),
        ))
    }
    /// G1 MSM over host bases (lengths equal) on this backend's first pool.
    pub fn msm_g1_host(&self, bases: &[G1Affine], scalars: &[Fr], window: u32) -> G1Projective {
        self.pools[0].install(|| msm::msm::<msm::G1>(bases, scalars, window as usize))
    }
    /// G2 MSM over host bases (lengths equal) on this backend's first pool.
    pub fn msm_g2_host(&self, bases: &[G2Affine], scalars: &[Fr], window: u32) -> G2Projective {
        self.pools[0].install(|| msm::msm::<msm::G2>(bases, scalars, window as usize))
    }
}

fn short_bases(h: BasesHandle, have: usize, want: usize) -> AccelError {
    AccelError::invalid_input(format!(
        "bases handle {} holds {have} points, fewer than the {want} scalars",
        h.0
    ))
}

impl AcceleratorImpl for CpuBackend {
    fn info(&self) -> BackendInfo {
        BackendInfo {
            name: Self::NAME.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            devices: self
                .pools
                .iter()
                .enumerate()
                .map(|(d, pool)| DeviceInfo {
                    id: d as u32,
                    name: cpu_model().into(),
                    kind: DeviceKind::Cpu,
                    memory_bytes: total_memory_bytes() / self.pools.len() as u64,
                    compute_units: pool.current_num_threads() as u32,
                })
                .collect(),
            notes: match self.pools.len() {
                1 => format!(
                    "blst Pippenger + radix-2 NTT on {} rayon threads",
                    self.pools[0].current_num_threads()
                ),
                n => format!(
                    "blst Pippenger + radix-2 NTT; {n} logical devices of {} rayon threads each",
                    self.pools[0].current_num_threads()
                ),
            }
            .into(),
        }
    }

    fn capabilities(&self) -> Capabilities {
        // The device is host memory: what an op allocates there, at most.
        // An MSM copies the points and scalars that are not 0 or 1 (see
        // `msm::msm`); an NTT keeps a twiddle table.
        let op = |name: &str, bytes_per_element: u64| {
            OpSupport::new(name, 32).with_scratch(move |n| bytes_per_element * n)
        };
        let mut caps = vec![
            op(ops::MSM_G1, 96 + 32),
            op(ops::MSM_G2, 192 + 32),
            op(ops::MSM_G1_BATCH, 96 + 32),
            op(ops::MSM_G2_BATCH, 192 + 32),
            OpSupport::new(ops::RESIDENT_BASES, 32),
            op(ops::NTT, 32),
            OpSupport::new(ops::HOST_MEMORY, 32),
            // B·w and C·w beside h_out, and the NTTs' table.
            op(ops::SPMV, 3 * 32),
        ];
        // BN254 only where this CPU runs its arithmetic.
        if zkpipe_core::bn254::cpu::missing().is_none() {
            caps.extend([
                // halo2curves' copies of the inputs, and its buckets.
                op(ops::bn254::MSM_G1, 64 + 32),
                op(ops::bn254::MSM_G2, 128 + 32),
                OpSupport::new(ops::bn254::RESIDENT_BASES, 32),
                OpSupport::new(ops::bn254::NTT, zkpipe_core::bn254::FR_TWO_ADICITY)
                    .with_scratch(|n| 32 * n),
                // b's copy and c beside a (the odd coset needs 2n-th roots).
                OpSupport::new(ops::bn254::QUOTIENT, zkpipe_core::bn254::FR_TWO_ADICITY - 1)
                    .with_scratch(|n| 2 * 32 * n),
            ]);
        }
        Capabilities { ops: caps.into() }
    }

    fn msm_g1(
        &self,
        bases: BasesRef<'_, G1Affine>,
        scalars: &[Fr],
        config: &MsmConfig,
    ) -> Result<G1Projective, AccelError> {
        let pool = self.pool(config.device)?;
        let window = config.window_bits as usize;
        let sum = match bases {
            BasesRef::Host(b) => pool.install(|| msm::msm::<msm::G1>(&b, scalars, window)),
            BasesRef::Resident(h) => {
                let b = self.resident::<G1Affine>(h, config.device, scalars.len())?;
                pool.install(|| msm::msm::<msm::G1>(&b[..scalars.len()], scalars, window))
            }
        };
        self.faults.g1(sum)
    }

    fn msm_g2(
        &self,
        bases: BasesRef<'_, G2Affine>,
        scalars: &[Fr],
        config: &MsmConfig,
    ) -> Result<G2Projective, AccelError> {
        let pool = self.pool(config.device)?;
        let window = config.window_bits as usize;
        Ok(match bases {
            BasesRef::Host(b) => pool.install(|| msm::msm::<msm::G2>(&b, scalars, window)),
            BasesRef::Resident(h) => {
                let b = self.resident::<G2Affine>(h, config.device, scalars.len())?;
                pool.install(|| msm::msm::<msm::G2>(&b[..scalars.len()], scalars, window))
            }
        })
    }

    fn upload_bases_g1(&self, bases: &[G1Affine], device: u32) -> Result<BasesHandle, AccelError> {
        self.insert(device, bases)
    }

    fn upload_bases_g2(&self, bases: &[G2Affine], device: u32) -> Result<BasesHandle, AccelError> {
        self.insert(device, bases)
    }

    fn drop_bases(&self, handle: BasesHandle) -> Result<(), AccelError> {
        self.resident.remove(handle.0)
    }

    fn ntt(&self, values: &mut [Fr], config: &NttConfig) -> Result<(), AccelError> {
        let pool = self.pool(config.device)?;
        if config.coset.into_option().is_some_and(|g| g.is_zero()) {
            return Err(AccelError::invalid_input(
                "ntt: coset shift must be nonzero",
            ));
        }
        pool.install(|| ntt::ntt(values, config, &self.twiddles));
        Ok(())
    }

    fn upload_r1cs(&self, r1cs: R1csRef<'_>, device: u32) -> Result<R1csHandle, AccelError> {
        self.faults.r1cs()?;
        let pool = self.pool(device)?;
        let copy = pool.install(|| R1cs::from_seam(&r1cs));
        Ok(R1csHandle(self.matrices.insert((device, copy))))
    }

    fn drop_r1cs(&self, handle: R1csHandle) -> Result<(), AccelError> {
        self.matrices.remove(handle.0)
    }

    fn bn254_msm_g1(
        &self,
        bases: BasesRef<'_, zkpipe_core::bn254::G1Affine>,
        scalars: &[zkpipe_core::bn254::Fr],
        config: &MsmConfig,
    ) -> Result<zkpipe_core::bn254::G1Projective, AccelError> {
        let pool = self.pool(config.device)?;
        let sum = match bases {
            BasesRef::Host(b) => pool.install(|| bn254::msm_g1(&b, scalars)),
            BasesRef::Resident(h) => {
                let b = self.resident(h, config.device, scalars.len())?;
                pool.install(|| bn254::msm_g1(&b[..scalars.len()], scalars))
            }
        };
        self.faults.g1(sum)
    }

    fn bn254_msm_g2(
        &self,
        bases: BasesRef<'_, zkpipe_core::bn254::G2Affine>,
        scalars: &[zkpipe_core::bn254::Fr],
        config: &MsmConfig,
    ) -> Result<zkpipe_core::bn254::G2Projective, AccelError> {
        let pool = self.pool(config.device)?;
        Ok(match bases {
            BasesRef::Host(b) => pool.install(|| bn254::msm_g2(&b, scalars)),
            BasesRef::Resident(h) => {
                let b = self.resident(h, config.device, scalars.len())?;
                pool.install(|| bn254::msm_g2(&b[..scalars.len()], scalars))
            }
        })
    }

    fn bn254_upload_bases_g1(
        &self,
        bases: &[zkpipe_core::bn254::G1Affine],
        device: u32,
    ) -> Result<BasesHandle, AccelError> {
        self.insert(device, bases)
    }

    fn bn254_upload_bases_g2(
        &self,
        bases: &[zkpipe_core::bn254::G2Affine],
        device: u32,
    ) -> Result<BasesHandle, AccelError> {
        self.insert(device, bases)
    }

    fn bn254_ntt(
        &self,
        values: &mut [zkpipe_core::bn254::Fr],
        config: &zkpipe_core::plugin::NttConfigOf<zkpipe_core::bn254::Fr>,
    ) -> Result<(), AccelError> {
        let pool = self.pool(config.device)?;
        pool.install(|| ntt::ntt(values, config, &self.bn254_twiddles));
        Ok(())
    }

    /// The reference: core's definition of the quotient over this
    /// backend's NTTs.
    fn bn254_quotient(
        &self,
        a: &mut [zkpipe_core::bn254::Fr],
        b: &[zkpipe_core::bn254::Fr],
        device: u32,
    ) -> Result<(), AccelError> {
        let pool = self.pool(device)?;
        let ntt =
            |v: &mut [zkpipe_core::bn254::Fr],
             cfg: &zkpipe_core::plugin::NttConfigOf<zkpipe_core::bn254::Fr>| {
                pool.install(|| ntt::ntt(v, cfg, &self.bn254_twiddles));
                Ok(())
            };
        // The seam lends b read-only; the definition transforms it.
        let mut b = b.to_vec();
        zkpipe_core::bn254::prover::odd_coset_quotient(a, &mut b, &ntt, || {
            AccelError::new(ErrorCode::INTERNAL, "a bn254.quotient thread panicked")
        })
    }

    /// The reference: core's host SpMV and its quotient steps over this
    /// backend's NTTs, as the prover's host path runs them.
    fn quotient_from_witness(
        &self,
        handle: R1csHandle,
        inputs: &[Fr],
        aux: &[Fr],
        h_out: &mut [Fr],
        config: &SpmvConfig,
    ) -> Result<Option<u64>, AccelError> {
        let pool = self.pool(config.device)?;
        let matrices = self.matrices.get(handle.0)?;
        let (d, r1cs) = &*matrices;
        if *d != config.device {
            return Err(AccelError::invalid_input(format!(
                "r1cs handle {:#x} lives on device {d}, not on device {}",
                handle.0, config.device
            )));
        }
        let shape = r1cs.as_seam().shape();
        let n = h_out.len();
        shape.check_call(inputs.len(), aux.len(), n)?;
        let z_inv = zkpipe_core::groth16::vanishing_inverse(&config.coset, n).ok_or_else(|| {
            AccelError::invalid_input("quotient_from_witness: gⁿ = 1 for this coset shift")
        })?;
        pool.install(|| {
            let (mut b, mut c) = (vec![Fr::ZERO; n], vec![Fr::ZERO; n]);
            r1cs.domain_evaluations_into(inputs, aux, [&mut *h_out, &mut b, &mut c])
                .map_err(|e| AccelError::invalid_input(e.to_string()))?;
            let m = r1cs.num_constraints();
            if config.check {
                let rows = [&h_out[..m], &b[..m], &c[..m]];
                if let Some(row) = zkpipe_core::r1cs::first_unsatisfied_row(rows) {
                    return Ok(Some(row as u64));
                }
            }
            let mut ntt = |v: &mut [Fr], cfg: &NttConfig| -> Result<(), AccelError> {
                ntt::ntt(v, cfg, &self.twiddles);
                Ok(())
            };
            zkpipe_core::groth16::quotient_steps(
                &mut ntt,
                [h_out, &mut b, &mut c],
                config.coset,
                z_inv,
                config.device,
            )?;
            Ok(None)
        })
    }

    fn host_alloc(&self, bytes: u64) -> Result<u64, AccelError> {
        let layout = lent_layout(bytes as usize)?;
        // SAFETY: the layout's size is nonzero (checked at the seam).
        let p = unsafe { std::alloc::alloc(layout) };
        if p.is_null() {
            return Err(AccelError::new(
                ErrorCode::OUT_OF_MEMORY,
                format!("host_alloc: {bytes} bytes not available"),
            ));
        }
        self.lent.insert(p as usize, bytes as usize);
        Ok(p as u64)
    }

    fn host_free(&self, address: u64) -> Result<(), AccelError> {
        let bytes = self.lent.remove(address as usize)?;
        // SAFETY: allocated by `host_alloc` with this layout, freed once
        // (the record is gone).
        unsafe { std::alloc::dealloc(address as *mut u8, lent_layout(bytes)?) };
        Ok(())
    }
}

/// Lent blocks' layout: 64-byte aligned (a cache line).
fn lent_layout(bytes: usize) -> Result<std::alloc::Layout, AccelError> {
    std::alloc::Layout::from_size_align(bytes, 64)
        .map_err(|e| AccelError::invalid_input(format!("host_alloc: {bytes} bytes: {e}")))
}

impl Drop for CpuBackend {
    fn drop(&mut self) {
        for (address, bytes) in self.lent.take_all() {
            if let Ok(layout) = lent_layout(bytes) {
                // SAFETY: as in `host_free`; the host drops the backend
                // after the memory it lent is no longer used.
                unsafe { std::alloc::dealloc(address as *mut u8, layout) };
            }
        }
    }
}

zkpipe_core::export_backend!(CpuBackend);
