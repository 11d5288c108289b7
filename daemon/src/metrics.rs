//! The daemon's Prometheus metrics, served by the `Metrics` call and on
//! `/metrics` when `status_http` is set. Names start with `zkpipe_`.

use prometheus::core::Collector;
use prometheus::{
    CounterVec, Encoder, Gauge, GaugeVec, HistogramOpts, HistogramVec, IntCounter, IntCounterVec,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

use crate::load::{Report, WINDOW_S};

/// Every metric the daemon keeps.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// Jobs submitted, by priority.
    pub submitted: IntCounterVec,
    /// Jobs that ended, by final state and priority.
    pub ended: IntCounterVec,
    /// Jobs queued or running now, by state and priority (set at scrape time).
    pub jobs: IntGaugeVec,
    /// Submission → end of succeeded jobs, by priority.
    pub latency: HistogramVec,
    /// Stage durations, by stage.
    pub stage: HistogramVec,
    /// Seconds each device spent in device stages.
    pub device_busy: CounterVec,
    /// Each stage's median time under load ÷ its time alone, by key,
    /// stage and place (`device`, `host`).
    pub inflation: GaugeVec,
    /// Each stage's time alone, by key, stage and place.
    pub alone: GaugeVec,
    /// Share of the recent window each device was busy, 0 to 1.
    pub busy_ratio: GaugeVec,
    /// The device and host floors of the recent window, per partition.
    pub floor: GaugeVec,
    /// 1 for the floor that bounds the daemon, 0 for the other.
    pub bound: GaugeVec,
    /// Keys loaded.
    pub key_loads: IntCounter,
    /// Keys evicted.
    pub key_evictions: IntCounter,
    /// Seconds key loads took.
    pub key_load_seconds: HistogramVec,
    /// Proofs that failed verification, by device (`host` for the host).
    pub verify_failures: IntCounterVec,
    /// 1 for a device whose proofs failed verification.
    pub device_flagged: IntGaugeVec,
    /// Host bytes: `keys`, `partitions`, `budget`.
    pub memory: IntGaugeVec,
    /// Seconds since start.
    pub uptime: Gauge,
    /// 1, labelled with the version, commit, plugin ABIs and backend.
    build_info: IntGaugeVec,
    /// Every metric's name, `process_*` included.
    names: Vec<String>,
}

fn must<T>(r: prometheus::Result<T>) -> T {
    // Only fails for invalid names or duplicate registration: a bug here.
    r.expect("metric definitions are static and valid")
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Self {
        let registry = Registry::new();
        let stage_buckets = vec![
            0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0,
        ];
        let mut m = Metrics {
            submitted: must(IntCounterVec::new(
                Opts::new("zkpipe_jobs_submitted_total", "Jobs submitted"),
                &["priority", "curve"],
            )),
            ended: must(IntCounterVec::new(
                Opts::new("zkpipe_jobs_ended_total", "Jobs that ended, by final state"),
                &["state", "priority", "curve"],
            )),
            jobs: must(IntGaugeVec::new(
                Opts::new("zkpipe_jobs", "Jobs queued or running now"),
                &["state", "priority"],
            )),
            latency: must(HistogramVec::new(
                HistogramOpts::new(
                    "zkpipe_job_latency_seconds",
                    "Submission to end of succeeded jobs",
                )
                .buckets(stage_buckets.clone()),
                &["priority", "curve"],
            )),
            stage: must(HistogramVec::new(
                HistogramOpts::new("zkpipe_stage_seconds", "Stage durations")
                    .buckets(stage_buckets.clone()),
                &["stage"],
            )),
            device_busy: must(CounterVec::new(
                Opts::new(
                    "zkpipe_device_busy_seconds_total",
                    "Seconds each device spent in device stages",
                ),
                &["device"],
            )),
            inflation: must(GaugeVec::new(
                Opts::new(
                    "zkpipe_stage_inflation",
                    "Median of a stage's latest times under load / its time alone",
                ),
                &["key", "stage", "place"],
            )),
            alone: must(GaugeVec::new(
                Opts::new(
                    "zkpipe_stage_alone_seconds",
                    "A stage's time with no other partition's stage overlapping it",
                ),
                &["key", "stage", "place"],
            )),
            busy_ratio: must(GaugeVec::new(
                Opts::new(
                    "zkpipe_device_busy_ratio",
                    format!("Share of the last {WINDOW_S} s each device ran a device stage"),
                ),
                &["device"],
            )),
            floor: must(GaugeVec::new(
                Opts::new(
                    "zkpipe_floor_seconds_per_partition",
                    format!(
                        "Device-busy seconds per partition / devices, host CPU-seconds per partition / cores, over the last {WINDOW_S} s"
                    ),
                ),
                &["floor"],
            )),
            bound: must(GaugeVec::new(
                Opts::new(
                    "zkpipe_bound",
                    "1 for the higher floor, which bounds the daemon; 0 for the other",
                ),
                &["bound"],
            )),
            key_loads: must(IntCounter::new("zkpipe_key_loads_total", "Keys loaded")),
            key_evictions: must(IntCounter::new(
                "zkpipe_key_evictions_total",
                "Keys evicted",
            )),
            key_load_seconds: must(HistogramVec::new(
                HistogramOpts::new("zkpipe_key_load_seconds", "Key load time")
                    .buckets(stage_buckets),
                &["circuit"],
            )),
            verify_failures: must(IntCounterVec::new(
                Opts::new(
                    "zkpipe_verify_failures_total",
                    "Proofs that failed verification before return",
                ),
                &["device"],
            )),
            device_flagged: must(IntGaugeVec::new(
                Opts::new(
                    "zkpipe_device_flagged",
                    "1 for a device whose proofs failed verification",
                ),
                &["device"],
            )),
            memory: must(IntGaugeVec::new(
                Opts::new(
                    "zkpipe_memory_bytes",
                    "Host memory: keys, partitions, budget",
                ),
                &["kind"],
            )),
            uptime: must(Gauge::new("zkpipe_uptime_seconds", "Seconds since start")),
            build_info: must(IntGaugeVec::new(
                Opts::new(
                    "zkpipe_build_info",
                    "1, labelled with what the daemon runs: version, commit, plugin ABIs, backend",
                ),
                &["version", "commit", "backend_abi", "policy_abi", "backend"],
            )),
            registry,
            names: Vec::new(),
        };
        let collectors: [Box<dyn prometheus::core::Collector>; 19] = [
            Box::new(m.submitted.clone()),
            Box::new(m.ended.clone()),
            Box::new(m.jobs.clone()),
            Box::new(m.latency.clone()),
            Box::new(m.stage.clone()),
            Box::new(m.device_busy.clone()),
            Box::new(m.inflation.clone()),
            Box::new(m.alone.clone()),
            Box::new(m.busy_ratio.clone()),
            Box::new(m.floor.clone()),
            Box::new(m.bound.clone()),
            Box::new(m.key_loads.clone()),
            Box::new(m.key_evictions.clone()),
            Box::new(m.key_load_seconds.clone()),
            Box::new(m.verify_failures.clone()),
            Box::new(m.device_flagged.clone()),
            Box::new(m.memory.clone()),
            Box::new(m.uptime.clone()),
            Box::new(m.build_info.clone()),
        ];
        for c in collectors {
            m.names.extend(c.desc().iter().map(|d| d.fq_name.clone()));
            must(m.registry.register(c));
        }
        // The standard `process_*` metrics (CPU seconds, resident memory,
        // open files, threads, start time), read from /proc at scrape time.
        #[cfg(target_os = "linux")]
        {
            let process = prometheus::process_collector::ProcessCollector::for_self();
            m.names
                .extend(process.desc().iter().map(|d| d.fq_name.clone()));
            must(m.registry.register(Box::new(process)));
        }
        m
    }

    /// Sets `zkpipe_build_info` for `commit` and `backend` (once, at start).
    pub fn set_build_info(&self, commit: &str, backend: &str) {
        self.build_info
            .with_label_values(&[
                env!("CARGO_PKG_VERSION"),
                commit,
                &zkpipe_core::plugin::ABI_VERSION.to_string(),
                &zkpipe_core::sched::policy_plugin::POLICY_ABI_VERSION.to_string(),
                backend,
            ])
            .set(1);
    }

    /// Sets the gauges of what bounds the daemon from `report`: a stage
    /// with no time under load yet has no inflation, and with no
    /// partition completed in the window there are no floors and no bound.
    pub fn set_load(&self, report: &Report) {
        self.inflation.reset();
        self.alone.reset();
        for s in &report.stages {
            let place = if s.stage.on_device { "device" } else { "host" };
            let labels = [s.stage.key.as_str(), s.stage.stage.name(), place];
            self.alone.with_label_values(&labels).set(s.alone_s);
            if let Some(i) = s.inflation {
                self.inflation.with_label_values(&labels).set(i);
            }
        }
        for (d, r) in report.device_busy_ratio.iter().enumerate() {
            self.busy_ratio.with_label_values(&[&d.to_string()]).set(*r);
        }
        self.floor.reset();
        self.bound.reset();
        if let (Some(device), Some(host), Some(bound)) =
            (report.device_floor_s, report.host_floor_s, report.bound)
        {
            self.floor.with_label_values(&["device"]).set(device);
            self.floor.with_label_values(&["host"]).set(host);
            for b in ["device", "host"] {
                self.bound
                    .with_label_values(&[b])
                    .set(if b == bound { 1.0 } else { 0.0 });
            }
        }
    }

    /// Every metric's name (a histogram's without `_bucket`, `_sum`,
    /// `_count`), the standard `process_*` ones included.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The Prometheus text exposition of every metric.
    pub fn text(&self) -> String {
        let mut out = Vec::new();
        // Encoding into a Vec cannot fail for well-formed metrics.
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packaged Grafana dashboard names only metrics the daemon has: a
    /// renamed metric would leave a panel empty without a word.
    #[test]
    fn the_dashboard_names_only_metrics_the_daemon_has() {
        let dashboard = include_str!("../../packaging/grafana-dashboard.json");
        let json: serde_json::Value = serde_json::from_str(dashboard).unwrap();
        let m = Metrics::new();
        let mut used = 0;
        let exprs = json["panels"].as_array().unwrap().iter().flat_map(|p| {
            (p["targets"].as_array().unwrap().iter())
                .map(|t| t["expr"].as_str().unwrap().to_string())
        });
        for expr in exprs {
            for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if !(word.starts_with("zkpipe_") || word.starts_with("process_")) {
                    continue;
                }
                let name = ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|s| word.strip_suffix(s))
                    .unwrap_or(word);
                assert!(
                    m.names().iter().any(|n| n == name),
                    "the dashboard's {word}"
                );
                used += 1;
            }
        }
        assert!(used >= 10, "{used} metrics named");
    }
}
