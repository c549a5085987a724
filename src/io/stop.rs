//! Reading input streams so that a stop request is noticed while a read blocks.
//!
//! A y4m stream on standard input or a FIFO can stall for as long as its writer likes. A plain
//! `read` would hold a Ctrl-C (or SIGTERM) until the writer sends more bytes or closes; here
//! every read first waits for data with `poll` in short slices and checks the stop flag between
//! them, so a stop request ends the read within [`POLL_SLICE_MS`] with [`stopped_error`].
//! FIFOs given by path are opened without waiting for a writer (`O_NONBLOCK`, then cleared).

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Raised to ask a run to stop reading (Ctrl-C, SIGTERM, SIGHUP, or a library caller).
pub type StopFlag = Arc<AtomicBool>;

/// How long a blocked read waits before it looks at the stop flag again.
pub const POLL_SLICE_MS: i32 = 50;

const STOPPED: &str = "stopped by request";

/// Raised with every stop flag by the signal handlers: blocking opens (an output FIFO waiting
/// for its reader) check it, as they hold no flag of their own.
static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Records a stop request for [`requested`] (async-signal-safe: one atomic store).
pub fn request() {
    REQUESTED.store(true, Ordering::SeqCst);
}

/// True once a stop was requested in this process.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// The error a read returns once a stop was requested.
pub fn stopped_error() -> std::io::Error {
    std::io::Error::other(STOPPED)
}

/// True for [`stopped_error`].
pub fn is_stopped(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::Other && e.to_string() == STOPPED
}

/// A file descriptor read so that a raised stop flag ends a blocked read.
pub struct StopRead {
    file: File,
    stop: Option<StopFlag>,
}

impl StopRead {
    /// Standard input (a duplicate of descriptor 0, so closing it leaves stdin alone).
    pub fn stdin(stop: Option<StopFlag>) -> std::io::Result<Self> {
        let fd = std::io::stdin().as_fd().try_clone_to_owned()?;
        Ok(StopRead {
            file: File::from(fd),
            stop,
        })
    }

    /// A file or FIFO by path; opening a FIFO does not wait for its writer.
    pub fn open(path: &Path, stop: Option<StopFlag>) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)?;
        // Back to blocking reads: `poll` below does the waiting.
        let fd = file.as_raw_fd();
        // SAFETY: fcntl on a descriptor we own, with flags read from it first.
        let cleared = unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) == 0
        };
        if !cleared {
            return Err(std::io::Error::last_os_error());
        }
        Ok(StopRead { file, stop })
    }

    /// The underlying file (for metadata).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The underlying file, for readers that never block on it (regular files).
    pub fn into_file(self) -> File {
        self.file
    }
}

impl Read for StopRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let Some(stop) = &self.stop else {
            return self.file.read(buf);
        };
        loop {
            if stop.load(Ordering::Relaxed) {
                return Err(stopped_error());
            }
            let mut pfd = libc::pollfd {
                fd: self.file.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd for a descriptor we own, for the duration of the call.
            let r = unsafe { libc::poll(&mut pfd, 1, POLL_SLICE_MS) };
            if r < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if r > 0 {
                // Data, end of stream or an error: the read says which.
                return self.file.read(buf);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocked_pipe_read_ends_when_stop_is_raised() {
        let mut fds = [0; 2];
        // SAFETY: pipe() fills two descriptors that we then own.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both descriptors were just created and are owned here only.
        let (r, w) = unsafe {
            use std::os::fd::FromRawFd;
            (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1]))
        };
        let stop: StopFlag = Arc::new(AtomicBool::new(false));
        let mut reader = StopRead {
            file: r,
            stop: Some(stop.clone()),
        };
        let t = std::time::Instant::now();
        let raiser = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(120));
            stop.store(true, Ordering::SeqCst);
        });
        let mut buf = [0u8; 8];
        let e = reader.read(&mut buf).unwrap_err();
        assert!(is_stopped(&e), "{e}");
        assert!(t.elapsed() < std::time::Duration::from_secs(2));
        raiser.join().unwrap();
        drop(w);
    }
}
