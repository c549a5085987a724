//! `convflow bench pipeline`: sustained frames per second through the whole pipeline
//! (synthetic source → [upload →] filter → [download →] null sink), per size × format × kernel
//! size × schedule, next to the host↔device bandwidth measured in the same run.

use serde::Serialize;

use super::{median_of_sorted, parse_size, BenchError};
use crate::backend::{self, BackendKind, LinkBandwidth, Schedule};
use crate::filter::{library, Filter};
use crate::frame::{Frame, PixelFormat};

/// How a CUDA backend moves frames in `bench pipeline`.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::VariantArray,
    strum::EnumMessage,
)]
#[strum(serialize_all = "kebab-case")]
pub enum Copies {
    /// Page-locked pools, copies on their own streams (the default pipeline).
    Overlap,
    /// The literature's loop: pageable memory, copies and kernels on one stream.
    Sync,
    /// The same loop staged through page-locked buffers.
    PinnedSync,
}

impl Copies {
    /// `schedule` set up for this way of copying.
    pub fn apply(self, mut schedule: Schedule) -> Schedule {
        schedule.sync = self != Copies::Overlap;
        schedule.pageable = self == Copies::Sync;
        schedule
    }
}

/// What to measure.
#[derive(Clone, Debug)]
pub struct PipelineBench {
    /// Backends with their schedules and a label (e.g. "overlap", "sync").
    pub backends: Vec<(BackendKind, Schedule, String)>,
    /// Frame sizes as [`parse_size`] reads them (`1080p`, `4k`, `WxH`).
    pub sizes: Vec<String>,
    /// Pixel formats of the synthetic frames.
    pub formats: Vec<PixelFormat>,
    /// Gaussian kernel sizes: each k runs `gaussian:k`.
    pub ks: Vec<usize>,
    /// Frames per run (the first `4·inflight + 4` are warm-up, not counted in the steady rate).
    pub frames: usize,
    /// Runs per point; the median run's figures are reported.
    pub runs: usize,
    /// Frames in flight through the pipeline (`--inflight`); None:
    /// [`crate::pipeline::auto_inflight`] for each point's frame size.
    pub inflight: Option<usize>,
    /// GPU sets every CUDA backend runs on, one after the other (`--devices`: the first 1,
    /// 2, … GPUs); empty: its schedule's one device.
    pub devices: Vec<Vec<usize>>,
}

/// One measured pipeline point.
#[derive(Clone, Debug)]
pub struct PipelineSample {
    /// The backend's report name.
    pub backend: String,
    /// The schedule's label from [`PipelineBench::backends`] (e.g. "overlap").
    pub schedule: String,
    /// The size as configured.
    pub size: String,
    /// Frame width in pixels.
    pub width: usize,
    /// Frame height in pixels.
    pub height: usize,
    /// Pixel format of the frames.
    pub format: PixelFormat,
    /// Gaussian kernel side.
    pub k: usize,
    /// Frames per run.
    pub frames: usize,
    /// Steady-state fps of each run.
    pub fps: Vec<f64>,
    /// Per-frame device times (µs) of the median run: upload, kernels, download.
    pub device_us: Option<(f64, f64, f64)>,
    /// The busiest stage of the median run.
    pub bottleneck: String,
    /// Summed stage busy time over wall time of the median run (1: nothing overlapped).
    pub overlap: f64,
    /// Bytes of one frame (each way).
    pub frame_bytes: usize,
    /// GPUs the run used (1 for one GPU or a CPU backend).
    pub gpus: usize,
    /// Median fps over the same point's median on one GPU, for runs on several.
    pub scaling: Option<f64>,
}

impl PipelineSample {
    /// Median steady fps over the runs.
    pub fn median(&self) -> f64 {
        let mut v = self.fps.clone();
        v.sort_by(f64::total_cmp);
        median_of_sorted(&v)
    }
    /// Lowest steady fps (infinity when there were no runs).
    pub fn min(&self) -> f64 {
        self.fps.iter().copied().fold(f64::INFINITY, f64::min)
    }
    /// Highest steady fps (0 when there were no runs).
    pub fn max(&self) -> f64 {
        self.fps.iter().copied().fold(0.0, f64::max)
    }
    /// The frame rate the measured duplex bandwidth allows (each frame crosses both ways).
    pub fn duplex_bound(&self, link: &LinkBandwidth) -> f64 {
        link.duplex / (2.0 * self.frame_bytes as f64)
    }
}

/// The copy bandwidth of the first offloading backend in `cfg` (pinned memory unless it is
/// pageable), 256 MiB each way, median of 5: for each GPU count of `cfg.devices` (or the one
/// device) with all of those GPUs copying at once, summed — what the host sustains for them
/// together. Empty when no backend offloads.
pub fn measure_links(cfg: &PipelineBench) -> Result<Vec<(usize, LinkBandwidth)>, BenchError> {
    for (kind, schedule, _) in &cfg.backends {
        let mut s = schedule.clone();
        s.sync = false;
        let one = vec![vec![schedule.device]];
        let sets = if cfg.devices.is_empty() {
            &one
        } else {
            &cfg.devices
        };
        let mut links = Vec::new();
        for set in sets {
            let mut backends = backend::create_on(*kind, &s, set)?;
            if backends[0].offload()?.is_none() {
                break;
            }
            let each: Vec<Option<Result<LinkBandwidth, BenchError>>> =
                std::thread::scope(|scope| {
                    let running: Vec<_> = backends
                        .iter_mut()
                        .map(|b| {
                            scope.spawn(move || {
                                b.measure().map(|m| {
                                    m.link_bandwidth(256 << 20, 5).map_err(BenchError::from)
                                })
                            })
                        })
                        .collect();
                    running
                        .into_iter()
                        .map(|h| {
                            h.join().unwrap_or_else(|_| {
                                Some(Err(BenchError::Run("the bandwidth probe panicked".into())))
                            })
                        })
                        .collect()
                });
            let mut sum = LinkBandwidth::default();
            for l in each.into_iter().flatten() {
                let l = l?;
                (sum.h2d, sum.d2h, sum.duplex) =
                    (sum.h2d + l.h2d, sum.d2h + l.d2h, sum.duplex + l.duplex);
            }
            links.push((set.len(), sum));
        }
        if !links.is_empty() {
            return Ok(links);
        }
    }
    Ok(Vec::new())
}

/// Runs every configured point `cfg.runs` times through the pipeline (synthetic source,
/// Gaussian k×k, null sink), calling `report` as each point finishes.
pub fn run_pipeline(
    cfg: &PipelineBench,
    mut report: impl FnMut(&PipelineSample),
) -> Result<Vec<PipelineSample>, BenchError> {
    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut out = Vec::new();
    for (kind, schedule, label) in &cfg.backends {
        let one = vec![vec![schedule.device]];
        let sets = match kind {
            BackendKind::CpuSeq | BackendKind::CpuPar => &one,
            _ if cfg.devices.is_empty() => &one,
            _ => &cfg.devices,
        };
        for set in sets {
            let mut backends = backend::create_on(*kind, schedule, set)?;
            let mut lanes: Vec<&mut dyn crate::backend::Backend> = Vec::new();
            for b in backends.iter_mut() {
                lanes.push(b.as_mut());
            }
            for size in &cfg.sizes {
                let (w, h) = parse_size(size)?;
                for &format in &cfg.formats {
                    for &k in &cfg.ks {
                        let sample =
                            run_point(cfg, &mut lanes, label, size, (w, h, format, k), &stop)?;
                        let sample = PipelineSample {
                            scaling: (sample.gpus > 1)
                                .then(|| {
                                    out.iter().find(|o: &&PipelineSample| {
                                        o.gpus == 1
                                            && (&o.schedule, &o.size, o.format, o.k)
                                                == (&sample.schedule, &sample.size, format, k)
                                    })
                                })
                                .flatten()
                                .map(|o| sample.median() / o.median().max(1e-9)),
                            ..sample
                        };
                        report(&sample);
                        out.push(sample);
                    }
                }
            }
        }
    }
    Ok(out)
}

/// One point of [`run_pipeline`]: `cfg.runs` runs of `gaussian:k` over synthetic `w`×`h`
/// frames of `format` on `lanes`.
fn run_point(
    cfg: &PipelineBench,
    lanes: &mut [&mut dyn crate::backend::Backend],
    label: &str,
    size: &str,
    (w, h, format, k): (usize, usize, PixelFormat, usize),
    stop: &std::sync::atomic::AtomicBool,
) -> Result<PipelineSample, BenchError> {
    use crate::io::synthetic::SyntheticSource;
    use crate::io::NullSink;
    use crate::pipeline::{self, Options};
    let filter = Filter::new(library::gaussian(k, k, None, format!("gaussian:{k}"))?);
    let plan = filter.plan()?;
    let mut sample = PipelineSample {
        backend: String::new(),
        schedule: label.to_string(),
        size: size.to_string(),
        width: w,
        height: h,
        format,
        k,
        frames: cfg.frames,
        fps: Vec::new(),
        device_us: None,
        bottleneck: String::new(),
        overlap: 0.0,
        frame_bytes: Frame::packed_len(format, w, h)?,
        gpus: lanes.len(),
        scaling: None,
    };
    let inflight = cfg
        .inflight
        .unwrap_or_else(|| pipeline::auto_inflight(Some(sample.frame_bytes)));
    let mut runs = Vec::new();
    for _ in 0..cfg.runs.max(1) {
        let spec = format!("synthetic:{w}x{h}:{format}:{}", cfg.frames);
        let mut src = SyntheticSource::parse(&spec)
            .map_err(|e| BenchError::Run(format!("pipeline run: {e}")))?;
        let stats = pipeline::run_on(
            &mut src,
            Box::<NullSink>::default(),
            lanes,
            &plan,
            Options::new(inflight, stop),
        )
        .map_err(|e| BenchError::Run(format!("pipeline run: {e}")))?;
        let fps = stats
            .steady_fps()
            .unwrap_or(stats.frames as f64 / stats.wall.as_secs_f64().max(1e-9));
        runs.push((fps, stats));
    }
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    sample.fps = runs.iter().map(|r| r.0).collect();
    let mid = &runs[runs.len() / 2].1;
    sample.backend = mid.backend.clone();
    let n = mid.frames.max(1) as f64;
    // Device time per frame of one GPU: the lanes' totals over their frames.
    sample.device_us = mid.device.map(|d| {
        (
            d.h2d.as_secs_f64() * 1e6 / n,
            d.kernel.as_secs_f64() * 1e6 / n,
            d.d2h.as_secs_f64() * 1e6 / n,
        )
    });
    sample.bottleneck = mid.bottleneck().name.to_string();
    sample.overlap = mid.overlap();
    Ok(sample)
}

/// Header and separator lines of the markdown table whose rows [`table_row`] writes.
pub const TABLE_HEADER: &str =
    "| backend | schedule | GPUs | size | format | k | frames | fps median | fps min | fps max | \
GB/s each way | upload µs | kernels µs | download µs | overlap | bottleneck | % of duplex bound \
| × one GPU |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|";

/// One markdown table row; the share of the duplex bound is `-` without a measured `link` (the
/// bandwidth of the row's GPUs copying at once).
pub fn table_row(s: &PipelineSample, link: Option<&LinkBandwidth>) -> String {
    let dev = |f: fn(&(f64, f64, f64)) -> f64| {
        s.device_us
            .as_ref()
            .map_or("-".into(), |d| format!("{:.1}", f(d)))
    };
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.2} | {} | {} | {} | \
        {:.2} | {} | {} | {} |",
        s.backend,
        s.schedule,
        s.gpus,
        s.size,
        s.format,
        s.k,
        s.frames,
        s.median(),
        s.min(),
        s.max(),
        s.median() * s.frame_bytes as f64 / 1e9,
        dev(|d| d.0),
        dev(|d| d.1),
        dev(|d| d.2),
        s.overlap,
        s.bottleneck,
        link.map_or("-".into(), |l| format!(
            "{:.0}%",
            100.0 * s.median() / s.duplex_bound(l)
        )),
        s.scaling.map_or("-".into(), |x| format!("{x:.2}×"))
    )
}

/// A [`PipelineSample`] as written to CSV, with the link bandwidth of the run.
#[derive(Clone, Debug, Serialize)]
pub struct PipelineRow {
    /// The backend's report name.
    pub backend: String,
    /// The schedule's label.
    pub schedule: String,
    /// GPUs the run used.
    pub gpus: usize,
    /// Median fps over one GPU's, for runs on several.
    pub scaling: Option<f64>,
    /// The size as configured.
    pub size: String,
    /// Frame width in pixels.
    pub width: usize,
    /// Frame height in pixels.
    pub height: usize,
    /// Pixel format (its name).
    pub format: PixelFormat,
    /// Gaussian kernel side.
    pub k: usize,
    /// Frames per run.
    pub frames: usize,
    /// Runs taken.
    pub runs: usize,
    /// [`PipelineSample::median`].
    pub fps_median: f64,
    /// [`PipelineSample::min`].
    pub fps_min: f64,
    /// [`PipelineSample::max`].
    pub fps_max: f64,
    /// Bytes of one tightly packed frame.
    pub frame_bytes: usize,
    /// Upload device time per frame of the median run, µs.
    pub upload_us: Option<f64>,
    /// Kernel device time per frame of the median run, µs.
    pub kernel_us: Option<f64>,
    /// Download device time per frame of the median run, µs.
    pub download_us: Option<f64>,
    /// [`PipelineSample::overlap`].
    pub overlap: f64,
    /// The busiest stage of the median run.
    pub bottleneck: String,
    /// Measured host-to-device bandwidth, GB/s (10⁹ bytes).
    pub link_h2d_gbs: Option<f64>,
    /// Measured device-to-host bandwidth, GB/s.
    pub link_d2h_gbs: Option<f64>,
    /// Measured bandwidth with both directions at once, GB/s.
    pub link_duplex_gbs: Option<f64>,
}

impl PipelineSample {
    /// The sample as a CSV row.
    pub fn row(&self, link: Option<&LinkBandwidth>) -> PipelineRow {
        let dev = |i: usize| self.device_us.map(|d| [d.0, d.1, d.2][i]);
        PipelineRow {
            backend: self.backend.clone(),
            schedule: self.schedule.clone(),
            gpus: self.gpus,
            scaling: self.scaling,
            size: self.size.clone(),
            width: self.width,
            height: self.height,
            format: self.format,
            k: self.k,
            frames: self.frames,
            runs: self.fps.len(),
            fps_median: self.median(),
            fps_min: self.min(),
            fps_max: self.max(),
            frame_bytes: self.frame_bytes,
            upload_us: dev(0),
            kernel_us: dev(1),
            download_us: dev(2),
            overlap: self.overlap,
            bottleneck: self.bottleneck.clone(),
            link_h2d_gbs: link.map(|l| l.h2d / 1e9),
            link_d2h_gbs: link.map(|l| l.d2h / 1e9),
            link_duplex_gbs: link.map(|l| l.duplex / 1e9),
        }
    }
}
