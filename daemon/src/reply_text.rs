//! A daemon's replies as text for a terminal: its status, what bounds it,
//! a job's state.

use crate::daemon::state_label;
use crate::proto::{self, JobState, Priority};

/// A job's state in one line, or why it failed or was cancelled.
///
/// # Errors
/// The failure, for a job that failed or was cancelled.
pub fn job_line(r: &proto::JobResult) -> Result<String, String> {
    let state = JobState::try_from(r.state).unwrap_or(JobState::Unspecified);
    match state {
        JobState::Failed | JobState::Cancelled => Err(format!(
            "job {} {}: {}",
            r.job_id,
            state_label(state),
            r.error
        )),
        _ => Ok(format!(
            "job {}: {} ({} proof(s){})",
            r.job_id,
            state_label(state),
            r.proofs.len(),
            if r.verified { ", verified" } else { "" }
        )),
    }
}

/// A daemon's status as lines of text: version, devices, memory, keys,
/// queues and what bounds it.
pub fn status_lines(r: &proto::StatusReply) -> Vec<String> {
    let mut out = Vec::new();
    out.push(format!(
        "zkpipe {} — backend {}, policy {}, up {:.0} s{}",
        r.version,
        r.backend,
        r.policy,
        r.uptime_s,
        if r.draining { ", DRAINING" } else { "" }
    ));
    for d in &r.devices {
        out.push(format!(
            "device {}: {} ({} MiB), busy {:.1} s ({:.0}% of the last {:.0} s){}",
            d.index,
            d.name,
            d.memory_bytes >> 20,
            d.busy_s,
            d.busy_ratio * 100.0,
            r.load.as_ref().map_or(0.0, |l| l.window_s),
            if d.flagged {
                format!(
                    ", FLAGGED: {} proof(s) failed verification",
                    d.verify_failures
                )
            } else {
                String::new()
            }
        ));
    }
    out.push(format!(
        "memory: keys {} MiB + partitions {} MiB of {} MiB",
        r.keys_bytes >> 20,
        r.partitions_bytes >> 20,
        r.host_budget_bytes >> 20
    ));
    for k in &r.keys {
        let id = k.key.clone().unwrap_or_default();
        out.push(format!(
            "key {} {}: {} MiB, {} job(s), idle {:.0} s, loaded in {:.2} s",
            id.circuit,
            id.size,
            k.host_bytes >> 20,
            k.refcount,
            k.idle_s,
            k.load_s
        ));
    }
    for k in &r.loading {
        let id = k.key.clone().unwrap_or_default();
        let share = (k.done * 100)
            .checked_div(k.total)
            .map(|p| format!(" {p}%"));
        out.push(format!(
            "key {} {} loading: {}{} after {:.0} s",
            id.circuit,
            id.size,
            k.phase,
            share.unwrap_or_default(),
            k.elapsed_s
        ));
    }
    for q in &r.queues {
        let p = Priority::try_from(q.priority).unwrap_or(Priority::Normal);
        out.push(format!(
            "queue {}: {} queued, {} running",
            crate::daemon::priority_label(p),
            q.queued,
            q.running
        ));
    }
    out.push(format!("jobs in flight: {}", r.jobs_in_flight));
    if let Some(load) = &r.load {
        out.extend(load_lines(load));
    }
    out
}

/// A duration in s, ms or µs, three digits or so.
fn seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.0} µs", s * 1e6)
    }
}

/// What bounds the daemon, in a few lines: the bound and its floors, then
/// each key's stages, inflated (median under load ÷ alone) or alone only.
fn load_lines(l: &proto::Load) -> Vec<String> {
    let mut out = vec![if l.bound.is_empty() {
        format!(
            "bound: not known (no partition completed in the last {:.0} s)",
            l.window_s
        )
    } else {
        // The bounding floor first.
        let (mut floors, other) = (
            [("host", l.host_floor_s), ("device", l.device_floor_s)],
            if l.bound == "host" { "device" } else { "host" },
        );
        floors.sort_by_key(|(name, _)| *name == other);
        format!(
            "bound: {} ({} floor {}/partition, {} floor {}; last {:.0} s, {} partition(s))",
            l.bound,
            floors[0].0,
            seconds(floors[0].1),
            floors[1].0,
            seconds(floors[1].1),
            l.window_s,
            l.partitions
        )
    }];
    if l.stages.is_empty() {
        out.push("inflation: not known (no partition has run alone yet)".into());
    }
    let mut keys: Vec<&str> = l.stages.iter().map(|s| s.key.as_str()).collect();
    keys.dedup();
    for key in keys {
        let stages: Vec<String> = l
            .stages
            .iter()
            .filter(|s| s.key == key)
            .map(|s| {
                let place = if s.on_device { " (device)" } else { "" };
                if s.samples == 0 {
                    format!("{}{place} alone {}", s.stage, seconds(s.alone_s))
                } else {
                    format!("{}{place} {:.2}×", s.stage, s.inflation)
                }
            })
            .collect();
        out.push(format!("inflation, key {key}: {}", stages.join(", ")));
    }
    out
}
