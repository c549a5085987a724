//! A y4m filter for shell pipes: y4m frames on standard input, the filtered frames as y4m on
//! standard output (the header, its tags and the frame order kept), the kernel from the first
//! argument.
//!
//! ```text
//! ffmpeg -i clip.mp4 -f yuv4mpegpipe - \
//!   | cargo run --release --example y4m_stream -- sobel-x \
//!   | ffplay -
//! ```

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use convflow::filter::spec;
use convflow::io::{self, Output, OutputOptions};
use convflow::{backend, pipeline, BackendKind, Filter, Schedule};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let kernel = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "gaussian:5".into());
    let mut filter = Filter::new(spec::parse_spec(&kernel)?);
    // Edge kernels give signed sums: their magnitude is what shows.
    filter.abs = kernel.starts_with("sobel");
    let plan = filter.plan()?;
    let mut backend = backend::create(BackendKind::Auto, &Schedule::default())?;
    // The stop flag ends the stream cleanly (every frame read so far is written) when set, e.g.
    // from a signal handler.
    let stop = Arc::new(AtomicBool::new(false));
    let mut source = io::open_source(Path::new("-"), Some(stop.clone()))?;
    let stream = source.stream_info();
    let sink = io::open_sink(
        &Output::Y4m("-".into()),
        stream.as_ref(),
        &OutputOptions::default(),
    )?;
    let stats = pipeline::run(
        source.as_mut(),
        sink,
        backend.as_mut(),
        &plan,
        pipeline::Options::new(3, &stop),
    )?;
    // Standard output carries the frames: the summary goes to standard error.
    eprintln!(
        "{} frames, {}, {}",
        stats.frames,
        plan.describe(),
        stats.backend
    );
    Ok(())
}
