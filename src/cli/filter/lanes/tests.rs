//! Which lanes a run gets on a machine with a CUDA driver: the decisions of
//! [`super::image_on_cpu`] and [`super::opens_on_cpu`], from the arguments and the input alone.

use clap::Parser;

use super::super::super::args::{Cli, Command, FilterArgs};
use super::super::filter_of;
use super::{image_on_cpu, opens_on_cpu, still_samples};
use convflow::backend::cpu::par::estimate;
use convflow::filter::Plan;

const IMAGE: &str = "samples/testsrc2.png";

fn parse(args: &str) -> (FilterArgs, Plan) {
    let line = format!("convflow filter {args}");
    let cli = Cli::try_parse_from(line.split_whitespace()).expect("arguments parse");
    let Command::Filter(a) = cli.command else {
        panic!("not a filter command")
    };
    let plan = filter_of(&a).unwrap().plan().unwrap();
    (a, plan)
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn the_estimate_grows_with_samples_and_taps_and_shrinks_with_threads_up_to_the_cpus() {
    let (_, small) = parse("x.png -o y.png -k gaussian:3");
    let (_, large) = parse("x.png -o y.png -k box:15 --mode full");
    let n = 1_000_000;
    assert!(estimate(&small, n, 1) < estimate(&large, n, 1));
    assert!(estimate(&small, n, 1) < estimate(&small, 2 * n, 1));
    // 3 ns a sample at least, 3.6 ns a tap at most (6 taps), one thread.
    let t = estimate(&small, n, 1).as_secs_f64();
    assert!((3e-3..=(3e-3 + 3.6e-3)).contains(&t), "{t}");
    let all = estimate(&large, n, 0);
    assert_eq!(estimate(&large, n, cpus()), all);
    assert_eq!(
        estimate(&large, n, cpus() + 100),
        all,
        "no faster than the CPUs"
    );
    if cpus() >= 2 {
        let (one, two) = (estimate(&large, n, 1), estimate(&large, n, 2));
        assert!(one.abs_diff(2 * two).as_nanos() <= 2, "{one:?} {two:?}");
    }
}

#[test]
fn one_small_image_under_auto_runs_on_the_cpu_without_a_context() {
    let still = still_samples(IMAGE.as_ref());
    assert_eq!(still, Some(640 * 360 * 3));
    let (a, plan) = parse(&format!("{IMAGE} -o /tmp/x.png -k gaussian:9 --threads 1"));
    let t = image_on_cpu(&a, &plan, still, true).expect("a 640x360 image is quick on the CPU");
    assert_eq!(t, estimate(&plan, 640 * 360 * 3, 1));
    // One thread, a full 15 × 15 kernel: 0.1 s even without SIMD.
    let (a, plan) = parse(&format!(
        "{IMAGE} -o /tmp/x.png -k box:15 --mode full --threads 1"
    ));
    assert!(image_on_cpu(&a, &plan, still, true).is_some());
    // No driver: auto is cpu-par anyway, with nothing to say.
    assert_eq!(image_on_cpu(&a, &plan, still, false), None);
    // Not an image (a stream, or a file that is not one): the decision is the opening lane's.
    assert_eq!(still_samples("samples/testsrc2.mp4".as_ref()), None);
    assert_eq!(still_samples("synthetic:320x240:rgb:1".as_ref()), None);
    assert_eq!(image_on_cpu(&a, &plan, None, true), None);
}

#[test]
fn the_gpu_is_kept_when_asked_for_or_when_the_cpu_would_take_long() {
    let still = still_samples(IMAGE.as_ref());
    for asked in [
        "--backend cuda",
        "--backend cpu-seq",
        "--variant fast",
        "--sync",
        "--gpu-only",
        "--devices 0",
        "--device 1",
        "--block 16x16",
        "--pageable",
        "--segment 0/1",
    ] {
        let (a, plan) = parse(&format!("{IMAGE} -o /tmp/x.png -k gaussian:9 {asked}"));
        assert_eq!(image_on_cpu(&a, &plan, still, true), None, "{asked}");
    }
    // 3 969 taps a sample on one thread: at least 0.28 s, more than a context costs; and more
    // than the opening lane may take for a frame.
    let (a, plan) = parse(&format!(
        "{IMAGE} -o /tmp/x.png -k box:63 --mode full --threads 1"
    ));
    assert_eq!(image_on_cpu(&a, &plan, still, true), None);
    assert!(!opens_on_cpu(&a, &plan, still, true));
    // A stream opens on the CPU, frame by frame, where a driver is.
    let (a, plan) = parse("synthetic:320x240:rgb:3 -o null -k gaussian:9");
    assert!(opens_on_cpu(&a, &plan, Some(230_400), true));
    assert!(!opens_on_cpu(&a, &plan, Some(230_400), false));
    // An 8K RGB frame with a full 25 × 25 kernel on one thread (over 6 s expected) is left to
    // the GPU: it would wait for that frame before writing its own.
    let (a, plan) = parse("synthetic:7680x4320:rgb:3 -o null -k box:25 --mode full --threads 1");
    assert!(!opens_on_cpu(&a, &plan, Some(7680 * 4320 * 3), true));
    // Frames whose size is not known before they are read (a frame directory) open on the CPU.
    assert!(opens_on_cpu(&a, &plan, None, true));
}
