//! convflow's own standard error, kept apart from what linked libraries print there.
//!
//! Encoders such as x264 and x265 write some messages straight to descriptor 2 (an allocation
//! failure, a bad parameter), bypassing FFmpeg's log. Unless `-v` is given,
//! [`capture_foreign_output`] points descriptor 2 at a pipe drained by a thread that keeps the
//! first few lines (for error messages, [`foreign_lines`]) and drops the rest, while convflow
//! itself writes to a duplicate of the original descriptor ([`stderr`],
//! [`say!`](crate::say!)). Writing to
//! standard error never fails a run or panics: a full disk, a closed reader or `2>/dev/full` only
//! lose the message.

use std::io::Write;
use std::os::fd::{FromRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Mutex;

/// The descriptor convflow's own messages go to (2 until output is captured).
static OWN: AtomicI32 = AtomicI32::new(2);
/// Lines written to descriptor 2 by others while captured (the first [`KEPT`]).
static FOREIGN: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// Serializes whole messages from several threads.
static WRITE: Mutex<()> = Mutex::new(());
const KEPT: usize = 8;
/// Whether descriptor 2 is captured.
static CAPTURED: AtomicBool = AtomicBool::new(false);
/// Marks written behind foreign output and the last one the drain thread has read.
static NEXT_MARK: AtomicU64 = AtomicU64::new(1);
static SEEN: AtomicU64 = AtomicU64::new(0);
const MARK: &[u8] = b"\x01convflow-mark-";

/// A writer to convflow's own standard error. Errors are reported to the caller;
/// [`say!`](crate::say!) ignores them.
pub struct Stderr;

impl Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // SAFETY: OWN is a descriptor this process keeps open for its whole life (2, or its
        // duplicate made by `capture_foreign_output`, never closed); ManuallyDrop keeps the
        // temporary File from closing it.
        let f = std::mem::ManuallyDrop::new(unsafe {
            std::fs::File::from_raw_fd(OWN.load(Ordering::Relaxed))
        });
        (&*f).write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// convflow's own standard error.
pub fn stderr() -> Stderr {
    Stderr
}

/// Writes one message (a newline is added) to convflow's standard error in one piece; a write
/// that fails is ignored.
pub fn say_line(text: &str) {
    let _guard = WRITE.lock().unwrap_or_else(|e| e.into_inner());
    let mut line = String::with_capacity(text.len() + 1);
    line.push_str(text);
    line.push('\n');
    let _ = Stderr.write_all(line.as_bytes());
}

/// `eprintln!` for convflow's own messages: never panics, never fails the run.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::console::say_line(&format!($($arg)*))
    };
}

/// True when convflow's own standard error is a terminal (progress bars are drawn only then).
pub fn is_terminal() -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(OWN.load(Ordering::Relaxed)) == 1 }
}

/// The descriptor of convflow's own standard error (for a progress bar's terminal).
pub fn own_fd() -> RawFd {
    OWN.load(Ordering::Relaxed)
}

/// Sends convflow's own messages (and descriptor 2) nowhere: for a standard error that must not
/// be written, such as one redirected onto an input file.
pub fn silence() {
    // SAFETY: opening /dev/null and duplicating it onto descriptor 2; the new descriptor stays
    // open for the life of the process.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if null >= 0 {
            libc::dup2(null, 2);
            OWN.store(null, Ordering::SeqCst);
        }
    }
}

/// Points descriptor 2 at a pipe whose lines are kept for [`foreign_lines`] (the first few)
/// or dropped; convflow's own messages keep going to the original standard error. Called once,
/// early; does nothing when it cannot set the pipe up.
pub fn capture_foreign_output() {
    use std::io::BufRead;
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two descriptors; dup duplicates our standard error.
    let (ok, own) = unsafe {
        (
            libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) == 0,
            libc::dup(2),
        )
    };
    if !ok || own < 0 {
        return;
    }
    // SAFETY: the read end was just created and is owned by the drain thread from here.
    let reader = unsafe { std::fs::File::from_raw_fd(fds[0]) };
    let spawned = std::thread::Builder::new()
        .name("stderr-capture".into())
        .spawn(move || {
            let mut lines = std::io::BufReader::new(reader).split(b'\n');
            while let Some(Ok(line)) = lines.next() {
                if let Some(n) = line
                    .strip_prefix(MARK)
                    .and_then(|n| std::str::from_utf8(n).ok())
                {
                    SEEN.store(n.parse().unwrap_or(0), Ordering::SeqCst);
                    continue;
                }
                let text = String::from_utf8_lossy(&line).trim().to_string();
                let mut kept = FOREIGN.lock().unwrap_or_else(|e| e.into_inner());
                if !text.is_empty() && kept.len() < KEPT {
                    kept.push(text);
                }
            }
        });
    if spawned.is_err() {
        return;
    }
    OWN.store(own, Ordering::SeqCst);
    CAPTURED.store(true, Ordering::SeqCst);
    // SAFETY: descriptor 2 now refers to the pipe's write end, which stays open for the life of
    // the process (the original write-end descriptor is closed just after).
    unsafe {
        libc::dup2(fds[1], 2);
        libc::close(fds[1]);
    }
}

/// Waits (briefly) until the drain thread has read everything written to descriptor 2 so far:
/// a numbered mark is written behind it and waited for.
fn settle() {
    if !CAPTURED.load(Ordering::SeqCst) {
        return;
    }
    let n = NEXT_MARK.fetch_add(1, Ordering::SeqCst);
    let mark = [MARK, n.to_string().as_bytes(), b"\n"].concat();
    // SAFETY: a plain write of our own buffer to descriptor 2 (the capture pipe).
    let wrote = unsafe { libc::write(2, mark.as_ptr().cast(), mark.len()) };
    if wrote != mark.len() as isize {
        return;
    }
    let until = std::time::Instant::now() + std::time::Duration::from_millis(200);
    while SEEN.load(Ordering::SeqCst) < n && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// The first lines other code printed on descriptor 2 while captured, tidied for messages.
pub fn foreign_lines() -> Vec<String> {
    settle();
    FOREIGN
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|l| crate::quote::quote_line(l))
        .collect()
}

/// The first captured line that reports an error (`x264 [error]: …`), if any.
pub fn foreign_error() -> Option<String> {
    foreign_lines()
        .into_iter()
        .find(|l| l.to_ascii_lowercase().contains("error") || l.contains("failed"))
}
