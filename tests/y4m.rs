//! y4m streams through the CLI: stdin → stdout round trips checked against cpu-seq on the same
//! planes, every supported colourspace, clear errors for bad streams, and a round trip through
//! the real `ffmpeg` on both sides.

mod common;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use convflow::backend::{Backend, CpuSeq};
use convflow::filter::{spec::parse_spec, Filter, PlaneSel};
use convflow::frame::{Frame, PixelFormat};

use common::{assert_fails, bin, ffmpeg, have_ffmpeg, run, s, Scratch, Succeed};

fn run_with_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = bin()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let data = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// A deterministic pseudo-random byte stream.
fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 24) as u8
        })
        .collect()
}

/// Builds a y4m stream (written here by hand, independently of the convflow reader).
fn y4m(w: usize, h: usize, cs: &str, frames: &[Vec<u8>]) -> Vec<u8> {
    let mut v = format!("YUV4MPEG2 W{w} H{h} F25:1 Ip A1:1 C{cs}\n").into_bytes();
    for f in frames {
        v.extend_from_slice(b"FRAME\n");
        v.extend_from_slice(f);
    }
    v
}

/// Splits a y4m stream into its header line and frame payloads (independent parser).
fn parse(stream: &[u8]) -> (String, Vec<Vec<u8>>) {
    let nl = stream.iter().position(|&b| b == b'\n').unwrap();
    let header = String::from_utf8(stream[..nl].to_vec()).unwrap();
    let tag = |t: char| {
        header
            .split(' ')
            .find(|w| w.starts_with(t))
            .map(|w| w[1..].to_string())
    };
    let (w, h): (usize, usize) = (
        tag('W').unwrap().parse().unwrap(),
        tag('H').unwrap().parse().unwrap(),
    );
    let cs = tag('C').unwrap_or_else(|| "420jpeg".into());
    // Deeper colourspaces (420p10, mono16, …) store each sample in two bytes.
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    let deep = cs.get(3..4) == Some("p") && cs.get(4..).is_some_and(digits)
        || cs.strip_prefix("mono").is_some_and(digits);
    let (cw, ch) = match cs.as_str() {
        c if c.starts_with("mono") => (0, 0),
        c if c.starts_with("444") => (w, h),
        c if c.starts_with("422") => (w.div_ceil(2), h),
        _ => (w.div_ceil(2), h.div_ceil(2)),
    };
    let size = (w * h + 2 * cw * ch) * if deep { 2 } else { 1 };
    let mut rest = &stream[nl + 1..];
    let mut frames = Vec::new();
    while !rest.is_empty() {
        assert!(rest.starts_with(b"FRAME"), "frame marker");
        let nl = rest.iter().position(|&b| b == b'\n').unwrap();
        frames.push(rest[nl + 1..nl + 1 + size].to_vec());
        rest = &rest[nl + 1 + size..];
    }
    (header, frames)
}

fn reference(
    format: PixelFormat,
    w: usize,
    h: usize,
    data: &[u8],
    spec: &str,
    planes: PlaneSel,
) -> Vec<u8> {
    let strides = Frame::packed_strides(format, w);
    let src = Frame::from_parts(format, w, h, &strides, data.to_vec()).unwrap();
    let mut f = Filter::new(parse_spec(spec).unwrap());
    f.planes = planes;
    let mut dst = Frame::like(&src);
    CpuSeq::new()
        .filter_frame(&f.plan().unwrap(), &src, &mut dst)
        .unwrap();
    dst.to_packed()
}

#[test]
fn stdin_to_stdout_matches_cpu_seq_for_every_colourspace() {
    let cases = [
        ("420jpeg", PixelFormat::Yuv420p, 33, 17),
        ("422", PixelFormat::Yuv422p, 20, 9),
        ("444", PixelFormat::Yuv444p, 15, 12),
        ("mono", PixelFormat::Gray8, 31, 7),
        ("420paldv", PixelFormat::Yuv420p, 8, 8),
    ];
    for (i, (cs, format, w, h)) in cases.into_iter().enumerate() {
        let size: usize = (0..format.plane_count())
            .map(|p| {
                let (pw, ph) = format.plane_size(p, w, h);
                pw * ph
            })
            .sum();
        let frames: Vec<Vec<u8>> = (0..3)
            .map(|k| bytes(size, (i * 10 + k + 1) as u64))
            .collect();
        for (planes, flag) in [(PlaneSel::All, "all"), (PlaneSel::Luma, "luma")] {
            for backend in ["cpu-seq", "cpu-par"] {
                let out = run_with_stdin(
                    &[
                        "filter",
                        "-",
                        "-o",
                        "-",
                        "--kernel",
                        "gaussian:5",
                        "--planes",
                        flag,
                        "--backend",
                        backend,
                        "-q",
                    ],
                    &y4m(w, h, cs, &frames),
                );
                assert!(
                    out.status.success(),
                    "{cs}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let (header, got) = parse(&out.stdout);
                assert!(
                    header.contains(&format!("W{w} H{h} F25:1")) && header.contains("Ip A1:1"),
                    "{header}"
                );
                assert_eq!(got.len(), frames.len(), "{cs}: frames in == frames out");
                for (g, f) in got.iter().zip(&frames) {
                    assert!(
                        *g == reference(format, w, h, f, "gaussian:5", planes),
                        "{cs} {flag} {backend}: pixels"
                    );
                }
            }
        }
    }
}

#[test]
fn bad_streams_are_clear_errors_and_leave_no_output() {
    let scratch = Scratch::new("y4m");
    let dir = scratch.0.clone();
    let out_path = dir.join("o.y4m");
    let o = out_path.to_str().unwrap();
    let args = ["filter", "-", "-o", o, "--kernel", "box:3"];
    let good = y4m(4, 4, "420jpeg", &[bytes(24, 1), bytes(24, 2), bytes(10, 3)]);
    assert_fails(
        &run_with_stdin(&args, &good),
        &["frame 2: truncated (10 of 24 bytes)"],
    );
    assert_fails(&run_with_stdin(&args, b"YUV4MPEG1 W4 H4\n"), &["bad magic"]);
    assert_fails(
        &run_with_stdin(&args, b"YUV4MPEG2 W4 H4 C420p11\nFRAME\n"),
        &["unsupported y4m colourspace C420p11"],
    );
    assert_fails(&run_with_stdin(&args, b""), &["no y4m header"]);
    let mut bad_marker = y4m(4, 4, "420jpeg", &[bytes(24, 1)]);
    bad_marker.extend_from_slice(b"FRAMX\n");
    assert_fails(
        &run_with_stdin(&args, &bad_marker),
        &["frame 1: expected FRAME"],
    );
    let leftovers: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(
        leftovers.is_empty(),
        "no output file may remain: {leftovers:?}"
    );
    // y4m cannot become a still.
    assert_fails(
        &run_with_stdin(&["filter", "-", "-o", "x.png", "--kernel", "box:3"], &good),
        &["x.png", "not to one image file"],
    );
}

#[test]
fn y4m_file_output_is_complete_on_success() {
    let scratch = Scratch::new("y4mf");
    let dir = scratch.0.clone();
    let input = dir.join("in.y4m");
    let frames: Vec<Vec<u8>> = (0..4).map(|k| bytes(16 * 8 * 3 / 2, k + 5)).collect();
    std::fs::write(&input, y4m(16, 8, "420jpeg", &frames)).unwrap();
    let output = dir.join("out.y4m");
    bin()
        .args([
            "filter",
            input.to_str().unwrap(),
            "-o",
            output.to_str().unwrap(),
            "--kernel",
            "sharpen",
            "-q",
        ])
        .succeed();
    let (_, got) = parse(&std::fs::read(&output).unwrap());
    assert_eq!(got.len(), 4);
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        2,
        "only in.y4m and out.y4m"
    );
}

/// `ffmpeg … -f yuv4mpegpipe - | convflow filter - -o - | ffmpeg -f yuv4mpegpipe -i - …`: frame
/// count and pixels checked against cpu-seq on the frames ffmpeg produced. Needs the ffmpeg CLI:
/// skipped without it unless CONVFLOW_REQUIRE_FFMPEG=1 (set by scripts/test.sh).
/// ffmpeg → convflow → ffmpeg through y4m pipes at every depth ffmpeg's y4m muxer writes: the
/// colourspace tag ffmpeg wrote comes back, ffmpeg reads convflow's stream, and the pixels are
/// cpu-seq's on the input, never above the format's maximum.
#[test]
fn round_trip_through_the_ffmpeg_cli() {
    if Command::new("ffmpeg").arg("-version").output().is_err() {
        let required = std::env::var("CONVFLOW_REQUIRE_FFMPEG").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "CONVFLOW_REQUIRE_FFMPEG=1 but the ffmpeg CLI is not installed"
        );
        eprintln!("skipped: no ffmpeg");
        return;
    }
    let cases = [
        ("yuv420p", PixelFormat::Yuv420p, "C420jpeg"),
        ("yuv420p10le", PixelFormat::Yuv420p10, "C420p10"),
        (
            "yuv422p12le",
            PixelFormat::parse("yuv422p12").unwrap(),
            "C422p12",
        ),
        (
            "yuv444p16le",
            PixelFormat::parse("yuv444p16").unwrap(),
            "C444p16",
        ),
        ("gray16le", PixelFormat::Gray16, "Cmono16"),
    ];
    for (pix, format, tag) in cases {
        let gen = Command::new("ffmpeg")
            .args(["-loglevel", "error", "-f", "lavfi"])
            .args(["-i", "testsrc2=size=176x144:rate=10", "-frames:v", "7"])
            .args(["-pix_fmt", pix, "-strict", "-1", "-f", "yuv4mpegpipe", "-"])
            .output()
            .unwrap();
        assert!(gen.status.success(), "{pix}");
        let header = String::from_utf8_lossy(&gen.stdout[..80]).to_string();
        assert!(header.contains(tag), "{pix}: ffmpeg wrote {header}");
        let (_, src_frames) = parse(&gen.stdout);
        assert_eq!(src_frames.len(), 7);
        let filtered = run_with_stdin(
            &["filter", "-", "-o", "-", "--kernel", "gaussian:7", "-q"],
            &gen.stdout,
        );
        assert!(
            filtered.status.success(),
            "{pix}: {}",
            String::from_utf8_lossy(&filtered.stderr)
        );
        let (out_header, _) = parse(&filtered.stdout);
        assert!(
            out_header.contains(tag),
            "{pix}: the tag comes back: {out_header}"
        );
        let mut back = Command::new("ffmpeg")
            .args(["-loglevel", "error", "-f", "yuv4mpegpipe", "-i", "-"])
            .args(["-f", "rawvideo", "-pix_fmt", pix, "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = back.stdin.take().unwrap();
        let data = filtered.stdout.clone();
        let t = std::thread::spawn(move || stdin.write_all(&data).unwrap());
        let raw = back.wait_with_output().unwrap();
        t.join().unwrap();
        assert!(raw.status.success(), "{pix}: ffmpeg read our y4m");
        let size = Frame::packed_len(format, 176, 144).unwrap();
        assert_eq!(
            raw.stdout.len(),
            7 * size,
            "{pix}: frames in == frames out through ffmpeg"
        );
        let max = format.depth().max();
        for (i, f) in src_frames.iter().enumerate() {
            let want = reference(format, 176, 144, f, "gaussian:7", PlaneSel::All);
            let got = &raw.stdout[i * size..(i + 1) * size];
            assert!(got == &want[..], "{pix}: frame {i}");
            if format.depth().bytes() == 2 {
                assert!(got
                    .chunks_exact(2)
                    .all(|w| u16::from_le_bytes([w[0], w[1]]) <= max));
            }
        }
    }
}

/// Ctrl-C mid-stream: reading stops, the frames in flight drain, the output is finalized under
/// its real name and holds every frame that was read (whole frames only); exit code 130.
#[test]
fn ctrl_c_drains_and_finalizes_the_output() {
    let scratch = Scratch::new("int");
    let dir = scratch.0.clone();
    let out_path = dir.join("out.y4m");
    let child = bin()
        .args([
            "filter",
            "synthetic:320x240:yuv420p:10000000",
            "-o",
            out_path.to_str().unwrap(),
            "--kernel",
            "box:3",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(800));
    // SAFETY: sends SIGINT to the child we spawned (still running: it has ten million frames).
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) },
        0
    );
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    let (header, frames) = parse(&std::fs::read(&out_path).unwrap());
    assert!(header.starts_with("YUV4MPEG2 W320 H240"));
    assert!(!frames.is_empty());
    assert!(
        err.contains(&format!("stopped reading after {} frame(s)", frames.len())),
        "{err}"
    );
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "no temporary file left: {names:?}");
}

/// Chroma-siting tags and X-parameters come out exactly as they went in (a header of
/// `C420mpeg2 XYSCSS=420MPEG2` must not become `C420jpeg`), through convflow alone and with the
/// ffmpeg CLI on both sides.
#[test]
fn colourspace_tags_and_x_parameters_round_trip() {
    let frame = bytes(8 * 8 + 2 * 4 * 4, 7);
    for cs in [
        "420mpeg2 XYSCSS=420MPEG2",
        "420paldv XYSCSS=420PALDV",
        "420jpeg XCOLORRANGE=FULL",
    ] {
        let input = y4m(8, 8, cs, &[frame.clone(), frame.clone()]);
        let out = run_with_stdin(
            &["filter", "-", "-o", "-", "--kernel", "box:3", "-q"],
            &input,
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (header, got) = parse(&out.stdout);
        assert_eq!(header, format!("YUV4MPEG2 W8 H8 F25:1 Ip A1:1 C{cs}"));
        assert_eq!(got.len(), 2);
    }
    if !have_ffmpeg() {
        return;
    }
    // ffmpeg writes 420mpeg2 for left-sited chroma and reads it back as left.
    let t = Scratch::new("y4m-siting");
    let src = t.path("src.y4m");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=64x48:rate=25",
        "-frames:v",
        "2",
        "-pix_fmt",
        "yuv420p",
        "-chroma_sample_location",
        "left",
        s(&src),
    ]);
    let head = |p: &std::path::Path| {
        let b = std::fs::read(p).unwrap();
        String::from_utf8_lossy(&b[..b.iter().position(|&c| c == b'\n').unwrap()]).into_owned()
    };
    assert!(head(&src).contains("C420mpeg2"), "{}", head(&src));
    let out = t.path("out.y4m");
    let ran = run(&["filter", s(&src), "-o", s(&out), "--kernel", "box:3", "-q"]);
    assert!(ran.status.success());
    assert_eq!(head(&src), head(&out));
    let mkv = t.path("out.mkv");
    ffmpeg(&["-i", s(&out), "-c:v", "ffv1", s(&mkv)]);
    let probe = std::process::Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-show_entries",
            "stream=chroma_location",
            "-of",
            "csv=p=0",
        ])
        .arg(&mkv)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&probe.stdout).trim(), "left");
}
