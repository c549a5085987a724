//! Faithful video (issue 11): everything but the filtered pixels passes through. Real files
//! made by the ffmpeg CLI, checked with ffprobe and ffmpeg's md5 muxer: other streams copied
//! byte for byte, colour tags, HDR side data, metadata and chapters kept, variable frame rates
//! and start offsets kept, frame directories to video and back, conversions only when asked.
//! Skipped when ffmpeg is missing unless CONVFLOW_REQUIRE_FFMPEG=1.

mod common;

use std::path::Path;
use std::process::Command;

use convflow::frame::PixelFormat;

use common::{
    cpu_seq_frames, decode_raw, ffmpeg, ffprobe, have_ffmpeg, make_clip, run, s, Scratch, Succeed,
};

/// The md5 of stream `sel` of `path`, copied (not decoded) by ffmpeg.
fn copied_md5(path: &Path, sel: &str) -> String {
    let out = Command::new("ffmpeg")
        .args([
            "-v",
            "error",
            "-i",
            s(path),
            "-map",
            sel,
            "-c",
            "copy",
            "-f",
            "md5",
            "-",
        ])
        .succeed();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn ok(args: &[&str]) -> String {
    let out = run(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "convflow {args:?}: {err}");
    err
}

fn has_encoder(name: &str) -> bool {
    Command::new("ffmpeg")
        .args(["-hide_banner", "-encoders"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(name))
}

const SRT: &str =
    "1\n00:00:00,000 --> 00:00:00,800\nhello\n\n2\n00:00:01,000 --> 00:00:01,600\nworld\n";
const CHAPTERS: &str = ";FFMETADATA1\ntitle=My film\n\
    [CHAPTER]\nTIMEBASE=1/1000\nSTART=0\nEND=1000\ntitle=Opening\n\
    [CHAPTER]\nTIMEBASE=1/1000\nSTART=1000\nEND=2000\ntitle=End\n";

#[test]
fn audio_subtitles_tags_and_chapters_pass_through() {
    if !have_ffmpeg() {
        return;
    }
    let t = Scratch::new("streams");
    std::fs::write(t.path("subs.srt"), SRT).unwrap();
    std::fs::write(t.path("meta.txt"), CHAPTERS).unwrap();
    for (ext, sub_codec) in [("mp4", "mov_text"), ("mkv", "srt")] {
        let input = t.path(&format!("in.{ext}"));
        ffmpeg(&[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=160x120:rate=25",
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=440:sample_rate=48000",
            "-i",
            s(&t.path("subs.srt")),
            "-i",
            s(&t.path("meta.txt")),
            "-map",
            "0:v",
            "-map",
            "1:a",
            "-map",
            "2:s",
            "-map_metadata",
            "3",
            "-map_chapters",
            "3",
            "-t",
            "2",
            "-c:v",
            "libx264",
            "-pix_fmt",
            "yuv420p",
            "-colorspace",
            "bt709",
            "-color_primaries",
            "bt709",
            "-color_trc",
            "bt709",
            "-color_range",
            "tv",
            "-c:a",
            "aac",
            "-c:s",
            sub_codec,
            "-metadata:s:a:0",
            "language=fra",
            s(&input),
        ]);
        let output = t.path(&format!("out.{ext}"));
        let err = ok(&[
            "filter",
            s(&input),
            "-o",
            s(&output),
            "--kernel",
            "box:3",
            "-q",
        ]);
        assert!(err.is_empty(), "-q prints nothing: {err}");
        let streams = "stream=codec_type,codec_name:stream_tags=language";
        assert_eq!(
            ffprobe(&input, None, streams),
            ffprobe(&output, None, streams),
            "{ext}"
        );
        let colour = "stream=pix_fmt,color_range,color_space,color_primaries,color_transfer";
        let tags = ffprobe(&output, Some("v:0"), colour);
        assert_eq!(tags, "yuv420p,tv,bt709,bt709,bt709", "{ext}");
        assert_eq!(ffprobe(&input, Some("v:0"), colour), tags, "{ext}");
        for sel in ["0:a:0", "0:s:0"] {
            assert_eq!(
                copied_md5(&input, sel),
                copied_md5(&output, sel),
                "{ext} {sel}"
            );
        }
        assert_eq!(
            ffprobe(&output, None, "format_tags=title"),
            "My film",
            "{ext}"
        );
        let chapters = ffprobe(
            &output,
            None,
            "chapter=start_time,end_time:chapter_tags=title",
        );
        assert_eq!(
            chapters,
            ffprobe(
                &input,
                None,
                "chapter=start_time,end_time:chapter_tags=title"
            )
        );
        assert!(
            chapters.contains("Opening") && chapters.contains("End"),
            "{ext}: {chapters}"
        );
        assert_eq!(
            ffprobe(&input, Some("v:0"), "stream=nb_frames"),
            ffprobe(&output, Some("v:0"), "stream=nb_frames")
        );
        // --streams video-only: the video alone, tags still kept.
        let alone = t.path(&format!("alone.{ext}"));
        ok(&[
            "filter",
            s(&input),
            "-o",
            s(&alone),
            "--kernel",
            "box:3",
            "--streams",
            "video-only",
        ]);
        let kinds = ffprobe(&alone, None, "stream=codec_type");
        assert!(
            !kinds.contains("audio") && !kinds.contains("subtitle"),
            "{kinds}"
        );
        assert_eq!(ffprobe(&alone, Some("v:0"), colour), tags);
    }
    // A rotation (display matrix side data) stays.
    let rotated = t.path("rotated.mp4");
    ffmpeg(&[
        "-i",
        s(&t.path("in.mp4")),
        "-c",
        "copy",
        "-metadata:s:v:0",
        "rotate=90",
        s(&rotated),
    ]);
    let turned = t.path("turned.mp4");
    ok(&[
        "filter",
        s(&rotated),
        "-o",
        s(&turned),
        "--kernel",
        "box:3",
        "-q",
    ]);
    let side = ffprobe(&turned, Some("v:0"), "stream_side_data");
    assert!(
        side.contains("Display Matrix") && side.trim_end().ends_with(",90"),
        "{side}"
    );
    // A container that cannot hold a stream leaves it out, saying so once (not with -q).
    let out = t.path("from-mkv.mp4");
    let err = ok(&[
        "filter",
        s(&t.path("in.mkv")),
        "-o",
        s(&out),
        "--kernel",
        "box:3",
    ]);
    let notes: Vec<&str> = err.lines().filter(|l| l.contains("note:")).collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(notes[0].contains("subtitle stream 2 (subrip)") && notes[0].contains("mp4"));
    // (mp4 keeps the chapters as a chapter track of its own.)
    let kinds = ffprobe(&out, None, "stream=codec_type");
    assert!(
        kinds.starts_with("video\naudio") && !kinds.contains("subtitle"),
        "{kinds}"
    );
    assert_eq!(
        copied_md5(&t.path("in.mkv"), "0:a:0"),
        copied_md5(&out, "0:a:0")
    );
    // A muxer that says it holds a codec but refuses it when writing (Opus in .mov): left out
    // with a note, found before the run.
    if has_encoder("libopus") {
        let opus = t.path("opus.mkv");
        ffmpeg(&[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=64x48:rate=10",
            "-f",
            "lavfi",
            "-i",
            "sine=d=1",
            "-t",
            "1",
            "-c:v",
            "ffv1",
            "-c:a",
            "libopus",
            s(&opus),
        ]);
        let mov = t.path("opus.mov");
        let err = ok(&["filter", s(&opus), "-o", s(&mov), "--kernel", "box:3"]);
        assert!(err.contains("audio stream 1 (opus) is left out"), "{err}");
        assert_eq!(ffprobe(&mov, None, "stream=codec_type"), "video");
    }
    // An output that holds video alone (y4m) says what it leaves out.
    let err = ok(&[
        "filter",
        s(&t.path("in.mkv")),
        "-o",
        s(&t.path("v.y4m")),
        "--kernel",
        "box:3",
    ]);
    assert!(
        err.contains("audio stream 1 (aac)") && err.contains("left out"),
        "{err}"
    );
    let err = ok(&[
        "filter",
        s(&t.path("in.mkv")),
        "-o",
        s(&t.path("v2.y4m")),
        "--kernel",
        "box:3",
        "--streams",
        "video-only",
    ]);
    assert!(!err.contains("note:"), "{err}");
}

#[test]
fn ten_bit_hdr_keeps_depth_tags_side_data_and_exact_values() {
    if !have_ffmpeg() {
        return;
    }
    let t = Scratch::new("hdr");
    // Six 10-bit frames tagged BT.2020 / PQ / limited range, then the encoder's arguments.
    let hdr_clip = |encode: &[&str]| {
        let mut args = vec![
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=96x64:rate=25",
            "-frames:v",
            "6",
            "-pix_fmt",
            "yuv420p10le",
            "-color_primaries",
            "bt2020",
            "-color_trc",
            "smpte2084",
            "-colorspace",
            "bt2020nc",
            "-color_range",
            "tv",
        ];
        args.extend(encode);
        ffmpeg(&args);
    };
    // Lossless FFV1 with the HDR tags: the output keeps format and tags, and every sample is
    // cpu-seq's filtering of the decoded input, at most 1023.
    let input = t.path("in10.mkv");
    hdr_clip(&["-c:v", "ffv1", s(&input)]);
    let output = t.path("out10.mkv");
    ok(&[
        "filter",
        s(&input),
        "-o",
        s(&output),
        "--kernel",
        "gaussian:5",
        "--codec",
        "ffv1",
        "-q",
    ]);
    let colour = "stream=pix_fmt,color_range,color_space,color_primaries,color_transfer";
    assert_eq!(
        ffprobe(&output, Some("v:0"), colour),
        "yuv420p10le,tv,bt2020nc,smpte2084,bt2020"
    );
    let got = decode_raw(&output, "yuv420p10le");
    let want = cpu_seq_frames(
        PixelFormat::Yuv420p10,
        96,
        64,
        &decode_raw(&input, "yuv420p10le"),
        "gaussian:5",
    );
    assert!(got == want, "10-bit output differs from cpu-seq");
    assert!(got
        .chunks(2)
        .all(|w| u16::from_le_bytes([w[0], w[1]]) <= 1023));
    // HEVC Main 10 with mastering display and content light level (SEI on frames): the output
    // stream carries both as side data.
    if !has_encoder("libx265") {
        eprintln!("hdr: the ffmpeg CLI has no libx265; side-data part not run");
        return;
    }
    let hevc = t.path("hdr.mkv");
    hdr_clip(&[
        "-c:v",
        "libx265",
        "-x265-params",
        "log-level=error:hdr10=1:master-display=G(13250,34500)B(7500,3000)R(34000,16000)\
                  WP(15635,16450)L(10000000,1):max-cll=1000,400",
        s(&hevc),
    ]);
    let out = t.path("hdr-out.mkv");
    ok(&[
        "filter",
        s(&hevc),
        "-o",
        s(&out),
        "--kernel",
        "box:3",
        "--codec",
        "ffv1",
        "-q",
    ]);
    assert_eq!(
        ffprobe(&out, Some("v:0"), colour),
        "yuv420p10le,tv,bt2020nc,smpte2084,bt2020"
    );
    let side = ffprobe(&out, Some("v:0"), "stream_side_data");
    assert!(
        side.contains("Mastering display") && side.contains("1000/1"),
        "{side}"
    );
    assert!(
        side.contains("Content light level") && side.contains("400"),
        "{side}"
    );
    // The default encoder keeps 10 bits too.
    let dflt = t.path("default.mkv");
    let err = ok(&["filter", s(&input), "-o", s(&dflt), "--kernel", "box:3"]);
    assert!(
        err.contains("yuv420p10le"),
        "the report names the encoding: {err}"
    );
    assert_eq!(ffprobe(&dflt, Some("v:0"), "stream=pix_fmt"), "yuv420p10le");
}

#[test]
fn variable_frame_rates_and_start_offsets_keep_their_timestamps() {
    if !have_ffmpeg() {
        return;
    }
    let t = Scratch::new("vfr");
    let vfr = t.path("vfr.mkv");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=160x120:rate=25",
        "-t",
        "2",
        "-vf",
        "setpts='PTS+0.04*floor(N/10)/TB'",
        "-fps_mode",
        "vfr",
        "-c:v",
        "ffv1",
        s(&vfr),
    ]);
    let offset = t.path("offset.mkv");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=160x120:rate=25",
        "-t",
        "1",
        "-output_ts_offset",
        "3.5",
        "-c:v",
        "ffv1",
        s(&offset),
    ]);
    let pts = |p: &Path| {
        let mut v: Vec<String> = ffprobe(p, Some("v:0"), "frame=pts_time")
            .lines()
            .filter_map(|l| l.split(',').next().filter(|v| !v.is_empty()))
            .map(str::to_string)
            .collect();
        v.sort_by(|a, b| {
            a.parse::<f64>()
                .unwrap()
                .total_cmp(&b.parse::<f64>().unwrap())
        });
        v
    };
    for input in [&vfr, &offset] {
        for ext in ["mkv", "mp4"] {
            let out = t.path(&format!("out.{ext}"));
            ok(&["filter", s(input), "-o", s(&out), "--kernel", "box:3", "-q"]);
            let (a, b) = (pts(input), pts(&out));
            assert!(a.len() > 20 && a == b, "{}: {a:?} vs {b:?}", s(input));
        }
    }
}

#[test]
fn frame_directories_to_video_and_back() {
    if !have_ffmpeg() {
        return;
    }
    let t = Scratch::new("dirs");
    // 10-bit video to 16-bit PNG frames, named from 1.
    let clip = t.path("clip.mkv");
    make_clip(&clip, "64x48", "25", 5, "yuv444p10le");
    let frames = t.path("frames");
    let err = ok(&["filter", s(&clip), "-o", s(&frames), "--kernel", "box:1"]);
    assert!(err.contains("converted from yuv444p10 to rgb48"), "{err}");
    let mut names: Vec<String> = std::fs::read_dir(&frames)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names.first().map(String::as_str), Some("frame_000001.png"));
    assert_eq!(names.len(), 5);
    assert_eq!(
        ffprobe(&frames.join("frame_000001.png"), None, "stream=pix_fmt"),
        "rgb48be"
    );
    let tiffs = t.path("tiffs");
    ok(&[
        "filter",
        s(&clip),
        "-o",
        s(&tiffs),
        "--kernel",
        "box:1",
        "--tiff",
        "-q",
    ]);
    let tif = tiffs.join("frame_000005.tif");
    assert!(
        ffprobe(&tif, None, "stream=pix_fmt").starts_with("rgb48"),
        "16-bit TIFF"
    );
    // RGB frames to a lossless video at a given rate and back: the same pixels (planar GBR
    // video is repacked losslessly both ways).
    let rgb = t.path("rgb");
    std::fs::create_dir(&rgb).unwrap();
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=64x48:rate=25",
        "-frames:v",
        "4",
        "-pix_fmt",
        "rgb24",
        s(&rgb.join("img_%02d.png")),
    ]);
    let video = t.path("rgb.mkv");
    ok(&[
        "filter",
        s(&rgb),
        "-o",
        s(&video),
        "--kernel",
        "box:1",
        "--fps",
        "30000/1001",
        "-q",
    ]);
    assert_eq!(
        ffprobe(
            &video,
            Some("v:0"),
            "stream=codec_name,pix_fmt,r_frame_rate"
        ),
        "ffv1,bgr0,30000/1001"
    );
    let back = t.path("back");
    ok(&[
        "filter",
        s(&video),
        "-o",
        s(&back),
        "--kernel",
        "box:1",
        "-q",
    ]);
    for (i, name) in ["img_01.png", "img_02.png", "img_03.png", "img_04.png"]
        .iter()
        .enumerate()
    {
        let again = back.join(format!("frame_{:06}.png", i + 1));
        assert_eq!(
            decode_raw(&rgb.join(name), "rgb24"),
            decode_raw(&again, "rgb24"),
            "{name}"
        );
    }
    // mp4 takes RGB only from an encoder that codes it as such (libx265's GBR 4:4:4): either
    // the format is kept, or a clear error names the way out; --pix-fmt converts.
    let mp4 = t.path("rgb.mp4");
    let out = run(&["filter", s(&rgb), "-o", s(&mp4), "--kernel", "box:1"]);
    if out.status.success() {
        assert_eq!(ffprobe(&mp4, Some("v:0"), "stream=pix_fmt"), "gbrp");
        std::fs::remove_file(&mp4).unwrap();
    } else {
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("--pix-fmt"));
        assert!(!mp4.exists());
    }
    ok(&[
        "filter",
        s(&rgb),
        "-o",
        s(&mp4),
        "--kernel",
        "box:1",
        "--pix-fmt",
        "yuv420p",
        "-q",
    ]);
    assert_eq!(
        ffprobe(&mp4, Some("v:0"), "stream=codec_name,pix_fmt"),
        "h264,yuv420p"
    );
    // --fps only where the input has no timing of its own.
    let out = run(&[
        "filter",
        s(&clip),
        "-o",
        s(&t.path("x.mkv")),
        "--kernel",
        "box:1",
        "--fps",
        "30",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn pixel_formats_change_only_when_asked() {
    if !have_ffmpeg() {
        return;
    }
    let t = Scratch::new("pixfmt");
    let clip = t.path("clip.mkv");
    make_clip(&clip, "64x48", "25", 3, "yuv420p10le");
    let same = t.path("same.mkv");
    ok(&[
        "filter",
        s(&clip),
        "-o",
        s(&same),
        "--kernel",
        "box:3",
        "--codec",
        "ffv1",
        "-q",
    ]);
    assert_eq!(ffprobe(&same, Some("v:0"), "stream=pix_fmt"), "yuv420p10le");
    let eight = t.path("eight.mkv");
    ok(&[
        "filter",
        s(&clip),
        "-o",
        s(&eight),
        "--kernel",
        "box:3",
        "--codec",
        "ffv1",
        "--pix-fmt",
        "yuv420p",
        "-q",
    ]);
    assert_eq!(ffprobe(&eight, Some("v:0"), "stream=pix_fmt"), "yuv420p");
    let out = run(&[
        "filter",
        s(&clip),
        "-o",
        s(&t.path("x.mkv")),
        "--kernel",
        "box:3",
        "--pix-fmt",
        "bgr0",
    ]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown format is a usage error"
    );
    // An encoder option nobody takes is an error naming it.
    let out = run(&[
        "filter",
        s(&clip),
        "-o",
        s(&t.path("typo.mkv")),
        "--kernel",
        "box:3",
        "--codec",
        "libx264",
        "--codec-opt",
        "crff=18",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("crff"));
    assert!(!t.path("typo.mkv").exists());
}

/// Three 64x48 yuv420p frames of ffmpeg's testsrc2 as y4m under `header` (which must say that
/// size and format), written to `name` in `t`.
fn y4m_clip(t: &Scratch, name: &str, header: &str) -> std::path::PathBuf {
    let plain = t.path(&format!("{name}.plain"));
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=64x48:rate=25",
        "-frames:v",
        "3",
        "-pix_fmt",
        "yuv420p",
        "-f",
        "yuv4mpegpipe",
        s(&plain),
    ]);
    let bytes = std::fs::read(&plain).unwrap();
    let end = bytes.iter().position(|&b| b == b'\n').unwrap();
    let path = t.path(name);
    std::fs::write(&path, [header.as_bytes(), &bytes[end..]].concat()).unwrap();
    path
}

#[test]
fn y4m_and_video_tags_translate_both_ways() {
    if !have_ffmpeg() {
        return;
    }
    let t = Scratch::new("y4mtags");
    // Interlaced, 16:15 pixels, MPEG-2 (left) chroma siting.
    let header = "YUV4MPEG2 W64 H48 F25:1 It A16:15 C420mpeg2 XYSCSS=420MPEG2";
    let tagged = y4m_clip(&t, "tagged.y4m", header);
    let mkv = t.path("tagged.mkv");
    ok(&[
        "filter",
        s(&tagged),
        "-o",
        s(&mkv),
        "--kernel",
        "box:3",
        "--codec",
        "ffv1",
        "-q",
    ]);
    let tags = ffprobe(
        &mkv,
        Some("v:0"),
        "stream=sample_aspect_ratio,chroma_location,field_order",
    );
    assert_eq!(tags, "16:15,left,tt");
    let back = t.path("back.y4m");
    ok(&["filter", s(&mkv), "-o", s(&back), "--kernel", "box:1", "-q"]);
    let text = std::fs::read(&back).unwrap();
    let line = String::from_utf8_lossy(&text[..text.iter().position(|&b| b == b'\n').unwrap()]);
    assert_eq!(line, "YUV4MPEG2 W64 H48 F25:1 It A16:15 C420mpeg2");
}

#[test]
fn interlaced_input_stays_interlaced_in_ts_and_mp4() {
    if !have_ffmpeg() || !has_encoder("libx264") || !has_encoder("mpeg2video") {
        return;
    }
    let t = Scratch::new("fields");
    for (tag, top_first) in [("It", "1"), ("Ib", "0")] {
        let header = format!("YUV4MPEG2 W64 H48 F25:1 {tag} A1:1 C420mpeg2");
        let y4m = y4m_clip(&t, &format!("{tag}.y4m"), &header);
        // MPEG-TS and MP4 hold no field order of their own: the bitstream must say it.
        for (codec, ext) in [("libx264", "ts"), ("libx264", "mp4"), ("mpeg2video", "ts")] {
            let out = t.path(&format!("{tag}-{codec}.{ext}"));
            ok(&[
                "filter",
                s(&y4m),
                "-o",
                s(&out),
                "-k",
                "box:3",
                "--codec",
                codec,
                "-q",
            ]);
            let frames = ffprobe(&out, Some("v:0"), "frame=interlaced_frame,top_field_first");
            let want = vec![format!("1,{top_first}"); 3].join("\n");
            assert_eq!(frames, want, "{tag} through {codec} to .{ext}");
        }
    }
    // A progressive input stays progressive.
    let plain = y4m_clip(&t, "p.y4m", "YUV4MPEG2 W64 H48 F25:1 Ip A1:1 C420mpeg2");
    let out = t.path("p.ts");
    ok(&[
        "filter",
        s(&plain),
        "-o",
        s(&out),
        "-k",
        "box:3",
        "--codec",
        "libx264",
        "-q",
    ]);
    let frames = ffprobe(&out, Some("v:0"), "frame=interlaced_frame");
    assert_eq!(frames, ["0"; 3].join("\n"));
}

#[test]
fn mpeg2_video_encodes_inputs_of_any_time_base() {
    // MPEG-1/2 video codes only standard frame rates: a Matroska (1/1000) or MPEG-TS (1/90000)
    // input must still encode, one tick per frame, its timestamps kept.
    if !have_ffmpeg() || !has_encoder("mpeg2video") || !has_encoder("libx264") {
        return;
    }
    let t = Scratch::new("mpeg2");
    for (ext, rate, codec) in [("mkv", "25/1", "ffv1"), ("ts", "30000/1001", "libx264")] {
        let input = t.path(&format!("in.{ext}"));
        ffmpeg(&[
            "-f",
            "lavfi",
            "-i",
            &format!("testsrc2=size=64x48:rate={rate}"),
            "-frames:v",
            "5",
            "-c:v",
            codec,
            s(&input),
        ]);
        let out = t.path(&format!("out-{ext}.mkv"));
        ok(&[
            "filter",
            s(&input),
            "-o",
            s(&out),
            "-k",
            "box:3",
            "--codec",
            "mpeg2video",
            "-q",
        ]);
        // One tick per frame: a start off the frame grid moves by up to half a frame.
        let times = |p: &Path| -> Vec<f64> {
            let text = ffprobe(p, Some("v:0"), "frame=pts_time");
            text.lines().map(|l| l.parse().unwrap()).collect()
        };
        let (a, b) = (times(&input), times(&out));
        let (n, d): (f64, f64) = rate
            .split_once('/')
            .map(|(n, d)| (n.parse().unwrap(), d.parse().unwrap()))
            .unwrap();
        assert_eq!(a.len(), b.len(), ".{ext} input");
        for (x, y) in a.iter().zip(&b) {
            assert!(
                (x - y).abs() <= 0.5 * d / n + 1e-3,
                ".{ext} input: {a:?} became {b:?}"
            );
        }
        assert_eq!(
            ffprobe(&out, Some("v:0"), "stream=codec_name,r_frame_rate"),
            format!("mpeg2video,{rate}")
        );
    }
}

#[test]
fn what_an_output_cannot_hold_is_said() {
    // A display rotation kept where the container holds it and named where it does not; an
    // HDR colour description named when the output is y4m.
    if !have_ffmpeg() || !has_encoder("libx264") {
        return;
    }
    let t = Scratch::new("display");
    let plain = t.path("plain.mkv");
    make_clip(&plain, "160x120", "25", 3, "yuv420p");
    let coded = t.path("coded.mp4");
    ffmpeg(&["-i", s(&plain), "-c:v", "libx264", s(&coded)]);
    // FFmpeg 5 turns the tag into a display matrix when it copies (not when it encodes).
    let turned = t.path("turned.mp4");
    ffmpeg(&[
        "-i",
        s(&coded),
        "-c",
        "copy",
        "-metadata:s:v:0",
        "rotate=90",
        s(&turned),
    ]);
    let rotation = |p: &Path| ffprobe(p, Some("v:0"), "stream_side_data=rotation");
    // ffprobe's rotation is counterclockwise, the turn players apply clockwise. An FFmpeg
    // whose copy does not turn the tag into a display matrix leaves nothing to test here.
    let turn = match rotation(&turned).as_str() {
        "90" => Some("rotated 90° counterclockwise"),
        "-90" => Some("rotated 90° clockwise"),
        "" => None,
        other => panic!("rotation {other}"),
    };
    eprintln!("rotated input: {turn:?}");
    if let Some(turn) = turn {
        let mp4 = t.path("out.mp4");
        let err = ok(&["filter", s(&turned), "-o", s(&mp4), "-k", "box:3"]);
        assert!(!err.contains("display matrix"), "{err}");
        assert_eq!(rotation(&mp4), rotation(&turned));
        // The parts of a segmented run keep it, and so does their concatenation.
        let parts: Vec<_> = (0..2).map(|i| t.path(&format!("part{i}.mp4"))).collect();
        for (i, part) in parts.iter().enumerate() {
            let seg = format!("{i}/2");
            ok(&[
                "filter",
                s(&turned),
                "-o",
                s(part),
                "-k",
                "box:3",
                "--segment",
                &seg,
                "-q",
            ]);
        }
        let joined = t.path("joined.mp4");
        ok(&["concat", s(&parts[0]), s(&parts[1]), "-o", s(&joined), "-q"]);
        assert_eq!(rotation(&joined), rotation(&turned));
        for out in ["out.ts", "out.y4m", "frames"] {
            let err = ok(&["filter", s(&turned), "-o", s(&t.path(out)), "-k", "box:3"]);
            let said: Vec<&str> = err
                .lines()
                .filter(|l| l.contains("display matrix"))
                .collect();
            assert_eq!(said.len(), 1, "{out}: {err}");
            assert!(said[0].contains(&format!("({turn})")), "{out}: {err}");
        }
    }
    // A second video stream (another angle) is copied, and said to be unfiltered.
    let two = t.path("two.mkv");
    ffmpeg(&[
        "-i",
        s(&plain),
        "-i",
        s(&plain),
        "-map",
        "0",
        "-map",
        "1",
        "-c",
        "copy",
        s(&two),
    ]);
    let err = ok(&[
        "filter",
        s(&two),
        "-o",
        s(&t.path("two-out.mkv")),
        "-k",
        "box:3",
    ]);
    assert!(
        err.contains("video stream 1 (ffv1) is copied unfiltered"),
        "{err}"
    );
    assert_eq!(
        ffprobe(&t.path("two-out.mkv"), None, "stream=codec_type"),
        "video\nvideo"
    );
    let hdr = t.path("hdr.mkv");
    ffmpeg(&[
        "-i",
        s(&plain),
        "-c:v",
        "ffv1",
        "-color_primaries",
        "bt2020",
        "-color_trc",
        "smpte2084",
        "-colorspace",
        "bt2020nc",
        s(&hdr),
    ]);
    let err = ok(&[
        "filter",
        s(&hdr),
        "-o",
        s(&t.path("hdr.y4m")),
        "-k",
        "box:3",
    ]);
    assert!(
        err.contains("HDR or wide-gamut colour description") && err.contains("smpte2084 transfer"),
        "{err}"
    );
    let err = ok(&[
        "filter",
        s(&hdr),
        "-o",
        s(&t.path("hdr-out.mkv")),
        "-k",
        "box:3",
    ]);
    assert!(!err.contains("colour description"), "{err}");
    // A MOV timecode track: the timecode stays as the video's tag (a new track in MP4/MOV).
    let tc = t.path("tc.mov");
    ffmpeg(&[
        "-i",
        s(&plain),
        "-c:v",
        "libx264",
        "-timecode",
        "01:02:03:04",
        s(&tc),
    ]);
    for out in ["tc-out.mp4", "tc-out.mkv"] {
        let out = t.path(out);
        let err = ok(&["filter", s(&tc), "-o", s(&out), "-k", "box:3"]);
        assert!(err.contains("a timecode track, is not copied"), "{err}");
        let tags = ffprobe(&out, Some("v:0"), "stream_tags");
        assert!(tags.to_lowercase().contains("01:02:03:04"), "{tags}");
    }
}

#[test]
fn full_range_survives_deep_formats_and_y4m() {
    // Full range is a yuvj format at 8 bits but only a tag at 10: both must reach y4m headers
    // (XCOLORRANGE), video tags and the YUV → RGB conversion for image files.
    if !have_ffmpeg() {
        return;
    }
    let t = Scratch::new("range");
    let (w, h) = (16usize, 8usize);
    // A flat 10-bit frame: Y = 600, neutral chroma.
    let mut raw = Vec::new();
    for (n, v) in [(w * h, 600u16), (w * h / 2, 512)] {
        raw.extend((0..n).flat_map(|_| v.to_le_bytes()));
    }
    std::fs::write(t.path("flat.yuv"), &raw).unwrap();
    // The frame as ffv1 tagged `range` (pc or tv).
    let tagged = |range: &str| {
        let mkv = t.path(&format!("{range}10.mkv"));
        let yuv = t.path("flat.yuv");
        ffmpeg(&[
            "-f",
            "rawvideo",
            "-pix_fmt",
            "yuv420p10le",
            "-s",
            "16x8",
            "-color_range",
            range,
            "-i",
            s(&yuv),
            "-c:v",
            "ffv1",
            "-color_range",
            range,
            s(&mkv),
        ]);
        mkv
    };
    let mkv = tagged("pc");
    assert_eq!(ffprobe(&mkv, Some("v:0"), "stream=color_range"), "pc");
    // To y4m: the header says full range; and back to video: the tag says it.
    let y4m = t.path("full10.y4m");
    ok(&["filter", s(&mkv), "-o", s(&y4m), "-k", "box:1", "-q"]);
    let text = std::fs::read(&y4m).unwrap();
    let line = String::from_utf8_lossy(&text[..text.iter().position(|&b| b == b'\n').unwrap()]);
    assert_eq!(line.matches("XCOLORRANGE").count(), 1, "{line}");
    assert!(line.ends_with("XCOLORRANGE=FULL"), "{line}");
    let back = t.path("back.mkv");
    ok(&[
        "filter",
        s(&y4m),
        "-o",
        s(&back),
        "-k",
        "box:1",
        "--codec",
        "ffv1",
        "-q",
    ]);
    assert_eq!(ffprobe(&back, Some("v:0"), "stream=color_range"), "pc");
    // To 16-bit PNG: Y = 600 of 1023 at full range is 600/1023 of white (38 436), where a
    // limited-range reading would give (600 − 64)/876 of it (40 099).
    let png = t.path("frame.png");
    ok(&[
        "filter",
        s(&mkv),
        "-o",
        s(&t.path("frames")),
        "-k",
        "box:1",
        "-q",
    ]);
    let first = std::fs::read_dir(t.path("frames"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    std::fs::copy(first.path(), &png).unwrap();
    let img = image::open(&png).unwrap().to_rgb16();
    let v = img.get_pixel(8, 4)[1] as i32;
    assert!((v - 38436).abs() < 300, "full-range Y 600 became {v}");
    // The same samples tagged limited range: the y4m header says so, and the PNG is read
    // that way.
    let tv = tagged("tv");
    let y4m = t.path("tv10.y4m");
    ok(&["filter", s(&tv), "-o", s(&y4m), "-k", "box:1", "-q"]);
    let text = std::fs::read(&y4m).unwrap();
    let line = String::from_utf8_lossy(&text[..text.iter().position(|&b| b == b'\n').unwrap()]);
    assert_eq!(line.matches("XCOLORRANGE").count(), 1, "{line}");
    assert!(line.ends_with("XCOLORRANGE=LIMITED"), "{line}");
    ok(&[
        "filter",
        s(&tv),
        "-o",
        s(&t.path("tv-frames")),
        "-k",
        "box:1",
        "-q",
    ]);
    let first = std::fs::read_dir(t.path("tv-frames"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let img = image::open(first.path()).unwrap().to_rgb16();
    let v = img.get_pixel(8, 4)[1] as i32;
    assert!((v - 40099).abs() < 300, "limited-range Y 600 became {v}");
}
