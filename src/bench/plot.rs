//! Charts for the benchmark suite, drawn with plotters: line charts (optionally log-scaled) and
//! stacked bars, each written as SVG and PNG. Text is laid out with a TrueType font found on the
//! machine: `$CONVFLOW_FONT`, else DejaVu Sans where Debian's `fonts-dejavu-core` (or
//! matplotlib) puts it; without one, charts are a clear error.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

#[derive(Debug, thiserror::Error)]
#[error("chart {path}: {msg}")]
pub struct PlotError {
    pub path: PathBuf,
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
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub log_x: bool,
    pub log_y: bool,
    pub series: Vec<(String, Vec<(f64, f64)>)>,
    /// Drawn dashed in black, e.g. the ideal scaling line.
    pub reference: Option<(String, Vec<(f64, f64)>)>,
}

/// Stacked bars: one bar per category, one segment per stack entry.
pub struct Bars<'a> {
    pub title: &'a str,
    pub y_label: &'a str,
    pub categories: Vec<String>,
    pub stacks: Vec<(String, Vec<f64>)>,
}

/// Writes `stem.svg` (and `stem.png` when a font is available); returns the files written.
pub fn lines(dir: &Path, stem: &str, chart: &Lines<'_>) -> Result<Vec<PathBuf>, PlotError> {
    render(dir, stem, Chart::Lines(chart))
}

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

/// Axis numbers without needless decimals.
fn num(v: &f64) -> String {
    let a = v.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 {
        format!("{v:.2}")
    } else {
        format!("{v:.1e}")
    }
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
    let mut b = ChartBuilder::on(area);
    b.caption(c.title, ("sans-serif", 22))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(70);
    macro_rules! body {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(c.x_label)
                .y_desc(c.y_label)
                .x_labels(8)
                .y_labels(8)
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
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(2))
                    });
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
        }};
    }
    match (c.log_x, c.log_y) {
        (false, false) => body!(b.build_cartesian_2d(x0..x1, y0..y1).map_err(|x| e(&x))?),
        (true, false) => body!(b
            .build_cartesian_2d((x0..x1).log_scale(), y0..y1)
            .map_err(|x| e(&x))?),
        (false, true) => body!(b
            .build_cartesian_2d(x0..x1, (y0..y1).log_scale())
            .map_err(|x| e(&x))?),
        (true, true) => body!(b
            .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
            .map_err(|x| e(&x))?),
    }
    Ok(())
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
