//! A sink of your own: instead of writing frames, measure them. Synthetic YUV frames go
//! through a Sobel filter (`--abs`) and the sink reports each frame's mean edge strength on the
//! luma plane, the kind of per-frame statistic a scene-cut or focus detector needs.
//!
//! ```text
//! cargo run --release --example custom_sink
//! ```

use std::sync::atomic::AtomicBool;

use convflow::filter::spec;
use convflow::frame::Frame;
use convflow::io::{self, FrameMeta, IoError, Sink};
use convflow::{backend, pipeline, BackendKind, Filter, Schedule};

/// Mean of the luma plane (plane 0) of every frame, kept in order.
#[derive(Default)]
struct MeanLuma {
    means: Vec<f64>,
}

impl Sink for MeanLuma {
    fn describe(&self) -> String {
        "mean luma".into()
    }

    fn write_frame(&mut self, frame: &Frame, _meta: &FrameMeta) -> Result<(), IoError> {
        let plane = frame.plane(0);
        let (mut sum, mut n) = (0u64, 0u64);
        for y in 0..frame.height() {
            let row = &plane.row(y)[..frame.width()];
            sum += row.iter().map(|&b| u64::from(b)).sum::<u64>();
            n += row.len() as u64;
        }
        self.means.push(sum as f64 / n.max(1) as f64);
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<(), IoError> {
        for (i, m) in self.means.iter().enumerate() {
            println!("frame {i:>3}: mean edge strength {m:6.2}");
        }
        Ok(())
    }

    fn abort(self: Box<Self>) {}
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut filter = Filter::new(spec::parse_spec("sobel-x")?);
    filter.abs = true;
    let plan = filter.plan()?;
    let mut backend = backend::create(BackendKind::CpuPar, &Schedule::default())?;
    let mut source = io::open_source("synthetic:640x360:yuv420p:8".as_ref(), None)?;
    let stop = AtomicBool::new(false);
    let stats = pipeline::run(
        source.as_mut(),
        Box::<MeanLuma>::default(),
        backend.as_mut(),
        &plan,
        pipeline::Options::new(2, &stop),
    )?;
    println!("{} frames through {}", stats.frames, plan.describe());
    Ok(())
}
