//! What convflow promises about a user's files, tested through the binary as a user (or an
//! attacker) meets it: inputs are never written over, outputs appear whole or not at all (full
//! disks, failures at the end, signals), bad bytes never panic or abort, legal names work.
//! Each test is named after the defect it guards against.

mod common;

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use common::{assert_fails, bin, run, s, write_png, Scratch, Succeed};

fn y4m_bytes(w: usize, h: usize, frames: usize) -> Vec<u8> {
    let mut v = format!("YUV4MPEG2 W{w} H{h} F25:1 Ip A1:1 C420jpeg\n").into_bytes();
    let size = w * h + 2 * w.div_ceil(2) * h.div_ceil(2);
    for i in 0..frames {
        v.extend_from_slice(b"FRAME\n");
        v.extend((0..size).map(|k| (k * 13 + i * 7) as u8));
    }
    v
}

fn assert_usage_error(out: &Output, needles: &[&str]) {
    assert_fails(out, needles);
    assert_eq!(
        out.status.code(),
        Some(2),
        "input protection is a usage error"
    );
}

/// Sends `sig` to `child`.
fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on the pid of a child we spawned and have not waited for.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
}

fn wait_with_timeout(child: Child, limit: Duration) -> Output {
    let pid = child.id();
    let t = Instant::now();
    let waiter = std::thread::spawn(move || child.wait_with_output().unwrap());
    while !waiter.is_finished() {
        if t.elapsed() > limit {
            // SAFETY: kill(2) on our own child, which is still running.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            panic!("convflow did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    waiter.join().unwrap()
}

#[test]
fn a_run_never_writes_over_its_own_input() {
    let t = Scratch::new("safety-input");
    write_png(&t.path("a.png"), 9, 7, true);
    let original = std::fs::read(t.path("a.png")).unwrap();
    std::fs::create_dir(t.path("dir")).unwrap();
    write_png(&t.path("dir/photo.png"), 9, 7, false);
    std::fs::hard_link(t.path("a.png"), t.path("hard.png")).unwrap();
    std::os::unix::fs::symlink(t.path("a.png"), t.path("soft.png")).unwrap();
    std::fs::write(t.path("in.y4m"), y4m_bytes(8, 6, 2)).unwrap();
    let y4m_before = std::fs::read(t.path("in.y4m")).unwrap();
    // (input, output, report)
    let cases = [
        ("a.png", "a.png", None),
        ("a.png", "hard.png", None),
        ("a.png", "soft.png", None),
        ("a.png", "dir/../a.png", None),
        ("dir/photo.png", "dir", None),
        ("dir", "dir", None),
        ("dir", "dir/.", None),
        ("in.y4m", "in.y4m", None),
        ("a.png", "b.png", Some("a.png")),
        ("in.y4m", "out.y4m", Some("out.y4m")),
    ];
    for (input, output, report) in cases {
        let (i, o) = (t.path(input), t.path(output));
        let mut args = vec!["filter", s(&i), "-o", s(&o), "--kernel", "gaussian:3"];
        let r = report.map(|r| t.path(r));
        if let Some(r) = &r {
            args.extend(["--report", s(r)]);
        }
        let out = run(&args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{input} -> {output}: {err}");
        assert!(
            err.contains("is the input") || err.contains("same file"),
            "{input} -> {output}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    assert_eq!(std::fs::read(t.path("a.png")).unwrap(), original);
    assert_eq!(std::fs::read(t.path("in.y4m")).unwrap(), y4m_before);
    assert!(!t.path("out.y4m").exists() && !t.path("b.png").exists());
    assert_eq!(
        t.listing(),
        [
            "a.png",
            "dir",
            "dir/photo.png",
            "hard.png",
            "in.y4m",
            "soft.png"
        ],
        "nothing written, no temporary left"
    );
}

#[test]
fn standard_streams_that_are_the_input_file_are_refused() {
    let t = Scratch::new("safety-stdio");
    std::fs::write(t.path("in.y4m"), y4m_bytes(8, 6, 2)).unwrap();
    let before = std::fs::read(t.path("in.y4m")).unwrap();
    // convflow filter - -o in.y4m < in.y4m
    let out = bin()
        .args([
            "filter",
            "-",
            "-o",
            s(&t.path("in.y4m")),
            "--kernel",
            "box:3",
        ])
        .stdin(std::fs::File::open(t.path("in.y4m")).unwrap())
        .output()
        .unwrap();
    assert_usage_error(&out, &["is the input"]);
    // convflow filter in.y4m -o - >> in.y4m
    let append = std::fs::OpenOptions::new()
        .append(true)
        .open(t.path("in.y4m"))
        .unwrap();
    let out = bin()
        .args([
            "filter",
            s(&t.path("in.y4m")),
            "-o",
            "-",
            "--kernel",
            "box:3",
        ])
        .stdout(append)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_usage_error(&out, &["standard output", "is the input"]);
    assert_eq!(std::fs::read(t.path("in.y4m")).unwrap(), before);
}

#[test]
fn kernel_files_and_benchmark_outputs_are_protected_too() {
    let t = Scratch::new("safety-kfile");
    write_png(&t.path("a.png"), 9, 7, true);
    std::fs::write(t.path("k.txt"), "1 2 1\n").unwrap();
    let out = run(&[
        "filter",
        s(&t.path("a.png")),
        "-o",
        s(&t.path("b.png")),
        "--kernel-file",
        s(&t.path("k.txt")),
        "--report",
        s(&t.path("k.txt")),
    ]);
    assert_usage_error(&out, &["report", "is the input"]);
    assert_eq!(std::fs::read_to_string(t.path("k.txt")).unwrap(), "1 2 1\n");
    let out = run(&[
        "bench",
        "kernels",
        "--backend",
        "cpu-par",
        "--csv",
        s(&t.path("x.csv")),
        "--sizes",
        "64x64",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let same = t.path("r.json");
    let out = run(&[
        "bench",
        "separable",
        "--quick",
        "--csv",
        s(&same),
        "--json",
        s(&same),
    ]);
    assert_usage_error(&out, &["same file"]);
    let out = run(&["bench", "separable", "--quick", "--csv", s(&t.0)]);
    assert_fails(&out, &["csv", "is an existing directory"]);
}

#[test]
fn y4m_header_bytes_never_panic() {
    let out = bin()
        .args(["filter", "-", "-o", "-", "--kernel", "box:3", "-q"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(
                b"YUV4MPEG2 W4 H4 F25:1 \xc3\xa9 C420jpeg\nFRAME\n________________........",
            )?;
            c.wait_with_output()
        })
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Unknown parameters pass through to the output header as they were.
    assert!(out
        .stdout
        .starts_with(b"YUV4MPEG2 W4 H4 F25:1 \xc3\xa9 C420jpeg\n"));
    for header in [
        &b"YUV4MPEG2 W4 H\xc3\xa9 C420jpeg\n"[..],
        b"YUV4MPEG2 W4 H4 C\xe2\x82\xac\n",
    ] {
        let out = bin()
            .args(["filter", "-", "-o", "-", "--kernel", "box:3"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                c.stdin.take().unwrap().write_all(header)?;
                c.wait_with_output()
            })
            .unwrap();
        assert_fails(&out, &["-"]);
        assert_eq!(out.status.code(), Some(1));
    }
}

#[test]
fn absurd_kernel_sizes_fail_at_once_without_allocating() {
    let specs = [
        "box:10000000000",
        "gaussian:10000000000",
        "log:70000",
        "unsharp:100000",
        "log:20000",
        "log:4294967296",
        "binomial:65536x65536",
        "custom:100000x100000:1",
    ];
    for spec in specs {
        let t = Instant::now();
        // 512 MiB of address space is plenty for refusing a spec, and far too little for the
        // allocations these specs used to attempt.
        let mut cmd = bin();
        cmd.args(["kernels", spec]);
        // SAFETY: setrlimit is async-signal-safe and only affects the child.
        unsafe {
            cmd.pre_exec(|| {
                let lim = libc::rlimit {
                    rlim_cur: 512 << 20,
                    rlim_max: 512 << 20,
                };
                libc::setrlimit(libc::RLIMIT_AS, &lim);
                Ok(())
            });
        }
        let out = cmd.output().unwrap();
        assert_fails(&out, &[spec]);
        // A kernel spec is part of the command line: refusing it is a usage error.
        assert_eq!(out.status.code(), Some(2), "{spec}");
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "{spec} took {:?}",
            t.elapsed()
        );
    }
}

#[test]
fn non_finite_or_unbounded_weights_are_refused() {
    let t = Scratch::new("safety-weights");
    write_png(&t.path("a.png"), 8, 8, false);
    for spec in [
        "gaussian:5:1e-300",
        "log:5:1e-200",
        "log:5:1e300",
        "unsharp:5:1:1e300",
        "custom:1x1:1e39",
        "custom:2x1:1e10,1",
    ] {
        let out = run(&[
            "filter",
            s(&t.path("a.png")),
            "-o",
            s(&t.path("o.png")),
            "--kernel",
            spec,
        ]);
        assert_fails(&out, &[spec]);
        assert!(!t.path("o.png").exists());
    }
    for (name, text) in [
        ("nan.txt", "offset nan\n1\n"),
        ("big.txt", "1e30 1e30\n"),
        ("inf.txt", "divisor 1e-320\n1\n"),
    ] {
        std::fs::write(t.path(name), text).unwrap();
        let out = run(&[
            "filter",
            s(&t.path("a.png")),
            "-o",
            s(&t.path("o.png")),
            "--kernel-file",
            s(&t.path(name)),
        ]);
        assert_fails(&out, &[name]);
    }
    assert!(!t.path("o.png").exists());
}

/// A command whose files may grow to `bytes` at most (a full disk, as far as it knows):
/// RLIMIT_FSIZE, with SIGXFSZ ignored so writes fail with EFBIG instead of killing it.
fn with_file_size_limit(cmd: &mut std::process::Command, bytes: u64) {
    // SAFETY: setrlimit and signal are async-signal-safe and only affect the child.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let lim = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
            Ok(())
        });
    }
}

#[test]
fn a_full_disk_leaves_no_temporary_file() {
    let t = Scratch::new("safety-full");
    write_png(&t.path("big.png"), 300, 300, true);
    let big = s(&t.path("big.png")).to_string();
    // (input, output, extra arguments, largest file the run may write)
    let mut cases = vec![
        // Fails while writing frames.
        (
            "synthetic:320x240:yuv420p:40".to_string(),
            "out.y4m",
            vec![],
            200_000,
        ),
        // Every frame fits the write buffer: fails only in the final flush.
        (
            "synthetic:64x48:yuv420p:3".to_string(),
            "small.y4m",
            vec![],
            8_000,
        ),
        (
            "synthetic:640x480:rgb:5".to_string(),
            "frames",
            vec![],
            200_000,
        ),
        (big, "one.png", vec![], 20_000),
    ];
    if cfg!(feature = "video") {
        cases.push((
            "synthetic:320x240:yuv420p:40".into(),
            "out.mkv",
            vec!["--codec", "ffv1"],
            200_000,
        ));
    }
    for (input, name, extra, limit) in cases {
        let out_path = t.path(name);
        let mut cmd = bin();
        // The report of a failed run is not written either.
        cmd.args(["filter", &input, "-o", s(&out_path), "--kernel", "box:3"])
            .args(["--report", s(&t.path("report.json"))])
            .args(&extra);
        with_file_size_limit(&mut cmd, limit);
        let out = cmd.output().unwrap();
        assert_fails(&out, &["too large"]);
        assert!(!out_path.exists(), "{name}");
        assert_eq!(t.listing(), ["big.png"], "{name}: something left behind");
    }
}

#[test]
fn an_output_name_that_is_an_existing_directory_fails_before_any_work() {
    let t = Scratch::new("safety-dirname");
    let mut names = vec!["out.y4m"];
    if cfg!(feature = "video") {
        names.push("out.mkv");
    }
    for name in names {
        std::fs::create_dir(t.path(name)).unwrap();
        let out = run(&[
            "filter",
            "synthetic:32x16:yuv420p:3",
            "-o",
            s(&t.path(name)),
            "--kernel",
            "box:3",
        ]);
        assert_fails(&out, &[name, "existing directory"]);
        assert_eq!(t.listing(), [name], "nothing beside it");
        std::fs::remove_dir(t.path(name)).unwrap();
    }
}

#[test]
fn a_failed_directory_run_leaves_the_output_directory_as_it_was() {
    let t = Scratch::new("safety-dirfail");
    std::fs::create_dir(t.path("in")).unwrap();
    for i in 1..=6 {
        write_png(&t.path(&format!("in/f{i}.png")), 10, 6, true);
    }
    std::fs::write(t.path("in/f5.png"), b"\x89PNG\r\n\x1a\n broken").unwrap();
    // A fresh output directory: nothing appears.
    let out = run(&[
        "filter",
        s(&t.path("in")),
        "-o",
        s(&t.path("out")),
        "--kernel",
        "box:3",
    ]);
    assert_fails(&out, &["f5.png"]);
    assert!(!t.path("out").exists());
    // An existing one keeps exactly what it had.
    std::fs::create_dir(t.path("old")).unwrap();
    std::fs::write(t.path("old/f1.png"), b"previous result").unwrap();
    std::fs::write(t.path("old/notes.txt"), b"mine").unwrap();
    let out = run(&[
        "filter",
        s(&t.path("in")),
        "-o",
        s(&t.path("old")),
        "--kernel",
        "box:3",
    ]);
    assert_fails(&out, &["f5.png"]);
    assert_eq!(
        std::fs::read(t.path("old/f1.png")).unwrap(),
        b"previous result"
    );
    // A failure while moving the results in (f4.png is a directory there) is undone too.
    write_png(&t.path("in/f5.png"), 10, 6, true);
    std::fs::create_dir(t.path("old/f4.png")).unwrap();
    let out = run(&[
        "filter",
        s(&t.path("in")),
        "-o",
        s(&t.path("old")),
        "--kernel",
        "box:3",
    ]);
    assert_fails(&out, &["f4.png", "directory"]);
    assert_eq!(
        std::fs::read(t.path("old/f1.png")).unwrap(),
        b"previous result"
    );
    let mut old: Vec<_> = std::fs::read_dir(t.path("old"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    old.sort();
    assert_eq!(old, ["f1.png", "f4.png", "notes.txt"]);
    // Once it can succeed, every file arrives and the others stay.
    std::fs::remove_dir(t.path("old/f4.png")).unwrap();
    let out = run(&[
        "filter",
        s(&t.path("in")),
        "-o",
        s(&t.path("old")),
        "--kernel",
        "box:3",
        "-q",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_dir(t.path("old")).unwrap().count(), 7);
    assert!(
        !t.listing().iter().any(|f| f.contains("convflow")),
        "{:?}",
        t.listing()
    );
}

#[test]
fn sigterm_and_sighup_finalize_the_output_and_a_second_signal_removes_it() {
    let t = Scratch::new("safety-signals");
    for (sig, code) in [
        (libc::SIGTERM, 143),
        (libc::SIGHUP, 129),
        (libc::SIGINT, 130),
    ] {
        let out_path = t.path("out.y4m");
        let child = bin()
            .args([
                "filter",
                "synthetic:64x48:yuv420p:100000000",
                "-o",
                s(&out_path),
                "--kernel",
                "box:3",
                "-q",
            ])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(400));
        signal(&child, sig);
        let out = wait_with_timeout(child, Duration::from_secs(20));
        assert_eq!(
            out.status.code(),
            Some(code),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let data = std::fs::read(&out_path).unwrap();
        let frame = 6 + 64 * 48 * 3 / 2;
        let header = data.iter().position(|&b| b == b'\n').unwrap() + 1;
        assert_eq!((data.len() - header) % frame, 0, "whole frames only");
        assert!(data.len() > header, "frames were written");
        assert_eq!(t.listing(), ["out.y4m"], "no temporary left");
        std::fs::remove_file(&out_path).unwrap();
        // Twice: exit at once, nothing left at all. (Frames take long to filter here, so the
        // second signal comes while the first one's drain is still running.)
        let child = bin()
            .args([
                "filter",
                "synthetic:1920x1080:yuv420p:100000000",
                "-o",
                s(&out_path),
            ])
            .args([
                "--kernel",
                "gaussian:31",
                "--mode",
                "full",
                "--backend",
                "cpu-seq",
            ])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(400));
        signal(&child, sig);
        // Apart, or the kernel merges the two into one pending signal.
        std::thread::sleep(Duration::from_millis(50));
        signal(&child, sig);
        let out = wait_with_timeout(child, Duration::from_secs(20));
        assert_eq!(out.status.code(), Some(code));
        assert!(t.listing().is_empty(), "left behind: {:?}", t.listing());
    }
}

#[test]
fn ctrl_c_after_the_upstream_dies_mid_frame_keeps_the_complete_frames() {
    let t = Scratch::new("safety-upstream");
    let out_path = t.path("out.y4m");
    // The shell pipeline `writer | convflow` in a process group of its own; the writer sends
    // three frames and part of a fourth, then stalls; Ctrl-C signals the whole group. The
    // writer's subshell exits on the signal even if it comes while `cat` still runs: one that
    // went on to `sleep 30` would hold the pipeline (and the stderr pipe) open past the limit.
    let mut stream = y4m_bytes(8, 8, 3);
    stream.extend_from_slice(b"FRAME\n");
    stream.extend_from_slice(&[5; 40]);
    std::fs::write(t.path("part.bin"), &stream).unwrap();
    let script = format!(
        "(trap 'exit 130' INT; cat {}; sleep 30) | {} filter - -o {} --kernel box:3 -q",
        s(&t.path("part.bin")),
        env!("CARGO_BIN_EXE_convflow"),
        s(&out_path)
    );
    let mut cmd = std::process::Command::new("sh");
    cmd.args(["-c", &script]).stderr(Stdio::piped());
    cmd.process_group(0);
    // A shell started in the background (`cmd &`, as CI scripts may be) hands its children
    // SIGINT ignored, and a shell cannot trap a signal ignored on entry: reset it, as a
    // terminal's Ctrl-C finds it.
    // SAFETY: signal(2) is async-signal-safe, as pre_exec requires.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        })
    };
    let child = cmd.spawn().unwrap();
    // Time for convflow to start and read the three whole frames, on a slow machine too.
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signals the process group we created (the shell, cat/sleep and convflow).
    assert_eq!(
        unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGINT) },
        0
    );
    let out = wait_with_timeout(child, Duration::from_secs(20));
    let err = String::from_utf8_lossy(&out.stderr);
    let data =
        std::fs::read(&out_path).unwrap_or_else(|e| panic!("no output ({e}); stderr: {err}"));
    assert_eq!(
        data.windows(6).filter(|w| w == b"FRAME\n").count(),
        3,
        "{err}"
    );
    assert!(err.contains("3 frame(s)"), "{err}");
    assert_eq!(t.listing(), ["out.y4m", "part.bin"]);
}

#[test]
fn sigint_while_stdin_or_a_fifo_is_idle_stops_at_once() {
    let t = Scratch::new("safety-idle");
    // An idle pipe on stdin: nothing ever arrives.
    let mut child = bin()
        .args([
            "filter",
            "-",
            "-o",
            s(&t.path("a.y4m")),
            "--kernel",
            "box:3",
        ])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, libc::SIGINT);
    let out = wait_with_timeout(child, Duration::from_secs(5));
    drop(stdin);
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!t.path("a.y4m").exists());
    // A FIFO by path that delivers one frame and then stalls.
    let fifo = t.path("in.y4m");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let child = bin()
        .args([
            "filter",
            s(&fifo),
            "-o",
            s(&t.path("b.y4m")),
            "--kernel",
            "box:3",
            "-q",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    writer.write_all(&y4m_bytes(8, 8, 1)).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, libc::SIGINT);
    let out = wait_with_timeout(child, Duration::from_secs(5));
    drop(writer);
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let data = std::fs::read(t.path("b.y4m")).unwrap();
    assert_eq!(data.windows(6).filter(|w| w == b"FRAME\n").count(), 1);
}

#[cfg(feature = "video")]
#[test]
fn ffmpeg_log_lines_never_reach_the_terminal_unasked() {
    if !common::have_ffmpeg() {
        return;
    }
    let t = Scratch::new("safety-fflog");
    let clip = t.path("clip.mp4");
    common::ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=160x120:rate=25",
        "-t",
        "2",
        "-c:v",
        "libx264",
        "-pix_fmt",
        "yuv420p",
        s(&clip),
    ]);
    // A video over itself is refused like any other input.
    let out = run(&["filter", s(&clip), "-o", s(&clip), "--kernel", "box:3"]);
    assert_usage_error(&out, &["clip.mp4", "is the input"]);
    let mut data = std::fs::read(&clip).unwrap();
    let n = data.len();
    for i in (n / 3..n / 3 + 3000).step_by(7) {
        data[i] ^= 0x55;
    }
    std::fs::write(t.path("bad.mp4"), &data).unwrap();
    let bad = t.path("bad.mp4");
    let out = run(&[
        "filter",
        s(&bad),
        "-o",
        s(&t.path("o.mkv")),
        "--kernel",
        "box:3",
        "--codec",
        "ffv1",
    ]);
    assert_fails(&out, &["bad.mp4", "frame"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("FFmpeg:"),
        "FFmpeg's first message folded in"
    );
    let out = run(&[
        "filter",
        s(&bad),
        "-o",
        s(&t.path("o.mkv")),
        "--kernel",
        "box:3",
        "--codec",
        "ffv1",
        "-q",
        "--skip-bad",
    ]);
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(&[
        "filter",
        s(&bad),
        "-o",
        s(&t.path("o2.mkv")),
        "--kernel",
        "box:3",
        "--codec",
        "ffv1",
        "-v",
        "--skip-bad",
    ]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("ffmpeg: "),
        "-v shows FFmpeg's messages"
    );
}

#[test]
fn long_and_non_utf8_names_are_legal() {
    let t = Scratch::new("safety-names");
    let long = format!("{}.png", "n".repeat(240)); // 244 bytes
    write_png(&t.path("a.png"), 8, 6, true);
    let out = run(&[
        "filter",
        s(&t.path("a.png")),
        "-o",
        s(&t.path(&long)),
        "--kernel",
        "box:3",
        "-q",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let long_y4m = format!("{}.y4m", "y".repeat(250));
    let out = run(&[
        "filter",
        "synthetic:8x8:gray:2",
        "-o",
        s(&t.path(&long_y4m)),
        "--kernel",
        "box:3",
        "-q",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A frame directory whose file names are not UTF-8.
    let dir = t.path("in");
    std::fs::create_dir(&dir).unwrap();
    let raw = OsStr::from_bytes(b"caf\xe9.png");
    write_png(&dir.join(raw), 8, 6, false);
    write_png(&dir.join("b.png"), 8, 6, false);
    let out = run(&[
        "filter",
        s(&dir),
        "-o",
        s(&t.path("out")),
        "--kernel",
        "box:3",
        "-q",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(t.path("out").join(raw).is_file());
    let mut names: Vec<_> = std::fs::read_dir(&t.0)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names.len(), 5, "{names:?}");
}

#[test]
fn an_unreadable_input_is_not_reported_missing() {
    let t = Scratch::new("safety-unreadable");
    std::fs::write(t.path("file"), "x").unwrap();
    // ENOTDIR, not ENOENT: the path exists up to a file.
    for input in ["file/in.y4m", "file/in.png"] {
        let out = run(&[
            "filter",
            s(&t.path(input)),
            "-o",
            s(&t.path("o.y4m")),
            "--kernel",
            "box:3",
        ]);
        assert_fails(&out, &[input]);
        assert!(!String::from_utf8_lossy(&out.stderr).contains("does not exist"));
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        std::fs::write(t.path("locked.y4m"), y4m_bytes(4, 4, 1)).unwrap();
        std::fs::set_permissions(
            t.path("locked.y4m"),
            std::os::unix::fs::PermissionsExt::from_mode(0o000),
        )
        .unwrap();
        let out = run(&[
            "filter",
            s(&t.path("locked.y4m")),
            "-o",
            "null",
            "--kernel",
            "box:3",
        ]);
        assert_fails(&out, &["locked.y4m", "ermission denied"]);
    }
}

#[test]
fn a_huge_kernel_spec_is_not_echoed_whole() {
    let spec = format!("custom:3x3:{}", "1,".repeat(50_000));
    let out = run(&["kernels", &spec]);
    assert_fails(&out, &["custom:3x3:1,1", "bytes"]);
    assert!(
        out.stderr.len() < 300,
        "{} bytes of error",
        out.stderr.len()
    );
}

/// A JPEG with an EXIF APP1 segment holding only `Orientation = orientation`.
fn jpeg_with_orientation(w: u32, h: u32, orientation: u16) -> Vec<u8> {
    let data: Vec<u8> = (0..w * h * 3)
        .map(|i| {
            if i % 3 == 0 && (i / 3) % w < w / 2 {
                250
            } else {
                10
            }
        })
        .collect();
    let mut jpeg = std::io::Cursor::new(Vec::new());
    image::write_buffer_with_format(
        &mut jpeg,
        &data,
        w,
        h,
        image::ExtendedColorType::Rgb8,
        image::ImageFormat::Jpeg,
    )
    .unwrap();
    let jpeg = jpeg.into_inner();
    let mut tiff = b"II*\x00\x08\x00\x00\x00\x01\x00".to_vec(); // header, IFD at 8, one entry
    tiff.extend_from_slice(&0x0112u16.to_le_bytes()); // Orientation
    tiff.extend_from_slice(&3u16.to_le_bytes()); // SHORT
    tiff.extend_from_slice(&1u32.to_le_bytes()); // count
    tiff.extend_from_slice(&orientation.to_le_bytes());
    tiff.extend_from_slice(&[0, 0, 0, 0, 0, 0]); // value padding, next IFD = 0
    let mut app1 = b"Exif\x00\x00".to_vec();
    app1.extend_from_slice(&tiff);
    let mut out = jpeg[..2].to_vec(); // SOI
    out.extend_from_slice(&[0xff, 0xe1]);
    out.extend_from_slice(&((app1.len() + 2) as u16).to_be_bytes());
    out.extend_from_slice(&app1);
    out.extend_from_slice(&jpeg[2..]);
    out
}

#[test]
fn jpeg_exif_orientation_is_applied_on_read() {
    let t = Scratch::new("safety-exif");
    std::fs::write(t.path("rot.jpg"), jpeg_with_orientation(16, 8, 6)).unwrap();
    let out = run(&[
        "filter",
        s(&t.path("rot.jpg")),
        "-o",
        s(&t.path("o.png")),
        "--kernel",
        "box:1",
        "-q",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let img = image::open(t.path("o.png")).unwrap().to_rgb8();
    // Orientation 6 (rotate 90° clockwise to view): a 16x8 image is shown 8x16, and its bright
    // left half becomes the top half.
    assert_eq!((img.width(), img.height()), (8, 16));
    assert!(img.get_pixel(4, 2)[0] > 128 && img.get_pixel(4, 13)[0] < 128);
}

#[test]
fn a_report_path_that_is_a_directory_is_refused_before_reading() {
    let t = Scratch::new("safety-report");
    std::fs::create_dir(t.path("r.json")).unwrap();
    let out = run(&[
        "filter",
        "synthetic:8x8:rgb:2",
        "-o",
        s(&t.path("frames")),
        "--kernel",
        "box:3",
        "--report",
        s(&t.path("r.json")),
    ]);
    assert_fails(&out, &["report", "existing directory"]);
    assert!(!t.path("frames").exists());
}

#[test]
fn frame_sizes_beyond_the_memory_budget_are_an_error_not_an_abort() {
    let huge_header = b"YUV4MPEG2 W65536 H65536 F25:1 C444\nFRAME\n";
    let out = bin()
        .args([
            "filter",
            "-",
            "-o",
            "null",
            "--kernel",
            "box:3",
            "--inflight",
            "64",
        ])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            let _ = c.stdin.take().unwrap().write_all(huge_header);
            c.wait_with_output()
        })
        .unwrap();
    assert_fails(&out, &["needs", "GB of memory"]);
    assert_eq!(out.status.code(), Some(1));
    let out = run(&[
        "filter",
        "synthetic:65536x65536:rgba:1",
        "-o",
        "null",
        "--kernel",
        "box:3",
        "--inflight",
        "64",
    ]);
    assert_fails(&out, &["needs", "GB of memory"]);
    let out = bin()
        .args([
            "filter",
            "synthetic:4096x4096:rgb:2",
            "-o",
            "null",
            "--kernel",
            "box:3",
        ])
        .env("CONVFLOW_MEMORY_LIMIT", "64M")
        .output()
        .unwrap();
    assert_fails(&out, &["needs", "CONVFLOW_MEMORY_LIMIT"]);
}

#[test]
fn a_closed_reader_of_a_non_utf8_path_is_fine() {
    // Paths are passed to the OS as bytes: a non-UTF-8 output name works.
    let t = Scratch::new("safety-osstr");
    let name = OsStr::from_bytes(b"o\xff.y4m");
    bin()
        .arg("filter")
        .arg("synthetic:8x8:gray:2")
        .arg("-o")
        .arg(t.0.join(name))
        .args(["--kernel", "box:3", "-q"])
        .succeed();
    assert!(Path::new(&t.0.join(name)).is_file());
}

/// Makes a FIFO at `path`.
fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Reads everything written into the FIFO `path` on another thread, until `done` is set and
/// the FIFO is empty (opened without blocking, so a run that never opens it cannot hang us).
fn drain_fifo(
    path: &Path,
    done: &std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .unwrap();
    let done = done.clone();
    std::thread::spawn(move || {
        let (mut data, mut buf) = (Vec::new(), [0u8; 65536]);
        loop {
            match f.read(&mut buf) {
                Ok(0) if done.load(std::sync::atomic::Ordering::SeqCst) => return data,
                Ok(n) => data.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("{e}"),
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    })
}

fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

#[test]
fn special_files_and_links_as_outputs_are_written_through_not_replaced() {
    let t = Scratch::new("safety-special");
    // A FIFO as the output and as the report: written into, still a FIFO afterwards.
    mkfifo(&t.path("pipe.y4m"));
    mkfifo(&t.path("report.json"));
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let video = drain_fifo(&t.path("pipe.y4m"), &done);
    let report = drain_fifo(&t.path("report.json"), &done);
    let out = run(&[
        "filter",
        "synthetic:8x8:gray:2",
        "-o",
        s(&t.path("pipe.y4m")),
        "--kernel",
        "box:3",
        "-q",
        "--report",
        s(&t.path("report.json")),
    ]);
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let video = video.join().unwrap();
    assert!(video.starts_with(b"YUV4MPEG2 "));
    assert_eq!(video.windows(6).filter(|w| w == b"FRAME\n").count(), 2);
    let report = report.join().unwrap();
    assert!(serde_json::from_slice::<serde_json::Value>(&report).is_ok());
    assert!(is_fifo(&t.path("pipe.y4m")) && is_fifo(&t.path("report.json")));
    // A symbolic link: the file it names is written (also when it does not exist yet) and
    // the link stays a link.
    std::fs::create_dir(t.path("real")).unwrap();
    write_png(&t.path("in.png"), 8, 6, true);
    std::os::unix::fs::symlink(t.path("real/old.png"), t.path("link.png")).unwrap();
    std::os::unix::fs::symlink("real/new.json", t.path("rlink.json")).unwrap();
    for round in 0..2 {
        let out = run(&[
            "filter",
            s(&t.path("in.png")),
            "-o",
            s(&t.path("link.png")),
            "--kernel",
            "box:3",
            "-q",
            "--report",
            s(&t.path("rlink.json")),
        ]);
        assert!(
            out.status.success(),
            "{round}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(t.path("link.png").is_symlink() && t.path("rlink.json").is_symlink());
        assert!(image::open(t.path("real/old.png")).is_ok());
        assert!(std::fs::read(t.path("real/new.json"))
            .unwrap()
            .starts_with(b"{"));
    }
    // The null device, by any name, discards frames (a directory of frames is not made).
    std::os::unix::fs::symlink("/dev/null", t.path("null-link")).unwrap();
    for null in ["/dev/null", s(&t.path("null-link"))] {
        let out = run(&[
            "filter",
            "synthetic:16x8:rgb:3",
            "-o",
            null,
            "--kernel",
            "box:3",
        ]);
        assert!(
            out.status.success(),
            "{null}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
    assert_eq!(
        t.listing(),
        [
            "in.png",
            "link.png",
            "null-link",
            "pipe.y4m",
            "real",
            "real/new.json",
            "real/old.png",
            "report.json",
            "rlink.json"
        ]
    );
}

#[test]
fn special_files_as_inputs_fail_at_once_instead_of_hanging() {
    let t = Scratch::new("safety-fifo-in");
    write_png(&t.path("a.png"), 8, 6, true);
    mkfifo(&t.path("k.txt"));
    std::fs::create_dir(t.path("dir")).unwrap();
    write_png(&t.path("dir/a.png"), 8, 6, true);
    mkfifo(&t.path("dir/b.png"));
    mkfifo(&t.path("still.png"));
    let cases: [(&[&str], &str); 3] = [
        (&["a.png", "--kernel-file", "k.txt"], "k.txt"),
        (&["dir", "--kernel", "box:3"], "b.png"),
        (&["still.png", "--kernel", "box:3"], "still.png"),
    ];
    for (args, name) in cases {
        let out_name = if args[0] == "dir" { "out" } else { "o.png" };
        let child = bin()
            .current_dir(&t.0)
            .args(["filter", args[0], "-o", out_name])
            .args(&args[1..])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = wait_with_timeout(child, Duration::from_secs(10));
        assert_fails(&out, &[name, "not a regular file"]);
        assert!(!t.path(out_name).exists());
    }
    // The header alone (what `auto` reads to size an image's work where a CUDA driver is)
    // refuses the FIFO at once too.
    let fifo = t.path("still.png");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(convflow::io::still::header(&fifo)));
    let got = rx.recv_timeout(Duration::from_secs(10));
    assert_eq!(got, Ok(None), "reading a FIFO's image header");
}

#[test]
fn errors_print_control_characters_escaped_on_one_line() {
    for name in ["a\nb.png", "x\u{1b}[31mred.png", "c\rd.y4m"] {
        let out = run(&["filter", name, "-o", "o.png", "--kernel", "box:3"]);
        assert_fails(&out, &["does not exist"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains('\u{1b}') && !err.contains('\r'), "{err:?}");
    }
}

/// One PNG chunk: length, type, data, CRC.
fn png_chunk(kind: &[u8], data: &[u8]) -> Vec<u8> {
    fn crc32(bytes: &[u8]) -> u32 {
        let mut c = !0u32;
        for &b in bytes {
            c ^= b as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
        }
        !c
    }
    let body = [kind, data].concat();
    [
        &(data.len() as u32).to_be_bytes()[..],
        &body,
        &crc32(&body).to_be_bytes(),
    ]
    .concat()
}

/// A PNG (with a token of image data) declaring a `w`×`h` RGBA image: signature, IHDR, one
/// IDAT, IEND.
fn png_header(w: u32, h: u32) -> Vec<u8> {
    let ihdr = [&w.to_be_bytes()[..], &h.to_be_bytes(), &[8, 6, 0, 0, 0]].concat();
    // One stored (uncompressed) deflate block of 100 zero bytes: too little data.
    let idat = [
        &[0x78, 0x01, 0x01, 100, 0, 155, 255][..],
        &[0; 100],
        &0x0064_0001u32.to_be_bytes(),
    ]
    .concat();
    [
        &b"\x89PNG\r\n\x1a\n"[..],
        &png_chunk(b"IHDR", &ihdr),
        &png_chunk(b"IDAT", &idat),
        &png_chunk(b"IEND", &[]),
    ]
    .concat()
}

#[test]
fn images_beyond_an_address_space_limit_are_refused_before_decoding() {
    let t = Scratch::new("safety-rlimit");
    std::fs::write(t.path("huge.png"), png_header(65535, 65535)).unwrap();
    let mut cmd = bin();
    cmd.args([
        "filter",
        s(&t.path("huge.png")),
        "-o",
        s(&t.path("o.png")),
        "--kernel",
        "box:3",
    ]);
    // SAFETY: setrlimit is async-signal-safe and only affects the child.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 2 << 30,
                rlim_max: 2 << 30,
            };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    assert_fails(&out, &["huge.png", "65535x65535", "MiB"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(t.listing(), ["huge.png"]);
}

#[test]
fn failed_chart_drawing_leaves_the_chart_directory_as_it_was() {
    let t = Scratch::new("safety-charts");
    let out = run(&[
        "bench",
        "threads",
        "--quick",
        "--budget",
        "1",
        "--json",
        s(&t.path("r.json")),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::create_dir(t.path("old")).unwrap();
    std::fs::write(t.path("old/threads-scaling.svg"), "old").unwrap();
    for dir in ["new", "old"] {
        let mut cmd = bin();
        cmd.args([
            "bench",
            "plot",
            "--from",
            s(&t.path("r.json")),
            "--plot",
            s(&t.path(dir)),
        ]);
        with_file_size_limit(&mut cmd, 4096);
        let out = cmd.output().unwrap();
        assert_fails(&out, &["chart", dir, "too large"]);
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains(".convflow-partial"),
            "temp name shown"
        );
    }
    assert_eq!(t.listing(), ["old", "old/threads-scaling.svg", "r.json"]);
    assert_eq!(
        std::fs::read(t.path("old/threads-scaling.svg")).unwrap(),
        b"old"
    );
    let out = run(&[
        "bench",
        "plot",
        "--from",
        s(&t.path("r.json")),
        "--plot",
        s(&t.path("old")),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::read(t.path("old/threads-scaling.svg"))
        .unwrap()
        .starts_with(b"<svg"));
}

#[cfg(feature = "video")]
#[test]
fn url_like_names_are_local_files() {
    let t = Scratch::new("safety-urls");
    let run_in = |args: &[&str]| bin().current_dir(&t.0).args(args).output().unwrap();
    // FFmpeg would read these as protocols: a file named after the prefix, or stdout.
    for name in ["file:a.mkv", "pipe:1.mkv"] {
        let out = run_in(&[
            "filter",
            "synthetic:32x16:yuv420p:3",
            "-o",
            name,
            "--kernel",
            "box:3",
            "--codec",
            "ffv1",
            "-q",
        ]);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "{name}: video on stdout");
        assert!(t.path(name).is_file(), "{name}");
    }
    assert!(!t.path("a.mkv").exists());
    let out = run_in(&[
        "filter",
        "file:a.mkv",
        "-o",
        "b.y4m",
        "--kernel",
        "box:3",
        "-q",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::rename(t.path("file:a.mkv"), t.path("a.mkv")).unwrap();
    let out = run_in(&["filter", "file:a.mkv", "-o", "c.y4m", "--kernel", "box:3"]);
    assert_fails(&out, &["file:a.mkv", "does not exist"]);
    assert_eq!(t.listing(), ["a.mkv", "b.y4m", "pipe:1.mkv"]);
}

#[cfg(feature = "video")]
#[test]
fn encoder_options_that_write_files_or_do_nothing_are_refused() {
    // The input is named as x264's default statistics file, in the working directory, where
    // a multi-pass option would make x264 write (whatever the option's spelling).
    let t = Scratch::new("safety-codecopt");
    std::fs::write(t.path("x264_2pass.log"), y4m_bytes(32, 16, 3)).unwrap();
    let before = std::fs::read(t.path("x264_2pass.log")).unwrap();
    let cases: [(&str, &str, &[&str]); 13] = [
        (
            "libx264",
            "stats=x264_2pass.log",
            &["stats=", "files of its own"],
        ),
        ("libx264", "flags=+pass1", &["flags", "multi-pass"]),
        ("libx264", "flags=+0x200", &["flags", "multi-pass"]),
        ("libx264", "flags=512", &["flags", "multi-pass"]),
        ("libx264", "flags=1024", &["flags", "multi-pass"]),
        (
            "libx264",
            "x264-params=stats=x264_2pass.log",
            &["x264-params", "files of its own"],
        ),
        (
            "libx264",
            "x264opts=cqmfile=x264_2pass.log",
            &["x264opts", "files of its own"],
        ),
        (
            "libx264",
            "x264-params=dump-yuv=x264_2pass.log",
            &["x264-params", "files"],
        ),
        ("libx264", "x264-params=foo=1", &["libx264", "foo"]),
        ("libx264", "crf=", &["crf", "not a valid value"]),
        ("libx264", "crff=18", &["crff", "does not take"]),
        (
            "mpeg4",
            "nosuchoption=1",
            &["nosuchoption", "does not take"],
        ),
        ("libx264", "preset=turbo", &["libx264", "turbo"]),
    ];
    for (codec, opt, needles) in cases {
        let out = bin()
            .current_dir(&t.0)
            .args(["filter", "x264_2pass.log", "-o", "o.mp4", "-k", "box:3"])
            .args(["--codec", codec, "--codec-opt", opt])
            .output()
            .unwrap();
        assert_fails(&out, needles);
        assert_eq!(
            t.listing(),
            ["x264_2pass.log"],
            "{opt}: something left behind"
        );
        assert_eq!(
            std::fs::read(t.path("x264_2pass.log")).unwrap(),
            before,
            "{opt}"
        );
    }
    // Options that only tune the encoder are fine.
    bin()
        .current_dir(&t.0)
        .args([
            "filter",
            "x264_2pass.log",
            "-o",
            "o.mp4",
            "-k",
            "box:3",
            "-q",
        ])
        .args([
            "--codec-opt",
            "profile=high",
            "--codec-opt",
            "x264-params=keyint=30:ref=2",
        ])
        .succeed();
}

#[cfg(feature = "video")]
#[test]
fn sigint_while_ffmpeg_waits_on_a_fifo_stops_at_once() {
    let t = Scratch::new("safety-vfifo");
    mkfifo(&t.path("in.mkv"));
    let child = bin()
        .args([
            "filter",
            s(&t.path("in.mkv")),
            "-o",
            s(&t.path("o.mkv")),
            "--kernel",
            "box:3",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A writer that opens the FIFO and sends nothing: FFmpeg waits inside its probe.
    let writer = std::fs::OpenOptions::new()
        .write(true)
        .open(t.path("in.mkv"))
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, libc::SIGINT);
    let out = wait_with_timeout(child, Duration::from_secs(5));
    drop(writer);
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(t.listing(), ["in.mkv"]);
}

#[test]
fn a_failure_after_some_outputs_were_committed_puts_them_all_back() {
    // The CSV is committed before the JSON; a JSON too large for the file-size limit fails
    // the run after that: the CSV must be back as it was (here: its old content).
    let t = Scratch::new("safety-together");
    let args = |csv: &Path, json: &Path| {
        let mut cmd = bin();
        cmd.args([
            "bench",
            "threads",
            "--quick",
            "--budget",
            "1",
            "--backend",
            "cpu-par",
        ])
        .args(["--csv", s(csv), "--json", s(json)])
        .stdout(Stdio::null());
        cmd
    };
    args(&t.path("probe.csv"), &t.path("probe.json")).succeed();
    let size = |n: &str| std::fs::metadata(t.path(n)).unwrap().len();
    let (csv, json) = (size("probe.csv"), size("probe.json"));
    assert!(
        csv * 2 < json,
        "the JSON is the larger file ({csv} vs {json} bytes)"
    );
    std::fs::write(t.path("r.csv"), "old csv").unwrap();
    let mut cmd = args(&t.path("r.csv"), &t.path("r.json"));
    with_file_size_limit(&mut cmd, (csv + json) / 2);
    let out = cmd.output().unwrap();
    assert_fails(&out, &["r.json", "too large"]);
    assert_eq!(std::fs::read(t.path("r.csv")).unwrap(), b"old csv");
    assert_eq!(t.listing(), ["probe.csv", "probe.json", "r.csv"]);
}

#[test]
fn a_benchmark_stopped_by_a_signal_leaves_nothing() {
    let t = Scratch::new("safety-bench-sig");
    std::fs::write(t.path("c.csv"), "old").unwrap();
    let child = bin()
        .args(["bench", "threads", "--backend", "cpu-par", "--budget", "30"])
        .args(["--csv", s(&t.path("c.csv")), "--json", s(&t.path("r.json"))])
        .args(["--plot", s(&t.path("charts"))])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    signal(&child, libc::SIGTERM);
    let out = wait_with_timeout(child, Duration::from_secs(10));
    assert_eq!(
        out.status.code(),
        Some(143),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(t.listing(), ["c.csv"]);
    assert_eq!(std::fs::read(t.path("c.csv")).unwrap(), b"old");
}

#[test]
fn a_file_size_limit_is_an_error_even_when_sigxfsz_is_not_ignored() {
    let t = Scratch::new("safety-xfsz");
    for name in ["o.y4m", "frames"] {
        let input = if name == "frames" {
            "synthetic:320x240:rgb:20"
        } else {
            "synthetic:320x240:yuv420p:40"
        };
        let mut cmd = bin();
        cmd.args(["filter", input, "-o", s(&t.path(name)), "--kernel", "box:3"]);
        // SAFETY: setrlimit is async-signal-safe and only affects the child; SIGXFSZ keeps its
        // default action (terminate), as in a shell with `ulimit -f`.
        unsafe {
            cmd.pre_exec(|| {
                let lim = libc::rlimit {
                    rlim_cur: 100_000,
                    rlim_max: 100_000,
                };
                libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
                Ok(())
            });
        }
        let out = cmd.output().unwrap();
        assert_fails(&out, &["too large"]);
        assert_eq!(out.status.code(), Some(1));
        assert!(t.listing().is_empty(), "{name}: {:?}", t.listing());
    }
}

#[test]
fn an_unwritable_standard_error_never_fails_or_panics_a_run() {
    let t = Scratch::new("safety-stderr");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = bin()
        .args([
            "filter",
            "synthetic:16x8:gray:3",
            "-o",
            s(&t.path("o.y4m")),
            "--kernel",
            "box:3",
        ])
        .stderr(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(t.path("o.y4m").is_file());
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = bin()
        .args([
            "filter",
            s(&t.path("missing.y4m")),
            "-o",
            s(&t.path("p.y4m")),
            "-k",
            "box:3",
        ])
        .stderr(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "an error, not a panic (101)");
}

#[test]
fn standard_error_appended_to_an_input_is_refused_silently() {
    let t = Scratch::new("safety-stderr-input");
    std::fs::write(t.path("in.y4m"), y4m_bytes(8, 6, 2)).unwrap();
    let before = std::fs::read(t.path("in.y4m")).unwrap();
    let append = std::fs::OpenOptions::new()
        .append(true)
        .open(t.path("in.y4m"))
        .unwrap();
    let out = bin()
        .args([
            "filter",
            s(&t.path("in.y4m")),
            "-o",
            s(&t.path("o.y4m")),
            "-k",
            "box:3",
        ])
        .stderr(append)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read(t.path("in.y4m")).unwrap(), before);
    assert_eq!(t.listing(), ["in.y4m"]);
}

#[test]
fn links_to_missing_files_cannot_make_two_outputs_one() {
    let t = Scratch::new("safety-dangling");
    std::os::unix::fs::symlink("o.y4m", t.path("report-link")).unwrap();
    let out = run(&[
        "filter",
        "synthetic:8x8:gray:2",
        "-o",
        s(&t.path("o.y4m")),
        "--kernel",
        "box:3",
        "--report",
        s(&t.path("report-link")),
    ]);
    assert_usage_error(&out, &["same file"]);
    std::os::unix::fs::symlink("r.csv", t.path("l.json")).unwrap();
    std::fs::create_dir(t.path("P")).unwrap();
    for (csv, json, plot) in [
        ("r.csv", "l.json", "charts"),
        ("P/threads-scaling.svg", "x.json", "P"),
        ("y.csv", "P/threads-scaling.png", "P"),
        ("q.csv", "z.json", "q.csv"),
    ] {
        let out = run(&[
            "bench",
            "threads",
            "--quick",
            "--backend",
            "cpu-par",
            "--csv",
            s(&t.path(csv)),
            "--json",
            s(&t.path(json)),
            "--plot",
            s(&t.path(plot)),
        ]);
        assert_eq!(out.status.code(), Some(2), "{csv} {json} {plot}");
    }
    assert_eq!(t.listing(), ["P", "l.json", "report-link"]);
}

#[test]
fn special_entries_in_an_output_directory_are_never_replaced() {
    let t = Scratch::new("safety-dir-special");
    std::fs::create_dir(t.path("in")).unwrap();
    write_png(&t.path("in/a.png"), 8, 6, true);
    write_png(&t.path("in/b.png"), 8, 6, true);
    std::fs::create_dir(t.path("out")).unwrap();
    mkfifo(&t.path("out/a.png"));
    std::fs::write(t.path("victim.txt"), "precious").unwrap();
    std::os::unix::fs::symlink("../victim.txt", t.path("out/b.png")).unwrap();
    let out = run(&[
        "filter",
        s(&t.path("in")),
        "-o",
        s(&t.path("out")),
        "-k",
        "box:3",
    ]);
    assert_usage_error(&out, &["out/", "regular files"]);
    assert!(is_fifo(&t.path("out/a.png")) && t.path("out/b.png").is_symlink());
    assert_eq!(std::fs::read(t.path("victim.txt")).unwrap(), b"precious");
    // A socket is no place for a file either.
    let sock = std::os::unix::net::UnixListener::bind(t.path("s.y4m")).unwrap();
    let out = run(&[
        "filter",
        "synthetic:8x8:gray:2",
        "-o",
        s(&t.path("s.y4m")),
        "-k",
        "box:3",
    ]);
    assert_fails(&out, &["s.y4m", "socket"]);
    drop(sock);
}

#[test]
fn a_png_whose_metadata_inflates_to_gigabytes_is_not_an_abort() {
    // An 8x8 PNG with a 1 GiB colour profile (a 1.3 MB file), decoded under a 512 MiB
    // address-space limit.
    let t = Scratch::new("safety-iccp");
    let mut z = fdeflate::Compressor::new(Vec::new()).unwrap();
    let zeros = vec![0u8; 1 << 24];
    for _ in 0..64 {
        z.write_data(&zeros).unwrap();
    }
    let profile = [&b"icc\0\0"[..], &z.finish().unwrap()].concat();
    let mut png = png_header(8, 8);
    let iend = png.split_off(png.len() - 12);
    let idat = png.split_off(33); // signature + IHDR stay
    png.extend(png_chunk(b"iCCP", &profile));
    png.extend(idat);
    png.extend(iend);
    std::fs::write(t.path("bomb.png"), &png).unwrap();
    let mut cmd = bin();
    cmd.args([
        "filter",
        s(&t.path("bomb.png")),
        "-o",
        s(&t.path("o.png")),
        "-k",
        "box:3",
    ]);
    // SAFETY: setrlimit is async-signal-safe and only affects the child.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 512 << 20,
                rlim_max: 512 << 20,
            };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "killed or aborted: {err}"
    );
    assert!(err.trim_end().lines().count() <= 1, "{err}");
    // The header alone is read under the same limits: the profile is not inflated past them.
    let header = convflow::io::still::header(&t.path("bomb.png"));
    assert!(matches!(header, None | Some((8, 8, _))), "{header:?}");
}

#[test]
fn an_input_without_frames_writes_nothing() {
    let t = Scratch::new("safety-noframes");
    std::fs::write(t.path("h.y4m"), "YUV4MPEG2 W8 H8 F25:1 C420jpeg\n").unwrap();
    let mut outs = vec!["o.y4m"];
    if cfg!(feature = "video") {
        outs.push("o.mkv");
    }
    for o in outs {
        let out = run(&[
            "filter",
            s(&t.path("h.y4m")),
            "-o",
            s(&t.path(o)),
            "-k",
            "box:3",
        ]);
        assert_fails(&out, &["no frames", "nothing was written"]);
    }
    assert_eq!(t.listing(), ["h.y4m"]);
}

#[test]
fn names_that_are_not_utf8_print_as_their_bytes() {
    let out = bin()
        .arg("filter")
        .arg(OsStr::from_bytes(b"caf\xe9.y4m"))
        .args(["-o", "o.y4m", "-k", "box:3"])
        .output()
        .unwrap();
    assert_fails(&out, &["caf\\xE9.y4m", "does not exist"]);
}

/// Red-team round 3: damage a decoder conceals, a truncated file with audio, a report on the
/// terminal's standard error, a report that cannot be written, an output FIFO nobody reads.
#[test]
fn damage_truncation_and_outputs_found_early() {
    if !common::have_ffmpeg() {
        return;
    }
    let t = Scratch::new("safety-round3");
    // FFV1 with slice CRCs and 16 bytes of one frame overwritten: the decoder conceals the
    // damage and says so; convflow fails naming the frame, or skips it with --skip-bad.
    let damaged = t.path("damaged.mkv");
    common::ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=s=160x120:d=2:r=10",
        "-f",
        "lavfi",
        "-i",
        "sine=d=2",
        "-c:v",
        "ffv1",
        "-slicecrc",
        "1",
        "-c:a",
        "pcm_s16le",
        "-shortest",
        s(&damaged),
    ]);
    let pos: u64 = common::ffprobe(&damaged, Some("v"), "packet=pos")
        .lines()
        .nth(8)
        .unwrap()
        .parse()
        .unwrap();
    let mut bytes = std::fs::read(&damaged).unwrap();
    bytes[pos as usize + 1500..pos as usize + 1516].fill(0xff);
    std::fs::write(&damaged, bytes).unwrap();
    let out = t.path("out.mkv");
    assert_fails(
        &run(&["filter", s(&damaged), "-o", s(&out), "--kernel", "box:3"]),
        &["damaged.mkv", "frame 8", "damaged data"],
    );
    assert!(!out.exists());
    let report = t.path("r.json");
    let ok = run(&[
        "filter",
        s(&damaged),
        "-o",
        s(&out),
        "--kernel",
        "box:3",
        "--skip-bad",
        "--report",
        s(&report),
        "-q",
    ]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let json = std::fs::read_to_string(&report).unwrap();
    assert!(!json.contains("\"skipped\": 0"), "{json}");
    // Half a Matroska file with audio: the video's DURATION tag tells it is truncated.
    let whole = t.path("whole.mkv");
    common::ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=s=160x120:d=2:r=10",
        "-f",
        "lavfi",
        "-i",
        "sine=d=2",
        "-c:v",
        "libx264",
        "-c:a",
        "aac",
        "-shortest",
        s(&whole),
    ]);
    let bytes = std::fs::read(&whole).unwrap();
    let half = t.path("half.mkv");
    std::fs::write(&half, &bytes[..bytes.len() / 2]).unwrap();
    assert_fails(
        &run(&[
            "filter",
            s(&half),
            "-o",
            s(&t.path("h.mkv")),
            "--kernel",
            "box:3",
        ]),
        &["half.mkv", "truncated"],
    );
    assert!(!t.path("h.mkv").exists());
    // --report /dev/stderr reaches the real standard error.
    let out = run(&[
        "filter",
        s(&whole),
        "-o",
        s(&t.path("w.mkv")),
        "--kernel",
        "box:3",
        "-q",
        "--report",
        "/dev/stderr",
    ]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"frames\""));
    // A report that cannot be written is found before any work, and nothing is written.
    let started = Instant::now();
    assert_fails(
        &run(&[
            "filter",
            s(&whole),
            "-o",
            s(&t.path("never.mkv")),
            "--kernel",
            "gaussian:25",
            "--backend",
            "cpu-seq",
            "--report",
            "/proc/self/report.json",
        ]),
        &["report", "cannot be written"],
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(!t.path("never.mkv").exists());
    // An output FIFO with no reader: the first Ctrl-C ends the wait, nothing is left.
    let fifo = t.path("out.y4m");
    let name = std::ffi::CString::new(s(&fifo)).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    let input = t.path("in.y4m");
    std::fs::write(&input, y4m_bytes(16, 8, 3)).unwrap();
    let child = bin()
        .args(["filter", s(&input), "-o", s(&fifo), "--kernel", "box:3"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    signal(&child, libc::SIGINT);
    let out = wait_with_timeout(child, Duration::from_secs(5));
    assert_eq!(out.status.code(), Some(130));
    let mut left = t.listing();
    left.sort();
    assert!(left.iter().all(|n| !n.contains("convflow-tmp")), "{left:?}");
}
