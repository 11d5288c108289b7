//! Keys kept loaded between jobs: parameters and recorded circuit in host
//! memory, bases resident on every device, a prepared verifying key. One
//! load per key at a time (concurrent askers wait for it); evicted only
//! when no job uses the key, least recently used first, and only when a
//! new key needs the room (or on request).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use zkpipe_circom::CircomR1cs;
use zkpipe_circuits::BuiltinCircuit;

use crate::circom_keys::{CIRCOM, CircomIndex, is_sha256_hex};
use zkpipe_core::backend::loader::Registry;
use zkpipe_core::groth16::{Parameters, PreparedVerifyingKey};
use zkpipe_core::r1cs::R1cs;
use zkpipe_core::r1cs::circuit::CircuitSource;
use zkpipe_core::sched::groth16_workload::{DeviceProvers, JobKey};
use zkpipe_core::util::progress::Progress;
use zkpipe_core::{Backend, Curve, Error, bn254};
use zkpipe_filecoin::params::ParamSet;
use zkpipe_session::builtin::BuiltinRequest;
use zkpipe_session::keys::{BuiltinKey, CircomKey, FilecoinKey, KeySource};
use zkpipe_session::{ProverOptions, build_prover};

/// A key's name (validated): a built-in circuit and its size, or
/// `circom` and the SHA-256 of the circuit's zkey.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId {
    /// Circuit name, or [`CIRCOM`].
    pub circuit: String,
    /// Size, as the circuit parses it; for circom, the zkey's SHA-256.
    pub size: String,
}

/// What a key proves, and so where its witnesses come from.
#[derive(Debug)]
pub enum KeyCircuit {
    /// A built-in circuit: witnesses from seeds.
    Builtin(Arc<BuiltinCircuit>),
    /// A circom circuit: witnesses sent with each job.
    Circom(Arc<CircomR1cs>),
    /// A circom circuit over BN254: witnesses sent with each job.
    CircomBn254(Arc<CircomR1cs<bn254::Fr>>),
    /// A Filecoin parameter set: witnesses synthesised from each job's
    /// vanilla proofs.
    Filecoin(ParamSet),
}

/// The circuit name of Filecoin keys; their size is filecoin-proofs'
/// parameter set identifier.
pub const FILECOIN: &str = "filecoin";

impl std::fmt::Display for KeyId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.circuit, self.size)
    }
}

/// What a loaded key proves with, by curve.
// One per loaded key: the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Proving {
    /// BLS12-381.
    Bls12_381 {
        /// Proving parameters.
        params: Arc<Parameters>,
        /// The recorded circuit.
        r1cs: Arc<R1cs>,
        /// For verify-before-return.
        pvk: PreparedVerifyingKey,
        /// One prover per device the daemon uses, bases resident there.
        provers: DeviceProvers,
    },
    /// BN254 (circom keys): proved on `backend`'s BN254 ops.
    Bn254 {
        /// The proving key (its verifying key verifies before return).
        key: Arc<bn254::prover::ProvingKey>,
        /// The daemon's backend where it serves BN254, else a CPU backend.
        backend: Arc<Backend>,
        /// Its queries kept on `backend`'s GPU, where it has one.
        resident: Option<Arc<bn254::prover::ResidentQueries>>,
    },
}

impl std::fmt::Debug for Proving {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Proving::Bls12_381 { .. } => f.write_str("Proving::Bls12_381"),
            Proving::Bn254 { key, .. } => f
                .debug_struct("Proving::Bn254")
                .field("domain_size", &key.domain_size)
                .finish_non_exhaustive(),
        }
    }
}

impl LoadedKey {
    /// The key as the scheduling engine proves with it.
    pub fn job_key(&self) -> JobKey {
        match &self.proving {
            Proving::Bls12_381 { provers, .. } => JobKey::Bls12_381(provers.clone()),
            Proving::Bn254 {
                key,
                backend,
                resident,
            } => JobKey::Bn254 {
                key: key.clone(),
                backend: backend.clone(),
                resident: resident.clone(),
            },
        }
    }

    /// The key's curve.
    pub fn curve(&self) -> Curve {
        match &self.proving {
            Proving::Bls12_381 { .. } => Curve::Bls12_381,
            Proving::Bn254 { .. } => Curve::Bn254,
        }
    }
}

/// A loaded key.
pub struct LoadedKey {
    /// Its name.
    pub id: KeyId,
    /// The circuit (witnesses are made from it or checked against it).
    pub circuit: KeyCircuit,
    /// Its proving material.
    pub proving: Proving,
    /// Host bytes it holds (parameters and recorded circuit).
    pub host_bytes: u64,
    /// Host bytes one of its partitions holds in flight.
    pub partition_bytes: u64,
    /// Seconds the load took (record, setup or read, upload).
    pub load_s: f64,
}

impl std::fmt::Debug for LoadedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedKey")
            .field("id", &self.id)
            .field("host_bytes", &self.host_bytes)
            .finish_non_exhaustive()
    }
}

/// A loaded key as [`KeyCache::list`] shows it.
#[derive(Clone, Debug)]
pub struct KeyView {
    /// Its name.
    pub id: KeyId,
    /// Host bytes.
    pub host_bytes: u64,
    /// Jobs using it.
    pub refcount: u32,
    /// Seconds since a job last used it.
    pub idle_s: f64,
    /// Seconds its load took.
    pub load_s: f64,
}

struct Entry {
    key: Arc<LoadedKey>,
    refs: u32,
    last_use: Instant,
}

#[derive(Default)]
struct Table {
    entries: HashMap<KeyId, Entry>,
    loading: HashSet<KeyId>,
}

/// Where keys come from and where they go.
pub struct KeyCache {
    dir: PathBuf,
    registry: Arc<Registry>,
    backend: Arc<Backend>,
    devices: Vec<u32>,
    msms_side_by_side: bool,
    synthetic: bool,
    budget: u64,
    circom: CircomIndex,
    /// Filecoin parameter sets named by jobs so far, by identifier.
    filecoin: Mutex<HashMap<String, ParamSet>>,
    /// The CPU backend of BN254 keys when `backend` lacks BN254.
    bn254_cpu: Mutex<Option<Arc<Backend>>>,
    table: Mutex<Table>,
    loaded: Condvar,
}

impl std::fmt::Debug for KeyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyCache")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// What happened on a load, for metrics and logs.
#[derive(Debug, Default)]
pub struct LoadReport {
    /// The key was loaded now (not found loaded).
    pub loaded: bool,
    /// Keys evicted to make room.
    pub evicted: Vec<KeyId>,
}

/// Host bytes of a key's parameters and recorded circuit.
fn host_bytes(params: &Parameters, r1cs: &R1cs) -> u64 {
    let g1 = std::mem::size_of::<zkpipe_core::G1Affine>() as u64;
    let g2 = std::mem::size_of::<zkpipe_core::G2Affine>() as u64;
    let points = (params.h.len() + params.l.len() + params.a.len() + params.b_g1.len()) as u64;
    let csr = [&r1cs.a, &r1cs.b, &r1cs.c]
        .iter()
        .map(|m| (m.row_ptr.len() * 8 + m.cols.len() * 4 + m.vals.len() * 32) as u64)
        .sum::<u64>();
    points * g1 + params.b_g2.len() as u64 * g2 + csr
}

impl KeyCache {
    /// Keys under `dir` (`r1cs/`, `keys/`) and circom keys in
    /// `circom_dir`, provers for `devices` of `backend` (ops it lacks go to
    /// a CPU backend from `registry`), all within `budget` host bytes
    /// together with one partition of the newest key; `synthetic`: random
    /// keys for built-in circuits (timing only).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        dir: PathBuf,
        circom_dir: Option<PathBuf>,
        registry: Arc<Registry>,
        backend: Arc<Backend>,
        devices: Vec<u32>,
        msms_side_by_side: bool,
        synthetic: bool,
        budget: u64,
    ) -> Self {
        KeyCache {
            dir,
            registry,
            backend,
            devices,
            msms_side_by_side,
            synthetic,
            budget,
            circom: CircomIndex::new(circom_dir),
            filecoin: Mutex::new(HashMap::new()),
            bn254_cpu: Mutex::new(None),
            table: Mutex::new(Table::default()),
            loaded: Condvar::new(),
        }
    }

    /// The key, loaded now if it is not, with one more user. Blocks while
    /// it loads (setting up test keys on first use can take a while).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an unknown circuit or size; errors of
    /// recording, setup, reading or uploading; out of budget.
    pub fn acquire(
        &self,
        id: &KeyId,
        progress: &dyn Progress,
    ) -> Result<(Arc<LoadedKey>, LoadReport), Error> {
        let mut table = self.table.lock().unwrap();
        loop {
            if let Some(e) = table.entries.get_mut(id) {
                e.refs += 1;
                e.last_use = Instant::now();
                return Ok((e.key.clone(), LoadReport::default()));
            }
            if !table.loading.contains(id) {
                break;
            }
            table = self.loaded.wait(table).unwrap();
        }
        table.loading.insert(id.clone());
        drop(table);
        let loaded = self.load(id, progress);
        let mut table = self.table.lock().unwrap();
        table.loading.remove(id);
        self.loaded.notify_all();
        let key = Arc::new(loaded?);
        let evicted = self.make_room(&mut table, &key)?;
        table.entries.insert(
            id.clone(),
            Entry {
                key: key.clone(),
                refs: 1,
                last_use: Instant::now(),
            },
        );
        Ok((
            key,
            LoadReport {
                loaded: true,
                evicted,
            },
        ))
    }

    /// Refuses, before any work, a key that cannot fit the host budget
    /// even alone: a built-in circuit's [`host_estimate`] over the budget.
    /// A loaded key, a circom or a Filecoin key passes (their files are the
    /// operator's; their loads check the budget).
    ///
    /// # Errors
    /// The estimate and the budget, in words.
    pub fn admit(&self, id: &KeyId) -> Result<(), String> {
        if self.table.lock().unwrap().entries.contains_key(id) {
            return Ok(());
        }
        let Some(need) = host_estimate(id) else {
            return Ok(());
        };
        if need.bytes > self.budget {
            return Err(format!(
                "key {id} (about {} constraints) needs about {} MiB of host memory; \
                 the daemon's host budget is {} MiB",
                need.constraints,
                need.bytes >> 20,
                self.budget >> 20
            ));
        }
        Ok(())
    }

    /// One user fewer.
    pub fn release(&self, id: &KeyId) {
        let mut table = self.table.lock().unwrap();
        if let Some(e) = table.entries.get_mut(id) {
            e.refs = e.refs.saturating_sub(1);
            e.last_use = Instant::now();
        }
    }

    /// Evicts `id` if no job uses it. Returns whether it was loaded.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when jobs still use it.
    pub fn evict(&self, id: &KeyId) -> Result<bool, Error> {
        let mut table = self.table.lock().unwrap();
        match table.entries.get(id) {
            None => Ok(false),
            Some(e) if e.refs > 0 => Err(Error::InvalidInput(format!(
                "key {id} is in use by {} job(s)",
                e.refs
            ))),
            Some(_) => {
                table.entries.remove(id);
                Ok(true)
            }
        }
    }

    /// Host bytes of the loaded keys.
    pub fn resident_bytes(&self) -> u64 {
        let table = self.table.lock().unwrap();
        table.entries.values().map(|e| e.key.host_bytes).sum()
    }

    /// The loaded keys, by name.
    pub fn list(&self) -> Vec<KeyView> {
        let table = self.table.lock().unwrap();
        let mut keys: Vec<KeyView> = table
            .entries
            .values()
            .map(|e| KeyView {
                id: e.key.id.clone(),
                host_bytes: e.key.host_bytes,
                refcount: e.refs,
                idle_s: e.last_use.elapsed().as_secs_f64(),
                load_s: e.key.load_s,
            })
            .collect();
        keys.sort_by(|a, b| a.id.cmp(&b.id));
        keys
    }

    /// Evicts idle keys, least recently used first, until `new` and one of
    /// its partitions fit the budget beside the others.
    fn make_room(&self, table: &mut Table, new: &LoadedKey) -> Result<Vec<KeyId>, Error> {
        let need = new.host_bytes + new.partition_bytes;
        let mut evicted = vec![];
        loop {
            let resident: u64 = table.entries.values().map(|e| e.key.host_bytes).sum();
            if resident + need <= self.budget {
                return Ok(evicted);
            }
            let idle = table
                .entries
                .iter()
                .filter(|(_, e)| e.refs == 0)
                .min_by_key(|(_, e)| e.last_use)
                .map(|(id, _)| id.clone());
            let Some(victim) = idle else {
                return Err(Error::Failed(format!(
                    "key {} needs {} MiB (with one partition) but the host budget is {} MiB \
                     and {} MiB are held by keys in use",
                    new.id,
                    need >> 20,
                    self.budget >> 20,
                    resident >> 20
                )));
            };
            table.entries.remove(&victim);
            evicted.push(victim);
        }
    }

    /// A built-in circuit's recorded constraints and keys (recorded and set
    /// up on first use).
    fn load_builtin(
        &self,
        id: &KeyId,
        progress: &dyn Progress,
    ) -> Result<(KeyCircuit, Parameters, R1cs), Error> {
        self.admit(id).map_err(Error::InvalidInput)?;
        let key = BuiltinKey {
            request: BuiltinRequest {
                circuit: id.circuit.clone(),
                size: Some(id.size.clone()),
                cache_dir: Some(self.dir.clone()),
            },
            user_dir: None,
            synthetic: self.synthetic,
        }
        .load(progress)?;
        Ok((KeyCircuit::Builtin(key.circuit), key.params, key.r1cs))
    }

    /// Makes Filecoin parameter set `set` loadable; returns its key's name.
    pub fn register_filecoin(&self, set: &ParamSet) -> KeyId {
        self.filecoin
            .lock()
            .unwrap()
            .entry(set.id.clone())
            .or_insert_with(|| set.clone());
        KeyId {
            circuit: FILECOIN.into(),
            size: set.id.clone(),
        }
    }

    /// A Filecoin parameter set's circuit (recorded once, cached) and its
    /// parameters from Filecoin's parameter cache folder.
    fn load_filecoin(
        &self,
        id: &KeyId,
        progress: &dyn Progress,
    ) -> Result<(KeyCircuit, Parameters, R1cs), Error> {
        let set = self.filecoin.lock().unwrap().get(&id.size).cloned();
        let set = set.ok_or_else(|| {
            Error::InvalidInput(format!("no Filecoin parameter set {} is known", id.size))
        })?;
        let key = FilecoinKey {
            set,
            r1cs_cache: self.dir.join("r1cs"),
        }
        .load(progress)?;
        Ok((KeyCircuit::Filecoin(key.circuit), key.params, key.r1cs))
    }

    /// A circom circuit's zkey and r1cs, found by the zkey's hash and
    /// checked against each other: BLS12-381's as parameters and a
    /// recorded circuit, BN254's ([`Loaded::Bn254`]) as its proving key.
    fn load_circom(&self, id: &KeyId, progress: &dyn Progress) -> Result<Loaded, Error> {
        let files = self.circom.find(&id.size)?;
        let key = CircomKey {
            r1cs: files.r1cs,
            zkey: files.zkey,
        };
        if key.curve()? == Curve::Bn254 {
            let (circuit, proving) = key.load_bn254()?;
            return Ok(Loaded::Bn254(KeyCircuit::CircomBn254(circuit), proving));
        }
        let key = key.load(progress)?;
        Ok(Loaded::Bls12_381(
            KeyCircuit::Circom(key.circuit),
            key.params,
            key.r1cs,
        ))
    }

    /// The backend of BN254 keys: the daemon's own where it serves BN254,
    /// else a CPU backend from the registry (made on first use).
    fn bn254_backend(&self) -> Result<Arc<Backend>, Error> {
        if self.backend.expect_curve(Curve::Bn254).is_ok() {
            return Ok(self.backend.clone());
        }
        let mut cpu = self.bn254_cpu.lock().unwrap();
        if let Some(be) = &*cpu {
            return Ok(be.clone());
        }
        let be = Arc::new(self.registry.create("cpu", &Default::default())?);
        *cpu = Some(be.clone());
        Ok(be)
    }

    fn load(&self, id: &KeyId, progress: &dyn Progress) -> Result<LoadedKey, Error> {
        let t0 = Instant::now();
        let loaded = match id.circuit.as_str() {
            CIRCOM => self.load_circom(id, progress)?,
            FILECOIN => self.load_filecoin(id, progress).map(Loaded::from)?,
            _ => self.load_builtin(id, progress).map(Loaded::from)?,
        };
        let (circuit, params, r1cs) = match loaded {
            Loaded::Bls12_381(circuit, params, r1cs) => (circuit, params, r1cs),
            Loaded::Bn254(circuit, key) => {
                let backend = self.bn254_backend()?;
                // BN254 runs on the backend's first device.
                let resident = bn254::prover::ResidentQueries::keep_on_gpu(&backend, &key, 0)?;
                return Ok(LoadedKey {
                    id: id.clone(),
                    host_bytes: key.host_bytes(),
                    partition_bytes: key.partition_bytes(),
                    circuit,
                    proving: Proving::Bn254 {
                        key: Arc::new(key),
                        backend,
                        resident,
                    },
                    load_s: t0.elapsed().as_secs_f64(),
                });
            }
        };
        let params = Arc::new(params);
        let r1cs = Arc::new(r1cs);
        let pvk = PreparedVerifyingKey::new(&params.vk);
        let provers = self
            .devices
            .iter()
            .map(|&d| {
                build_prover(
                    &self.backend,
                    &self.registry,
                    d,
                    ProverOptions {
                        msms_side_by_side: self.msms_side_by_side,
                        ..ProverOptions::default()
                    },
                    params.clone(),
                    r1cs.clone(),
                )
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let partition_bytes = provers.first().map_or(0, |p| p.partition_bytes());
        Ok(LoadedKey {
            id: id.clone(),
            host_bytes: host_bytes(&params, &r1cs),
            partition_bytes,
            circuit,
            proving: Proving::Bls12_381 {
                params,
                r1cs,
                pvk,
                provers: provers.into(),
            },
            load_s: t0.elapsed().as_secs_f64(),
        })
    }
}

/// A key as read, before the provers are built (moved once per load).
#[allow(clippy::large_enum_variant)]
enum Loaded {
    Bls12_381(KeyCircuit, Parameters, R1cs),
    Bn254(KeyCircuit, bn254::prover::ProvingKey),
}

impl From<(KeyCircuit, Parameters, R1cs)> for Loaded {
    fn from((c, p, r): (KeyCircuit, Parameters, R1cs)) -> Self {
        Loaded::Bls12_381(c, p, r)
    }
}

/// What proving with a key is estimated to hold in host memory at its peak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostEstimate {
    /// The circuit's estimated constraints.
    pub constraints: u64,
    /// Host bytes: constraints ×
    /// [`zkpipe_core::util::machine::PROVE_BYTES_PER_CONSTRAINT`].
    pub bytes: u64,
}

/// A built-in key's estimated host-memory peak, as the daemon admits jobs
/// by it ([`KeyCache::admit`]) and fleet jobs ask nodes for it. `None` for
/// circom and Filecoin keys (their sizes are in files the submitter may
/// not have) and for names that are not a built-in circuit.
pub fn host_estimate(id: &KeyId) -> Option<HostEstimate> {
    if matches!(id.circuit.as_str(), CIRCOM | FILECOIN) {
        return None;
    }
    let circuit = BuiltinCircuit::new(&id.circuit, &id.size).ok()?;
    let constraints = circuit.shape().estimated_constraints();
    Some(HostEstimate {
        constraints,
        bytes: constraints.saturating_mul(zkpipe_core::util::machine::PROVE_BYTES_PER_CONSTRAINT),
    })
}

/// `circuit` and `size` checked against the built-in circuits, or
/// `circom` and a zkey's SHA-256 (64 lowercase hex digits).
///
/// # Errors
/// [`Error::InvalidInput`] naming what is wrong.
pub fn key_id(circuit: &str, size: &str) -> Result<KeyId, Error> {
    if circuit.len() > 64 || size.len() > 64 {
        return Err(Error::InvalidInput(
            "key.circuit and key.size are at most 64 bytes".into(),
        ));
    }
    if circuit == CIRCOM {
        if !is_sha256_hex(size) {
            return Err(Error::InvalidInput(
                "a circom key's size is its zkey's SHA-256, 64 lowercase hex digits".into(),
            ));
        }
        return Ok(KeyId {
            circuit: CIRCOM.into(),
            size: size.into(),
        });
    }
    let c = BuiltinCircuit::new(circuit, size).map_err(|e| Error::InvalidInput(e.to_string()))?;
    Ok(KeyId {
        circuit: c.name().to_string(),
        size: c.size().to_string(),
    })
}
