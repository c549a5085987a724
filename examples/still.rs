//! Filters one image file with a kernel spec, as `convflow filter IN -o OUT --kernel SPEC`
//! does, through the library: the source and sink from `convflow::io` (the output appears
//! under its name only when complete), the best backend this machine has.
//!
//! ```text
//! cargo run --release --example still -- samples/testsrc2.png /tmp/blurred.png gaussian:9
//! ```

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use convflow::filter::spec;
use convflow::io::{self, Output, OutputOptions};
use convflow::{backend, pipeline, BackendKind, Filter, Schedule};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1);
    let input = PathBuf::from(args.next().unwrap_or("samples/testsrc2.png".into()));
    let output = args
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("convflow-still.png"));
    let kernel = args
        .next()
        .map_or("gaussian:9".into(), |s| s.to_string_lossy().into_owned());

    let plan = Filter::new(spec::parse_spec(&kernel)?).plan()?;
    // `auto` is cuda where a GPU is usable, else cpu-par.
    let mut backend = backend::create(BackendKind::Auto, &Schedule::default())?;
    let mut source = io::open_source(&input, None)?;
    let out = Output::Still(output.clone());
    let sink = io::open_sink(
        &out,
        source.stream_info().as_ref(),
        &OutputOptions::default(),
    )?;
    let stop = AtomicBool::new(false);
    let opts = pipeline::Options::new(1, &stop);
    let stats = pipeline::run(source.as_mut(), sink, backend.as_mut(), &plan, opts)?;
    println!(
        "{} -> {} with {} on {} in {:.1} ms",
        input.display(),
        output.display(),
        plan.describe(),
        stats.backend,
        stats.wall.as_secs_f64() * 1e3
    );
    Ok(())
}
