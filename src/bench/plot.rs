//! Charts for the benchmark suite, drawn with plotters: line charts (optionally log-scaled) and
//! stacked bars, each written as SVG and PNG. Text is laid out with a TrueType font found on the
//! machine: `$CONVFLOW_FONT`, else DejaVu Sans where Debian's `fonts-dejavu-core` (or
//! matplotlib) puts it; without one, charts are a clear error.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

/// A chart that could not be drawn or written.
#[derive(Debug, thiserror::Error)]
#[error("chart {path}: {msg}")]
pub struct PlotError {
    /// The file being written (`.svg` or `.png`).
    pub path: PathBuf,
    /// What went wrong: no font, a drawing error, an I/O error.
    pub msg: String,
}

const SIZE: (u32, u32) = (960, 600);

/// Where a TrueType font may be (after `$CONVFLOW_FONT`); the first that loads is used.
const FONTS: [&str; 4] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

/// Registers a font for chart text once; false when none was found.
pub fn font_ready() -> bool {
    static READY: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *READY.get_or_init(|| {
        let mut paths: Vec<String> = std::env::var("CONVFLOW_FONT").into_iter().collect();
        paths.extend(FONTS.iter().map(|p| p.to_string()));
        paths.iter().any(|p| {
            std::fs::read(p).is_ok_and(|bytes| {
                // The registry keeps fonts for the life of the program.
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok()
            })
        })
    })
}

/// A line chart: one series per (name, points).
pub struct Lines<'a> {
    /// Caption above the chart.
    pub title: &'a str,
    /// Label of the x axis.
    pub x_label: &'a str,
    /// Label of the y axis.
    pub y_label: &'a str,
    /// Logarithmic x axis.
    pub log_x: bool,
    /// Logarithmic y axis.
    pub log_y: bool,
    /// One line per entry: its legend name and its (x, y) points.
    pub series: Vec<(String, Vec<(f64, f64)>)>,
    /// Drawn dashed in black, e.g. the ideal scaling line.
    pub reference: Option<(String, Vec<(f64, f64)>)>,
}

/// Stacked bars: one bar per category, one segment per stack entry.
pub struct Bars<'a> {
    /// Caption above the chart.
    pub title: &'a str,
    /// Label of the y axis.
    pub y_label: &'a str,
    /// The bars' labels along the x axis.
    pub categories: Vec<String>,
    /// Segments stacked in order: a legend name and one value per category.
    pub stacks: Vec<(String, Vec<f64>)>,
}

/// Writes the line chart as `dir/stem.svg` and `dir/stem.png`; returns the files written
/// (none for a chart without points). Fails when no font is found ([`font_ready`]).
pub fn lines(dir: &Path, stem: &str, chart: &Lines<'_>) -> Result<Vec<PathBuf>, PlotError> {
    // A chart without a point is not drawn (no empty frames in a report).
    if chart.series.iter().all(|s| s.1.is_empty()) {
        return Ok(Vec::new());
    }
    render(dir, stem, Chart::Lines(chart))
}

/// Writes the stacked bar chart as `dir/stem.svg` and `dir/stem.png`, as [`lines`] does.
pub fn bars(dir: &Path, stem: &str, chart: &Bars<'_>) -> Result<Vec<PathBuf>, PlotError> {
    render(dir, stem, Chart::Bars(chart))
}

type DrawResult = Result<(), String>;

#[derive(Clone, Copy)]
enum Chart<'a> {
    Lines(&'a Lines<'a>),
    Bars(&'a Bars<'a>),
}

fn draw<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, chart: Chart<'_>) -> DrawResult {
    match chart {
        Chart::Lines(c) => draw_lines(area, c),
        Chart::Bars(c) => draw_bars(area, c),
    }
}

fn render(dir: &Path, stem: &str, chart: Chart<'_>) -> Result<Vec<PathBuf>, PlotError> {
    let svg = dir.join(format!("{stem}.svg"));
    let err = |path: &Path, msg: String| PlotError {
        path: path.to_path_buf(),
        msg,
    };
    if !font_ready() {
        return Err(err(
            &svg,
            "no TrueType font found for chart text (install fonts-dejavu-core or set \
            CONVFLOW_FONT to a .ttf file)"
                .into(),
        ));
    }
    {
        let area = SVGBackend::new(&svg, SIZE).into_drawing_area();
        draw(&area, chart).map_err(|m| err(&svg, m))?;
        area.present().map_err(|e| err(&svg, e.to_string()))?;
    }
    let mut out = vec![svg];
    {
        let png = dir.join(format!("{stem}.png"));
        let mut buf = vec![0u8; (SIZE.0 * SIZE.1 * 3) as usize];
        {
            let area = BitMapBackend::with_buffer(&mut buf, SIZE).into_drawing_area();
            draw(&area, chart).map_err(|m| err(&png, m))?;
            area.present().map_err(|e| err(&png, e.to_string()))?;
        }
        image::save_buffer(&png, &buf, SIZE.0, SIZE.1, image::ExtendedColorType::Rgb8)
            .map_err(|e| err(&png, e.to_string()))?;
        out.push(png);
    }
    Ok(out)
}

/// Axis numbers without needless decimals: integers as integers (`2`, not `2.00`), others
/// with at most three significant digits and no trailing zeros.
fn num(v: &f64) -> String {
    let a = v.abs();
    if a == 0.0 || (v.fract() == 0.0 && a < 1e15) {
        return format!("{v:.0}");
    }
    let text = if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 0.001 {
        let decimals = (2.0 - a.log10().floor()).max(0.0) as usize;
        format!("{v:.decimals$}")
    } else {
        return format!("{v:.1e}");
    };
    match text.contains('.') {
        true => text.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => text,
    }
}

/// The ticks of an axis over `lo..hi`, at most about `max` of them. Log axes get powers of ten
/// (1, 10, 100, …), with 2 and 5 between them, or every 1…9, when that is needed for three
/// labels; linear axes steps of 1, 2 or 5 × 10ⁿ, and whole numbers only when `integer` (a
/// thread count or a kernel size never reads 0.5).
fn ticks(lo: f64, hi: f64, log: bool, integer: bool, max: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo];
    }
    if log {
        let (e0, e1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
        for mantissas in [
            &[1.0][..],
            &[1.0, 2.0, 5.0],
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
        ] {
            let all: Vec<f64> = (e0..=e1)
                .flat_map(|e| mantissas.iter().map(move |m| m * 10f64.powi(e)))
                .filter(|v| *v >= lo && *v <= hi)
                .collect();
            // Powers of ten alone, thinned to every n-th decade when there are many.
            let step = all.len().div_ceil(max).max(1);
            let picked: Vec<f64> = all.iter().copied().step_by(step).collect();
            if picked.len() >= 3 || mantissas.len() == 9 {
                return picked;
            }
        }
        unreachable!("the 1…9 mantissas return")
    }
    let raw = (hi - lo) / max.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let m = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .find(|m| m * mag >= raw)
        .unwrap_or(10.0);
    // step = m · 10ⁿ, kept as m / 10⁻ⁿ below 1 so that ticks are exact decimals (0.6, not
    // 0.6000000000000001).
    let (num, den) = match integer {
        true => ((m * mag).max(1.0).round(), 1.0),
        false if mag < 1.0 => (m, (1.0 / mag).round()),
        false => (m * mag, 1.0),
    };
    let step = num / den;
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|i| i as f64 * num / den).collect()
}

/// True when every value is a whole number (kernel sizes, thread counts).
fn all_integers(values: impl Iterator<Item = f64>) -> bool {
    values.into_iter().all(|v| v.fract() == 0.0)
}

fn colour(i: usize) -> RGBColor {
    const P: [RGBColor; 20] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
        RGBColor(174, 199, 232),
        RGBColor(255, 187, 120),
        RGBColor(152, 223, 138),
        RGBColor(255, 152, 150),
        RGBColor(197, 176, 213),
        RGBColor(196, 156, 148),
        RGBColor(0, 0, 0),
        RGBColor(80, 80, 160),
        RGBColor(160, 80, 0),
        RGBColor(0, 120, 120),
    ];
    P[i % P.len()]
}

/// Axis range over the data, padded; positive for log axes.
fn range(values: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (if log { 1.0 } else { 0.0 }, 1.0);
    }
    if log {
        (lo / 1.5, hi * 1.5)
    } else {
        let pad = ((hi - lo) * 0.05).max(hi.abs() * 0.05).max(1e-9);
        (
            (lo - pad)
                .min(0.0)
                .max(if lo >= 0.0 { 0.0 } else { lo - pad }),
            hi + pad,
        )
    }
}

fn draw_lines<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, c: &Lines<'_>) -> DrawResult {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    area.fill(&WHITE).map_err(|x| e(&x))?;
    let all = || {
        c.series
            .iter()
            .chain(c.reference.iter())
            .flat_map(|s| s.1.iter())
    };
    let (x0, x1) = range(all().map(|p| p.0), c.log_x);
    let (y0, y1) = range(all().map(|p| p.1), c.log_y);
    // Headroom above the data for the legend (upper left, about 17 px a line of a ~480 px
    // plot), so that it never hides a point.
    let lines = c.series.len() + usize::from(c.reference.is_some());
    let f = ((lines + 1) as f64 * 17.0 / 480.0).min(0.45);
    let y1 = match c.log_y {
        true => y1 * (y1 / y0).powf(f / (1.0 - f)),
        false => y1 + (y1 - y0) * f / (1.0 - f),
    };
    let kx = ticks(x0, x1, c.log_x, all_integers(all().map(|p| p.0)), 10);
    let ky = ticks(y0, y1, c.log_y, false, 8);
    let mut b = ChartBuilder::on(area);
    b.caption(c.title, ("sans-serif", 22))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(70);
    let axis = |lo: f64, hi: f64, log: bool, ticks: Vec<f64>| Axis {
        scale: match log {
            true => Scale::Log((lo..hi).log_scale().into()),
            false => Scale::Linear((lo..hi).into()),
        },
        ticks,
    };
    let mut chart = b
        .build_cartesian_2d(axis(x0, x1, c.log_x, kx), axis(y0, y1, c.log_y, ky))
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc(c.x_label)
        .y_desc(c.y_label)
        .x_label_formatter(&num)
        .y_label_formatter(&num)
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(|x| e(&x))?;
    for (i, (name, pts)) in c.series.iter().enumerate() {
        let col = colour(i);
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), col.stroke_width(2)))
            .map_err(|x| e(&x))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(2)));
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, col.filled())))
            .map_err(|x| e(&x))?;
    }
    if let Some((name, pts)) = &c.reference {
        chart
            .draw_series(DashedLineSeries::new(
                pts.iter().copied(),
                6,
                4,
                BLACK.stroke_width(1),
            ))
            .map_err(|x| e(&x))?
            .label(name.as_str())
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|x| e(&x))?;
    Ok(())
}

/// A chart axis: plotters' linear or logarithmic mapping, with our ticks ([`ticks`]) —
/// plotters' own put one label or none on a log axis spanning less than a decade, and 0.5 on
/// an axis of thread counts.
struct Axis {
    scale: Scale,
    ticks: Vec<f64>,
}

enum Scale {
    Linear(plotters::coord::types::RangedCoordf64),
    Log(LogCoord<f64>),
}

impl Ranged for Axis {
    type ValueType = f64;
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;

    fn range(&self) -> std::ops::Range<f64> {
        match &self.scale {
            Scale::Linear(r) => r.range(),
            Scale::Log(r) => r.range(),
        }
    }

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        match &self.scale {
            Scale::Linear(r) => r.map(value, limit),
            Scale::Log(r) => r.map(value, limit),
        }
    }

    fn key_points<Hint: plotters::coord::ranged1d::KeyPointHint>(&self, _: Hint) -> Vec<f64> {
        self.ticks.clone()
    }
}

fn draw_bars<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, c: &Bars<'_>) -> DrawResult {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    area.fill(&WHITE).map_err(|x| e(&x))?;
    let n = c.categories.len().max(1);
    let top = (0..n)
        .map(|i| {
            c.stacks
                .iter()
                .map(|s| s.1.get(i).copied().unwrap_or(0.0).max(0.0))
                .sum::<f64>()
        })
        .fold(0.0, f64::max)
        .max(1e-9)
        * 1.15;
    let longest = c
        .categories
        .iter()
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(4) as u32;
    let mut chart = ChartBuilder::on(area)
        .caption(c.title, ("sans-serif", 22))
        .margin(14)
        .x_label_area_size(16 + 7 * longest)
        .y_label_area_size(70)
        .build_cartesian_2d((0..n.saturating_sub(1).max(1)).into_segmented(), 0f64..top)
        .map_err(|x| e(&x))?;
    let cats = c.categories.clone();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&move |v| match v {
            // Rotated labels are centred on their tick: trailing blanks (above the axis, out of
            // sight) move the visible text fully below it.
            SegmentValue::CenterOf(i) => cats
                .get(*i)
                .map(|c| format!("{c}{}", " ".repeat(2 * c.chars().count() + 2)))
                .unwrap_or_default(),
            _ => String::new(),
        })
        .label_style(("sans-serif", 13))
        .x_label_style(
            ("sans-serif", 12)
                .into_font()
                .transform(FontTransform::Rotate270),
        )
        .y_desc(c.y_label)
        .y_label_formatter(&num)
        .draw()
        .map_err(|x| e(&x))?;
    let mut base = vec![0.0; n];
    for (si, (name, values)) in c.stacks.iter().enumerate() {
        let col = colour(si);
        let rects: Vec<_> = (0..n)
            .map(|i| {
                let v = values.get(i).copied().unwrap_or(0.0).max(0.0);
                let mut r = Rectangle::new(
                    [
                        (SegmentValue::Exact(i), base[i]),
                        (SegmentValue::Exact(i + 1), base[i] + v),
                    ],
                    col.filled(),
                );
                r.set_margin(0, 0, 6, 6);
                base[i] += v;
                r
            })
            .collect();
        chart
            .draw_series(rects)
            .map_err(|x| e(&x))?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], col.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|x| e(&x))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{num, ticks};

    #[test]
    fn axis_numbers_read_as_people_write_them() {
        assert_eq!(num(&1.0), "1");
        assert_eq!(num(&2.0), "2");
        assert_eq!(num(&0.5), "0.5");
        assert_eq!(num(&2.5), "2.5");
        assert_eq!(num(&12.26), "12.3");
        assert_eq!(num(&1234.0), "1234");
        assert_eq!(num(&0.0), "0");
        assert_eq!(num(&0.0004), "4.0e-4");
    }

    #[test]
    fn ticks_label_every_axis() {
        // Integer axes (threads, kernel sizes) never get fractional ticks.
        for (lo, hi) in [(0.0, 4.5), (0.5, 2.5), (0.0, 33.0), (2.0, 26.0)] {
            let t = ticks(lo, hi, false, true, 10);
            assert!(t.len() >= 2, "{lo}..{hi}: {t:?}");
            assert!(t.iter().all(|v| v.fract() == 0.0), "{lo}..{hi}: {t:?}");
        }
        // Log axes: at least three labels, however narrow; only powers of ten when wide.
        for (lo, hi) in [
            (3.0, 9.0),
            (35.0, 95.0),
            (0.8, 1.6),
            (0.02, 700.0),
            (1.0, 1e5),
        ] {
            let t = ticks(lo, hi, true, false, 8);
            assert!(t.len() >= 3, "{lo}..{hi}: {t:?}");
            assert!(t.iter().all(|v| *v >= lo && *v <= hi), "{lo}..{hi}: {t:?}");
        }
        assert_eq!(
            ticks(0.5, 2e4, true, false, 8),
            [1.0, 10.0, 100.0, 1e3, 1e4]
        );
        // Linear axes: steps of 1, 2 or 5 × 10ⁿ.
        assert_eq!(
            ticks(0.0, 1.0, false, false, 5),
            [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
        );
    }
}
