//! Seeded mutation fuzzing of every parser of untrusted input, in the normal test suite: y4m
//! streams, kernel specs, kernel files, `synthetic:` specs, still images and video files.
//!
//! Each parser gets at least 2 000 cases per run (video files 200: each is an FFmpeg open and
//! decode), mutated from valid seeds with a fixed seed so CI is deterministic;
//! `CONVFLOW_FUZZ_CASES=N` runs N per parser (video N/10) and `CONVFLOW_FUZZ_SEED=S` draws
//! other cases. A case passes when the parser does not panic and any error is one non-empty
//! line. A failing input is written to `target/fuzz-failures/` and named in the message; add
//! it to the parser's regression list below, where every input that ever failed stays.
//! The same entry points serve the `cargo fuzz` targets in `fuzz/`.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};

use convflow::fuzzing;

/// xorshift64*, deterministic for a given seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Values that break parsers: boundaries, separators, multi-byte UTF-8, huge numbers.
const INTERESTING: &[&[u8]] = &[
    b"0",
    b"-1",
    b"65536",
    b"4294967296",
    b"99999999999999999999",
    b"1e300",
    b"1e-300",
    b"nan",
    b"inf",
    b"\xc3\xa9",
    b"\xff",
    b"\x00",
    b"\n",
    b" ",
    b":",
    b"x",
    b",",
    b"/0",
    b"#",
];

/// One to four mutations of `seed` (or of a splice with `other`).
fn mutate(rng: &mut Rng, seed: &[u8], other: &[u8]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = v.len();
        let at = rng.below(len + 1);
        match rng.below(8) {
            0 if len > 0 => v[at.min(len - 1)] ^= 1 << rng.below(8),
            1 if len > 0 => v[at.min(len - 1)] = rng.next() as u8,
            2 => {
                let n = 1 + rng.below(8);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                v.splice(at..at, bytes);
            }
            3 if len > 0 => {
                let end = (at + 1 + rng.below(16)).min(len);
                v.drain(at.min(end)..end);
            }
            4 if len > 0 => {
                let start = rng.below(len);
                let end = (start + 1 + rng.below(32)).min(len);
                let chunk = v[start..end].to_vec();
                v.splice(at..at, chunk);
            }
            5 => {
                // Replace a run of digits (or insert) with an interesting value.
                let pick = INTERESTING[rng.below(INTERESTING.len())];
                let end = (at..len).find(|&i| !v[i].is_ascii_digit()).unwrap_or(len);
                v.splice(at..end.max(at), pick.iter().copied());
            }
            6 => v.truncate(at),
            _ if !other.is_empty() => {
                let from = rng.below(other.len());
                v.truncate(at);
                v.extend_from_slice(&other[from..]);
            }
            _ => v.push(b'0' + rng.below(10) as u8),
        }
    }
    v
}

fn cases(default: usize) -> usize {
    std::env::var("CONVFLOW_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn seed(salt: u64) -> u64 {
    let base = std::env::var("CONVFLOW_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5EED_C0DE);
    (base ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1
}

/// Checks one input: no panic, and an error is one non-empty line.
fn check_case(
    name: &str,
    input: &[u8],
    parse: &dyn Fn(&[u8]) -> Result<usize, String>,
) -> Result<(), String> {
    let outcome = catch_unwind(AssertUnwindSafe(|| parse(input)));
    let problem = match outcome {
        Err(_) => "panicked".to_string(),
        Ok(Ok(_)) => return Ok(()),
        Ok(Err(msg)) if msg.trim().is_empty() => "empty error message".into(),
        Ok(Err(msg)) if msg.contains('\n') || msg.contains('\r') => {
            format!("multi-line error: {msg:?}")
        }
        Ok(Err(_)) => return Ok(()),
    };
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-failures");
    let _ = std::fs::create_dir_all(&dir);
    let file = dir.join(format!("{name}-{:016x}.bin", fxhash(input)));
    let _ = std::fs::write(&file, input);
    Err(format!(
        "{name}: {problem} on {} bytes (saved to {}): {:?}",
        input.len(),
        file.display(),
        String::from_utf8_lossy(&input[..input.len().min(200)])
    ))
}

fn fxhash(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ x as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// Runs the regression inputs, then `n` mutations of the seeds.
fn fuzz(
    name: &str,
    salt: u64,
    n: usize,
    seeds: &[Vec<u8>],
    regressions: &[&[u8]],
    parse: &dyn Fn(&[u8]) -> Result<usize, String>,
) {
    let mut failures = Vec::new();
    for r in regressions {
        if let Err(e) = check_case(name, r, parse) {
            failures.push(e);
        }
    }
    for s in seeds {
        assert!(
            parse(s).is_ok(),
            "{name}: seed does not parse: {:?}",
            String::from_utf8_lossy(s)
        );
    }
    let mut rng = Rng(seed(salt));
    for _ in 0..n {
        let a = &seeds[rng.below(seeds.len())];
        let b = &seeds[rng.below(seeds.len())];
        let input = mutate(&mut rng, a, b);
        if let Err(e) = check_case(name, &input, parse) {
            failures.push(e);
            if failures.len() >= 5 {
                break;
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn y4m(header: &str, frames: usize, frame_bytes: usize) -> Vec<u8> {
    let mut v = format!("{header}\n").into_bytes();
    for i in 0..frames {
        v.extend_from_slice(b"FRAME\n");
        v.extend((0..frame_bytes).map(|k| (k * 7 + i * 31) as u8));
    }
    v
}

#[test]
fn y4m_parser_never_panics_and_errors_are_one_line() {
    let seeds = vec![
        y4m("YUV4MPEG2 W4 H4 F25:1 Ip A1:1 C420jpeg", 2, 24),
        y4m("YUV4MPEG2 W3 H2 F30000:1001 Cmono", 3, 6),
        y4m(
            "YUV4MPEG2 W5 H3 F25:1 It A10:11 C444 XYSCSS=444 XCOLORRANGE=FULL",
            1,
            45,
        ),
        y4m("YUV4MPEG2 W6 H2 C422 F50:1", 2, 24),
        y4m("YUV4MPEG2 W2 H2 F25:1 C420mpeg2 XYSCSS=420MPEG2", 1, 6),
        // Two-byte samples.
        y4m("YUV4MPEG2 W4 H2 F25:1 C420p10 XYSCSS=420P10", 2, 24),
        y4m("YUV4MPEG2 W3 H2 F25:1 Cmono16", 2, 12),
        y4m("YUV4MPEG2 W2 H2 F25:1 C444p12", 1, 24),
    ];
    let regressions: &[&[u8]] = &[
        b"YUV4MPEG2 W4 H4 F25:1 \xc3\xa9 C420jpeg\n", // panicked: char boundary in tag split
        b"YUV4MPEG2 W4 H4 F\xc3\xa9 C420jpeg\n",
        b"YUV4MPEG2 W65536 H65536 C444\nFRAME\n",
        b"YUV4MPEG2 W4 H4\nFRAME \xff\n\x00\x00",
        b"YUV4MPEG2",
        b"",
    ];
    fuzz(
        "y4m",
        1,
        cases(2000),
        &seeds,
        regressions,
        &fuzzing::y4m_stream,
    );
}

/// Errors of several parsers run on one input: the first, unless one of them is empty or
/// spans lines (then that one, for `check_case` to report).
fn all_of(results: Vec<Result<usize, String>>) -> Result<usize, String> {
    let errors: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    match errors
        .iter()
        .find(|e| e.trim().is_empty() || e.contains('\n') || e.contains('\r'))
    {
        Some(bad) => Err(bad.clone()),
        None => errors.into_iter().next().map_or(Ok(0), Err),
    }
}

/// `convflow concat case case -o out`: a failed join must leave no output.
fn joined_to_itself(case: &std::path::Path, out: &std::path::Path) -> Result<usize, String> {
    let joined = fuzzing::concat(&[case.to_path_buf(), case.to_path_buf()], out);
    if joined.is_err() {
        assert!(!out.exists(), "a failed join left its output");
    }
    let _ = std::fs::remove_file(out);
    joined
}

/// `--segment` on y4m files (the frame index read from FRAME lines, the seek) and `convflow
/// concat` of y4m parts, on mutated files: no panic, one-line errors, never an output left
/// when the join fails.
#[test]
fn y4m_segments_and_concat_never_panic_and_errors_are_one_line() {
    let t = common::Scratch::new("fuzz-y4m-parts");
    let seeds = vec![
        y4m("YUV4MPEG2 W4 H4 F25:1 C420jpeg", 5, 24),
        y4m("YUV4MPEG2 W3 H2 F25:1 Cmono", 7, 6),
        y4m("YUV4MPEG2 W4 H2 F25:1 C420p10", 3, 24),
    ];
    let (case, out) = (t.path("case.y4m"), t.path("out.y4m"));
    let parse = |bytes: &[u8]| -> Result<usize, String> {
        std::fs::write(&case, bytes).unwrap();
        let joined = joined_to_itself(&case, &out);
        all_of(vec![
            fuzzing::y4m_segment(&case, "0/2"),
            fuzzing::y4m_segment(&case, "2/3"),
            joined,
        ])
    };
    fuzz(
        "y4m-parts",
        9,
        cases(2000) / 4,
        &seeds,
        &[b"", b"YUV4MPEG2 W2 H2\n"],
        &parse,
    );
    assert!(
        t.listing()
            .iter()
            .all(|n| n.starts_with("case") || n.starts_with("good")),
        "{:?}",
        t.listing()
    );
}

#[test]
fn segment_values_never_panic_and_errors_are_one_line() {
    let seeds: Vec<Vec<u8>> = ["0/1", "3/4", "999999/1000000"]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
    let regressions: &[&[u8]] = &[b"18446744073709551615/1", b"0/18446744073709551616", b"/"];
    fuzz(
        "segment",
        10,
        cases(2000),
        &seeds,
        regressions,
        &fuzzing::segment_spec,
    );
}

#[test]
fn kernel_spec_parser_never_panics_nor_allocates_absurdly() {
    let seeds: Vec<Vec<u8>> = [
        "gaussian:5",
        "gaussian:7x3:1.5",
        "box:3",
        "box:5x1",
        "binomial:5x3",
        "log:9:1.4",
        "unsharp:5:1:0.5",
        "custom:3x3:1,2,1,2,4,2,1,2,1",
        "custom:2x1:1/2,1/2",
        "edge",
        "sobel-x",
        "laplacian",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    let long = format!("custom:3x3:{}", "1,".repeat(50_000));
    let regressions: &[&[u8]] = &[
        b"box:10000000000", // aborted: allocated before checking the size
        b"gaussian:10000000000",
        b"log:70000",
        b"unsharp:100000",
        b"log:20000",         // took 4.6 GB and 15 s before being refused
        b"log:4294967296",    // n^2 overflowed to 0
        b"gaussian:5:1e-300", // NaN weights, black output, exit 0
        b"log:5:1e-200",
        b"unsharp:5:1:1e300",
        b"custom:1x1:1e39",
        b"custom:4294967296x4294967296:1",
        long.as_bytes(),
    ];
    fuzz(
        "kernel-spec",
        2,
        cases(2000),
        &seeds,
        regressions,
        &fuzzing::kernel_spec,
    );
}

#[test]
fn kernel_file_parser_never_panics_and_errors_are_one_line() {
    let seeds: Vec<Vec<u8>> = [
        "# 3x3 Gaussian\ndivisor 16\n1 2 1\n2 4 2\n1 2 1\n",
        "offset 128\n-1 0 1\n-2 0 2\n-1 0 1\n",
        "1,2,3\n4,5,6\n",
        "0.25 0.5 0.25\n",
        "divisor 1/3\n1\n1\n1\n",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    let regressions: &[&[u8]] = &[
        b"1e30 1e30\n1e30 1e30\n",
        b"offset nan\n1\n",
        b"divisor 0\n1\n",
        b"\xff\xfe1 2\n",
        b"",
    ];
    fuzz(
        "kernel-file",
        3,
        cases(2000),
        &seeds,
        regressions,
        &fuzzing::kernel_file,
    );
}

#[test]
fn synthetic_spec_parser_never_panics_nor_allocates_absurdly() {
    let seeds: Vec<Vec<u8>> = [
        "gray", "rgb", "rgba", "yuv420p", "yuv422p", "yuv444p", "nv12",
    ]
    .iter()
    .map(|f| format!("synthetic:17x9:{f}:3").into_bytes())
    .collect();
    let regressions: &[&[u8]] = &[
        b"synthetic:65536x65536:rgba:1",
        b"synthetic:0x0:rgb:1",
        b"synthetic:5x5:rgb:18446744073709551616",
        b"synthetic:",
    ];
    fuzz(
        "synthetic",
        4,
        cases(2000),
        &seeds,
        regressions,
        &fuzzing::synthetic_spec,
    );
}

fn encoded(
    format: image::ImageFormat,
    color: image::ExtendedColorType,
    channels: usize,
) -> Vec<u8> {
    let (w, h) = (13u32, 7u32);
    let data: Vec<u8> = (0..w as usize * h as usize * channels)
        .map(|i| (i * 29 % 256) as u8)
        .collect();
    let mut out = std::io::Cursor::new(Vec::new());
    image::write_buffer_with_format(&mut out, &data, w, h, color, format).unwrap();
    out.into_inner()
}

#[test]
fn image_decoders_never_panic_and_errors_are_one_line() {
    use image::{ExtendedColorType as C, ImageFormat as F};
    let seeds = vec![
        encoded(F::Png, C::L8, 1),
        encoded(F::Png, C::Rgb8, 3),
        encoded(F::Png, C::Rgba8, 4),
        encoded(F::Jpeg, C::Rgb8, 3),
        encoded(F::Jpeg, C::L8, 1),
        encoded(F::Bmp, C::Rgb8, 3),
        encoded(F::Tiff, C::Rgb8, 3),
        encoded(F::Png, C::L16, 2),
        encoded(F::Png, C::Rgb16, 6),
        encoded(F::Tiff, C::Rgb16, 6),
    ];
    let regressions: &[&[u8]] = &[
        b"\x89PNG\r\n\x1a\n broken",
        b"\xff\xd8\xff",
        b"BM",
        b"II*\x00",
    ];
    fuzz(
        "image",
        5,
        cases(2000),
        &seeds,
        regressions,
        &fuzzing::image,
    );
}

#[cfg(feature = "video")]
#[test]
fn video_demuxers_and_decoders_never_panic_and_errors_are_one_line() {
    if !common::have_ffmpeg() {
        return;
    }
    let t = common::Scratch::new("fuzz-video");
    let make = |name: &str, extra: &[&str]| {
        let path = t.path(name);
        let mut args = vec![
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=48x32:rate=25",
            "-frames:v",
            "6",
        ];
        args.extend_from_slice(extra);
        args.push(common::s(&path));
        common::ffmpeg(&args);
        std::fs::read(&path).unwrap()
    };
    let seeds = vec![
        make(
            "a.mp4",
            &["-c:v", "libx264", "-g", "3", "-pix_fmt", "yuv420p"],
        ),
        make("b.mkv", &["-c:v", "ffv1"]),
        make("c.avi", &["-c:v", "mpeg4"]),
        make("d.mkv", &["-c:v", "ffv1", "-pix_fmt", "yuv420p10le"]),
    ];
    let case = t.path("case.bin");
    let out = t.path("out.mkv");
    // Each input decoded whole, as the second of two parts (seeks, drops), and joined to
    // itself (`convflow concat`).
    let parse = |bytes: &[u8]| -> Result<usize, String> {
        std::fs::write(&case, bytes).unwrap();
        let joined = joined_to_itself(&case, &out);
        all_of(vec![
            fuzzing::video_file(&case),
            fuzzing::video_segment(&case, "1/2"),
            joined,
        ])
    };
    fuzz(
        "video",
        6,
        cases(2000) / 10,
        &seeds,
        &[b"", b"\x00\x00\x00\x18ftypmp42"],
        &parse,
    );
}
