//! What the daemon reports about itself: the `Status` reply (devices,
//! keys, queues, load) and the Prometheus text.

use std::sync::atomic::Ordering;

use super::{Daemon, priority_label};
use crate::keys::KeyView;
use crate::load;
use crate::proto::{self, Priority};

impl Daemon {
    /// The `Status` reply.
    pub fn status(&self) -> proto::StatusReply {
        let busy = self.metrics_busy();
        let report = self.load_report();
        let health = self.health.lock().unwrap().clone();
        let devices = self
            .devices
            .iter()
            .enumerate()
            .map(|(i, &d)| {
                let info = self.backend.device_info(d).ok();
                proto::Device {
                    index: d,
                    name: info.as_ref().map_or(String::new(), |i| i.name.to_string()),
                    memory_bytes: info.as_ref().map_or(0, |i| i.memory_bytes),
                    verify_failures: health[i].verify_failures,
                    flagged: health[i].verify_failures > 0,
                    busy_s: busy.get(i).copied().unwrap_or(0.0),
                    busy_ratio: report.device_busy_ratio.get(i).copied().unwrap_or(0.0),
                }
            })
            .collect();
        let keys = self.keys.list();
        let (queues, in_flight) = self.queues();
        proto::StatusReply {
            version: env!("CARGO_PKG_VERSION").to_string(),
            backend: self.backend.name().to_string(),
            policy: self.policy_name.clone(),
            uptime_s: self.started.elapsed().as_secs_f64(),
            devices,
            keys: keys.iter().map(key_view).collect(),
            queues,
            jobs_in_flight: in_flight,
            host_budget_bytes: self.host_budget,
            keys_bytes: keys.iter().map(|k| k.host_bytes).sum(),
            partitions_bytes: self.engine.in_use_bytes(),
            draining: self.draining.load(Ordering::Relaxed),
            settings: self.engine.policy().settings().describe(),
            load: Some(load_view(&report)),
            loading: self.keys_loading(),
        }
    }

    /// Keys being loaded, each with the phase its load is in.
    fn keys_loading(&self) -> Vec<proto::KeyLoading> {
        let loading = self.loading.lock().unwrap();
        let phases = loading.iter().filter_map(|(id, p)| Some((id, p.now()?)));
        phases
            .map(|(id, phase)| proto::KeyLoading {
                key: Some(proto::KeyId {
                    circuit: id.circuit.clone(),
                    size: id.size.clone(),
                }),
                phase: phase.what,
                done: phase.done,
                total: phase.total,
                elapsed_s: phase.started.elapsed().as_secs_f64(),
            })
            .collect()
    }

    /// Whether the daemon takes jobs (`/readyz`): `Err` says why not.
    /// Its backend and devices are up once it exists; it stops being
    /// ready when it drains, or when every device's proofs have failed
    /// verification.
    ///
    /// # Errors
    /// The reason, for the probe's body.
    pub fn readiness(&self) -> Result<(), String> {
        if self.draining.load(Ordering::Relaxed) {
            return Err("draining: it finishes the jobs it has and takes no new ones".into());
        }
        let health = self.health.lock().unwrap();
        if !health.is_empty() && health.iter().all(|h| h.verify_failures > 0) {
            return Err(format!(
                "every device ({}) has made proofs that failed verification",
                self.devices.len()
            ));
        }
        Ok(())
    }

    /// What bounds the daemon now.
    fn load_report(&self) -> load::Report {
        let now_ms = self.engine_epoch.elapsed().as_secs_f64() * 1e3;
        self.load.lock().unwrap().report(now_ms)
    }

    fn metrics_busy(&self) -> Vec<f64> {
        (0..self.devices.len())
            .map(|i| {
                self.metrics
                    .device_busy
                    .with_label_values(&[&i.to_string()])
                    .get()
            })
            .collect()
    }

    /// Jobs queued and running per priority, and all not ended.
    fn queues(&self) -> (Vec<proto::Queue>, u32) {
        let started: std::collections::HashSet<u64> = self
            .engine
            .jobs()
            .into_iter()
            .filter(|v| v.started)
            .map(|v| v.id)
            .collect();
        let table = self.table.lock().unwrap();
        let mut queues: Vec<proto::Queue> = [
            Priority::Critical,
            Priority::High,
            Priority::Normal,
            Priority::Low,
        ]
        .into_iter()
        .map(|p| proto::Queue {
            priority: p as i32,
            queued: 0,
            running: 0,
        })
        .collect();
        let mut in_flight = 0;
        for job in table.jobs.values().filter(|j| j.ended.is_none()) {
            in_flight += 1;
            let q = queues
                .iter_mut()
                .find(|q| q.priority == job.spec.priority as i32);
            if let Some(q) = q {
                if job.engine_id.is_some_and(|e| started.contains(&e)) {
                    q.running += 1;
                } else {
                    q.queued += 1;
                }
            }
        }
        (queues, in_flight)
    }

    /// The Prometheus text, with the gauges set now.
    pub fn metrics_text(&self) -> String {
        let (queues, _) = self.queues();
        for q in queues {
            let p = Priority::try_from(q.priority).unwrap_or(Priority::Normal);
            let label = priority_label(p);
            self.metrics
                .jobs
                .with_label_values(&["queued", label])
                .set(q.queued as i64);
            self.metrics
                .jobs
                .with_label_values(&["running", label])
                .set(q.running as i64);
        }
        let m = &self.metrics.memory;
        m.with_label_values(&["keys"])
            .set(self.keys.resident_bytes() as i64);
        m.with_label_values(&["partitions"])
            .set(self.engine.in_use_bytes() as i64);
        m.with_label_values(&["budget"])
            .set(self.host_budget as i64);
        self.metrics
            .uptime
            .set(self.started.elapsed().as_secs_f64());
        // Held through the encoding: another scrape's reset of the load
        // gauges cannot empty them midway through this one.
        let load = self.load.lock().unwrap();
        let now_ms = self.engine_epoch.elapsed().as_secs_f64() * 1e3;
        self.metrics.set_load(&load.report(now_ms));
        let text = self.metrics.text();
        drop(load);
        text
    }
}

fn load_view(r: &load::Report) -> proto::Load {
    proto::Load {
        window_s: r.window_s,
        partitions: r.partitions,
        device_floor_s: r.device_floor_s.unwrap_or(0.0),
        host_floor_s: r.host_floor_s.unwrap_or(0.0),
        bound: r.bound.unwrap_or("").to_string(),
        stages: r
            .stages
            .iter()
            .map(|s| proto::StageLoad {
                key: s.stage.key.clone(),
                stage: s.stage.stage.to_string(),
                on_device: s.stage.on_device,
                alone_s: s.alone_s,
                median_s: s.median_s.unwrap_or(0.0),
                inflation: s.inflation.unwrap_or(0.0),
                samples: s.samples as u32,
            })
            .collect(),
    }
}

fn key_view(k: &KeyView) -> proto::LoadedKey {
    proto::LoadedKey {
        key: Some(proto::KeyId {
            circuit: k.id.circuit.clone(),
            size: k.id.size.clone(),
        }),
        host_bytes: k.host_bytes,
        refcount: k.refcount,
        idle_s: k.idle_s,
        load_s: k.load_s,
    }
}
