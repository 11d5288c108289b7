//! A batch driven through a running daemon: the in-process batch's
//! requests, lines and summary, the waterfall built from the daemon's
//! timeline of these jobs.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use zkpipe_core::sched::Span;
use zkpipe_core::sched::batch::{BatchRun, summarize_as};
use zkpipe_core::sched::metrics::Summary;
use zkpipe_core::{Error, Stage};

use crate::client::{Client, status_error};
use crate::proto::{self, JobState, Priority};

/// A batch of built-in proofs through a daemon: `count` requests of
/// `partitions` partitions each, `concurrency` in flight.
#[derive(Debug, Clone)]
pub struct RemoteBatch {
    /// The built-in circuit and its size ("": its default).
    pub circuit: String,
    pub size: String,
    pub partitions: u32,
    pub count: u32,
    pub concurrency: u32,
}

/// Runs `b` through the daemon `client` talks to, telling `on_line` a line
/// per finished request; returns the summary and the daemon's timeline of
/// these jobs (the in-process batch's, as a waterfall reads it).
///
/// # Errors
/// The daemon's refusals and a lost connection.
pub async fn run_batch(
    mut client: Client,
    b: &RemoteBatch,
    on_line: &mut dyn FnMut(String),
) -> Result<(Summary, Vec<Span>), Error> {
    let status = client
        .status(proto::StatusRequest {})
        .await
        .map_err(status_error)?
        .into_inner();
    let from_seq = client
        .timeline(proto::TimelineRequest { from_seq: u64::MAX })
        .await
        .map_err(status_error)?
        .into_inner()
        .next_seq;
    let request = |i: u32| proto::SubmitRequest {
        request_id: String::new(),
        key: Some(proto::KeyId {
            circuit: b.circuit.clone(),
            size: b.size.clone(),
        }),
        priority: Priority::Normal as i32,
        partitions: b.partitions,
        // The in-process batch's witnesses: request i, partition p → seed i·1000 + p.
        inputs: Some(proto::submit_request::Inputs::Builtin(
            proto::BuiltinInputs {
                seed: (i as u64 + 1).wrapping_mul(1000),
            },
        )),
    };
    let t0 = Instant::now();
    let mut run = BatchRun {
        devices: status.devices.len(),
        // Built-in circuits are BLS12-381's.
        curve: Some(zkpipe_core::Curve::Bls12_381),
        ..Default::default()
    };
    let mut jobs = HashSet::new();
    let mut in_flight = tokio::task::JoinSet::new();
    let (mut next, mut done) = (0u32, 0u32);
    while done < b.count {
        while next < b.count && in_flight.len() < b.concurrency as usize {
            let mut c = client.clone();
            let req = request(next);
            in_flight.spawn(async move {
                let t = Instant::now();
                let r = c.prove(req).await;
                (t.elapsed(), r)
            });
            next += 1;
        }
        let Some(joined) = in_flight.join_next().await else {
            break;
        };
        let (latency, reply) = joined.map_err(|e| Error::Failed(format!("request task: {e}")))?;
        let r = reply.map_err(status_error)?.into_inner();
        done += 1;
        jobs.insert(r.job_id);
        let line = if JobState::try_from(r.state) == Ok(JobState::Succeeded) {
            run.latencies.push(latency);
            if r.verified {
                run.verified += r.proofs.len() as u32;
            }
            format!(
                "[{done}/{}] COMPLETED — {:.2} s (prove={:.0} ms, queue={:.0} ms)",
                b.count,
                latency.as_secs_f64(),
                r.prove_s * 1e3,
                r.queue_s * 1e3
            )
        } else {
            run.failures.push(r.error.clone());
            format!("[{done}/{}] FAILED — {}", b.count, r.error)
        };
        on_line(line);
    }
    run.total = t0.elapsed();
    run.timeline = timeline(&mut client, from_seq, &jobs).await?;
    let summary = summarize_as(
        &format!("daemon:{}", status.policy),
        status.settings.clone(),
        &run,
        b.count,
    );
    Ok((summary, run.timeline))
}

/// The daemon's spans of `jobs`, from `from_seq` on, once it has recorded
/// them all (it moves spans from its engine every 250 ms).
async fn timeline(
    client: &mut Client,
    from_seq: u64,
    jobs: &HashSet<u64>,
) -> Result<Vec<Span>, Error> {
    tokio::time::sleep(Duration::from_millis(600)).await;
    let mut spans = vec![];
    let mut seq = from_seq;
    loop {
        let r = client
            .timeline(proto::TimelineRequest { from_seq: seq })
            .await
            .map_err(status_error)?
            .into_inner();
        if r.spans.is_empty() {
            break;
        }
        for s in &r.spans {
            if !jobs.contains(&s.job_id) {
                continue;
            }
            let Some(stage) = Stage::from_name(&s.stage) else {
                continue;
            };
            spans.push(Span {
                job: s.job_id,
                partition: s.partition,
                stage,
                lane: s.lane.clone(),
                device: (s.device >= 0).then_some(s.device as usize),
                start_ms: s.start_ms,
                end_ms: s.end_ms,
            });
        }
        seq = r.spans.last().map_or(seq, |s| s.seq + 1);
    }
    Ok(spans)
}
