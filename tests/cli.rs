//! The command line as a user meets it: every bad input gives a one-line cause, a non-zero
//! exit and no output that looks complete; good inputs (large kernels, kernels larger than the
//! image, directories) work.

mod common;

use common::{assert_fails, run, s, write_png, Scratch};

#[test]
fn missing_input_file() {
    let t = Scratch::new("cli");
    let out = run(&[
        "filter",
        s(&t.path("nope.png")),
        "-o",
        s(&t.path("o.png")),
        "--kernel",
        "box:3",
    ]);
    assert_fails(&out, &["nope.png", "does not exist"]);
    assert!(t.listing().is_empty());
}

#[test]
fn directory_with_a_non_image_file_names_it_and_leaves_nothing() {
    let t = Scratch::new("cli");
    std::fs::create_dir(t.path("in")).unwrap();
    write_png(&t.path("in/a1.png"), 8, 6, true);
    write_png(&t.path("in/a3.png"), 8, 6, true);
    std::fs::write(t.path("in/a2.txt"), "not an image").unwrap();
    let out = run(&[
        "filter",
        s(&t.path("in")),
        "-o",
        s(&t.path("out")),
        "--kernel",
        "box:3",
    ]);
    assert_fails(&out, &["a2.txt", "not a readable image"]);
    assert_eq!(
        t.listing(),
        vec!["in", "in/a1.png", "in/a2.txt", "in/a3.png"]
    );
}

#[test]
fn directory_with_mixed_sizes_names_the_file() {
    let t = Scratch::new("cli");
    std::fs::create_dir(t.path("in")).unwrap();
    write_png(&t.path("in/f1.png"), 8, 6, true);
    write_png(&t.path("in/f2.png"), 8, 6, true);
    write_png(&t.path("in/f10.png"), 9, 6, true);
    let out = run(&[
        "filter",
        s(&t.path("in")),
        "-o",
        s(&t.path("out")),
        "--kernel",
        "box:3",
    ]);
    assert_fails(&out, &["f10.png", "9x6", "8x6"]);
    assert!(!t.path("out").exists());
    assert_eq!(
        t.listing().len(),
        4,
        "no staging directory left: {:?}",
        t.listing()
    );
}

#[test]
fn directory_round_trip_keeps_names_and_order() {
    let t = Scratch::new("cli");
    std::fs::create_dir(t.path("in")).unwrap();
    for name in ["f1.png", "f2.bmp", "f10.png", ".hidden"] {
        if name.starts_with('.') {
            std::fs::write(t.path(&format!("in/{name}")), "x").unwrap();
        } else {
            write_png(&t.path(&format!("in/{name}")), 12, 7, false);
        }
    }
    let out = run(&[
        "filter",
        s(&t.path("in")),
        "-o",
        s(&t.path("out")),
        "--kernel",
        "gaussian:5",
        "--check",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names: Vec<_> = std::fs::read_dir(t.path("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["f1.png", "f10.png", "f2.bmp"]);
    let img = image::open(t.path("out/f2.bmp")).unwrap();
    assert_eq!((img.width(), img.height()), (12, 7));
}

#[test]
fn malformed_kernel_specs() {
    let t = Scratch::new("cli");
    write_png(&t.path("a.png"), 8, 8, false);
    let cases = [
        ("blur:3", "unknown kernel"),
        ("gaussian", "missing kernel size"),
        ("gaussian:0", "at least 1"),
        ("box:x", "not a positive integer"),
        ("gaussian:5:-2", "sigma must be positive"),
        ("custom:2x2:1,2", "needs 4 values"),
        ("edge:3", "too many fields"),
        ("log:3x5", "must be square"),
    ];
    for (spec, want) in cases {
        let out = run(&[
            "filter",
            s(&t.path("a.png")),
            "-o",
            s(&t.path("o.png")),
            "--kernel",
            spec,
        ]);
        assert_fails(&out, &[spec, want]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "a bad spec is a usage error: {spec}"
        );
        assert!(!t.path("o.png").exists());
    }
}

#[test]
fn forcing_separable_on_a_rank2_kernel_is_an_error() {
    let t = Scratch::new("cli");
    write_png(&t.path("a.png"), 8, 8, false);
    let out = run(&[
        "filter",
        s(&t.path("a.png")),
        "-o",
        s(&t.path("o.png")),
        "--kernel",
        "laplacian",
        "--mode",
        "separable",
    ]);
    assert_fails(&out, &["not separable"]);
}

#[test]
fn kernel_file_errors_name_file_and_line() {
    let t = Scratch::new("cli");
    write_png(&t.path("a.png"), 8, 8, false);
    std::fs::write(t.path("k.txt"), "1 2 1\n2 4\n").unwrap();
    let out = run(&[
        "filter",
        s(&t.path("a.png")),
        "-o",
        s(&t.path("o.png")),
        "--kernel-file",
        s(&t.path("k.txt")),
    ]);
    assert_fails(&out, &["k.txt line 2", "row has 2 values"]);
    let out = run(&[
        "filter",
        s(&t.path("a.png")),
        "-o",
        s(&t.path("o.png")),
        "--kernel-file",
        s(&t.path("none.txt")),
    ]);
    assert_fails(&out, &["none.txt"]);
}

#[test]
fn kernel_size_64_and_beyond_works() {
    let t = Scratch::new("cli");
    write_png(&t.path("a.png"), 40, 30, true);
    for spec in ["box:64", "gaussian:151"] {
        let out = run(&[
            "filter",
            s(&t.path("a.png")),
            "-o",
            s(&t.path("o.png")),
            "--kernel",
            spec,
            "--check",
        ]);
        assert!(
            out.status.success(),
            "{spec}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let img = image::open(t.path("o.png")).unwrap();
        assert_eq!((img.width(), img.height()), (40, 30));
    }
}

#[test]
fn kernel_larger_than_image_uses_borders() {
    let t = Scratch::new("cli");
    write_png(&t.path("a.png"), 3, 2, false);
    for border in ["clamp", "zero", "reflect", "wrap"] {
        let out = run(&[
            "filter",
            s(&t.path("a.png")),
            "-o",
            s(&t.path("o.png")),
            "--kernel",
            "gaussian:9x7",
            "--border",
            border,
            "--backend",
            "cpu-par",
            "--check",
        ]);
        assert!(
            out.status.success(),
            "{border}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn unwritable_output_paths() {
    let t = Scratch::new("cli");
    write_png(&t.path("a.png"), 8, 8, false);
    std::fs::write(t.path("file"), "x").unwrap();
    let out = run(&[
        "filter",
        s(&t.path("a.png")),
        "-o",
        s(&t.path("file/o.png")),
        "--kernel",
        "box:3",
    ]);
    assert_fails(&out, &["does not exist"]);
    let out = run(&[
        "filter",
        s(&t.path("a.png")),
        "-o",
        s(&t.path("nodir/o.png")),
        "--kernel",
        "box:3",
    ]);
    assert_fails(&out, &["nodir", "does not exist"]);
    let out = run(&[
        "filter",
        s(&t.path("a.png")),
        "-o",
        s(&t.path("o.xyz")),
        "--kernel",
        "box:3",
    ]);
    assert_fails(&out, &["o.xyz", "extension"]);
    assert_eq!(t.listing(), vec!["a.png", "file"]);
}

#[test]
fn not_an_image_file() {
    let t = Scratch::new("cli");
    std::fs::write(t.path("a.png"), "this is text").unwrap();
    let out = run(&[
        "filter",
        s(&t.path("a.png")),
        "-o",
        s(&t.path("o.png")),
        "--kernel",
        "box:3",
    ]);
    assert_fails(&out, &["a.png", "not a readable image"]);
    assert!(!t.path("o.png").exists());
}

#[test]
fn bad_flag_values_are_usage_errors() {
    let out = run(&[
        "filter", "a.png", "-o", "o.png", "--kernel", "box:3", "--border", "mirror",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invalid value 'mirror'") && err.contains("clamp, zero, reflect, wrap"),
        "{err}"
    );
    // OpenCV's names are accepted as aliases.
    let t = Scratch::new("cli");
    write_png(&t.path("a.png"), 8, 8, false);
    let out = run(&[
        "filter",
        s(&t.path("a.png")),
        "-o",
        s(&t.path("o.png")),
        "--kernel",
        "box:3",
        "--border",
        "replicate",
        "-q",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(&["filter", "a.png", "-o", "o.png"]);
    assert_eq!(out.status.code(), Some(2), "a kernel is required");
}

#[test]
fn filters_rgba_keeping_alpha_and_jpeg_output() {
    let t = Scratch::new("cli");
    let data: Vec<u8> = (0..16 * 9 * 4).map(|i| (i * 13 % 256) as u8).collect();
    image::save_buffer(
        t.path("a.png"),
        &data,
        16,
        9,
        image::ExtendedColorType::Rgba8,
    )
    .unwrap();
    let out = run(&[
        "filter",
        s(&t.path("a.png")),
        "-o",
        s(&t.path("o.png")),
        "--kernel",
        "box:5",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let o = image::open(t.path("o.png")).unwrap().to_rgba8().into_raw();
    assert!(
        o.chunks(4).zip(data.chunks(4)).all(|(a, b)| a[3] == b[3]),
        "alpha passes through"
    );
    let out = run(&[
        "filter",
        s(&t.path("a.png")),
        "-o",
        s(&t.path("o.jpg")),
        "--kernel",
        "box:5",
        "-q",
    ]);
    assert!(out.status.success() && out.stderr.is_empty());
}

#[test]
fn kernels_and_info_commands() {
    let out = run(&["kernels"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("gaussian:N[:SIGMA]"));
    let out = run(&["kernels", "sobel-x"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("separable") && text.contains("-2.0"),
        "{text}"
    );
    assert_fails(&run(&["kernels", "nope"]), &["unknown kernel 'nope'"]);
    let out = run(&["info"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("cpu-par"));
}

#[test]
fn cuda_backend_is_a_clear_error_without_a_gpu_and_filters_with_one() {
    let t = Scratch::new("cli");
    write_png(&t.path("a.png"), 8, 8, false);
    let out = run(&[
        "filter",
        s(&t.path("a.png")),
        "-o",
        s(&t.path("o.png")),
        "--kernel",
        "box:3",
        "--backend",
        "cuda",
    ]);
    if out.status.success() {
        // A GPU here: the output exists and the report says the cuda backend made it.
        assert!(t.path("o.png").is_file());
        assert!(String::from_utf8_lossy(&out.stderr).contains("| cuda "));
    } else {
        // No driver, no device or no NVRTC: one line saying which, and no output file.
        assert_fails(&out, &["cuda"]);
        assert!(!t.path("o.png").exists());
    }
    // Unknown variants and oversized blocks are usage errors that list what is valid.
    let out = run(&[
        "filter",
        s(&t.path("a.png")),
        "-o",
        s(&t.path("o2.png")),
        "--kernel",
        "box:3",
        "--variant",
        "bogus",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invalid value 'bogus'") && err.contains("separable-shared"),
        "{err}"
    );
    let out = run(&[
        "filter",
        s(&t.path("a.png")),
        "-o",
        s(&t.path("o2.png")),
        "--kernel",
        "box:3",
        "--block",
        "64x64",
    ]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "block over 1024 threads is a usage error"
    );
    assert!(!t.path("o2.png").exists());
}

#[test]
fn a_variant_that_cannot_run_the_plan_is_refused_at_start_up() {
    // gaussian:5 is rank 1: --mode auto plans the separable path on every backend, which the
    // direct variants do not run. The plan never changes with the variant.
    let t = Scratch::new("cli");
    write_png(&t.path("a.png"), 8, 8, false);
    let (a, o) = (t.path("a.png"), t.path("o.png"));
    let base = ["filter", s(&a), "-o", s(&o), "--kernel", "gaussian:5"];
    let out = run(&[&base[..], &["--backend", "cuda", "--variant", "global"]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("unavailable")
        || err.contains("driver")
        || err.contains("NVRTC")
        || err.contains("device")
    {
        assert_eq!(out.status.code(), Some(1), "no GPU here: {err}");
    } else {
        assert_fails(&out, &["full kernels only", "--mode full"]);
        assert_eq!(out.status.code(), Some(2));
    }
    assert!(!t.path("o.png").exists());
}

#[test]
fn synthetic_source_into_null_y4m_and_directories() {
    for format in [
        "gray", "rgb", "rgba", "yuv420p", "yuv422p", "yuv444p", "nv12",
    ] {
        let spec = format!("synthetic:97x31:{format}:3");
        let out = run(&[
            "filter",
            &spec,
            "-o",
            "null",
            "--kernel",
            "gaussian:5",
            "--backend",
            "cpu-par",
            "--check",
        ]);
        assert!(
            out.status.success(),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains("3 frames"));
    }
    let out = run(&[
        "filter",
        "synthetic:16x8:yuv420p:4",
        "-o",
        "-",
        "--kernel",
        "box:3",
        "-q",
    ]);
    assert!(out.status.success());
    assert!(out.stdout.starts_with(b"YUV4MPEG2 W16 H8 F25:1"));
    assert_eq!(
        out.stdout.windows(6).filter(|w| w == b"FRAME\n").count(),
        4,
        "frames in == frames out"
    );
    let t = Scratch::new("cli");
    let out = run(&[
        "filter",
        "synthetic:16x8:rgb:3",
        "-o",
        s(&t.path("frames")),
        "--kernel",
        "box:3",
        "-q",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_dir(t.path("frames")).unwrap().count(), 3);
    // YUV frames become RGB images, said in a note; one image file cannot take a stream.
    let out = run(&[
        "filter",
        "synthetic:16x8:yuv420p:3",
        "-o",
        s(&t.path("x")),
        "--kernel",
        "box:3",
    ]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("converted from yuv420p to rgb"), "{err}");
    assert!(t.path("x/frame_000003.png").is_file());
    assert_fails(
        &run(&[
            "filter",
            "synthetic:16x8:yuv420p:3",
            "-o",
            s(&t.path("one.png")),
            "--kernel",
            "box:3",
        ]),
        &["one.png", "a stream of frames goes to"],
    );
    assert_fails(
        &run(&[
            "filter",
            "synthetic:16:rgb:3",
            "-o",
            "null",
            "--kernel",
            "box:3",
        ]),
        &["bad size", "synthetic:WIDTHxHEIGHT:FORMAT:FRAMES"],
    );
    assert_fails(
        &run(&[
            "filter",
            "synthetic:16x8:bgr:3",
            "-o",
            "null",
            "--kernel",
            "box:3",
        ]),
        &["unknown pixel format 'bgr'"],
    );
}

#[test]
fn json_report_has_stages_and_latency() {
    let t = Scratch::new("cli");
    let report = t.path("r.json");
    let out = run(&[
        "filter",
        "synthetic:64x48:rgb:9",
        "-o",
        "null",
        "--kernel",
        "box:3",
        "-q",
        "--report",
        s(&report),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(v["frames"], 9);
    assert_eq!(v["kernel"], "box:3");
    let stages = v["stages"].as_array().unwrap();
    assert_eq!(
        stages
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["read", "filter", "write"]
    );
    assert!(stages.iter().all(|s| s["frames"] == 9));
    // No --inflight: small frames get deeper pools (pipeline::auto_inflight).
    assert_eq!(v["inflight"], convflow::pipeline::AUTO_POOL_MOST);
    assert!(v["latency_us"]["p50"].as_u64().unwrap() >= 1);
    assert!(v["latency_us"]["max"].as_u64().unwrap() >= v["latency_us"]["p50"].as_u64().unwrap());
    // The startup split: backend creation within the time before the run, which is within
    // the time to the first frame written; the run's own first frame within its wall time.
    let secs = |x: &serde_json::Value| x.as_f64().unwrap();
    let st = &v["startup"];
    assert!(secs(&st["backend_s"]) >= 0.0);
    assert!(secs(&st["backend_s"]) <= secs(&st["ready_s"]));
    assert!(secs(&st["input_s"]) <= secs(&st["ready_s"]));
    assert!(secs(&st["ready_s"]) <= secs(&st["before_run_s"]));
    assert!(secs(&st["before_run_s"]) <= secs(&st["first_frame_s"]));
    assert!(secs(&v["first_frame_s"]) <= secs(&v["wall_s"]));
    // The text report says it too (the full report: -v).
    let out = run(&[
        "filter",
        "synthetic:64x48:gray:3",
        "-o",
        "null",
        "--kernel",
        "box:3",
        "-v",
    ]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("startup: first frame written") && text.contains("backend"),
        "{text}"
    );
    // An unwritable report path is refused before any output is produced.
    let out = run(&[
        "filter",
        "synthetic:8x8:rgb:2",
        "-o",
        s(&t.path("frames")),
        "--kernel",
        "box:3",
        "--report",
        s(&t.path("no/r.json")),
    ]);
    assert_fails(&out, &["report", "does not exist"]);
    assert!(!t.path("frames").exists());
}

#[test]
fn skip_bad_and_passthrough_on_a_frame_directory() {
    let t = Scratch::new("cli");
    let frames = t.path("in");
    std::fs::create_dir_all(&frames).unwrap();
    for i in 0..5 {
        write_png(&frames.join(format!("f{i}.png")), 12, 9, true);
    }
    std::fs::write(frames.join("f2.png"), b"\x89PNG\r\n\x1a\n broken").unwrap();
    let out = run(&[
        "filter",
        s(&frames),
        "-o",
        s(&t.path("out")),
        "--kernel",
        "box:3",
    ]);
    assert_fails(&out, &["frame 2", "f2.png"]);
    assert!(!t.path("out").exists(), "nothing left after a failed run");
    let report = t.path("r.json");
    let out = run(&[
        "filter",
        s(&frames),
        "-o",
        s(&t.path("out")),
        "--kernel",
        "box:3",
        "--skip-bad",
        "--report",
        s(&report),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("skipped 1 bad frame(s)") && err.contains("f2.png"),
        "{err}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(
        (v["frames"].as_u64(), v["skipped"].as_u64()),
        (Some(4), Some(1))
    );
    assert_eq!(std::fs::read_dir(t.path("out")).unwrap().count(), 4);
    // --passthrough needs no kernel and writes the input unchanged.
    std::fs::remove_file(frames.join("f2.png")).unwrap();
    let out = run(&[
        "filter",
        s(&frames),
        "-o",
        s(&t.path("same")),
        "--passthrough",
        "-q",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for i in [0, 1, 3, 4] {
        let name = format!("f{i}.png");
        let a = image::open(frames.join(&name)).unwrap();
        let b = image::open(t.path("same").join(&name)).unwrap();
        assert_eq!(a.as_bytes(), b.as_bytes(), "{name}");
    }
    // --passthrough filters nothing, so there is nothing to --check.
    let out = run(&[
        "filter",
        s(&frames),
        "-o",
        s(&t.path("y")),
        "--passthrough",
        "--check",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!t.path("y").exists());
    // Benchmarks refuse a CSV path whose directory is missing before measuring anything.
    for which in ["kernels", "pipeline"] {
        let out = run(&[
            "bench",
            which,
            "--backend",
            "cpu-par",
            "--csv",
            s(&t.path("no/x.csv")),
        ]);
        assert_fails(&out, &["csv", "does not exist"]);
    }
    // Without --passthrough a kernel is still required.
    let out = run(&["filter", s(&frames), "-o", s(&t.path("x"))]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--kernel"));
}

/// 16-bit PNG and TIFF stills (gray16, rgb48, rgba64) are filtered at 16 bits and written as
/// 16-bit files, pixel-exact against cpu-seq; 8-bit-only containers refuse them.
#[test]
fn sixteen_bit_stills_stay_sixteen_bit() {
    use convflow::backend::{Backend, CpuSeq};
    use convflow::filter::{spec::parse_spec, Filter};
    use convflow::frame::{Frame, PixelFormat};
    let t = Scratch::new("cli-16");
    let (w, h) = (23u32, 11u32);
    let sample = |i: u32| ((i * 7919 + 13) % 65536) as u16;
    let cases = [
        (PixelFormat::Gray16, image::ColorType::L16, "png"),
        (PixelFormat::Rgb16, image::ColorType::Rgb16, "png"),
        (PixelFormat::Rgba16, image::ColorType::Rgba16, "png"),
        (PixelFormat::Gray16, image::ColorType::L16, "tif"),
        (PixelFormat::Rgb16, image::ColorType::Rgb16, "tif"),
    ];
    for (format, color, ext) in cases {
        let n = (w * h) as usize * format.plane_channels(0);
        let samples: Vec<u16> = (0..n as u32).map(sample).collect();
        let input = t.path(&format!("in.{ext}"));
        let bytes: Vec<u8> = samples.iter().flat_map(|v| v.to_ne_bytes()).collect();
        image::save_buffer(&input, &bytes, w, h, color).unwrap();
        let output = t.path(&format!("out.{ext}"));
        let out = run(&[
            "filter",
            s(&input),
            "-o",
            s(&output),
            "--kernel",
            "gaussian:5",
            "-q",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = image::open(&output).unwrap();
        assert_eq!(
            got.color(),
            color,
            "{format} {ext}: depth and channels kept"
        );
        let got: Vec<u16> = match got {
            image::DynamicImage::ImageLuma16(b) => b.into_raw(),
            image::DynamicImage::ImageRgb16(b) => b.into_raw(),
            image::DynamicImage::ImageRgba16(b) => b.into_raw(),
            other => panic!("{format}: read back as {:?}", other.color()),
        };
        let le: Vec<u8> = samples.iter().flat_map(|v| v.to_le_bytes()).collect();
        let stride = w as usize * format.plane_channels(0) * 2;
        let src = Frame::from_parts(format, w as usize, h as usize, &[stride], le).unwrap();
        let mut want = Frame::like(&src);
        let plan = Filter::new(parse_spec("gaussian:5").unwrap())
            .plan()
            .unwrap();
        CpuSeq::new().filter_frame(&plan, &src, &mut want).unwrap();
        let want: Vec<u16> = want
            .data()
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect();
        assert!(got == want, "{format} {ext}: pixels differ from cpu-seq");
        let jpg = run(&[
            "filter",
            s(&input),
            "-o",
            s(&t.path("o.jpg")),
            "-k",
            "box:3",
        ]);
        assert_fails(&jpg, &["16-bit", ".png or .tif"]);
    }
}

/// An embedded ICC colour profile passes from PNG and JPEG inputs (one image or a directory)
/// to PNG, JPEG and TIFF outputs byte for byte; BMP, which cannot hold one, is still written.
#[test]
fn still_colour_profiles_pass_through() {
    use image::codecs::{jpeg::JpegEncoder, png::PngEncoder};
    use image::{ImageDecoder, ImageEncoder};
    let t = Scratch::new("cli-icc");
    // The profile is carried, not interpreted, but its header must say RGB (bytes 16–19).
    let with_space = |space: &[u8; 4]| {
        let mut p: Vec<u8> = (0..600u32).map(|i| (i * 31 % 251) as u8).collect();
        p[16..20].copy_from_slice(space);
        p
    };
    let profile = with_space(b"RGB ");
    let (w, h) = (12u32, 9u32);
    let pixels: Vec<u8> = (0..w * h * 3).map(|i| (i * 13 % 256) as u8).collect();
    let mut png = Vec::new();
    let mut e = PngEncoder::new(&mut png);
    e.set_icc_profile(profile.clone()).unwrap();
    e.write_image(&pixels, w, h, image::ExtendedColorType::Rgb8)
        .unwrap();
    let mut jpg = Vec::new();
    let mut e = JpegEncoder::new(&mut jpg);
    e.set_icc_profile(profile.clone()).unwrap();
    e.write_image(&pixels, w, h, image::ExtendedColorType::Rgb8)
        .unwrap();
    std::fs::write(t.path("in.png"), &png).unwrap();
    std::fs::write(t.path("in.jpg"), &jpg).unwrap();
    let read_profile = |p: &std::path::Path| {
        let reader = image::ImageReader::open(p)
            .unwrap()
            .with_guessed_format()
            .unwrap();
        reader.into_decoder().unwrap().icc_profile().unwrap()
    };
    for input in ["in.png", "in.jpg"] {
        let input_path = t.path(input);
        for out in ["o.png", "o.jpg", "o.tif"] {
            let output = t.path(&format!("{input}-{out}"));
            let args = [
                "filter",
                s(&input_path),
                "-o",
                s(&output),
                "-k",
                "box:3",
                "-q",
            ];
            let r = run(&args);
            assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
            // The image crate's TIFF decoder gives back no profile from its own encoder's
            // files (FFmpeg's TIFF decoder finds it): the bytes are looked for in the file.
            let got = if out.ends_with(".tif") {
                let bytes = std::fs::read(&output).unwrap();
                let found = bytes.windows(profile.len()).any(|w| w == &profile[..]);
                found.then(|| profile.clone())
            } else {
                read_profile(&output)
            };
            assert_eq!(got.as_ref(), Some(&profile), "{input} to {out}");
        }
    }
    let r = run(&[
        "filter",
        s(&t.path("in.png")),
        "-o",
        s(&t.path("o.bmp")),
        "-k",
        "box:3",
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    // A profile of another colour space than the output's is left out: an RGB profile on a
    // gray image (as an RGB photo converted to gray by an editor that kept it), and a gray
    // profile on a gray+alpha image, which loads as RGBA; a gray profile on gray is kept.
    let gray: Vec<u8> = (0..w * h).map(|i| (i * 3) as u8).collect();
    let gray_alpha: Vec<u8> = (0..w * h * 2).map(|i| (i * 3) as u8).collect();
    let gray_profile = with_space(b"GRAY");
    for (name, space, color, px, kept) in [
        (
            "g-rgb.png",
            &profile,
            image::ExtendedColorType::L8,
            &gray,
            false,
        ),
        (
            "g-gray.png",
            &gray_profile,
            image::ExtendedColorType::L8,
            &gray,
            true,
        ),
        (
            "ga-gray.png",
            &gray_profile,
            image::ExtendedColorType::La8,
            &gray_alpha,
            false,
        ),
    ] {
        let mut png = Vec::new();
        let mut e = PngEncoder::new(&mut png);
        e.set_icc_profile(space.clone()).unwrap();
        e.write_image(px, w, h, color).unwrap();
        let input = t.path(name);
        std::fs::write(&input, &png).unwrap();
        let output = t.path(&format!("out-{name}"));
        let args = ["filter", s(&input), "-o", s(&output), "-k", "box:3", "-q"];
        let r = run(&args);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        let want = kept.then(|| space.clone());
        assert_eq!(read_profile(&output), want, "{name}");
    }
    // A directory of frames keeps each frame's profile.
    std::fs::create_dir(t.path("dir")).unwrap();
    for name in ["a.png", "b.png"] {
        std::fs::write(t.path("dir").join(name), &png).unwrap();
    }
    let r = run(&[
        "filter",
        s(&t.path("dir")),
        "-o",
        s(&t.path("out")),
        "-k",
        "box:3",
        "-q",
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    for name in ["a.png", "b.png"] {
        assert_eq!(
            read_profile(&t.path("out").join(name)).as_ref(),
            Some(&profile)
        );
    }
}

/// A frame directory whose files change colour type (gray, then RGB) cannot become one y4m
/// stream as it is: an error naming the frame and `--pix-fmt`, no output; with `--pix-fmt` it
/// is one stream.
#[test]
fn a_directory_of_mixed_colour_types_to_y4m_is_refused_not_corrupted() {
    let t = Scratch::new("cli-mixed");
    let dir = t.path("frames");
    std::fs::create_dir(&dir).unwrap();
    let (w, h) = (8u32, 6u32);
    let gray: Vec<u8> = (0..w * h).map(|i| (i * 5) as u8).collect();
    let rgb: Vec<u8> = (0..w * h * 3).map(|i| (i * 7) as u8).collect();
    image::save_buffer(dir.join("1.png"), &gray, w, h, image::ColorType::L8).unwrap();
    image::save_buffer(dir.join("2.png"), &rgb, w, h, image::ColorType::Rgb8).unwrap();
    let y4m = t.path("out.y4m");
    let out = run(&["filter", s(&dir), "-o", s(&y4m), "-k", "box:3"]);
    assert_fails(&out, &["frame 1 is rgb 8x6", "gray 8x6", "--pix-fmt"]);
    assert!(!y4m.exists());
    let out = run(&[
        "filter",
        s(&dir),
        "-o",
        s(&y4m),
        "-k",
        "box:3",
        "--pix-fmt",
        "gray",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&y4m).unwrap();
    let header = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    assert_eq!(bytes.len(), header + 2 * (6 + (w * h) as usize));
}

/// `bench kernels` on cpu-seq, one quick run of 3×3 on 24×8 frames of `formats` in `modes`,
/// with `extra` arguments, its CSV written to `csv`.
fn bench_kernels_cpu_seq(
    csv: &std::path::Path,
    formats: &str,
    modes: &str,
    extra: &[&str],
) -> std::process::Output {
    let mut args = vec![
        "bench",
        "kernels",
        "--backend",
        "cpu-seq",
        "--sizes",
        "24x8",
        "--ks",
        "3",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--formats",
        formats,
        "--modes",
        modes,
        "--csv",
    ];
    args.push(s(csv));
    args.extend_from_slice(extra);
    run(&args)
}

/// `bench kernels --family` measures the named kernel family and writes it in the CSV's
/// `kernel` column; `log`, which is not separable, gets full rows only (separable ones alone
/// are a usage error); an unknown family is a usage error naming it.
#[test]
fn bench_kernels_family_is_in_the_csv_and_checked() {
    let t = Scratch::new("cli-family");
    let csv = t.path("k.csv");
    let bench = |family: &str, modes: &str| {
        bench_kernels_cpu_seq(&csv, "gray", modes, &["--family", family])
    };
    for (family, rows) in [("box", 2), ("log", 1)] {
        let out = bench(family, "full,separable");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(&csv).unwrap();
        let header = text.lines().next().unwrap();
        assert!(header.ends_with(",kernel"), "{header}");
        assert_eq!(text.lines().count(), 1 + rows, "{text}");
        assert!(text.lines().nth(1).unwrap().contains(",full,"), "{text}");
        for line in text.lines().skip(1) {
            assert!(line.ends_with(&format!(",{family}:3")), "{text}");
        }
    }
    let out = bench("log", "separable");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--family log"));
    let out = bench("boxy", "full");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("boxy"));
}

/// `bench kernels --alpha` sets the alpha rule of RGBA points, and the CSV's `alpha` column and
/// the table's format say which was measured (empty for formats without alpha).
#[test]
fn bench_kernels_alpha_is_in_the_csv_and_table() {
    let t = Scratch::new("cli-alpha");
    let csv = t.path("k.csv");
    for alpha in ["keep", "filter"] {
        let out = bench_kernels_cpu_seq(&csv, "gray,rgba,rgba64", "full", &["--alpha", alpha]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(&csv).unwrap();
        let mut lines = text.lines();
        assert!(lines.next().unwrap().ends_with(",alpha,kernel"), "{text}");
        let rows: Vec<_> = lines.collect();
        assert_eq!(rows.len(), 3, "{text}");
        assert!(rows[0].contains(",gray,"), "{text}");
        assert!(rows[0].ends_with(",,gaussian:3"), "{text}");
        for row in &rows[1..] {
            assert!(row.ends_with(&format!(",{alpha},gaussian:3")), "{text}");
        }
        let table = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            table.matches("(alpha filtered)").count(),
            if alpha == "filter" { 2 } else { 0 },
            "{table}"
        );
    }
    let (code, err) = code_and_err(&["bench", "kernels", "--alpha", "drop"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("drop"), "{err}");
}

/// Exit status and stderr of a run.
fn code_and_err(args: &[&str]) -> (Option<i32>, String) {
    let out = run(args);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn usage_mistakes_are_exit_2_with_the_fix_named() {
    let t = Scratch::new("cli");
    write_png(&t.path("a.png"), 8, 8, false);
    let a_path = t.path("a.png");
    let a = s(&a_path);
    let o = t.path("o.png");
    // A misspelt kernel name: the closest names are suggested.
    for (spec, want) in [
        ("gausian:5", "did you mean 'gaussian'"),
        ("Gauss:3", "did you mean 'gaussian'"),
        ("sobel", "did you mean 'sobel-x' or 'sobel-y'"),
        ("laplace", "did you mean 'laplacian'"),
    ] {
        let (code, err) = code_and_err(&["filter", a, "-o", s(&o), "--kernel", spec]);
        assert_eq!(code, Some(2), "{spec}: {err}");
        assert!(
            err.contains(want) && err.lines().count() == 1,
            "{spec}: {err}"
        );
        let (code, err) = code_and_err(&["kernels", spec]);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(want), "{err}");
    }
    let (code, err) = code_and_err(&["filter", a, "-o", s(&o), "--kernel", "blur:3"]);
    assert_eq!(code, Some(2));
    assert!(
        !err.contains("did you mean"),
        "nothing close to blur: {err}"
    );
    // The output given as a second positional argument: the tip names -o.
    let (code, err) = code_and_err(&["filter", a, s(&o), "--kernel", "box:3"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("-o {}", s(&o))), "{err}");
    // Typed values list the valid ones.
    for args in [
        &[
            "filter",
            a,
            "-o",
            s(&o),
            "-k",
            "box:3",
            "--variant",
            "fastest",
        ][..],
        &[
            "filter",
            a,
            "-o",
            s(&o),
            "-k",
            "box:3",
            "--planes",
            "chroma",
        ],
        &["bench", "kernels", "--backend", "gpu"],
        &["bench", "pipeline", "--schedules", "async"],
        &["completions", "tcsh"],
    ] {
        let (code, err) = code_and_err(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains("possible values"), "{args:?}: {err}");
    }
    // Many frames into a name that looks like one image: refused before anything is written.
    std::fs::create_dir(t.path("frames")).unwrap();
    for i in 1..=3 {
        write_png(&t.path(&format!("frames/f{i}.png")), 8, 8, false);
    }
    let one = t.path("one.png");
    let (code, err) = code_and_err(&["filter", s(&t.path("frames")), "-o", s(&one), "-k", "box:3"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("names an image file") && err.contains("directory"),
        "{err}"
    );
    let (code, err) = code_and_err(&[
        "filter",
        "synthetic:16x16:gray:3",
        "-o",
        s(&one),
        "-k",
        "box:3",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(!one.exists() && !o.exists());
    // An existing directory with such a name is a directory.
    std::fs::create_dir(t.path("out.png")).unwrap();
    let out = run(&[
        "filter",
        s(&t.path("frames")),
        "-o",
        s(&t.path("out.png")),
        "-k",
        "box:3",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(t.path("out.png/f3.png").is_file());
}

#[test]
fn without_a_gpu_the_error_suggests_the_cpu_backend() {
    let t = Scratch::new("cli");
    write_png(&t.path("a.png"), 8, 8, false);
    let o = t.path("o.png");
    for args in [
        &[
            "filter",
            s(&t.path("a.png")),
            "-o",
            s(&o),
            "-k",
            "box:3",
            "--backend",
            "cuda",
        ][..],
        &["bench", "pipeline", "--quick"],
    ] {
        let (code, err) = code_and_err(args);
        if code == Some(0) {
            continue; // a GPU here
        }
        assert_eq!(code, Some(1), "{err}");
        if err.contains("no NVIDIA driver") || err.contains("no usable CUDA device") {
            assert!(err.contains("--backend cpu-par"), "{err}");
        }
    }
}

#[test]
fn bench_quick_is_a_small_grid_on_every_bench_command() {
    let t = Scratch::new("cli");
    let csv = t.path("k.csv");
    let out = run(&["bench", "kernels", "--quick", "--csv", s(&csv)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = text.lines().skip(1).collect();
    // VGA × {gray, rgb} × k {3, 5} × {full, separable}, cpu-par.
    assert_eq!(rows.len(), 8, "{text}");
    assert!(
        rows.iter()
            .all(|r| r.contains("640") && r.contains("cpu-par")),
        "{text}"
    );
    // Options given explicitly win over --quick's.
    let out = run(&[
        "bench",
        "kernels",
        "--quick",
        "--ks",
        "7",
        "--formats",
        "gray",
        "--csv",
        s(&csv),
    ]);
    assert!(out.status.success());
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
    let out = run(&[
        "bench",
        "pipeline",
        "--quick",
        "--backend",
        "cpu-par",
        "--formats",
        "gray",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("1280x720") || table.contains("720p"),
        "{table}"
    );
}

#[test]
fn completions_for_every_shell_and_a_man_page_that_renders() {
    let t = Scratch::new("cli");
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = run(&["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(
            script.contains("filter") && script.contains("kernel") && script.contains("quick"),
            "{shell}: the script does not know the commands"
        );
        let path = t.path(&format!("convflow.{shell}"));
        std::fs::write(&path, &out.stdout).unwrap();
        // bash is always here; zsh and fish check their syntax where they are installed.
        let checker = match shell {
            "bash" => Some("bash"),
            "zsh" | "fish" => Some(shell),
            _ => None,
        };
        if let Some(c) = checker {
            match std::process::Command::new(c).arg("-n").arg(&path).output() {
                Ok(o) => assert!(
                    o.status.success(),
                    "{c} -n: {}",
                    String::from_utf8_lossy(&o.stderr)
                ),
                Err(_) if shell != "bash" => eprintln!("{c} not installed: syntax not checked"),
                Err(e) => panic!("bash: {e}"),
            }
        }
    }
    let out = run(&["man"]);
    assert!(out.status.success());
    let page = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        page.starts_with(".ie") || page.starts_with(".TH"),
        "{}",
        &page[..80]
    );
    for section in [
        ".SH COMMANDS",
        ".SH \"CONVFLOW FILTER\"",
        ".SH \"CONVFLOW BENCH KERNELS\"",
    ] {
        assert!(page.contains(section), "man page lacks {section}");
    }
    assert!(page.is_ascii(), "non-ASCII text must be roff escapes");
    std::fs::write(t.path("convflow.1"), &page).unwrap();
    // groff (groff-base, installed by install-deps) formats it without a warning.
    let o = std::process::Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .arg(t.path("convflow.1"))
        .output()
        .expect("groff is installed by scripts/install-deps.sh");
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "groff: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn short_runs_print_one_line_long_ones_the_stage_report() {
    let t = Scratch::new("cli");
    write_png(&t.path("a.png"), 16, 16, true);
    let a_path = t.path("a.png");
    let a = s(&a_path);
    let o = t.path("o.png");
    let (code, err) = code_and_err(&["filter", a, "-o", s(&o), "-k", "box:3"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(err.lines().count(), 1, "one summary line: {err}");
    assert!(err.contains("1 frame ") && err.contains(" ms"), "{err}");
    let (_, err) = code_and_err(&["filter", a, "-o", s(&o), "-k", "box:3", "-v"]);
    assert!(err.contains("stage") && err.contains("end to end"), "{err}");
    let (_, err) = code_and_err(&["filter", a, "-o", s(&o), "-k", "box:3", "-q"]);
    assert!(err.is_empty(), "{err}");
    let (_, err) = code_and_err(&[
        "filter",
        "synthetic:32x16:gray:12",
        "-o",
        "null",
        "-k",
        "box:3",
    ]);
    assert!(
        err.lines().count() == 1 && err.contains("12 frames") && err.contains(" fps"),
        "{err}"
    );
    // A long run gets the report; the null sink does no work, so it has no rate.
    let (_, err) = code_and_err(&[
        "filter",
        "synthetic:32x16:gray:150",
        "-o",
        "null",
        "-k",
        "box:3",
    ]);
    let write = err
        .lines()
        .find(|l| l.trim_start().starts_with("write"))
        .unwrap_or_else(|| panic!("no write stage: {err}"));
    let cols: Vec<&str> = write.split_whitespace().collect();
    assert_eq!((cols[3], cols[4]), ("-", "-"), "{write}");
    // Rates have one decimal everywhere.
    for l in err.lines().filter(|l| l.contains("fps")) {
        for num in l.split(|c: char| !(c.is_ascii_digit() || c == '.')) {
            if let Some((_, frac)) = num.split_once('.') {
                assert!(frac.len() <= 2, "{num} in {l}");
            }
        }
    }
}

#[test]
fn interlaced_input_is_said_once() {
    let t = Scratch::new("cli");
    let header = b"YUV4MPEG2 W8 H8 F25:1 It A1:1 C420jpeg\n";
    let mut y4m = header.to_vec();
    for i in 0..3u8 {
        y4m.extend_from_slice(b"FRAME\n");
        y4m.extend((0..96u32).map(|j| (j as u8).wrapping_mul(7).wrapping_add(i)));
    }
    std::fs::write(t.path("i.y4m"), &y4m).unwrap();
    let (code, err) = code_and_err(&[
        "filter",
        s(&t.path("i.y4m")),
        "-o",
        s(&t.path("o.y4m")),
        "-k",
        "box:3",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(err.matches("interlaced").count(), 1, "{err}");
    assert!(
        err.contains("top field first") && err.contains("fields"),
        "{err}"
    );
    // The header passes through unchanged.
    let out = std::fs::read(t.path("o.y4m")).unwrap();
    assert!(out.starts_with(header));
    let progressive = String::from_utf8_lossy(header).replace(" It ", " Ip ");
    let mut p = progressive.into_bytes();
    p.extend_from_slice(&y4m[header.len()..]);
    std::fs::write(t.path("p.y4m"), &p).unwrap();
    let (_, err) = code_and_err(&[
        "filter",
        s(&t.path("p.y4m")),
        "-o",
        s(&t.path("o.y4m")),
        "-k",
        "box:3",
    ]);
    assert!(!err.contains("interlaced"), "{err}");
}

#[test]
fn devices_lists_are_checked_and_cpu_backends_run_once() {
    let t = Scratch::new("cli");
    let o = t.path("o.y4m");
    let base = [
        "filter",
        "synthetic:64x36:yuv420p:30",
        "-o",
        s(&o),
        "-k",
        "box:3",
    ];
    for (bad, needle) in [
        ("0,0", "listed twice"),
        ("x", "bad device list"),
        ("1,", "bad device list"),
    ] {
        let (code, err) = code_and_err(&[&base[..], &["--devices", bad]].concat());
        assert_eq!(code, Some(2), "{bad}: {err}");
        assert!(err.contains(needle), "{bad}: {err}");
    }
    let (code, err) = code_and_err(&[&base[..], &["--devices", "0", "--device", "1"]].concat());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cannot be used with"), "{err}");
    assert!(!o.exists());
    // A CPU backend has no devices: it runs once, and says so.
    let out = run(&[
        &base[..],
        &["--backend", "cpu-par", "--devices", "all", "-v"],
    ]
    .concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("--devices is for CUDA"), "{err}");
    assert!(o.is_file());
}

/// `--devices all --check` through the CLI on every format: on a GPU machine every GPU takes
/// part (a per-GPU line each with several), the output equals cpu-seq's; without one it is the
/// clear no-GPU error.
#[test]
fn devices_all_with_check_on_every_format() {
    for format in [
        "gray",
        "rgb",
        "rgba",
        "yuv420p",
        "yuv422p",
        "yuv444p",
        "nv12",
        "gray16",
        "rgb48",
        "yuv420p10",
        "p010",
    ] {
        let spec = format!("synthetic:160x90:{format}:40");
        let args = [
            "filter",
            &spec,
            "-o",
            "null",
            "-k",
            "gaussian:9",
            "--backend",
            "cuda",
            "--devices",
            "all",
            "--check",
            "-v",
        ];
        let out = run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            assert_eq!(out.status.code(), Some(1), "{format}: {err}");
            assert!(
                std::env::var("CONVFLOW_REQUIRE_GPU").map_or(true, |v| v != "1"),
                "CONVFLOW_REQUIRE_GPU=1: {err}"
            );
            assert!(err.contains("cuda"), "{err}");
            return;
        }
        assert!(err.contains("identical to cpu-seq"), "{format}: {err}");
        let gpus = convflow::backend::device_count();
        if gpus > 1 {
            for g in 0..gpus {
                assert!(err.contains(&format!("GPU {g}: ")), "{format}: {err}");
            }
        }
    }
}
