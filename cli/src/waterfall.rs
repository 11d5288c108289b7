//! Draws a timeline as an SVG waterfall: one lane per worker, one bar per
//! partition stage, colour by stage.

use plotters::prelude::*;
use std::path::Path;
use zkpipe_core::Error;
use zkpipe_core::Stage;
use zkpipe_core::sched::Span;

fn stage_colour(stage: Stage) -> RGBColor {
    const PALETTE: [RGBColor; 7] = [
        RGBColor(0x4e, 0x79, 0xa7),
        RGBColor(0x76, 0xb7, 0xb2),
        RGBColor(0xf2, 0x8e, 0x2b),
        RGBColor(0xe1, 0x57, 0x59),
        RGBColor(0xb0, 0x7a, 0xa1),
        RGBColor(0x59, 0xa1, 0x4f),
        RGBColor(0x9c, 0x75, 0x5f),
    ];
    PALETTE[Stage::ALL.iter().position(|s| *s == stage).unwrap_or(0)]
}

/// Writes `spans` as an SVG chart to `path` (atomically).
///
/// # Errors
/// [`Error::Io`] when the file cannot be written.
pub fn draw(path: &Path, spans: &[Span], title: &str) -> Result<(), Error> {
    let mut lanes: Vec<&str> = spans.iter().map(|s| s.lane.as_str()).collect();
    lanes.sort();
    lanes.dedup();
    let end = spans.iter().map(|s| s.end_ms).fold(1.0, f64::max);
    let height = 120 + 28 * lanes.len() as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1200, height)).into_drawing_area();
        let draw_err = |e: String| Error::Failed(format!("drawing the waterfall: {e}"));
        root.fill(&WHITE).map_err(|e| draw_err(e.to_string()))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(90)
            .build_cartesian_2d(0.0..end, -0.5..lanes.len() as f64 - 0.5)
            .map_err(|e| draw_err(e.to_string()))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc("ms since the engine started")
            .y_labels(lanes.len())
            .y_label_formatter(&|y| {
                // Lane i is centred on y = i; other ticks stay blank.
                let i = y.round();
                if (y - i).abs() > 1e-6 || i < 0.0 {
                    String::new()
                } else {
                    lanes
                        .get(i as usize)
                        .map_or(String::new(), |l| l.to_string())
                }
            })
            .draw()
            .map_err(|e| draw_err(e.to_string()))?;
        for stage in Stage::ALL {
            let colour = stage_colour(stage);
            chart
                .draw_series(spans.iter().filter(|s| s.stage == stage).map(|s| {
                    let y = lanes.iter().position(|l| *l == s.lane).unwrap() as f64;
                    // Zero-length spans still show as a sliver.
                    let x1 = s.end_ms.max(s.start_ms + end / 2000.0);
                    Rectangle::new([(s.start_ms, y - 0.35), (x1, y + 0.35)], colour.filled())
                }))
                .map_err(|e| draw_err(e.to_string()))?
                .label(stage.name())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], colour.filled())
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| draw_err(e.to_string()))?;
        root.present().map_err(|e| draw_err(e.to_string()))?;
    }
    zkpipe_core::fsutil::write_atomically(path, svg.as_bytes())
}

/// Writes a bar chart of s/proof per setting, with the device floor beside it.
///
/// # Errors
/// [`Error::Io`] when the file cannot be written.
pub fn draw_compare(
    path: &Path,
    rows: &[(String, zkpipe_core::sched::metrics::Summary)],
) -> Result<(), Error> {
    let max = rows
        .iter()
        .map(|(_, s)| s.s_per_proof.max(s.device_floor_s_per_proof))
        .fold(0.001, f64::max)
        * 1.15;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 140 + 40 * rows.len() as u32))
            .into_drawing_area();
        let draw_err = |e: String| Error::Failed(format!("drawing the comparison: {e}"));
        root.fill(&WHITE).map_err(|e| draw_err(e.to_string()))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "seconds per proof (bar) and device floor (line)",
                ("sans-serif", 16),
            )
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(260)
            .build_cartesian_2d(0.0..max, -0.5..rows.len() as f64 - 0.5)
            .map_err(|e| draw_err(e.to_string()))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc("s/proof")
            .y_labels(rows.len())
            .y_label_formatter(&|y| {
                let i = y.round();
                if (y - i).abs() > 1e-6 || i < 0.0 {
                    String::new()
                } else {
                    rows.get(i as usize).map_or(String::new(), |r| r.0.clone())
                }
            })
            .draw()
            .map_err(|e| draw_err(e.to_string()))?;
        chart
            .draw_series(rows.iter().enumerate().map(|(i, (_, s))| {
                Rectangle::new(
                    [(0.0, i as f64 - 0.3), (s.s_per_proof, i as f64 + 0.3)],
                    stage_colour(Stage::Msm).filled(),
                )
            }))
            .map_err(|e| draw_err(e.to_string()))?;
        chart
            .draw_series(rows.iter().enumerate().map(|(i, (_, s))| {
                let x = s.device_floor_s_per_proof;
                PathElement::new(
                    vec![(x, i as f64 - 0.4), (x, i as f64 + 0.4)],
                    BLACK.stroke_width(3),
                )
            }))
            .map_err(|e| draw_err(e.to_string()))?;
        root.present().map_err(|e| draw_err(e.to_string()))?;
    }
    zkpipe_core::fsutil::write_atomically(path, svg.as_bytes())
}
