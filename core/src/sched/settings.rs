//! Scheduling knobs. Every field can be set with `--set key=value` or from a
//! TOML file of the same keys.

use serde::{Deserialize, Serialize};

use crate::Error;

/// Where B in G2 runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum G2Placement {
    /// On the device, inside the device lock, with the G1 MSMs.
    Device,
    /// On the CPU pool, by the device worker after it releases the lock
    /// (the worker waits for it).
    CpuInline,
    /// On the CPU pool off the worker's critical path: the worker moves on,
    /// a finalizer assembles when both halves are done (start/finalize).
    CpuSplit,
}

/// How a finished partition's buffers are freed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dealloc {
    /// By the thread that finished the partition.
    Inline,
    /// On a background thread.
    Async,
    /// On a background thread, one dealloc at a time (a global mutex).
    Serialized,
}

/// What a device worker holds while it runs a partition's device stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceLock {
    /// The device's one lock, around all of a partition's device stages
    /// (bellperson's GPU lock): one partition on a device at a time.
    Partition,
    /// No lock: the workers' ops interleave, each backend op atomic on its
    /// own stream, so one worker's copies overlap another's kernels. Device
    /// memory is then reserved per partition (see `device_memory_budget`).
    Op,
}

/// Which queued partition goes next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JobOrder {
    /// Arrival order.
    Fifo,
    /// Higher priority first, then arrival order (queue-level preemption:
    /// running work is never interrupted).
    Priority,
    /// Fewest partitions first, then arrival order.
    ShortestFirst,
}

/// The knobs. Counts that are 0 by default are sized from the machine
/// when an engine starts ([`Settings::sized_for`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// Synthesis (witness) workers, shared by all jobs (0: sized from the machine).
    pub partition_workers: usize,
    /// Host SpMVs (`a, b, c = A·w, B·w, C·w`, bandwidth-bound) at once,
    /// where the backend leaves SpMV to the host (0: sized from the machine).
    pub spmv_workers: usize,
    /// Threads of the pool the host SpMVs share (0: sized from the machine).
    pub spmv_threads: usize,
    /// Partitions synthesized ahead of the devices, waiting for one (0:
    /// sized from the device workers): bounds the memory a fast host piles up.
    pub lookahead: usize,
    /// Niceness of the synthesis and SpMV threads (0–19; 0: same as the
    /// device side), so the host work of the device stages is never
    /// starved of a core by the work that feeds them.
    pub synthesis_nice: i32,
    /// Device workers per device (see `device_lock` for how they share it).
    pub gpu_workers_per_device: usize,
    /// How device workers share a device.
    pub device_lock: DeviceLock,
    /// Threads of the CPU pool for the device side's host work (B in G2 on the CPU).
    pub gpu_threads: usize,
    /// Where B in G2 runs.
    pub b_g2: G2Placement,
    /// How buffers are freed.
    pub dealloc: Dealloc,
    /// Pause starting new synthesis while a CPU MSM runs (a memory-bandwidth throttle).
    pub throttle: bool,
    /// Memory budget for partitions in flight, in bytes (0: 80 % of RAM).
    pub memory_budget: u64,
    /// Device memory one partition's device stages may use, in bytes (0:
    /// the device's memory as its backend reports it). A partition
    /// estimated above it takes the out-of-memory path without trying;
    /// with `device_lock=op` it is also the total the partitions on one
    /// device may reserve at once (the others wait).
    pub device_memory_budget: u64,
    /// Queue order.
    pub order: JobOrder,
    /// Times a partition that hit a device out-of-memory is requeued before
    /// it falls back (or its job fails).
    pub oom_retries: u32,
    /// After the retries, run the partition's device stages on the host
    /// backend instead of failing the job.
    pub oom_fallback: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            partition_workers: 0,
            spmv_workers: 0,
            spmv_threads: 0,
            lookahead: 0,
            synthesis_nice: 10,
            gpu_workers_per_device: 1,
            device_lock: DeviceLock::Partition,
            gpu_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            b_g2: G2Placement::Device,
            dealloc: Dealloc::Inline,
            throttle: false,
            memory_budget: 0,
            device_memory_budget: 0,
            order: JobOrder::Fifo,
            oom_retries: 3,
            oom_fallback: true,
        }
    }
}

/// What [`Settings::sized_for`] sizes the knobs for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MachineShape {
    /// Cores (logical CPUs) the process may use.
    pub cores: usize,
    /// Host memory, in bytes.
    pub memory_bytes: u64,
    /// Devices the work runs on.
    pub devices: usize,
}

impl MachineShape {
    /// This machine, with `devices` devices.
    pub fn this(devices: usize) -> Self {
        MachineShape {
            cores: crate::util::machine::cores(),
            memory_bytes: crate::util::machine::total_memory_bytes().unwrap_or(8 << 30),
            devices,
        }
    }
}

fn parse_enum<T: for<'de> Deserialize<'de>>(key: &str, value: &str) -> Result<T, Error> {
    T::deserialize(serde::de::value::StrDeserializer::<serde::de::value::Error>::new(value))
        .map_err(|e| Error::InvalidInput(format!("{key}: {e}")))
}

fn parse_num<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, Error> {
    value
        .parse()
        .map_err(|_| Error::InvalidInput(format!("{key}: `{value}` is not a valid number")))
}

impl Settings {
    /// Sets one knob from text.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an unknown key or a bad value; the
    /// settings are then left as they were.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), Error> {
        let mut next = self.clone();
        next.set_unchecked(key, value)?;
        next.validate()?;
        *self = next;
        Ok(())
    }

    fn set_unchecked(&mut self, key: &str, value: &str) -> Result<(), Error> {
        match key {
            "partition_workers" => self.partition_workers = parse_num(key, value)?,
            "spmv_workers" => self.spmv_workers = parse_num(key, value)?,
            "spmv_threads" => self.spmv_threads = parse_num(key, value)?,
            "lookahead" => self.lookahead = parse_num(key, value)?,
            "synthesis_nice" => self.synthesis_nice = parse_num(key, value)?,
            "gpu_workers_per_device" => self.gpu_workers_per_device = parse_num(key, value)?,
            "device_lock" => self.device_lock = parse_enum(key, value)?,
            "gpu_threads" => self.gpu_threads = parse_num(key, value)?,
            "b_g2" => self.b_g2 = parse_enum(key, value)?,
            "dealloc" => self.dealloc = parse_enum(key, value)?,
            "throttle" => self.throttle = parse_num(key, value)?,
            "memory_budget" => self.memory_budget = parse_num(key, value)?,
            "device_memory_budget" => self.device_memory_budget = parse_num(key, value)?,
            "order" => self.order = parse_enum(key, value)?,
            "oom_retries" => self.oom_retries = parse_num(key, value)?,
            "oom_fallback" => self.oom_fallback = parse_num(key, value)?,
            _ => {
                return Err(Error::InvalidInput(format!(
                    "unknown setting `{key}`; known: partition_workers, spmv_workers, spmv_threads, lookahead, synthesis_nice, gpu_workers_per_device, device_lock, gpu_threads, b_g2, dealloc, throttle, memory_budget, device_memory_budget, order, oom_retries, oom_fallback"
                )));
            }
        }
        Ok(())
    }

    /// Checks the knobs make sense together.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the knob.
    pub fn validate(&self) -> Result<(), Error> {
        for (k, v) in [
            ("gpu_workers_per_device", self.gpu_workers_per_device),
            ("gpu_threads", self.gpu_threads),
        ] {
            if v == 0 {
                return Err(Error::InvalidInput(format!("{k} must be at least 1")));
            }
        }
        let most = crate::util::machine::cores() * crate::util::machine::THREADS_PER_CORE;
        for (k, v) in [
            ("partition_workers", self.partition_workers),
            ("spmv_workers", self.spmv_workers),
            ("spmv_threads", self.spmv_threads),
            ("gpu_threads", self.gpu_threads),
            ("gpu_workers_per_device", self.gpu_workers_per_device),
        ] {
            if v > most {
                return Err(Error::InvalidInput(format!(
                    "{k}={v}: at most {most} ({} per core on this machine's {} cores)",
                    crate::util::machine::THREADS_PER_CORE,
                    crate::util::machine::cores()
                )));
            }
        }
        if !(0..=19).contains(&self.synthesis_nice) {
            return Err(Error::InvalidInput(format!(
                "synthesis_nice={}: expected 0 to 19",
                self.synthesis_nice
            )));
        }
        Ok(())
    }

    /// Parses a TOML table of knobs on top of `self`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for unknown keys or bad values.
    pub fn merge_toml(&mut self, text: &str) -> Result<(), Error> {
        let table: toml::Table = text
            .parse()
            .map_err(|e| Error::InvalidInput(format!("config: {e}")))?;
        // All or nothing, as `set`.
        let mut next = self.clone();
        for (k, v) in table {
            let value = match v {
                toml::Value::String(s) => s,
                other => other.to_string(),
            };
            next.set(&k, &value)?;
        }
        *self = next;
        Ok(())
    }

    /// The budget in bytes (resolving 0 to 80 % of RAM).
    pub fn budget_bytes(&self) -> u64 {
        if self.memory_budget > 0 {
            return self.memory_budget;
        }
        crate::util::machine::total_memory_bytes().unwrap_or(8 << 30) / 10 * 8
    }

    /// The knobs with every count left at 0 sized for `machine`, where one
    /// partition in flight holds `partition_bytes` of host memory (0:
    /// unknown). The rules, and why:
    ///
    /// - `partition_workers`: one per core — witness synthesis is one
    ///   compute-bound thread per partition, and it runs niced below the
    ///   device side — but no more than half the memory budget holds.
    /// - `spmv_workers`: two per device; `spmv_threads`: half the cores.
    ///   SpMV is bound by memory bandwidth, which a few streams fill; more
    ///   of them only slow the device side's copies.
    /// - `lookahead`: one partition per device worker, plus one per device,
    ///   waiting for the devices: enough that a device never waits for the
    ///   host while the host is ahead, and no more (memory).
    pub fn sized_for(&self, machine: &MachineShape, partition_bytes: u64) -> Settings {
        let mut s = self.clone();
        let cores = machine.cores.max(1);
        let devices = machine.devices.max(1);
        if s.partition_workers == 0 {
            let budget = if s.memory_budget > 0 {
                s.memory_budget
            } else {
                machine.memory_bytes / 10 * 8
            };
            let by_memory = match partition_bytes {
                0 => usize::MAX,
                b => usize::try_from(budget / 2 / b).unwrap_or(usize::MAX),
            };
            s.partition_workers = cores.min(by_memory).max(1);
        }
        if s.spmv_workers == 0 {
            s.spmv_workers = (2 * devices).min(cores);
        }
        if s.spmv_threads == 0 {
            s.spmv_threads = (cores / 2).max(1);
        }
        if s.lookahead == 0 {
            s.lookahead = devices * (s.gpu_workers_per_device + 1);
        }
        s
    }

    /// `key=value` pairs of every knob, for reports.
    pub fn describe(&self) -> String {
        let v = serde_json::to_value(self).expect("settings serialise");
        v.as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        format!(
                            "{k}={}",
                            v.as_str().map_or_else(|| v.to_string(), str::to_string)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn sized(cores: usize, memory_gib: u64, devices: usize, partition_bytes: u64) -> Settings {
        let machine = MachineShape {
            cores,
            memory_bytes: memory_gib * GIB,
            devices,
        };
        Settings::default().sized_for(&machine, partition_bytes)
    }

    #[test]
    fn a_small_machine_gets_one_synthesis_worker_per_core() {
        // A CI runner: 2 cores, 24 GB, the CPU backend's one device; a
        // 2^20-constraint partition holds ~200 MB.
        let s = sized(2, 24, 1, 200 << 20);
        assert_eq!(s.partition_workers, 2);
        assert_eq!((s.spmv_workers, s.spmv_threads), (2, 1));
        assert_eq!(s.lookahead, 2);
    }

    #[test]
    fn a_gpu_machine_synthesizes_on_every_core_and_streams_spmv_on_few() {
        // The H200 machine: 16 cores, 128 GB, one GPU; sha256 at 300
        // blocks holds ~1.6 GB per partition.
        let s = sized(16, 128, 1, 1_600 << 20);
        assert_eq!(s.partition_workers, 16);
        assert_eq!((s.spmv_workers, s.spmv_threads), (2, 8));
        assert_eq!(s.lookahead, 2);
        let two_workers = Settings {
            gpu_workers_per_device: 2,
            ..Settings::default()
        };
        let machine = MachineShape {
            cores: 16,
            memory_bytes: 128 * GIB,
            devices: 2,
        };
        let s = two_workers.sized_for(&machine, 1_600 << 20);
        assert_eq!((s.spmv_workers, s.lookahead), (4, 6));
    }

    #[test]
    fn memory_caps_the_synthesis_workers_of_a_large_machine() {
        // 192 cores, 1 TB, 8 GPUs; a 32 GiB PoRep partition holds ~25 GB:
        // half of 80 % of 1 TB holds 16 of them, not 192.
        let s = sized(192, 1024, 8, 25 * GIB);
        assert_eq!(s.partition_workers, 16);
        assert_eq!((s.spmv_workers, s.spmv_threads), (16, 96));
        assert_eq!(s.lookahead, 16);
        // Unknown partition size: the cores decide.
        assert_eq!(sized(192, 1024, 8, 0).partition_workers, 192);
        // A partition larger than half the budget still gets one worker.
        assert_eq!(sized(2, 24, 1, 64 * GIB).partition_workers, 1);
    }

    #[test]
    fn knobs_set_by_hand_are_kept() {
        let mut s = Settings::default();
        s.set("partition_workers", "3").unwrap();
        s.set("spmv_workers", "1").unwrap();
        s.set("lookahead", "5").unwrap();
        let machine = MachineShape {
            cores: 16,
            memory_bytes: 128 * GIB,
            devices: 1,
        };
        let sized = s.sized_for(&machine, 1 << 30);
        assert_eq!(
            (sized.partition_workers, sized.spmv_workers, sized.lookahead),
            (3, 1, 5)
        );
        assert_eq!(sized.spmv_threads, 8);
    }

    #[test]
    fn hostile_counts_are_refused_before_any_thread_starts() {
        let mut s = Settings::default();
        let e = s.set("partition_workers", "100000000").unwrap_err();
        assert!(e.to_string().contains("at most"), "{e}");
        let e = s.set("synthesis_nice", "20").unwrap_err();
        assert!(e.to_string().contains("0 to 19"), "{e}");
        assert_eq!(s, Settings::default(), "a refused knob changes nothing");
    }
}
