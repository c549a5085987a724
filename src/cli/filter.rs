//! `convflow filter`: builds the filter, backend, source and sink from the arguments, checks
//! every output against every input before any work, runs the pipeline and reports.
//!
//! Order matters for the user's files: arguments and the kernel are checked first, then the
//! source is opened (reading only), then input protection ([`convflow::io::guard`]) refuses any
//! output that would write over an input (exit 2), and only then is the sink created, under a
//! temporary name. The backend is made on a thread of its own meanwhile (a CUDA context takes
//! ~200 ms), and a plan it cannot run is a usage error before the sink exists — unless cpu-par
//! opens the run while the context comes up (only for `--variant auto`, which runs every plan),
//! or `auto` leaves one small image to cpu-par without making a context at all (both decided in
//! `lanes`). Signals are routed to the pipeline's stop flag from the start.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use convflow::backend::{self, BackendKind};
use convflow::filter::{spec, Filter};
use convflow::io::{self, guard, stop::StopFlag, Output, Source};
use convflow::pipeline;

use super::args::{FilterArgs, Streams};
use super::{report, signals, usage};
use lanes::{image_on_cpu, opens_on_cpu, still_samples, MakeBackends};

mod lanes;

pub fn run(a: FilterArgs) -> Result<()> {
    let t0 = Instant::now();
    // The output and the report are committed together: an error after one of them was
    // committed puts both destinations back as they were.
    let outputs = io::atomic::Run::begin();
    let stop: StopFlag = Arc::new(AtomicBool::new(false));
    signals::install(&stop).context("installing signal handlers")?;
    #[cfg(feature = "video")]
    io::video::set_verbose(a.verbose);
    let filter = filter_of(&a)?;
    // The plan (the decomposition included) follows from the filter alone; a backend or
    // variant that cannot run it is a usage error, before any file is created.
    let plan = filter.plan()?;
    if let Some(r) = &a.report {
        check_file_output("report", r)?;
    }
    let schedule = a.gpu.schedule(a.threads, a.gpu.variant);
    // `auto` with one image that cpu-par is done with sooner than a CUDA context comes up
    // (~0.2 s) and goes (~0.1 s at exit): no context is made.
    let driver = matches!(a.backend, BackendKind::Auto | BackendKind::Cuda)
        && !a.passthrough
        && backend::driver_present();
    // One still image's samples, from its header, where a CUDA context would be made.
    let still = driver.then(|| still_samples(&a.input)).flatten();
    let image_on_cpu = image_on_cpu(&a, &plan, still, driver);
    let kind = match image_on_cpu {
        Some(_) => BackendKind::CpuPar,
        None => a.backend,
    };
    let making = MakeBackends::start(&a, kind, &schedule)?;
    let mut source = match io::open_source(&a.input, Some(stop.clone())) {
        Ok(s) => s,
        Err(_) if stop.load(Ordering::SeqCst) => {
            bail!("interrupted before the first frame was read; nothing was written")
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(seg) = a.segment {
        // A video's parts are cut by time and number their frames from 0: as frame files they
        // would share names.
        let by_time = source.stream_info().is_some_and(|s| s.time_base.is_some());
        let kind = Output::classify(&a.output, &a.input, true);
        if by_time && matches!(kind, Output::Dir(_) | Output::Still(_)) {
            return Err(usage(format!(
                "--segment {seg} of a video writes a video file or y4m per part (then `convflow \
                 concat`), not frame files"
            )));
        }
        source.segment(seg)?;
        if source.len_hint() == Some(0) {
            return Err(usage(format!(
                "--segment {seg}: this part of {} holds no frames (it has fewer frames than \
                 parts)",
                source.describe()
            )));
        }
    }
    let mut notes = Vec::new();
    if let Some(to) = a.video.pix_fmt {
        source = convert(source, to)?;
    }
    let own_stream = source.stream_info().is_some();
    if a.video.fps.is_some() && own_stream {
        return Err(usage(
            "--fps is for image inputs (a frame directory); video, y4m and synthetic inputs keep \
             their own timing",
        ));
    }
    // A stream of frames (video, y4m, synthetic) goes to a directory of images unless the
    // output names one image file.
    let many = a.input.is_dir() || (own_stream && !io::has_image_extension(&a.output));
    let output = Output::classify(&a.output, &a.input, many);
    if let Output::Dir(dir) = &output {
        if io::has_image_extension(dir) && !dir.is_dir() {
            return Err(usage(format!(
                "output '{}' names an image file, but {} gives many frames: name a directory \
                 (-o frames/), a video file (.mkv, .mp4, .webm, …) or a .y4m file",
                convflow::quote::path(dir),
                convflow::quote::path(&a.input)
            )));
        }
    }
    let mut stream = source.stream_info();
    if stream.is_none() && matches!(output, Output::Video(_) | Output::Y4m(_)) {
        stream = source.declare_stream(a.video.fps.unwrap_or((25, 1)))?;
    }
    // Images hold gray and RGB(A) at 8 or 16 bits: YUV frames become RGB for them.
    if let (Some(s), Output::Dir(_)) = (&stream, &output) {
        let to = image_format(s.format);
        if to != s.format {
            notes.push(format!(
                "frames converted from {} to {to} for the image files (--pix-fmt chooses)",
                s.format
            ));
            source = convert(source, to)?;
            stream = source.stream_info();
        }
    }
    if let Some(fields) = stream.as_ref().and_then(|s| s.interlacing()) {
        notes.push(format!(
            "{} is interlaced ({fields}): each frame is filtered whole, its two fields \
             together (deinterlace first, e.g. ffmpeg -vf bwdif, to keep fields apart)",
            convflow::quote::path(&a.input)
        ));
    }
    protect_inputs(&a, source.as_ref(), &output)?;
    let frame_bytes = stream
        .as_ref()
        .and_then(|s| convflow::Frame::packed_len(s.format, s.width, s.height).ok());
    let inflight = a
        .inflight
        .map_or_else(|| pipeline::auto_inflight(frame_bytes), |n| n as usize);
    // While a CUDA context comes up (~0.2 s), cpu-par filters the first frames (the opening
    // lane: the same bits, see `opens_on_cpu`); without it, the input's first frame is read
    // ahead (when a lane's host pools of such frames fit the memory budget: else the run says
    // so).
    let frame_samples = stream
        .as_ref()
        .map(|s| (s.format, s.width, s.height))
        .and_then(|(f, w, h)| {
            let bytes = convflow::Frame::packed_len(f, w, h).ok()?;
            Some(bytes / f.depth().bytes())
        })
        .or(still);
    let opens = image_on_cpu.is_none() && opens_on_cpu(&a, &plan, frame_samples, driver);
    let opening = if opens && !making.is_done() {
        Some(backend::create(BackendKind::CpuPar, &schedule)?)
    } else {
        None
    };
    if making.device && opening.is_none() {
        source = io::primed::prime(source, 2 * inflight + 1);
    }
    let setup_time = t0.elapsed();
    // Without an opening lane the backend is awaited now: a plan it cannot run is a usage
    // error before the output exists.
    let (mut made, making) = match opening {
        None => (Some(making.finish_checked(&a, &plan, &mut notes)?), None),
        Some(_) => (None, Some(making)),
    };
    let mut ready = t0.elapsed();
    let mut check = if a.check {
        Some(backend::create(BackendKind::CpuSeq, &schedule)?)
    } else {
        None
    };
    // The report's file is created now, so that a place it cannot be written (a read-only file
    // system, a full disk) is found before any work.
    let mut report_pending = match &a.report {
        Some(p) => Some(io::atomic::PendingFile::create(p).with_context(|| {
            format!("report '{}': cannot be written", convflow::quote::path(p))
        })?),
        None => None,
    };
    let video = io::OutputOptions {
        codec: a.video.codec.clone(),
        codec_opts: a.video.codec_opts.clone(),
        video_only: a.video.streams == Streams::VideoOnly,
        tiff_frames: a.video.tiff,
    };
    let sink = io::open_sink(&output, stream.as_ref(), &video)?;
    let sink_name = sink.describe();
    notes.extend(left_out(&a, stream.as_ref(), &output, sink.as_ref()));
    if !a.quiet {
        for n in &notes {
            convflow::say!("convflow: note: {n}");
        }
    }
    if let Some(t) = image_on_cpu {
        let note = format!(
            "auto: one image, filtered on cpu-par (expected within {} ms) without making a \
             CUDA context; --gpu-only filters it on the GPU",
            t.as_millis().max(1)
        );
        if a.verbose && !a.quiet {
            convflow::say!("convflow: note: {note}");
        }
        notes.push(note);
    }
    let bar = (!a.quiet)
        .then(|| report::progress_bar(source.len_hint()))
        .flatten();
    let tick = |n: usize| {
        if let Some(b) = &bar {
            b.set_position(n as u64);
        }
    };
    let opened_at = t0.elapsed();
    let begun = match opening {
        Some(mut cpu) => {
            let making = making.expect("awaited later with an opening lane");
            let made_yet = || making.is_done();
            // One frame at a time: when the backend is there, at most the frame being filtered
            // is left to the CPU before the GPU takes over.
            let opts = options(&a, (1, &stop), &mut check, &tick);
            let cpu = cpu.as_mut();
            let opened = pipeline::open(source.as_mut(), sink, cpu, &made_yet, &plan, opts)
                .map_err(|e| in_run(e, source.as_ref()))?;
            let mut later = Vec::new();
            match making.finish_checked(&a, &plan, &mut later) {
                Ok(m) => {
                    ready = m.done.saturating_duration_since(t0).max(setup_time);
                    made = Some(m);
                }
                Err(e) => {
                    opened.abort();
                    return Err(e);
                }
            }
            if !a.quiet {
                for n in &later {
                    convflow::say!("convflow: note: {n}");
                }
            }
            notes.extend(later);
            Begun::Opened(Box::new(opened))
        }
        None => Begun::Fresh(sink),
    };
    let opening_frames = match &begun {
        Begun::Opened(opened) => opened.frames(),
        Begun::Fresh(_) => 0,
    };
    let made = made.expect("the backends are made by now");
    let (mut backends, devices) = (made.backends, made.devices);
    // The report is written into its temporary file once every frame is out and before the
    // output is made visible: if that fails, the run fails and leaves nothing.
    let mut report_file: Option<io::atomic::PendingFile> = None;
    let before_run = match begun {
        Begun::Opened(_) => opened_at,
        Begun::Fresh(_) => t0.elapsed(),
    };
    let startup = |stats: &pipeline::RunStats| {
        report::Startup::new(
            made.took,
            [setup_time, ready, before_run],
            stats.first_frame,
            opening_frames,
        )
    };
    let mut prepare_report = |stats: &pipeline::RunStats| -> Result<(), pipeline::PipelineError> {
        let Some(path) = &a.report else { return Ok(()) };
        let run = report::RunReport {
            input: a.input.display().to_string(),
            output: sink_name.clone(),
            backend: stats.backend.clone(),
            kernel: plan.kernel.name.clone(),
            decomposition: plan.decomposition.to_string(),
            border: plan.border.name(),
            inflight: inflight as u64,
            notes: notes.clone(),
            startup: startup(stats),
            run: stats.report(),
        };
        let write_err = |e: String| io::IoError::Write {
            path: path.clone(),
            msg: e,
        };
        let text = serde_json::to_string_pretty(&run).map_err(|e| write_err(e.to_string()))? + "\n";
        let Some(mut f) = report_pending.take() else {
            return Ok(());
        };
        std::io::Write::write_all(&mut f, text.as_bytes()).map_err(|e| write_err(e.to_string()))?;
        report_file = Some(f);
        Ok(())
    };
    let mut opts = options(&a, (inflight, &stop), &mut check, &tick);
    opts.on_complete = Some(&mut prepare_report);
    let mut lanes: Vec<&mut dyn convflow::Backend> = Vec::new();
    for b in backends.iter_mut() {
        lanes.push(b.as_mut());
    }
    let stats = match begun {
        Begun::Fresh(sink) => pipeline::run_on(source.as_mut(), sink, &mut lanes, &plan, opts),
        Begun::Opened(opened) => {
            pipeline::run_after(*opened, source.as_mut(), &mut lanes, &plan, opts)
        }
    };
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let stats = stats.map_err(|e| in_run(e, source.as_ref()))?;
    if let Some(f) = report_file.take() {
        f.commit()
            .with_context(|| format!("writing report {}", path_of(&a.report)))?;
    }
    outputs.finish();
    if !a.quiet {
        let what = if a.passthrough {
            "passthrough (no filter)".to_string()
        } else {
            format!("{} | {}", plan.describe(), stats.backend)
        };
        let full = a.verbose || a.report.is_some() || stats.frames >= report::SHORT_RUN_FRAMES;
        let lanes = (&stats, &devices[..]);
        report::print(lanes, &startup(&stats), &a.input, &sink_name, &what, full);
    }
    if let Some(sig) = signals::received() {
        bail!(
            "interrupted by {}: stopped reading after {} frame(s); all of them were written to \
            {sink_name}",
            signals::name(sig),
            stats.frames
        );
    }
    Ok(())
}

/// The filter `a` asks for (`--passthrough` without a kernel: `box:1`, never run).
fn filter_of(a: &FilterArgs) -> Result<Filter> {
    let kernel = if a.passthrough && a.kernel.kernel.is_none() && a.kernel.kernel_file.is_none() {
        spec::parse_spec("box:1")?
    } else {
        a.kernel.load()?
    };
    Ok(Filter {
        kernel,
        border: a.border,
        mode: a.mode,
        abs: a.abs,
        planes: a.planes,
        alpha: a.alpha,
    })
}

/// How the run begins: with its output just created, or with an opening lane's frames in it.
enum Begun {
    Fresh(Box<dyn io::Sink>),
    Opened(Box<pipeline::Opened>),
}

/// The pipeline's options for `a`'s run, `inflight` deep, with `check` (`--check`).
fn options<'a>(
    a: &FilterArgs,
    (inflight, stop): (usize, &'a AtomicBool),
    check: &'a mut Option<Box<dyn convflow::Backend>>,
    tick: &'a dyn Fn(usize),
) -> pipeline::Options<'a> {
    let mut opts = pipeline::Options::new(inflight, stop);
    opts.check = check
        .as_mut()
        .map(|b| b.as_mut() as &mut dyn convflow::Backend);
    opts.skip_bad = a.skip_bad;
    opts.passthrough = a.passthrough;
    opts.progress = Some(tick);
    opts
}

/// A pipeline error as the user reads it: the source is named once (errors about the input
/// file name it already).
fn in_run(e: pipeline::PipelineError, source: &dyn Source) -> anyhow::Error {
    let what = source.describe();
    if format!("{e:#}").contains(&what) {
        anyhow::Error::new(e)
    } else {
        anyhow::Error::new(e).context(format!("filtering {what}"))
    }
}

/// `source` with its frames converted to `to` (swscale).
fn convert(source: Box<dyn Source>, to: convflow::frame::PixelFormat) -> Result<Box<dyn Source>> {
    #[cfg(feature = "video")]
    return Ok(Box::new(io::video::convert::ConvertSource::new(
        source, to,
    )?));
    #[cfg(not(feature = "video"))]
    {
        let _ = (source, to);
        Err(usage(
            "converting pixel formats needs the 'video' feature (FFmpeg's swscale)",
        ))
    }
}

/// The format image files hold for frames of `f`.
fn image_format(f: convflow::frame::PixelFormat) -> convflow::frame::PixelFormat {
    #[cfg(feature = "video")]
    return io::video::convert::image_format_for(f);
    #[cfg(not(feature = "video"))]
    f
}

/// What the output leaves out of the input, to say once: streams its container cannot hold,
/// or all of them when it holds video alone (y4m, images; nothing said of streams with
/// `--streams video-only`), and what of the picture's description it cannot hold (a display
/// matrix, an HDR colour description).
fn left_out(
    a: &FilterArgs,
    stream: Option<&io::StreamInfo>,
    output: &Output,
    sink: &dyn io::Sink,
) -> Vec<String> {
    #[cfg_attr(not(feature = "video"), allow(unused_mut))]
    let mut notes = sink.notes();
    #[cfg(feature = "video")]
    if a.video.streams == Streams::Copy && !matches!(output, Output::Video(_) | Output::Null) {
        let others = stream
            .and_then(|s| s.carry.as_ref())
            .map_or(Vec::new(), |c| c.describe_passengers());
        if !others.is_empty() {
            notes.push(format!(
                "{} of {} left out: the output holds the video alone (write a video file to \
                 keep them, or say --streams video-only)",
                others.join(", "),
                convflow::quote::path(&a.input)
            ));
        }
    }
    // What of the picture's description pixels alone cannot say (y4m, images).
    #[cfg(feature = "video")]
    if !matches!(output, Output::Video(_) | Output::Null) {
        let carry = stream.and_then(|s| s.carry.as_ref());
        let input = convflow::quote::path(&a.input);
        let what = match output {
            Output::Y4m(_) => "y4m",
            _ => "image files",
        };
        notes.extend(carry.and_then(|c| c.display_note(what)));
        if let Some(colour) = carry.and_then(|c| c.hdr_description()) {
            notes.push(format!(
                "the HDR or wide-gamut colour description of {input} ({colour}) is left out: \
                 {what} cannot hold it (write a video file to keep it)"
            ));
        }
    }
    #[cfg(not(feature = "video"))]
    let _ = (a, stream, output);
    notes
}

fn path_of(p: &Option<std::path::PathBuf>) -> String {
    p.as_ref()
        .map_or(String::new(), |p| convflow::quote::path(p))
}

/// Refuses, as a usage error, any output that is an input, writes over a file of an input
/// directory, or is another output (the report).
fn protect_inputs(a: &FilterArgs, source: &dyn Source, output: &Output) -> Result<()> {
    let files = source.files();
    let mut inputs = guard::Inputs::new();
    for f in &files {
        inputs.add(f);
    }
    if a.input.as_os_str() == "-" {
        inputs.add_stdin();
    }
    if let Some(k) = &a.kernel.kernel_file {
        inputs.add(k);
    }
    // Standard error appended to an input (`2>> in.y4m`): not even the refusal may go there.
    // SAFETY: the descriptor of convflow's own standard error stays open for the whole run.
    let own = unsafe { std::os::fd::BorrowedFd::borrow_raw(convflow::console::own_fd()) };
    if guard::stream_is_input(&inputs, own) {
        convflow::console::silence();
        return Err(usage("standard error is an input file"));
    }
    // The names a directory output receives: a directory input's file names, or generated
    // ones (a video or y4m input's own name is never written).
    let names: HashSet<&OsStr> = if a.input.is_dir() {
        files.iter().filter_map(|f| f.file_name()).collect()
    } else {
        HashSet::new()
    };
    let writes = |n: &OsStr| names.contains(n) || io::dir::is_frame_file_name(n);
    let mut outputs: Vec<guard::Output<'_>> = output.guarded(&writes).into_iter().collect();
    if let Some(r) = &a.report {
        outputs.push(guard::Output::File {
            what: "report",
            path: r,
        });
    }
    guard::check(&inputs, &outputs).map_err(usage)
}

/// A file output (report, CSV, JSON) must be writable where it is: its directory exists and it
/// is not a directory. Checked before any work, so a run never fails after its main output is
/// complete.
pub fn check_file_output(what: &str, path: &Path) -> Result<()> {
    match io::file_target(path) {
        Ok(()) => Ok(()),
        Err(io::IoError::Output { msg, .. }) => {
            bail!("{what} '{}': {msg}", convflow::quote::path(path))
        }
        Err(e) => Err(e.into()),
    }
}

/// `convflow concat`: the parts joined into `output`, which may be none of them (usage error);
/// the summary line unless `quiet`.
pub fn concat(parts: &[std::path::PathBuf], output: &Path, quiet: bool) -> Result<()> {
    let mut inputs = guard::Inputs::new();
    for p in parts {
        inputs.add(p);
        if p.is_dir() {
            for f in io::dir::list_frames(p).unwrap_or_default() {
                inputs.add(&f);
            }
        }
    }
    let writes = |_: &OsStr| true;
    let out = if parts.iter().all(|p| p.is_dir()) {
        guard::Output::Dir {
            what: "output",
            dir: output,
            writes: &writes,
        }
    } else {
        guard::Output::File {
            what: "output",
            path: output,
        }
    };
    guard::check(&inputs, &[out]).map_err(usage)?;
    let t = Instant::now();
    let joined = io::concat::concat(parts, output)?;
    if quiet {
        return Ok(());
    }
    convflow::say!(
        "convflow: joined {} {} ({} {} in all: {}) -> {} | {:.2} s",
        parts.len(),
        joined.kind,
        joined.per_part.iter().sum::<usize>(),
        joined.unit,
        joined
            .per_part
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(" + "),
        convflow::quote::path(output),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
