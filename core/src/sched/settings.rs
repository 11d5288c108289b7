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

/// The knobs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// Synthesis workers (witness + SpMV), shared by all jobs.
    pub partition_workers: usize,
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
            partition_workers: 2,
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
                    "unknown setting `{key}`; known: partition_workers, gpu_workers_per_device, device_lock, gpu_threads, b_g2, dealloc, throttle, memory_budget, device_memory_budget, order, oom_retries, oom_fallback"
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
            ("partition_workers", self.partition_workers),
            ("gpu_workers_per_device", self.gpu_workers_per_device),
            ("gpu_threads", self.gpu_threads),
        ] {
            if v == 0 {
                return Err(Error::InvalidInput(format!("{k} must be at least 1")));
            }
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
        let kib: u64 = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("MemTotal:"))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            })
            .unwrap_or(8 << 20);
        kib * 1024 / 10 * 8
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
