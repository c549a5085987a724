//! Video files through FFmpeg (feature `video`): file → file with lossless codecs compared plane
//! by plane with cpu-seq on the decoded input, timing kept, clear errors for files that are not
//! video, corrupt or truncated ones (and `--skip-bad`), and Ctrl-C finalizing a container.
//! Clips are made and probed with the `ffmpeg`/`ffprobe` CLIs; without them these tests skip,
//! unless CONVFLOW_REQUIRE_FFMPEG=1 (set by scripts/test.sh).
#![cfg(feature = "video")]

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use convflow::frame::PixelFormat;

use common::{bin, cpu_seq_frames, decode_raw, ffmpeg, have_ffmpeg, make_clip, run, s, Scratch};

fn probe(path: &Path, entries: &str) -> String {
    let out = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-count_frames",
            "-select_streams",
            "v:0",
            "-show_entries",
            entries,
            "-of",
            "csv=p=0",
            s(path),
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn lossless_video_to_video_matches_cpu_seq_plane_by_plane() {
    if !have_ffmpeg() {
        return;
    }
    let t = Scratch::new("video-lossless");
    let x264_lossless: &[&str] = &["--codec-opt", "qp=0", "--codec-opt", "preset=ultrafast"];
    let cases: [(&str, PixelFormat, &str, &str, &[&str]); 9] = [
        ("yuv420p", PixelFormat::Yuv420p, "out.mkv", "ffv1", &[]),
        (
            "yuv420p",
            PixelFormat::Yuv420p,
            "out.mp4",
            "libx264",
            x264_lossless,
        ),
        ("yuv444p", PixelFormat::Yuv444p, "out.nut", "ffv1", &[]),
        ("gray", PixelFormat::Gray8, "out.mkv", "ffv1", &[]),
        // Deeper samples keep their depth end to end, and never exceed the format's maximum.
        (
            "yuv420p10le",
            PixelFormat::Yuv420p10,
            "out.mkv",
            "ffv1",
            &[],
        ),
        (
            "yuv420p10le",
            PixelFormat::Yuv420p10,
            "out.mp4",
            "libx264",
            x264_lossless,
        ),
        (
            "yuv422p12le",
            PixelFormat::parse("yuv422p12").unwrap(),
            "out.mkv",
            "ffv1",
            &[],
        ),
        (
            "yuv444p16le",
            PixelFormat::parse("yuv444p16").unwrap(),
            "out.nut",
            "ffv1",
            &[],
        ),
        ("gray16le", PixelFormat::Gray16, "out.mkv", "ffv1", &[]),
    ];
    for (i, (pix, format, out_name, codec, extra)) in cases.into_iter().enumerate() {
        let (w, h, frames) = (96, 54, 9);
        let clip = t.path(&format!("in{i}.mkv"));
        make_clip(&clip, "96x54", "30000/1001", frames, pix);
        let out = t.path(out_name);
        let mut args = vec![
            "filter",
            s(&clip),
            "-o",
            s(&out),
            "--kernel",
            "gaussian:5",
            "--backend",
            "cpu-par",
            "--codec",
            codec,
        ];
        args.extend_from_slice(extra);
        let o = run(&args);
        assert!(o.status.success(), "{codec} {pix}: {}", text(&o));
        assert!(
            text(&o).contains(&format!("{frames} frames")),
            "{}",
            text(&o)
        );
        let input = decode_raw(&clip, pix);
        let got = decode_raw(&out, pix);
        let want = cpu_seq_frames(format, w, h, &input, "gaussian:5");
        assert_eq!(
            got.len(),
            want.len(),
            "{codec} {pix}: frames in == frames out"
        );
        assert!(
            got == want,
            "{codec} {pix}: output differs from cpu-seq on the decoded input"
        );
        assert_eq!(
            probe(&out, "stream=pix_fmt"),
            pix,
            "{codec}: pixel format kept"
        );
        if format.depth().bytes() == 2 {
            let max = format.depth().max();
            assert!(got
                .chunks_exact(2)
                .all(|w| u16::from_le_bytes([w[0], w[1]]) <= max));
        }
        assert_eq!(
            probe(&out, "stream=r_frame_rate"),
            "30000/1001",
            "{codec}: frame rate kept"
        );
        assert_eq!(probe(&out, "stream=nb_read_frames"), frames.to_string());
        let _ = std::fs::remove_file(&out);
    }
    // An mp4 from x264 keeps its last frame (packet durations are set).
    let clip = t.path("in.mkv");
    make_clip(&clip, "64x48", "25", 7, "yuv420p");
    let o = run(&[
        "filter",
        s(&clip),
        "-o",
        s(&t.path("d.mp4")),
        "--kernel",
        "box:3",
        "-q",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        probe(&t.path("d.mp4"), "stream=nb_read_frames,codec_name"),
        "h264,7"
    );
    assert_eq!(probe(&t.path("d.mp4"), "format=duration"), "0.280000");
    // Without --codec, a 10-bit input gets an encoder that keeps 10 bits, and the report says
    // which.
    let clip = t.path("in10.mkv");
    make_clip(&clip, "64x48", "25", 3, "yuv420p10le");
    for name in ["d10.mp4", "d10.mkv"] {
        let o = run(&["filter", s(&clip), "-o", s(&t.path(name)), "-k", "box:3"]);
        assert!(o.status.success(), "{}", text(&o));
        assert!(text(&o).contains("yuv420p10le)"), "{}", text(&o));
        assert_eq!(
            probe(&t.path(name), "stream=pix_fmt"),
            "yuv420p10le",
            "{name}"
        );
    }
}

#[test]
fn video_to_y4m_and_y4m_to_video() {
    if !have_ffmpeg() {
        return;
    }
    let t = Scratch::new("video-y4m");
    let clip = t.path("in.mkv");
    make_clip(&clip, "64x48", "24", 5, "yuv422p");
    let y = t.path("x.y4m");
    let o = run(&["filter", s(&clip), "-o", s(&y), "--kernel", "box:3", "-q"]);
    assert!(o.status.success(), "{}", text(&o));
    let head = std::fs::read(&y).unwrap();
    assert!(
        head.starts_with(b"YUV4MPEG2 W64 H48 F24:1"),
        "{}",
        String::from_utf8_lossy(&head[..40])
    );
    let back = t.path("back.mkv");
    let o = run(&[
        "filter",
        s(&y),
        "-o",
        s(&back),
        "--kernel",
        "box:1",
        "--codec",
        "ffv1",
        "-q",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        decode_raw(&back, "yuv422p"),
        cpu_seq_frames(
            PixelFormat::Yuv422p,
            64,
            48,
            &decode_raw(&clip, "yuv422p"),
            "box:3"
        )
    );
    assert_eq!(probe(&back, "stream=r_frame_rate"), "24/1");
}

#[test]
fn bad_videos_give_clear_errors_and_skip_bad_counts() {
    if !have_ffmpeg() {
        return;
    }
    let t = Scratch::new("video-bad");
    // Not a video at all.
    let fake = t.path("fake.mp4");
    std::fs::write(&fake, b"this is not a video").unwrap();
    let o = run(&[
        "filter",
        s(&fake),
        "-o",
        s(&t.path("o.mkv")),
        "--kernel",
        "box:3",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o).contains("fake.mp4: not a video file FFmpeg can read"),
        "{}",
        text(&o)
    );
    // Output container and encoder errors come before any work.
    let clip = t.path("c.mkv");
    let src = "testsrc2=size=160x120:rate=25";
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        src,
        "-frames:v",
        "20",
        "-pix_fmt",
        "yuv420p",
        "-c:v",
        "ffv1",
        "-slicecrc",
        "1",
        s(&clip),
    ]);
    let o = run(&[
        "filter",
        s(&clip),
        "-o",
        s(&t.path("o.mkv")),
        "--kernel",
        "box:3",
        "--codec",
        "nosuchcodec",
    ]);
    assert!(
        text(&o).contains("encoder 'nosuchcodec' is not in the linked FFmpeg"),
        "{}",
        text(&o)
    );
    let o = run(&[
        "filter",
        s(&clip),
        "-o",
        s(&t.path("o.mkv")),
        "--kernel",
        "box:3",
        "--codec",
        "libx264",
        "--codec-opt",
        "preset=nosuchpreset",
    ]);
    assert!(
        text(&o).contains("cannot open encoder libx264"),
        "{}",
        text(&o)
    );
    // Corrupt data in the middle: an error naming the frame, or skipped and counted.
    let mut data = std::fs::read(&clip).unwrap();
    let n = data.len();
    for b in &mut data[n / 2..n / 2 + 2000] {
        *b ^= 0x5a;
    }
    let bad = t.path("bad.mkv");
    std::fs::write(&bad, &data).unwrap();
    let out = t.path("o.mkv");
    let o = run(&[
        "filter",
        s(&bad),
        "-o",
        s(&out),
        "--kernel",
        "box:3",
        "--codec",
        "ffv1",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let msg = text(&o);
    assert!(
        msg.contains("bad.mkv: frame ") && msg.contains("corrupt data"),
        "{msg}"
    );
    assert!(!out.exists(), "no output left after a failed run");
    let report = t.path("r.json");
    let o = run(&[
        "filter",
        s(&bad),
        "-o",
        s(&out),
        "--kernel",
        "box:3",
        "--codec",
        "ffv1",
        "--skip-bad",
        "--report",
        s(&report),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let skipped = json["skipped"].as_u64().unwrap() as usize;
    let frames = json["frames"].as_u64().unwrap() as usize;
    assert!(
        skipped >= 1 && frames + skipped <= 20 && frames >= 10,
        "{json}"
    );
    assert!(
        text(&o).contains(&format!("skipped {skipped} bad frame(s)")),
        "{}",
        text(&o)
    );
    assert_eq!(
        probe(&out, "stream=nb_read_frames"),
        frames.to_string(),
        "frames in == frames out"
    );
    // Truncated: the container declares more frames than the file holds.
    let cut = t.path("cut.mkv");
    std::fs::write(&cut, &std::fs::read(&clip).unwrap()[..n * 6 / 10]).unwrap();
    let o = run(&[
        "filter",
        s(&cut),
        "-o",
        s(&t.path("cut-out.mkv")),
        "--kernel",
        "box:3",
        "--codec",
        "ffv1",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("truncated"), "{}", text(&o));
    assert!(!t.path("cut-out.mkv").exists());
    assert!(
        t.listing().iter().all(|n| !n.contains("convflow")),
        "no temporary files left: {:?}",
        t.listing()
    );
}

/// Ctrl-C while writing a video file: the container is finalized (it plays) and holds every
/// frame that was read; exit code 130.
#[test]
fn ctrl_c_finalizes_the_video_container() {
    if !have_ffmpeg() {
        return;
    }
    let t = Scratch::new("video-int");
    let out_path = t.path("out.mkv");
    let child = bin()
        .args([
            "filter",
            "synthetic:320x240:yuv420p:10000000",
            "-o",
            s(&out_path),
            "--kernel",
            "box:3",
            "--codec",
            "ffv1",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1200));
    // SAFETY: sends SIGINT to the child we spawned (still running: it has ten million frames).
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) },
        0
    );
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    let frames = probe(&out_path, "stream=nb_read_frames");
    assert!(frames.parse::<usize>().unwrap() > 0, "{frames}");
    assert!(
        err.contains(&format!("stopped reading after {frames} frame(s)")),
        "{err} vs {frames}"
    );
    assert_eq!(t.listing(), ["out.mkv"], "no temporary file left");
}

#[test]
fn webm_outputs_get_vp9_or_av1_when_ffmpeg_has_an_encoder() {
    if !have_ffmpeg() {
        return;
    }
    let t = Scratch::new("video");
    let clip = t.path("in.mkv");
    make_clip(&clip, "64x48", "25", 6, "yuv420p");
    let out = t.path("out.webm");
    let o = run(&["filter", s(&clip), "-o", s(&out), "--kernel", "box:3"]);
    let encoders = Command::new("ffmpeg")
        .args(["-hide_banner", "-encoders"])
        .output()
        .unwrap();
    let encoders = String::from_utf8_lossy(&encoders.stdout);
    if convflow::io::video::WEB_ENCODERS
        .iter()
        .any(|e| encoders.contains(&format!(" {e} ")))
    {
        assert!(o.status.success(), "{}", text(&o));
        let codec = probe(&out, "stream=codec_name");
        assert!(["vp9", "av1", "vp8"].contains(&codec.as_str()), "{codec}");
        assert_eq!(probe(&out, "stream=nb_read_frames"), "6");
        // libvpx gets constant quality, not FFmpeg's 256 kbit/s default.
        assert!(text(&o).contains("out.webm ("), "{}", text(&o));
    } else {
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(text(&o).contains("webm"), "{}", text(&o));
        assert!(!out.exists());
    }
}
