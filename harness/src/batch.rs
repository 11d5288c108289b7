//! A batch's report: a line per finished proof, the summary, the
//! waterfall (JSON and SVG) and the side-by-side table of several settings.

use serde::Serialize;
use std::path::Path;
use zkpipe_core::Error;
use zkpipe_core::sched::Span;
use zkpipe_core::sched::batch::Finished;
use zkpipe_core::sched::metrics::Summary;
use zkpipe_core::util::fsutil::write_atomically;

/// The line for one finished proof request of `count`.
pub fn proof_line(f: &Finished<'_>, count: u32) -> String {
    match &f.outcome.result {
        Ok(_) => format!(
            "[{}/{count}] COMPLETED — {:.2} s (prove={:.0} ms, queue={:.0} ms)",
            f.done,
            f.latency.as_secs_f64(),
            f.outcome.prove.as_secs_f64() * 1e3,
            f.outcome.queue.as_secs_f64() * 1e3
        ),
        Err(why) => format!("[{}/{count}] FAILED — {why}", f.done),
    }
}

/// " (BN254)" after a summary's policy or counts: the curve of its
/// proofs, where known.
fn curve_note(s: &Summary) -> String {
    match s.curve.as_str() {
        "" => String::new(),
        c => format!(" ({c})"),
    }
}

/// A batch's summary as lines of text: totals, latency, throughput against
/// the device's floor, memory, what bound it and how the limits moved.
pub fn summary_lines(s: &Summary) -> Vec<String> {
    let mut out = Vec::new();
    out.push(format!("policy {} ({})", s.policy, s.settings));
    out.push(format!(
        "  total {:.2} s — completed {}, failed {}, verified {}{}",
        s.total_s,
        s.completed,
        s.failed,
        s.verified,
        curve_note(s)
    ));
    out.push(format!(
        "  latency avg {:.2} s, min {:.2} s, max {:.2} s, p95 {:.2} s",
        s.latency_avg_s, s.latency_min_s, s.latency_max_s, s.latency_p95_s
    ));
    out.push(format!(
        "  throughput {:.2} proofs/min, {:.2} s/proof (device floor {:.2} s/proof, device busy {:.0} %)",
        s.proofs_per_min, s.s_per_proof, s.device_floor_s_per_proof, s.device_busy_pct
    ));
    out.push(format!(
        "  memory: process peak RSS {:.1} MiB; scheduler's admitted peak (its estimate of partitions in flight) {:.1} MiB",
        s.process_peak_rss_bytes as f64 / (1 << 20) as f64,
        s.admitted_peak_bytes as f64 / (1 << 20) as f64,
    ));
    if !s.bound.is_empty() {
        out.push(format!(
            "  floors: device {:.2} s/proof, host {:.2} s/proof (from one partition alone): bound by the {}; {:.2}× the floor",
            s.device_floor_alone_s_per_proof,
            s.host_floor_s_per_proof,
            s.bound,
            s.s_per_proof_over_floor
        ));
        let stages: Vec<String> = s
            .stages
            .iter()
            .map(|l| {
                format!(
                    "{}{} {:.3}→{:.3} s ({:.2}×, max {:.3})",
                    l.stage,
                    if l.on_device { "@dev" } else { "" },
                    l.alone_s,
                    l.median_s,
                    l.inflation,
                    l.max_s
                )
            })
            .collect();
        out.push(format!(
            "  stages alone → median under load: {}",
            stages.join(", ")
        ));
    }
    if !s.limit_changes.is_empty() {
        let moves: Vec<String> = s
            .limit_changes
            .iter()
            .map(|c| {
                format!(
                    "{:.1} s: synthesis {} spmv {} lookahead {}",
                    c.at_s, c.limits.synthesis, c.limits.spmv, c.limits.lookahead
                )
            })
            .collect();
        out.push(format!("  limits moved: {}", moves.join("; ")));
    }
    out.push(format!(
        "  device busy per device: {}; out-of-memory retries {}, host fallbacks {}",
        s.device_busy_s
            .iter()
            .enumerate()
            .map(|(d, b)| format!("dev{d} {b:.2} s"))
            .collect::<Vec<_>>()
            .join(", "),
        s.oom_retries,
        s.oom_fallbacks
    ));
    out
}

#[derive(Serialize)]
struct Waterfall<'a> {
    summary: &'a Summary,
    spans: &'a [Span],
}

/// Writes `waterfall.json` (summary and spans) and `waterfall.svg` into
/// `dir`, made if missing.
///
/// # Errors
/// [`Error::Io`] naming the path that could not be written.
pub fn write_waterfall(dir: &Path, summary: &Summary, spans: &[Span]) -> Result<(), Error> {
    create_dir(dir)?;
    let json =
        serde_json::to_string_pretty(&Waterfall { summary, spans }).expect("a summary serialises");
    write_atomically(&dir.join("waterfall.json"), json.as_bytes())?;
    let bound = match summary.bound.as_str() {
        "" => String::new(),
        b => format!(
            " — bound by the {b}: {:.2} s/proof, {:.2}× its floor (device {:.2}, host {:.2})",
            summary.s_per_proof,
            summary.s_per_proof_over_floor,
            summary.device_floor_alone_s_per_proof,
            summary.host_floor_s_per_proof
        ),
    };
    zkpipe_charts::draw(
        &dir.join("waterfall.svg"),
        spans,
        &format!(
            "{}{} — {}{bound}",
            summary.policy,
            curve_note(summary),
            summary.settings
        ),
    )
}

/// One setting of a comparison.
#[derive(Debug, Clone)]
pub struct Setting {
    /// The policy and the swept knob's value, as the table names it.
    pub label: String,
    /// The policy: a built-in name or a plugin's path.
    pub policy: String,
    /// The swept knob at this setting's value (none without a sweep).
    pub knobs: Vec<(String, String)>,
}

/// The settings a comparison runs: each policy under each value of the
/// swept knob (`sweep`: the knob and its values, comma-separated).
///
/// # Errors
/// [`Error::InvalidInput`] when the sweep lists no values.
pub fn compare_settings(
    policies: &[String],
    sweep: Option<&(String, String)>,
) -> Result<Vec<Setting>, Error> {
    let values: Vec<Vec<(String, String)>> = match sweep {
        None => vec![vec![]],
        Some((key, values)) => {
            let v: Vec<_> = values
                .split(',')
                .filter(|v| !v.is_empty())
                .map(|v| vec![(key.clone(), v.to_string())])
                .collect();
            if v.is_empty() {
                return Err(Error::InvalidInput(format!(
                    "--sweep {key}= lists no values"
                )));
            }
            v
        }
    };
    Ok(policies
        .iter()
        .flat_map(|name| {
            values.iter().map(move |extra| {
                let label = std::iter::once(name.clone())
                    .chain(extra.iter().map(|(k, v)| format!("{k}={v}")))
                    .collect::<Vec<_>>()
                    .join(" ");
                Setting {
                    label,
                    policy: name.clone(),
                    knobs: extra.clone(),
                }
            })
        })
        .collect())
}

/// Writes `compare.json` (each setting's summary) and `compare.svg` into
/// `dir`, made if missing; returns the JSON.
///
/// # Errors
/// [`Error::Io`] naming the path that could not be written.
pub fn write_compare(dir: &Path, rows: &[(String, Summary)]) -> Result<String, Error> {
    create_dir(dir)?;
    let json = serde_json::to_string_pretty(
        &rows
            .iter()
            .map(|(l, s)| serde_json::json!({"setting": l, "summary": s}))
            .collect::<Vec<_>>(),
    )
    .expect("summaries serialise");
    write_atomically(&dir.join("compare.json"), json.as_bytes())?;
    zkpipe_charts::draw_compare(&dir.join("compare.svg"), rows)?;
    Ok(json)
}

/// The comparison as a table: a header line, then a line per setting.
pub fn compare_lines(rows: &[(String, Summary)]) -> Vec<String> {
    let mut out = vec![format!(
        "{:<40} {:>9} {:>9} {:>9} {:>9} {:>10} {:>7} {:>6}",
        "setting", "s/proof", "floor s", "lat avg", "lat p95", "RSS MiB", "busy %", "failed"
    )];
    out.extend(rows.iter().map(|(label, s)| {
        format!(
            "{label:<40} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>10.1} {:>7.0} {:>6}",
            s.s_per_proof,
            s.device_floor_s_per_proof,
            s.latency_avg_s,
            s.latency_p95_s,
            s.process_peak_rss_bytes as f64 / (1 << 20) as f64,
            s.device_busy_pct,
            s.failed
        )
    }));
    out
}

fn create_dir(dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })
}
