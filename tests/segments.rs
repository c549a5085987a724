//! `--segment I/N` and `convflow concat`: for video files (several codecs and containers,
//! cuts inside GOPs, an audio stream), y4m files and frame directories, every N from 1 to 7,
//! the parts' outputs joined equal the whole run — frame count, timestamps and (lossless
//! outputs) every frame's bytes, the audio packets too; bad segments and parts are refused.

mod common;

use std::path::Path;
use std::process::Command;

use common::{assert_fails, ffprobe, have_ffmpeg, run, s, write_png, Scratch, Succeed};

/// Runs convflow; panics with its stderr unless it succeeds.
fn ok(args: &[&str]) {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every packet of `path` as ffmpeg's framemd5 lists it (stream, dts, pts, duration, size,
/// checksum): video decoded, other streams copied.
fn framemd5(path: &Path) -> (String, String) {
    let list = |args: &[&str]| {
        let out = Command::new("ffmpeg")
            .args(["-v", "error", "-i", s(path)])
            .args(args)
            .args(["-f", "framemd5", "-"])
            .succeed();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n")
    };
    (
        list(&["-map", "0:v"]),
        list(&["-map", "0:a?", "-c", "copy"]),
    )
}

/// Filters `input` whole and as n parts joined, for n = 1…7, and compares with `same`.
fn parts_join_to_the_whole(
    t: &Scratch,
    input: &Path,
    ext: &str,
    extra: &[&str],
    same: impl Fn(&Path, &Path),
) {
    let base = |out: &Path| -> Vec<String> {
        let mut v: Vec<String> = ["filter", s(input), "-o", s(out), "-k", "gaussian:3", "-q"]
            .iter()
            .map(|x| x.to_string())
            .collect();
        v.extend(extra.iter().map(|x| x.to_string()));
        v
    };
    let whole = t.path(&format!("whole.{ext}"));
    ok(&refs(&base(&whole)));
    for n in 1..=7 {
        let mut parts = Vec::new();
        for i in 0..n {
            let p = t.path(&format!("part{n}-{i}.{ext}"));
            let seg = format!("{i}/{n}");
            ok(&[&refs(&base(&p))[..], &["--segment", &seg]].concat());
            parts.push(p);
        }
        let joined = t.path(&format!("joined{n}.{ext}"));
        let args: Vec<&str> = ["concat"]
            .into_iter()
            .chain(parts.iter().map(|p| s(p)))
            .chain(["-o", s(&joined)])
            .collect();
        ok(&args);
        eprintln!("{} in {n} parts", input.display());
        same(&whole, &joined);
    }
}

#[test]
fn video_parts_join_into_the_whole_run() {
    if !have_ffmpeg() {
        return;
    }
    let t = Scratch::new("segments");
    let lavfi = [
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=160x90:rate=25",
        "-f",
        "lavfi",
        "-i",
    ];
    let audio = "sine=frequency=440:sample_rate=48000";
    // GOPs of 12 with B-frames (h264, mpeg2): most cut points fall inside a GOP.
    let clips = [
        (
            "h264.mp4",
            &[
                "-c:v", "libx264", "-g", "12", "-bf", "2", "-pix_fmt", "yuv420p", "-c:a", "aac",
            ][..],
        ),
        (
            "mpeg2.ts",
            &["-c:v", "mpeg2video", "-g", "12", "-bf", "2", "-c:a", "mp2"][..],
        ),
        // One GOP for the whole clip in MPEG-TS, which seeks by byte position: a part's seek
        // lands on pictures that need earlier ones, and no keyframe follows to decode from.
        (
            "one-gop.ts",
            &[
                "-c:v",
                "libx264",
                "-g",
                "250",
                "-sc_threshold",
                "0",
                "-bf",
                "2",
                "-pix_fmt",
                "yuv420p",
                "-c:a",
                "aac",
            ][..],
        ),
        (
            "vp9.mkv",
            &[
                "-c:v",
                "libvpx-vp9",
                "-g",
                "10",
                "-deadline",
                "realtime",
                "-c:a",
                "libopus",
            ][..],
        ),
    ];
    for (name, codec) in clips {
        let clip = t.path(name);
        let args: Vec<&str> = lavfi
            .iter()
            .copied()
            .chain([audio, "-t", "3"])
            .chain(codec.iter().copied())
            .chain(["-shortest", s(&clip)])
            .collect();
        ffmpeg(&args);
        // Lossless output: every frame's bytes, timestamps and the audio packets equal.
        parts_join_to_the_whole(&t, &clip, "mkv", &["--codec", "ffv1"], |whole, joined| {
            let (w, j) = (framemd5(whole), framemd5(joined));
            let why = |what: &str, a: &str, b: &str| {
                format!(
                    "{name}: {what}\n{}",
                    first_difference(a, b, &[&clip, joined])
                )
            };
            assert!(w.0 == j.0, "{}", why("video frames", &w.0, &j.0));
            assert!(w.1 == j.1, "{}", why("audio packets", &w.1, &j.1));
            assert!(w.0.lines().count() >= 70, "{name}: {}", w.0.lines().count());
        });
    }
    // A lossy output in the input's own container: the frames' count and timestamps.
    let clip = t.path("h264.mp4");
    parts_join_to_the_whole(&t, &clip, "mp4", &[], |whole, joined| {
        let times = |p: &Path| {
            // Packets in presentation order: the frames' timestamps.
            let mut pts: Vec<i64> = ffprobe(p, Some("v"), "packet=pts")
                .lines()
                .filter_map(|l| l.parse().ok())
                .collect();
            pts.sort_unstable();
            pts
        };
        let w = times(whole);
        assert_eq!(w, times(joined));
        assert!(w.len() >= 70, "{}", w.len());
    });
}

fn ffmpeg(args: &[&str]) {
    common::ffmpeg(args)
}

/// Where two listings (the whole run's and the joined parts') first differ, a few lines of each
/// around it, and the streams' start times of `files` (the input, the joined output): enough
/// to tell a shifted part from a packet lost or doubled at a cut.
fn first_difference(a: &str, b: &str, files: &[&Path]) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let at = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let around = |v: &[&str]| v[at.saturating_sub(2)..(at + 4).min(v.len())].join("\n");
    let mut out = format!(
        "{} against {} lines, first difference at line {}:\n-- whole:\n{}\n-- joined:\n{}",
        a.len(),
        b.len(),
        at + 1,
        around(&a),
        around(&b)
    );
    for f in files {
        let starts = ffprobe(f, None, "stream=index,codec_type,start_time,time_base");
        out += &format!("\n-- {} streams:\n{starts}", f.display());
    }
    out
}

#[test]
fn y4m_and_frame_directory_parts_join_into_the_whole_run() {
    let t = Scratch::new("segments");
    // y4m: 11 frames; the joined file is the whole run's, byte for byte.
    let y4m = t.path("in.y4m");
    ok(&[
        "filter",
        "synthetic:48x26:yuv420p:11",
        "-o",
        s(&y4m),
        "-k",
        "box:1",
        "-q",
    ]);
    parts_join_to_the_whole(&t, &y4m, "y4m", &[], |whole, joined| {
        assert_eq!(
            std::fs::read(whole).unwrap(),
            std::fs::read(joined).unwrap()
        );
    });
    // A frame directory of 9 images: the same files with the same bytes.
    let dir = t.path("frames");
    std::fs::create_dir(&dir).unwrap();
    for i in 0..9 {
        write_png(&dir.join(format!("f{i:02}.png")), 20 + i, 12, i % 2 == 0);
    }
    // (Sizes differ, so every frame is its own: the whole run fails on mixed sizes; use one.)
    for i in 0..9 {
        write_png(&dir.join(format!("f{i:02}.png")), 20, 12, true);
    }
    let t2 = Scratch::new("segments-dir");
    parts_join_to_the_whole(&t2, &dir, "d", &[], |whole, joined| {
        let list = |d: &Path| {
            let mut v: Vec<_> = std::fs::read_dir(d)
                .unwrap()
                .map(|e| {
                    let e = e.unwrap();
                    (e.file_name(), std::fs::read(e.path()).unwrap())
                })
                .collect();
            v.sort();
            v
        };
        let w = list(whole);
        assert_eq!(w.len(), 9);
        assert_eq!(w, list(joined));
    });
}

#[test]
fn bad_segments_and_parts_are_refused() {
    let t = Scratch::new("segments");
    let o = t.path("o.y4m");
    let y4m = t.path("in.y4m");
    ok(&[
        "filter",
        "synthetic:16x16:gray:3",
        "-o",
        s(&y4m),
        "-k",
        "box:1",
        "-q",
    ]);
    for bad in ["3/3", "x", "1/0", "-1/2", "1", "0/4/2"] {
        let seg = format!("--segment={bad}");
        let out = run(&["filter", s(&y4m), "-o", s(&o), "-k", "box:3", &seg]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert_fails(&out, &["I/N"]);
    }
    // More parts than frames: an empty part is a usage error, nothing is written.
    let out = run(&[
        "filter",
        s(&y4m),
        "-o",
        s(&o),
        "-k",
        "box:3",
        "--segment",
        "0/5",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_fails(&out, &["holds no frames"]);
    // One image, and y4m on standard input, cannot be split.
    write_png(&t.path("a.png"), 8, 8, false);
    let out = run(&[
        "filter",
        s(&t.path("a.png")),
        "-o",
        s(&t.path("b.png")),
        "-k",
        "box:3",
        "--segment",
        "0/2",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_fails(&out, &["--segment 0/2"]);
    let out = common::bin()
        .args([
            "filter",
            "-",
            "-o",
            s(&o),
            "-k",
            "box:3",
            "--segment",
            "0/2",
        ])
        .stdin(std::fs::File::open(&y4m).unwrap())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_fails(&out, &["read whole"]);
    assert!(!o.exists());
    // A video's parts go to video or y4m files, not frame files.
    if have_ffmpeg() {
        let clip = t.path("c.mkv");
        ffmpeg(&[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=64x36:rate=25",
            "-t",
            "1",
            "-c:v",
            "ffv1",
            s(&clip),
        ]);
        let out = run(&[
            "filter",
            s(&clip),
            "-o",
            s(&t.path("fr")),
            "-k",
            "box:3",
            "--segment",
            "0/2",
        ]);
        assert_eq!(out.status.code(), Some(2));
        assert_fails(&out, &["video file or y4m per part"]);
        assert!(!t.path("fr").exists());
        // Parts encoded with other settings are not joined.
        let (a, b) = (t.path("a.mkv"), t.path("b.mkv"));
        ok(&[
            "filter",
            s(&clip),
            "-o",
            s(&a),
            "-k",
            "box:3",
            "--codec",
            "ffv1",
            "--segment",
            "0/2",
            "-q",
        ]);
        ok(&[
            "filter",
            s(&clip),
            "-o",
            s(&b),
            "-k",
            "box:3",
            "--codec",
            "libx264",
            "--segment",
            "1/2",
            "-q",
        ]);
        let j = t.path("j.mkv");
        let out = run(&["concat", s(&a), s(&b), "-o", s(&j)]);
        assert_eq!(out.status.code(), Some(1));
        assert_fails(&out, &["cannot follow"]);
        assert!(!j.exists());
    }
    // concat: parts that differ, an output that is a part, mixed kinds.
    let other = t.path("other.y4m");
    ok(&[
        "filter",
        "synthetic:16x8:gray:3",
        "-o",
        s(&other),
        "-k",
        "box:1",
        "-q",
    ]);
    let joined = t.path("j.y4m");
    let out = run(&["concat", s(&y4m), s(&other), "-o", s(&joined)]);
    assert_eq!(out.status.code(), Some(1));
    assert_fails(&out, &["header differs"]);
    let out = run(&["concat", s(&y4m), s(&other), "-o", s(&y4m)]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&[
        "concat",
        s(&y4m),
        s(&t.path("nothing.y4m")),
        "-o",
        s(&joined),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!joined.exists());
    let before = std::fs::read(&y4m).unwrap();
    assert_eq!(before, std::fs::read(&y4m).unwrap());
    assert_eq!(
        t.listing()
            .iter()
            .filter(|n| n.contains("partial") || n.contains(".tmp"))
            .count(),
        0,
        "{:?}",
        t.listing()
    );
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}
