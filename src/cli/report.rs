//! What a run prints: the progress bar while it runs, the end-of-run report on stderr, and
//! the same as JSON for `--report`.

use std::path::Path;
use std::time::Duration;

use convflow::{pipeline, say};

/// `--report FILE.json`: what was run, then the pipeline's report.
#[derive(serde::Serialize)]
pub struct RunReport {
    pub input: String,
    pub output: String,
    pub backend: String,
    pub kernel: String,
    pub decomposition: String,
    pub border: &'static str,
    pub inflight: u64,
    /// What the output leaves out of the input (streams its container cannot hold).
    pub notes: Vec<String>,
    pub startup: Startup,
    #[serde(flatten)]
    pub run: pipeline::Report,
}

/// Where the time before the first filtered frame went, from the start of the command.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct Startup {
    /// Creating the backend(s): for CUDA the context and its streams (on a thread of its own,
    /// beside the input).
    pub backend_s: f64,
    /// Meanwhile: the arguments checked, the input opened and (beside a device backend) its
    /// first frame read.
    pub input_s: f64,
    /// Both done: the backend made and the input opened.
    pub ready_s: f64,
    /// Everything before the run: then the output was created too.
    pub before_run_s: f64,
    /// The first frame written (the run's first frame read, kernel modules loaded, buffers
    /// allocated, filtered and written included), if any was.
    pub first_frame_s: Option<f64>,
    /// Frames cpu-par filtered while the backend was being made (the opening lane; then
    /// `before_run_s` is when it started, and `ready_s` when the backend was there).
    pub opening_frames: usize,
}

impl Startup {
    /// The startup of a command that created its backend in `backend` while it took `input`
    /// from its start to open the input, had both at `ready` and started its run at
    /// `before_run`, given the run's own first-frame time.
    pub fn new(
        backend: Duration,
        [input, ready, before_run]: [Duration; 3],
        first_frame: Option<Duration>,
        opening_frames: usize,
    ) -> Self {
        Startup {
            backend_s: backend.as_secs_f64(),
            input_s: input.as_secs_f64(),
            ready_s: ready.as_secs_f64(),
            before_run_s: before_run.as_secs_f64(),
            first_frame_s: first_frame.map(|f| (before_run + f).as_secs_f64()),
            opening_frames,
        }
    }
}

/// A progress bar on stderr with fps and ETA, only when stderr is a terminal.
pub fn progress_bar(len: Option<usize>) -> Option<indicatif::ProgressBar> {
    if !convflow::console::is_terminal() {
        return None;
    }
    let (bar, template) = match len {
        Some(n) => (
            indicatif::ProgressBar::new(n as u64),
            "{bar:40} {pos}/{len} frames  {fps}  ETA {eta}",
        ),
        None => (
            indicatif::ProgressBar::no_length(),
            "{pos} frames  {fps}  {elapsed}",
        ),
    };
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        // indicatif's own {per_sec} prints "40.8928/s".
        bar.set_style(style.with_key(
            "fps",
            |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.1} fps", state.per_sec());
            },
        ));
    }
    bar.set_draw_target(indicatif::ProgressDrawTarget::term_like_with_hz(
        Box::new(OwnTerminal),
        4,
    ));
    Some(bar)
}

/// The terminal behind convflow's own standard error ([`convflow::console`]), for the
/// progress bar: descriptor 2 itself may be captured.
#[derive(Debug)]
struct OwnTerminal;

impl OwnTerminal {
    fn put(&self, s: &str) -> std::io::Result<()> {
        use std::io::Write;
        convflow::console::stderr().write_all(s.as_bytes())
    }
}

impl indicatif::TermLike for OwnTerminal {
    fn width(&self) -> u16 {
        let mut size = libc::winsize {
            ws_row: 0,
            ws_col: 0,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: TIOCGWINSZ fills the winsize we pass; a failure leaves it zeroed.
        unsafe { libc::ioctl(convflow::console::own_fd(), libc::TIOCGWINSZ, &mut size) };
        if size.ws_col == 0 {
            80
        } else {
            size.ws_col
        }
    }
    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.put(&format!("\x1b[{n}A"))
    }
    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.put(&format!("\x1b[{n}B"))
    }
    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.put(&format!("\x1b[{n}C"))
    }
    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.put(&format!("\x1b[{n}D"))
    }
    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.put(&format!("{s}\n"))
    }
    fn write_str(&self, s: &str) -> std::io::Result<()> {
        self.put(s)
    }
    fn clear_line(&self) -> std::io::Result<()> {
        self.put("\r\x1b[2K")
    }
    fn flush(&self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs shorter than this many frames (a still, a short clip) print one summary line unless
/// `-v` or `--report` asks for the stage report.
pub const SHORT_RUN_FRAMES: usize = 100;

/// A stage rate (fps, MB/s) is shown only for a stage that spent at least this long per frame:
/// below it (the null sink) the rate says nothing about the stage.
const RATED_BUSY_PER_FRAME: Duration = Duration::from_micros(1);

/// The end-of-run report on stderr: with `full`, one line per stage (per lane summed), one
/// line per device when several ran (`devices`: their ordinals), then device time, startup,
/// totals and latency; otherwise one summary line.
pub fn print(
    (stats, devices): (&pipeline::RunStats, &[usize]),
    startup: &Startup,
    input: &Path,
    sink: &str,
    what: &str,
    full: bool,
) {
    let wall = stats.wall.as_secs_f64().max(1e-9);
    let checked = if stats.checked {
        " | --check: identical to cpu-seq"
    } else {
        ""
    };
    let frames = match stats.frames {
        1 => "1 frame".to_string(),
        n => format!("{n} frames"),
    };
    if !full {
        let rate = match stats.frames {
            0 | 1 => String::new(),
            n => format!(", {:.1} fps", n as f64 / wall),
        };
        say!(
            "convflow: {frames} {} -> {sink} | {what}{checked} | {}{rate}",
            convflow::quote::path(input),
            duration(stats.wall),
        );
        skipped(stats);
        return;
    }
    say!(
        "convflow: {frames} {} -> {} | {what}{checked}",
        convflow::quote::path(input),
        sink,
    );
    skipped(stats);
    if stats.frames == 0 {
        return;
    }
    say!("  stage       frames   busy ms      fps     MB/s  util  frame µs p50/p99/max");
    for s in &stats.stages {
        // A stage of several lanes: its time is the lanes' busy time side by side.
        let busy = s.busy_per_lane().as_secs_f64();
        let name = match s.lanes {
            1 => s.name.to_string(),
            n => format!("{}×{n}", s.name),
        };
        let h = &s.per_frame;
        let rated = s.busy >= RATED_BUSY_PER_FRAME * s.frames.max(1) as u32;
        let rate = |v: f64| match rated {
            true => format!("{v:.1}"),
            false => "-".to_string(),
        };
        say!(
            "  {:<10} {:>7} {:>9.1} {:>8} {:>8} {:>4.0}%  {}/{}/{}",
            name,
            s.frames,
            busy * 1e3,
            rate(s.frames as f64 / busy.max(1e-9)),
            rate(s.bytes as f64 / busy.max(1e-9) / 1e6),
            100.0 * busy / wall,
            h.value_at_quantile(0.5),
            h.value_at_quantile(0.99),
            h.max()
        );
    }
    if stats.lanes.len() > 1 {
        let mut gpus = devices.iter().copied().chain(devices.len()..);
        for l in &stats.lanes {
            let device = l.device.map_or(String::new(), |d| {
                let us = |t: Duration| t.as_secs_f64() * 1e6 / l.frames.max(1) as f64;
                format!(
                    "; device µs per frame: upload {:.1}, kernels {:.1}, download {:.1}",
                    us(d.h2d),
                    us(d.kernel),
                    us(d.d2h)
                )
            });
            // A lane without device times is the CPU's: the opening lane, or `auto`'s cpu-par
            // where no GPU was usable after all.
            let lane = match (l.opening, l.device) {
                (true, _) => "CPU, opening".to_string(),
                (false, None) => "CPU".to_string(),
                (false, Some(_)) => format!("GPU {}", gpus.next().unwrap_or_default()),
            };
            say!(
                "  {lane}: {} frames ({:.0}%), {:.1} fps{device}; bottleneck: {} | {}",
                l.frames,
                100.0 * l.frames as f64 / stats.frames.max(1) as f64,
                l.frames as f64 / wall,
                l.bottleneck().map_or("-", |s| s.name),
                l.backend
            );
        }
    }
    if let Some(d) = stats.device {
        let n = stats.device_frames().max(1) as f64;
        let us = |t: Duration| t.as_secs_f64() * 1e6 / n;
        let total = (d.h2d + d.kernel + d.d2h).as_secs_f64().max(1e-12);
        say!(
            "  device time per frame ({}): upload {:.1} µs, kernels {:.1} µs, download {:.1} µs; \
            transfers {:.0}% / kernels {:.0}%",
            if stats.overlapped {
                "overlapped on separate streams"
            } else {
                "one stream, no \
                overlap"
            },
            us(d.h2d),
            us(d.kernel),
            us(d.d2h),
            100.0 * (d.h2d + d.d2h).as_secs_f64() / total,
            100.0 * d.kernel.as_secs_f64() / total
        );
    }
    match (startup.first_frame_s, startup.opening_frames) {
        (Some(first), n @ 1..) => say!(
            "  startup: first frame written {:.0} ms after start, by cpu-par: it filtered the \
            first {n} frame(s) from {:.0} ms while the backend was made ({:.0} ms beside the \
            input {:.0} ms, there at {:.0} ms)",
            first * 1e3,
            startup.before_run_s * 1e3,
            startup.backend_s * 1e3,
            startup.input_s * 1e3,
            startup.ready_s * 1e3,
        ),
        (Some(first), _) => say!(
            "  startup: first frame written {:.0} ms after start (backend {:.0} ms beside the \
            input {:.0} ms, both ready at {:.0} ms; output {:.0} ms; run to the first frame {:.0} \
            ms)",
            first * 1e3,
            startup.backend_s * 1e3,
            startup.input_s * 1e3,
            startup.ready_s * 1e3,
            (startup.before_run_s - startup.ready_s).max(0.0) * 1e3,
            (first - startup.before_run_s.max(startup.ready_s)) * 1e3
        ),
        (None, _) => {}
    }
    let l = &stats.latency;
    if let Some(fps) = stats.steady_fps() {
        say!("  sustained after warm-up: {fps:.1} fps");
    }
    say!(
        "  end to end: {:.1} ms, {:.1} fps ({:.1} MPix/s); overlap {:.2} (stage busy / wall); \
        latency µs p50 {} p90 {} p99 {} max {}; bottleneck: {}",
        wall * 1e3,
        stats.frames as f64 / wall,
        stats.megapixels / wall,
        stats.overlap(),
        l.value_at_quantile(0.5),
        l.value_at_quantile(0.9),
        l.value_at_quantile(0.99),
        l.max(),
        stats.bottleneck().name
    );
}

/// The frames `--skip-bad` skipped, with why (the first ten).
fn skipped(stats: &pipeline::RunStats) {
    if stats.skipped > 0 {
        say!("  skipped {} bad frame(s) (--skip-bad):", stats.skipped);
        for m in &stats.skip_messages {
            say!("    {m}");
        }
    }
}

/// A wall time as people read it: 41 ms, 1.20 s, 2 min 05 s.
fn duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1.0 {
        format!("{:.0} ms", s * 1e3)
    } else if s < 120.0 {
        format!("{s:.2} s")
    } else {
        format!("{} min {:02.0} s", (s / 60.0).floor(), s % 60.0)
    }
}
