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
        assert!(String::from_utf8_lossy(&out.stderr).contains("3 frame(s)"));
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
    assert!(v["latency_us"]["p50"].as_u64().unwrap() >= 1);
    assert!(v["latency_us"]["max"].as_u64().unwrap() >= v["latency_us"]["p50"].as_u64().unwrap());
    // The startup split: backend creation within the time before the run, which is within
    // the time to the first frame written; the run's own first frame within its wall time.
    let secs = |x: &serde_json::Value| x.as_f64().unwrap();
    let st = &v["startup"];
    assert!(secs(&st["backend_s"]) >= 0.0);
    assert!(secs(&st["backend_s"]) <= secs(&st["before_run_s"]));
    assert!(secs(&st["before_run_s"]) <= secs(&st["first_frame_s"]));
    assert!(secs(&v["first_frame_s"]) <= secs(&v["wall_s"]));
    // The text report says it too.
    let out = run(&[
        "filter",
        "synthetic:64x48:gray:3",
        "-o",
        "null",
        "--kernel",
        "box:3",
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

/// `bench kernels --family` measures the named kernel family and writes it in the CSV's
/// `kernel` column; an unknown family is a usage error naming it.
#[test]
fn bench_kernels_family_is_in_the_csv_and_checked() {
    let t = Scratch::new("cli-family");
    let csv = t.path("k.csv");
    let bench = |family: &str| {
        run(&[
            "bench",
            "kernels",
            "--backend",
            "cpu-seq",
            "--sizes",
            "24x8",
            "--formats",
            "gray",
            "--ks",
            "3",
            "--modes",
            "full",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--family",
            family,
            "--csv",
            s(&csv),
        ])
    };
    let out = bench("box");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let header = text.lines().next().unwrap();
    assert!(header.ends_with(",kernel"), "{header}");
    assert!(text.lines().nth(1).unwrap().ends_with(",box:3"), "{text}");
    let out = bench("boxy");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("boxy"));
}
