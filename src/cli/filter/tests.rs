//! Which lanes a run gets on a machine with a CUDA driver: the decisions of [`super::image_on_cpu`]
//! and [`super::opens_on_cpu`], from the arguments and the input alone.

use std::time::Duration;

use clap::Parser;

use super::super::args::{Cli, Command, FilterArgs};
use super::{filter_of, image_on_cpu, opens_on_cpu, still_samples};
use convflow::filter::Plan;

const IMAGE: &str = "samples/testsrc2.png";

fn parse(args: &str) -> (FilterArgs, Plan) {
    let line = format!("convflow filter {args}");
    let cli = Cli::try_parse_from(line.split_whitespace()).expect("arguments parse");
    let Command::Filter(a) = cli.command else {
        panic!("not a filter command")
    };
    let filter = filter_of(&a).unwrap();
    let plan = filter.plan().unwrap();
    (a, plan)
}

#[test]
fn one_small_image_under_auto_runs_on_the_cpu_without_a_context() {
    assert_eq!(still_samples(IMAGE.as_ref()), Some(640 * 360 * 3));
    let (a, plan) = parse(&format!("{IMAGE} -o /tmp/x.png -k gaussian:9 --threads 1"));
    let t = image_on_cpu(&a, &plan, true).expect("a 640x360 image is quick on the CPU");
    // 230 400 pixels × 3 samples × (3 ns + 18 taps × at most 0.6 ns) on one thread.
    assert!(t.as_secs_f64() <= 691_200.0 * 13.8e-9 + 1e-9, "{t:?}");
    let (more, _) = parse(&format!("{IMAGE} -o /tmp/x.png -k gaussian:9 --threads 4"));
    assert!(image_on_cpu(&more, &plan, true).unwrap() * 4 <= t + Duration::from_nanos(4));
    // No driver: auto is cpu-par anyway, with nothing to say.
    assert_eq!(image_on_cpu(&a, &plan, false), None);
}

#[test]
fn the_gpu_is_kept_when_asked_for_or_when_the_cpu_would_take_long() {
    for asked in [
        "--backend cuda",
        "--backend cpu-seq",
        "--variant fast",
        "--sync",
        "--gpu-only",
        "--devices 0",
    ] {
        let (a, plan) = parse(&format!("{IMAGE} -o /tmp/x.png -k gaussian:9 {asked}"));
        assert_eq!(image_on_cpu(&a, &plan, true), None, "{asked}");
    }
    // 3 969 taps a sample on one thread: at least 0.28 s, longer than a context costs.
    let (a, plan) = parse(&format!(
        "{IMAGE} -o /tmp/x.png -k box:63 --mode full --threads 1"
    ));
    assert_eq!(image_on_cpu(&a, &plan, true), None);
    assert!(!opens_on_cpu(
        &a,
        &plan,
        still_samples(IMAGE.as_ref()),
        true
    ));
    // More threads share it: 16 threads are expected within 0.11 s.
    let (a, plan) = parse(&format!(
        "{IMAGE} -o /tmp/x.png -k box:63 --mode full --threads 16"
    ));
    assert!(image_on_cpu(&a, &plan, true).is_some());
    // Not one image: a stream opens on the CPU instead, frame by frame.
    let (a, plan) = parse("synthetic:320x240:rgb:3 -o null -k gaussian:9");
    assert_eq!(image_on_cpu(&a, &plan, true), None);
    assert!(opens_on_cpu(&a, &plan, Some(230_400), true));
    assert!(!opens_on_cpu(&a, &plan, Some(230_400), false));
    // An 8K RGB frame with a full 25 × 25 kernel on two threads (~2.6 s expected) is left to
    // the GPU: it would wait for that frame before writing its own.
    let (a, plan) = parse("synthetic:7680x4320:rgb:3 -o null -k box:25 --mode full --threads 2");
    assert!(!opens_on_cpu(&a, &plan, Some(7680 * 4320 * 3), true));
    // Frames whose size is not known yet open on the CPU, as before.
    assert!(opens_on_cpu(&a, &plan, None, true));
}
