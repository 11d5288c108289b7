//! Draws the batch charts as SVG: the waterfall of one run (one lane per
//! worker, lanes grouped by device, one bar per partition stage coloured by
//! stage and labelled with its job) and the comparison of several settings.
//!
//! Everything a reader needs sits outside the plotting area (title, legend,
//! values), so no text ever covers a bar. Text widths are estimated from the
//! character count (no font files are read), generously, so the estimate errs
//! towards wrapping early.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::cmp::Ordering;
use std::path::Path;
use zkpipe_core::Error;
use zkpipe_core::Stage;
use zkpipe_core::sched::Span;
use zkpipe_core::sched::metrics::Summary;

const WATERFALL_WIDTH: u32 = 1200;
const COMPARE_WIDTH: u32 = 1100;
/// Blank border around every chart, in pixels.
const MARGIN: i32 = 12;
/// Height of one worker lane in the waterfall.
const LANE_PX: i32 = 30;
/// Height of one setting's row in the comparison.
const ROW_PX: i32 = 34;
const TITLE_PX: f64 = 17.0;
const TEXT_PX: f64 = 12.0;
const SMALL_PX: f64 = 11.0;
/// The average advance of a sans-serif character, in em. DejaVu Sans (the
/// usual fallback) averages about 0.55 em on settings text; rounding up
/// keeps long lines inside the canvas whatever font the viewer picks.
const CHAR_EM: f64 = 0.62;
/// plotters' SVG backend writes `font-size` as the requested size / 1.24.
const PLOTTERS_FONT_SCALE: f64 = 1.24;
const LEGEND_WIDTH: i32 = 210;
/// Height of one legend entry in the comparison.
const LEGEND_ROW_PX: i32 = 20;
const GROUP_BAND: RGBColor = RGBColor(0xf2, 0xf2, 0xf2);
const SEPARATOR: RGBColor = RGBColor(0xb0, 0xb0, 0xb0);

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

/// Black or white, whichever reads better on `background`.
fn text_colour_on(background: RGBColor) -> RGBColor {
    let RGBColor(r, g, b) = background;
    let luma = 0.299 * f64::from(r) + 0.587 * f64::from(g) + 0.114 * f64::from(b);
    if luma > 150.0 { BLACK } else { WHITE }
}

/// A font whose SVG `font-size` comes out as `px`.
fn font(px: f64) -> FontDesc<'static> {
    ("sans-serif", px * PLOTTERS_FONT_SCALE).into_font()
}

fn text_style(px: f64, bold: bool, h: HPos, v: VPos) -> TextStyle<'static> {
    let f = if bold {
        font(px).style(FontStyle::Bold)
    } else {
        font(px)
    };
    f.color(&BLACK).pos(Pos::new(h, v))
}

/// Estimated width of `text` in pixels at `px`.
fn text_width(text: &str, px: f64) -> i32 {
    (text.chars().count() as f64 * px * CHAR_EM).ceil() as i32
}

/// How many characters fit in `width` pixels at `px`.
fn chars_fitting(width: i32, px: f64) -> usize {
    ((f64::from(width) / (px * CHAR_EM)).floor() as usize).max(1)
}

/// Splits `text` into lines of at most `max_chars` characters, breaking at
/// spaces; a word longer than a line is cut.
fn wrap(text: &str, max_chars: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        while word.len() > max_chars {
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            lines.push(word.drain(..max_chars).collect());
        }
        let word: String = word.into_iter().collect();
        let needed = line.chars().count() + usize::from(!line.is_empty()) + word.chars().count();
        if needed > max_chars && !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// Keeps the end of `text` (where a sweep's value sits) within `max_chars`.
fn shorten_front(text: &str, max_chars: usize) -> String {
    let n = text.chars().count();
    if n <= max_chars {
        return text.to_string();
    }
    let keep = max_chars.saturating_sub(1);
    std::iter::once('…')
        .chain(text.chars().skip(n - keep))
        .collect()
}

/// One line of a chart's heading.
struct HeadingLine {
    text: String,
    px: f64,
    bold: bool,
}

impl HeadingLine {
    fn height(&self) -> i32 {
        (self.px * 1.45).ceil() as i32
    }
}

/// The waterfall's heading: the caller passes `"<policy> — <settings>"`; the
/// policy goes on the first line, in bold, and the settings wrap below it.
fn waterfall_heading(title: &str, width: i32) -> Vec<HeadingLine> {
    let usable = width - 2 * MARGIN;
    let (policy, settings) = title.split_once(" — ").unwrap_or((title, ""));
    let mut lines: Vec<HeadingLine> = wrap(policy, chars_fitting(usable, TITLE_PX))
        .into_iter()
        .map(|text| HeadingLine {
            text,
            px: TITLE_PX,
            bold: true,
        })
        .collect();
    lines.extend(
        wrap(settings, chars_fitting(usable, TEXT_PX))
            .into_iter()
            .map(|text| HeadingLine {
                text,
                px: TEXT_PX,
                bold: false,
            }),
    );
    lines
}

fn heading_height(lines: &[HeadingLine]) -> i32 {
    lines.iter().map(HeadingLine::height).sum()
}

fn draw_error(chart: &'static str) -> impl Fn(String) -> Error {
    move |e| Error::Failed(format!("drawing the {chart}: {e}"))
}

/// Draws `lines` left-aligned from the top margin; returns where they end.
fn draw_heading(
    root: &DrawingArea<SVGBackend, Shift>,
    lines: &[HeadingLine],
    err: &impl Fn(String) -> Error,
) -> Result<i32, Error> {
    let mut y = MARGIN;
    for line in lines {
        root.draw(&Text::new(
            line.text.clone(),
            (MARGIN, y),
            text_style(line.px, line.bold, HPos::Left, VPos::Top),
        ))
        .map_err(|e| err(e.to_string()))?;
        y += line.height();
    }
    Ok(y)
}

/// An SVG with the heading and a centred message in place of a chart.
fn message_svg(width: u32, heading: &[HeadingLine], message: &str) -> Result<String, Error> {
    let err = draw_error("message");
    let box_height = 80;
    let height = MARGIN + heading_height(heading) + box_height + 2 * MARGIN;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let top = draw_heading(&root, heading, &err)? + MARGIN;
        let right = width as i32 - MARGIN;
        root.draw(&Rectangle::new(
            [(MARGIN, top), (right, top + box_height)],
            SEPARATOR.stroke_width(1),
        ))
        .map_err(|e| err(e.to_string()))?;
        root.draw(&Text::new(
            message.to_string(),
            ((MARGIN + right) / 2, top + box_height / 2),
            text_style(TITLE_PX, false, HPos::Center, VPos::Center),
        ))
        .map_err(|e| err(e.to_string()))?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    Ok(svg)
}

/// Which part of the pipeline a lane belongs to; lanes are shown in this
/// order, so a device's workers sit together.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum LaneGroup {
    Synthesis,
    Device(usize),
    CpuG2,
    Dealloc,
    Other,
}

impl LaneGroup {
    /// Reads the engine's lane names (`synth-0`, `dev1-w2`, `dev1-w2-host`,
    /// `cpu-g2-0`, `dealloc`); `device` is the device a span on the lane
    /// reported, which wins over the name.
    fn of(lane: &str, device: Option<usize>) -> LaneGroup {
        if let Some(d) = device {
            return LaneGroup::Device(d);
        }
        let device_in_name = lane
            .strip_prefix("dev")
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(d, _)| d.parse().ok());
        match device_in_name {
            Some(d) => LaneGroup::Device(d),
            None if lane.starts_with("synth-") => LaneGroup::Synthesis,
            None if lane.starts_with("cpu-g2-") => LaneGroup::CpuG2,
            None if lane == "dealloc" => LaneGroup::Dealloc,
            None => LaneGroup::Other,
        }
    }

    fn caption(self) -> String {
        match self {
            LaneGroup::Synthesis => "synthesis".into(),
            LaneGroup::Device(d) => format!("device {d}"),
            LaneGroup::CpuG2 => "B in G2 (CPU)".into(),
            LaneGroup::Dealloc => "freeing".into(),
            LaneGroup::Other => "other".into(),
        }
    }
}

/// A piece of a name for natural ordering: numbers compare by value.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum NamePiece {
    Text(String),
    Number(u128, usize),
}

fn natural_key(name: &str) -> Vec<NamePiece> {
    let mut pieces = Vec::new();
    let mut rest = name;
    while let Some(first) = rest.chars().next() {
        let digits = first.is_ascii_digit();
        let end = rest
            .find(|c: char| c.is_ascii_digit() != digits)
            .unwrap_or(rest.len());
        let (piece, tail) = rest.split_at(end);
        pieces.push(if digits {
            // Leading zeros and absurdly long numbers still order sensibly.
            let value = piece.parse().unwrap_or(u128::MAX);
            NamePiece::Number(value, piece.len())
        } else {
            NamePiece::Text(piece.to_string())
        });
        rest = tail;
    }
    pieces
}

/// `a` before `b` when read naturally: `dev0-w2` before `dev0-w10`.
fn natural_cmp(a: &str, b: &str) -> Ordering {
    natural_key(a).cmp(&natural_key(b)).then_with(|| a.cmp(b))
}

/// The lanes of `spans`, top to bottom: by group, then naturally by name.
fn lane_order(spans: &[&Span]) -> Vec<(LaneGroup, String)> {
    let mut lanes: Vec<(LaneGroup, String)> = Vec::new();
    for span in spans {
        let group = LaneGroup::of(&span.lane, span.device);
        match lanes.iter_mut().find(|(_, l)| *l == span.lane) {
            // A lane whose first spans ran on the host (B in G2 inline)
            // still belongs to the device another span names.
            Some((known, _)) if span.device.is_some() => *known = group,
            Some(_) => {}
            None => lanes.push((group, span.lane.clone())),
        }
    }
    lanes.sort_by(|(ga, la), (gb, lb)| ga.cmp(gb).then_with(|| natural_cmp(la, lb)));
    lanes
}

/// Short name of a span's work: `j3`, or `j3p1` when jobs have partitions.
fn job_label(span: &Span, partitioned: bool) -> String {
    if partitioned {
        format!("j{}p{}", span.job, span.partition)
    } else {
        format!("j{}", span.job)
    }
}

fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            _ => out.push(c),
        }
    }
    out
}

/// Puts `extra` (SVG elements) last in `svg`, so it lies on top.
fn append_to_svg(svg: &mut String, extra: &str) {
    match svg.rfind("</svg>") {
        Some(at) => svg.insert_str(at, extra),
        None => svg.push_str(extra),
    }
}

/// Writes `spans` as an SVG waterfall to `path` (atomically). `title` is
/// `"<policy> — <settings>"`. A run with no spans gets a chart that says so.
/// Spans whose times are not finite are left out.
///
/// # Errors
/// [`Error::Io`] when the file cannot be written; [`Error::Failed`] if
/// plotters refuses to draw.
pub fn draw(path: &Path, spans: &[Span], title: &str) -> Result<(), Error> {
    let svg = render_waterfall(spans, title)?;
    zkpipe_core::util::fsutil::write_atomically(path, svg.as_bytes())
}

fn render_waterfall(spans: &[Span], title: &str) -> Result<String, Error> {
    let width = WATERFALL_WIDTH as i32;
    let heading = waterfall_heading(title, width);
    let spans: Vec<&Span> = spans
        .iter()
        .filter(|s| s.start_ms.is_finite() && s.end_ms.is_finite())
        .collect();
    if spans.is_empty() {
        return message_svg(
            WATERFALL_WIDTH,
            &heading,
            "no stages were recorded: nothing to draw",
        );
    }
    let lanes = lane_order(&spans);
    let lane_index = |lane: &str| lanes.iter().position(|(_, l)| l == lane).unwrap_or(0);
    let partitioned = spans.iter().any(|s| s.partition > 0);
    let end_ms = spans
        .iter()
        .map(|s| s.end_ms.max(s.start_ms))
        .fold(1.0, f64::max);

    let legend_rows = Stage::ALL.len() as i32 + 4;
    let legend_height = (legend_rows + 1) * 18;
    let plot_height = LANE_PX * lanes.len() as i32;
    let x_axis_height = 44;
    let heading_bottom = MARGIN + heading_height(&heading) + 8;
    // The legend may reach below a short plot: lanes keep their height.
    let height = heading_bottom + (plot_height + x_axis_height).max(legend_height) + MARGIN;

    let lane_label_width = lanes
        .iter()
        .map(|(_, l)| text_width(l, SMALL_PX))
        .max()
        .unwrap_or(0);
    let group_label_width = lanes
        .iter()
        .map(|(g, _)| text_width(&g.caption(), SMALL_PX))
        .max()
        .unwrap_or(0);
    let y_label_area = (group_label_width + lane_label_width + 28).min(width / 3);

    let err = draw_error("waterfall");
    let mut svg = String::new();
    let mut tooltips = String::from("<g class=\"span-tooltips\">\n");
    {
        let root =
            SVGBackend::with_string(&mut svg, (WATERFALL_WIDTH, height as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        draw_heading(&root, &heading, &err)?;
        let (_, body) = root.split_vertically(heading_bottom);
        let (plot_side, _) = body.split_horizontally(width - MARGIN - LEGEND_WIDTH);
        let (plot_side, _) = plot_side.split_vertically(plot_height + x_axis_height);
        let lane_count = lanes.len() as f64;
        let mut chart = ChartBuilder::on(&plot_side)
            .margin_left(MARGIN)
            .margin_right(8)
            .x_label_area_size(x_axis_height)
            .y_label_area_size(y_label_area)
            .build_cartesian_2d(0.0..end_ms, -0.5..lane_count - 0.5)
            .map_err(|e| err(e.to_string()))?;
        let (plot_x, plot_y) = chart.plotting_area().get_pixel_range();
        // Lane 0 is drawn at the top.
        let centres: Vec<i32> = (0..lanes.len())
            .map(|i| chart.backend_coord(&(0.0, lane_count - 1.0 - i as f64)).1)
            .collect();
        let lane_centre = |i: usize| centres[i];
        let half_lane = LANE_PX / 2;

        // Groups: shaded in turn, separated by a line, captioned on the left.
        let mut first = 0;
        let mut shaded = false;
        while first < lanes.len() {
            let group = lanes[first].0;
            let last = lanes[first..]
                .iter()
                .position(|(g, _)| *g != group)
                .map_or(lanes.len() - 1, |n| first + n - 1);
            let top = (lane_centre(first) - half_lane).max(plot_y.start);
            let bottom = (lane_centre(last) + half_lane).min(plot_y.end);
            if shaded {
                root.draw(&Rectangle::new(
                    [(plot_x.start, top), (plot_x.end, bottom)],
                    GROUP_BAND.filled(),
                ))
                .map_err(|e| err(e.to_string()))?;
            }
            if first > 0 {
                root.draw(&Rectangle::new(
                    [(MARGIN, top), (plot_x.end, top + 1)],
                    SEPARATOR.filled(),
                ))
                .map_err(|e| err(e.to_string()))?;
            }
            root.draw(&Text::new(
                group.caption(),
                (MARGIN, lane_centre(first)),
                text_style(SMALL_PX, true, HPos::Left, VPos::Center),
            ))
            .map_err(|e| err(e.to_string()))?;
            shaded = !shaded;
            first = last + 1;
        }
        for (i, (_, lane)) in lanes.iter().enumerate() {
            root.draw(&Text::new(
                lane.clone(),
                (plot_x.start - 8, lane_centre(i)),
                text_style(SMALL_PX, false, HPos::Right, VPos::Center),
            ))
            .map_err(|e| err(e.to_string()))?;
        }

        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .max_light_lines(0)
            .bold_line_style(BLACK.mix(0.12))
            .x_labels(12)
            .x_label_style(font(SMALL_PX))
            .x_label_formatter(&|x| {
                if end_ms >= 20.0 {
                    format!("{x:.0}")
                } else {
                    format!("{x:.1}")
                }
            })
            .x_desc("ms since the engine started")
            .axis_desc_style(font(TEXT_PX))
            .draw()
            .map_err(|e| err(e.to_string()))?;

        // Bars in pixels: a 1 px gap between neighbours keeps back-to-back
        // spans of the same stage apart; a zero-length span stays a sliver.
        let bar_half = (f64::from(LANE_PX) * 0.36) as i32;
        for span in &spans {
            let i = lane_index(&span.lane);
            let y = lane_centre(i);
            let x0 = chart.backend_coord(&(span.start_ms.max(0.0), 0.0)).0;
            let x1 = chart
                .backend_coord(&(span.end_ms.max(span.start_ms), 0.0))
                .0;
            let x1 = if x1 - x0 >= 4 { x1 - 1 } else { x1.max(x0 + 1) };
            let colour = stage_colour(span.stage);
            root.draw(&Rectangle::new(
                [(x0, y - bar_half), (x1, y + bar_half)],
                colour.filled(),
            ))
            .map_err(|e| err(e.to_string()))?;
            let label = job_label(span, partitioned);
            if x1 - x0 >= text_width(&label, SMALL_PX) + 6 {
                root.draw(&Text::new(
                    label.clone(),
                    ((x0 + x1) / 2, y),
                    font(SMALL_PX)
                        .color(&text_colour_on(colour))
                        .pos(Pos::new(HPos::Center, VPos::Center)),
                ))
                .map_err(|e| err(e.to_string()))?;
            }
            tooltips.push_str(&format!(
                "<rect x=\"{x0}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#000000\" \
                 fill-opacity=\"0\"><title>{}</title></rect>\n",
                y - bar_half,
                x1 - x0,
                2 * bar_half,
                xml_escape(&format!(
                    "{label} {} on {}: {:.1}–{:.1} ms ({:.1} ms)",
                    span.stage.name(),
                    span.lane,
                    span.start_ms,
                    span.end_ms,
                    span.end_ms - span.start_ms
                )),
            ));
        }

        // The legend, right of the plot.
        let legend_x = plot_x.end + 20;
        let mut y = plot_y.start;
        root.draw(&Text::new(
            "stage",
            (legend_x, y),
            text_style(TEXT_PX, true, HPos::Left, VPos::Top),
        ))
        .map_err(|e| err(e.to_string()))?;
        y += 22;
        for stage in Stage::ALL {
            root.draw(&Rectangle::new(
                [(legend_x, y), (legend_x + 14, y + 12)],
                stage_colour(stage).filled(),
            ))
            .map_err(|e| err(e.to_string()))?;
            root.draw(&Text::new(
                stage.name(),
                (legend_x + 22, y + 6),
                text_style(TEXT_PX, false, HPos::Left, VPos::Center),
            ))
            .map_err(|e| err(e.to_string()))?;
            y += 18;
        }
        y += 10;
        let notes = if partitioned {
            [
                "bar label j3p1: job 3,",
                "partition 1 (wide bars);",
                "hover a bar for its times",
            ]
        } else {
            [
                "bar label j3: job 3",
                "(wide bars only);",
                "hover a bar for its times",
            ]
        };
        for note in notes {
            root.draw(&Text::new(
                note,
                (legend_x, y),
                text_style(SMALL_PX, false, HPos::Left, VPos::Top),
            ))
            .map_err(|e| err(e.to_string()))?;
            y += 16;
        }
        root.present().map_err(|e| err(e.to_string()))?;
    }
    tooltips.push_str("</g>\n");
    append_to_svg(&mut svg, &tooltips);
    Ok(svg)
}

/// Writes a bar chart of s/proof per setting, with the device floor beside
/// it, to `path` (atomically). Rows run top to bottom in the order given
/// (the printed table's order), each with its values written out. No rows
/// gives a chart that says so.
///
/// # Errors
/// [`Error::Io`] when the file cannot be written; [`Error::Failed`] if
/// plotters refuses to draw.
pub fn draw_compare(path: &Path, rows: &[(String, Summary)]) -> Result<(), Error> {
    let svg = render_compare(rows)?;
    zkpipe_core::util::fsutil::write_atomically(path, svg.as_bytes())
}

/// A row's numbers as text, as the table prints them.
fn compare_values(s: &Summary) -> String {
    let mut text = if s.completed == 0 || !s.s_per_proof.is_finite() {
        "no proof completed".to_string()
    } else {
        format!("{:.3} s/proof", s.s_per_proof)
    };
    if s.device_floor_s_per_proof.is_finite() {
        text.push_str(&format!(", floor {:.3} s", s.device_floor_s_per_proof));
    }
    if s.failed > 0 {
        text.push_str(&format!(", {} failed", s.failed));
    }
    text
}

fn render_compare(rows: &[(String, Summary)]) -> Result<String, Error> {
    let width = COMPARE_WIDTH as i32;
    let heading = vec![HeadingLine {
        text: "seconds per proof, by setting (shorter is faster)".into(),
        px: TITLE_PX,
        bold: true,
    }];
    if rows.is_empty() {
        return message_svg(
            COMPARE_WIDTH,
            &heading,
            "no run finished: nothing to compare",
        );
    }
    let finite = |v: f64| if v.is_finite() { v.max(0.0) } else { 0.0 };
    let max = rows
        .iter()
        .map(|(_, s)| finite(s.s_per_proof).max(finite(s.device_floor_s_per_proof)))
        .fold(0.001, f64::max)
        * 1.05;
    // Enough decimals to tell ticks about a tenth of the axis apart.
    let decimals = (-(max / 10.0).log10()).ceil().max(0.0) as usize;
    let values: Vec<String> = rows.iter().map(|(_, s)| compare_values(s)).collect();
    let values_width = values
        .iter()
        .map(|v| text_width(v, TEXT_PX))
        .max()
        .unwrap_or(0)
        + 16;
    let label_limit = chars_fitting(width * 2 / 5, TEXT_PX);
    let labels: Vec<String> = rows
        .iter()
        .map(|(l, _)| shorten_front(l, label_limit))
        .collect();
    let label_width = labels
        .iter()
        .map(|l| text_width(l, TEXT_PX))
        .max()
        .unwrap_or(0)
        + 16;

    let legend_height = 2 * LEGEND_ROW_PX + 4;
    let heading_bottom = MARGIN + heading_height(&heading) + legend_height + 8;
    let x_axis_height = 44;
    let plot_height = ROW_PX * rows.len() as i32;
    let height = heading_bottom + plot_height + x_axis_height + MARGIN;

    let err = draw_error("comparison");
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (COMPARE_WIDTH, height as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let legend_y = draw_heading(&root, &heading, &err)? + 4;
        let bar_colour = stage_colour(Stage::Msm);

        // The legend, between the heading and the plot: what a bar and a
        // line mean.
        let key_x = MARGIN + 30;
        root.draw(&Rectangle::new(
            [(MARGIN, legend_y), (MARGIN + 22, legend_y + 12)],
            bar_colour.filled(),
        ))
        .map_err(|e| err(e.to_string()))?;
        root.draw(&Text::new(
            "bar: s/proof, the batch's wall time per completed request",
            (key_x, legend_y + 6),
            text_style(TEXT_PX, false, HPos::Left, VPos::Center),
        ))
        .map_err(|e| err(e.to_string()))?;
        let line_y = legend_y + LEGEND_ROW_PX;
        root.draw(&PathElement::new(
            vec![(MARGIN + 11, line_y - 2), (MARGIN + 11, line_y + 14)],
            BLACK.stroke_width(3),
        ))
        .map_err(|e| err(e.to_string()))?;
        root.draw(&Text::new(
            "line: device floor, the time some device stage ran, per request",
            (key_x, line_y + 6),
            text_style(TEXT_PX, false, HPos::Left, VPos::Center),
        ))
        .map_err(|e| err(e.to_string()))?;

        let (_, body) = root.split_vertically(heading_bottom);
        let (plot_side, _) = body.split_horizontally(width - MARGIN - values_width);
        let row_count = rows.len() as f64;
        let mut chart = ChartBuilder::on(&plot_side)
            .margin_left(MARGIN)
            .margin_right(8)
            .x_label_area_size(x_axis_height)
            .y_label_area_size(label_width)
            .build_cartesian_2d(0.0..max, -0.5..row_count - 0.5)
            .map_err(|e| err(e.to_string()))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .max_light_lines(0)
            .bold_line_style(BLACK.mix(0.12))
            .x_label_style(font(SMALL_PX))
            .x_label_formatter(&|x| format!("{x:.decimals$}"))
            .x_desc("seconds per proof")
            .axis_desc_style(font(TEXT_PX))
            .draw()
            .map_err(|e| err(e.to_string()))?;
        let (plot_x, _) = chart.plotting_area().get_pixel_range();
        // Row 0 (the table's first line) is drawn at the top.
        let row_y = |i: usize| row_count - 1.0 - i as f64;
        for (i, ((_, s), (label, value))) in rows.iter().zip(labels.iter().zip(&values)).enumerate()
        {
            let centre = chart.backend_coord(&(0.0, row_y(i))).1;
            root.draw(&Text::new(
                label.clone(),
                (plot_x.start - 8, centre),
                text_style(TEXT_PX, false, HPos::Right, VPos::Center),
            ))
            .map_err(|e| err(e.to_string()))?;
            root.draw(&Text::new(
                value.clone(),
                (plot_x.end + 16, centre),
                text_style(TEXT_PX, false, HPos::Left, VPos::Center),
            ))
            .map_err(|e| err(e.to_string()))?;
            if s.completed > 0 && finite(s.s_per_proof) > 0.0 {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [
                            (0.0, row_y(i) - 0.3),
                            (finite(s.s_per_proof), row_y(i) + 0.3),
                        ],
                        bar_colour.filled(),
                    )))
                    .map_err(|e| err(e.to_string()))?;
            }
            if s.device_floor_s_per_proof.is_finite() {
                let floor = finite(s.device_floor_s_per_proof);
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(floor, row_y(i) - 0.42), (floor, row_y(i) + 0.42)],
                        BLACK.stroke_width(3),
                    )))
                    .map_err(|e| err(e.to_string()))?;
            }
        }
        root.present().map_err(|e| err(e.to_string()))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    //! The charts are checked on the SVG text they write: where text lands
    //! (estimated at 0.6 em a character, about 8 px at 13 px), what it says,
    //! and in which order.

    use super::*;

    /// A `<text>` element: its estimated box and what it says.
    #[derive(Debug, Clone)]
    struct SvgText {
        text: String,
        left: f64,
        right: f64,
        top: f64,
        bottom: f64,
        /// The y it is anchored at (a lane's or row's centre).
        y: f64,
    }

    fn attribute(tag: &str, name: &str) -> Option<String> {
        let key = format!(" {name}=\"");
        let start = tag.find(&key)? + key.len();
        let len = tag[start..].find('"')?;
        Some(tag[start..start + len].to_string())
    }

    fn number(tag: &str, name: &str) -> f64 {
        attribute(tag, name)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no number {name} in {tag}"))
    }

    fn unescape(text: &str) -> String {
        text.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&#39;", "'")
            .replace("&amp;", "&")
    }

    fn texts(svg: &str) -> Vec<SvgText> {
        let mut found = Vec::new();
        let mut rest = svg;
        while let Some(start) = rest.find("<text ") {
            let tag_end = start + rest[start..].find('>').expect("tag closes");
            let tag = &rest[start..tag_end];
            let close = tag_end + rest[tag_end..].find("</text>").expect("text closes");
            let text = unescape(rest[tag_end + 1..close].trim());
            let size = number(tag, "font-size");
            let width = text.chars().count() as f64 * size * 0.6;
            let (x, y) = (number(tag, "x"), number(tag, "y"));
            let left = match attribute(tag, "text-anchor").as_deref() {
                Some("middle") => x - width / 2.0,
                Some("end") => x - width,
                _ => x,
            };
            let top = match attribute(tag, "dy").as_deref() {
                Some("0.76em") => y,
                Some("0.5ex") => y - size / 2.0,
                _ => y - size,
            };
            found.push(SvgText {
                text,
                left,
                right: left + width,
                top,
                bottom: top + size,
                y,
            });
            rest = &rest[close..];
        }
        found
    }

    fn canvas_width(svg: &str) -> f64 {
        let tag = &svg[..svg.find('>').unwrap()];
        number(tag, "width")
    }

    /// The plotting area, from the axis lines plotters draws along its left
    /// and bottom edges (the longest vertical and horizontal polylines).
    fn plot_area(svg: &str) -> (f64, f64, f64, f64) {
        let mut vertical: (f64, f64, f64, f64) = (0.0, 0.0, 0.0, 0.0);
        let mut horizontal: (f64, f64, f64, f64) = (0.0, 0.0, 0.0, 0.0);
        for line in svg.lines().filter(|l| l.starts_with("<polyline")) {
            let points: Vec<f64> = attribute(line, "points")
                .unwrap()
                .split([' ', ','])
                .filter(|p| !p.is_empty())
                .map(|p| p.parse().unwrap())
                .collect();
            if points.len() != 4 {
                continue;
            }
            let (x0, y0, x1, y1) = (points[0], points[1], points[2], points[3]);
            if x0 == x1 && (y1 - y0).abs() > (vertical.3 - vertical.1).abs() {
                vertical = (x0, y0.min(y1), x1, y0.max(y1));
            }
            if y0 == y1 && (x1 - x0).abs() > (horizontal.2 - horizontal.0).abs() {
                horizontal = (x0.min(x1), y0, x0.max(x1), y1);
            }
        }
        assert!(
            vertical.3 > vertical.1 && horizontal.2 > horizontal.0,
            "axes"
        );
        (vertical.0, vertical.1, horizontal.2, horizontal.1)
    }

    fn overlaps_area(t: &SvgText, (left, top, right, bottom): (f64, f64, f64, f64)) -> bool {
        t.left < right && t.right > left && t.top < bottom && t.bottom > top
    }

    fn assert_inside_canvas(svg: &str) {
        let width = canvas_width(svg);
        for t in texts(svg) {
            assert!(
                t.left >= 0.0 && t.right <= width,
                "{:?} runs past the {width} px canvas ({:.0}..{:.0} px)",
                t.text,
                t.left,
                t.right
            );
        }
    }

    fn span(job: u64, partition: u32, stage: Stage, lane: &str, start: f64, end: f64) -> Span {
        let device = lane
            .strip_prefix("dev")
            .and_then(|r| r.split_once('-'))
            .and_then(|(d, rest)| (!rest.ends_with("host")).then(|| d.parse().unwrap()));
        Span {
            job,
            partition,
            stage,
            lane: lane.to_string(),
            device,
            start_ms: start,
            end_ms: end,
        }
    }

    /// A two-device run with lanes given out of order and wide bars.
    fn run_spans() -> Vec<Span> {
        let lanes = [
            "dev0-w10",
            "cpu-g2-0",
            "synth-1",
            "dev0-w2",
            "dealloc",
            "dev1-w0",
            "synth-0",
            "dev0-w1-host",
            "dev0-w0",
        ];
        let mut spans = Vec::new();
        for (i, lane) in lanes.iter().enumerate() {
            let job = i as u64;
            let stage = Stage::ALL[i % Stage::ALL.len()];
            spans.push(span(job, 0, stage, lane, 0.0, 300.0));
            spans.push(span(job, 1, stage, lane, 300.0, 600.0 + 10.0 * i as f64));
        }
        spans
    }

    const TITLE: &str = "split — b_g2=cpu-split dealloc=inline device_lock=partition \
        device_memory_budget=0 gpu_threads=2 gpu_workers_per_device=2 memory_budget=0 \
        oom_fallback=true oom_retries=3 order=fifo partition_workers=2 throttle=false";

    fn render_to_file(spans: &[Span], title: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("waterfall.svg");
        draw(&path, spans, title).unwrap();
        std::fs::read_to_string(&path).unwrap()
    }

    fn compare_to_file(rows: &[(String, Summary)]) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("compare.svg");
        draw_compare(&path, rows).unwrap();
        std::fs::read_to_string(&path).unwrap()
    }

    #[test]
    fn title_puts_the_policy_first_and_wraps_the_settings_inside_the_canvas() {
        let svg = render_to_file(&run_spans(), TITLE);
        let texts = texts(&svg);
        let first = texts.iter().min_by(|a, b| a.top.total_cmp(&b.top)).unwrap();
        assert_eq!(first.text, "split", "the policy's name is the first line");
        let heading: Vec<&SvgText> = texts.iter().filter(|t| t.bottom < 80.0).collect();
        assert!(
            heading.len() >= 3,
            "settings wrap onto extra lines: {heading:?}"
        );
        let (_, settings) = TITLE.split_once(" — ").unwrap();
        for setting in settings.split_whitespace() {
            assert!(
                heading
                    .iter()
                    .any(|t| t.text.split(' ').any(|w| w == setting)),
                "{setting} is in the heading"
            );
        }
        assert_inside_canvas(&svg);
    }

    #[test]
    fn a_long_policy_path_and_a_title_without_settings_stay_inside_the_canvas() {
        let path_policy = format!("/{}/libzkpipe_policy.so", "very-long-folder".repeat(20));
        for title in [path_policy.clone(), format!("{path_policy} — x=1")] {
            let svg = render_to_file(&run_spans(), &title);
            assert_inside_canvas(&svg);
            let all: String = texts(&svg).iter().map(|t| t.text.clone()).collect();
            assert!(all.contains(&path_policy), "the whole path is shown");
        }
    }

    #[test]
    fn legend_sits_outside_the_plotting_area() {
        let svg = render_to_file(&run_spans(), TITLE);
        let area = plot_area(&svg);
        let texts = texts(&svg);
        for stage in Stage::ALL {
            let entries: Vec<&SvgText> = texts.iter().filter(|t| t.text == stage.name()).collect();
            assert!(!entries.is_empty(), "{} is in the legend", stage.name());
            for t in entries {
                assert!(
                    !overlaps_area(t, area),
                    "legend entry {t:?} lies over the plot {area:?}"
                );
            }
        }
    }

    #[test]
    fn every_wide_bar_names_its_job_and_every_bar_has_a_tooltip() {
        let spans = run_spans();
        let svg = render_to_file(&spans, TITLE);
        let texts = texts(&svg);
        for s in &spans {
            let label = format!("j{}p{}", s.job, s.partition);
            assert!(texts.iter().any(|t| t.text == label), "{label} is drawn");
            assert!(svg.contains(&format!("<title>{label} {} on {}", s.stage.name(), s.lane)));
        }
        // Whole jobs are labelled without a partition.
        let whole: Vec<Span> = spans.iter().filter(|s| s.partition == 0).cloned().collect();
        let svg = render_to_file(&whole, TITLE);
        assert!(texts_named(&svg, "j3") == 1, "j3 labels its bar");
    }

    fn texts_named(svg: &str, name: &str) -> usize {
        texts(svg).iter().filter(|t| t.text == name).count()
    }

    #[test]
    fn lanes_run_top_down_naturally_grouped_by_device() {
        let svg = render_to_file(&run_spans(), TITLE);
        let (plot_left, ..) = plot_area(&svg);
        let texts = texts(&svg);
        let lanes = [
            "synth-0",
            "synth-1",
            "dev0-w0",
            "dev0-w1-host",
            "dev0-w2",
            "dev0-w10",
            "dev1-w0",
            "cpu-g2-0",
            "dealloc",
        ];
        let mut labels: Vec<&SvgText> = texts
            .iter()
            .filter(|t| lanes.contains(&t.text.as_str()))
            // Lane names sit right against the axis; group captions further left.
            .filter(|t| t.right <= plot_left && t.right > plot_left - 20.0)
            .collect();
        labels.sort_by(|a, b| a.y.total_cmp(&b.y));
        let order: Vec<&str> = labels.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(order, lanes);
        let y_of = |name: &str| labels.iter().find(|t| t.text == name).unwrap().y;
        for (caption, first, last) in [
            ("device 0", "dev0-w0", "dev0-w10"),
            ("device 1", "dev1-w0", "dev1-w0"),
        ] {
            let group = texts
                .iter()
                .find(|t| t.text == caption)
                .unwrap_or_else(|| panic!("{caption} is captioned"));
            assert!(
                group.y >= y_of(first) && group.y <= y_of(last),
                "{caption} sits by its lanes"
            );
        }
    }

    #[test]
    fn a_run_with_few_lanes_keeps_their_height_and_the_legend_fits_below() {
        let spans = [
            span(0, 0, Stage::Witness, "synth-0", 0.0, 10.0),
            span(0, 0, Stage::Msm, "dev0-w0", 10.0, 100.0),
        ];
        let svg = render_to_file(&spans, TITLE);
        let texts = texts(&svg);
        let y_of = |name: &str| texts.iter().find(|t| t.text == name).unwrap().y;
        assert_eq!(y_of("dev0-w0") - y_of("synth-0"), f64::from(LANE_PX));
        let height = number(&svg[..svg.find('>').unwrap()], "height");
        assert!(
            texts.iter().all(|t| t.bottom <= height),
            "all text on the canvas"
        );
    }

    #[test]
    fn natural_order_compares_numbers_by_value() {
        let mut lanes = vec!["dev0-w10", "dev0-w2", "dev0-w1-host", "dev0-w1", "dev10-w0"];
        lanes.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            lanes,
            ["dev0-w1", "dev0-w1-host", "dev0-w2", "dev0-w10", "dev10-w0"]
        );
    }

    #[test]
    fn an_empty_run_says_no_stages_were_recorded() {
        let svg = render_to_file(&[], TITLE);
        assert!(svg.contains("no stages were recorded"), "{svg}");
        assert!(!svg.contains("NaN"));
        assert_eq!(texts(&svg)[0].text, "split");
        assert_inside_canvas(&svg);
        // Spans with no usable times count as none.
        let svg = render_to_file(&[span(0, 0, Stage::Msm, "dev0-w0", f64::NAN, 1.0)], TITLE);
        assert!(svg.contains("no stages were recorded"), "{svg}");
    }

    fn summary(s_per_proof: f64, floor: f64) -> Summary {
        Summary {
            policy: "pipelined".into(),
            completed: 4,
            s_per_proof,
            device_floor_s_per_proof: floor,
            ..Summary::default()
        }
    }

    fn compare_rows() -> Vec<(String, Summary)> {
        vec![
            (
                "pipelined gpu_workers_per_device=1".into(),
                summary(0.121, 0.119),
            ),
            (
                "pipelined gpu_workers_per_device=2".into(),
                summary(0.093, 0.091),
            ),
            (
                "split gpu_workers_per_device=1".into(),
                summary(0.181, 0.175),
            ),
        ]
    }

    #[test]
    fn compare_writes_each_rows_values_in_table_order() {
        let rows = compare_rows();
        let svg = compare_to_file(&rows);
        let texts = texts(&svg);
        let mut previous = f64::NEG_INFINITY;
        for (label, s) in &rows {
            let row = texts
                .iter()
                .find(|t| t.text == *label)
                .unwrap_or_else(|| panic!("{label} is labelled"));
            assert!(row.y > previous, "{label} comes below the row before it");
            previous = row.y;
            let values = format!(
                "{:.3} s/proof, floor {:.3} s",
                s.s_per_proof, s.device_floor_s_per_proof
            );
            let value = texts
                .iter()
                .find(|t| t.text == values)
                .unwrap_or_else(|| panic!("{values} is written"));
            assert!(
                (value.y - row.y).abs() < 2.0,
                "{values} is on {label}'s row"
            );
        }
        assert_inside_canvas(&svg);
    }

    #[test]
    fn compare_legend_explains_bar_and_line_outside_the_plot() {
        let svg = compare_to_file(&compare_rows());
        let area = plot_area(&svg);
        let texts = texts(&svg);
        for key in ["bar: s/proof", "line: device floor"] {
            let t = texts
                .iter()
                .find(|t| t.text.starts_with(key))
                .unwrap_or_else(|| panic!("the legend explains {key}"));
            assert!(!overlaps_area(t, area), "{t:?} lies over the plot {area:?}");
        }
    }

    #[test]
    fn compare_with_no_rows_says_so_and_long_labels_fit() {
        let svg = compare_to_file(&[]);
        assert!(svg.contains("no run finished"), "{svg}");
        assert!(!svg.contains("NaN"));
        let long = format!("{} gpu_workers_per_device=3", "/plugins/".repeat(30));
        let mut failed = summary(0.0, 0.0);
        failed.completed = 0;
        failed.failed = 2;
        let svg = compare_to_file(&[(long, summary(0.2, 0.1)), ("serial".into(), failed)]);
        assert_inside_canvas(&svg);
        let all: Vec<String> = texts(&svg).into_iter().map(|t| t.text).collect();
        assert!(all.iter().any(|t| t.ends_with("gpu_workers_per_device=3")));
        assert!(all.contains(&"no proof completed, floor 0.000 s, 2 failed".to_string()));
    }
}
