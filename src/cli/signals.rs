//! Signals. During `convflow filter` the first SIGINT, SIGTERM or SIGHUP raises the stop flag
//! (reading stops, the frames already read drain through and the output is finalized, and
//! convflow exits with 128 + the signal's number); a second one exits at once with that status
//! after removing every temporary file and directory the run created
//! ([`convflow::io::atomic::remove_all_pending`]), so nothing is left under a real name or a
//! hidden one. Handled through `signal-hook`: the flag is set inside the signal handler itself,
//! the second-signal cleanup runs on a thread of its own. Benchmarks have nothing to finalize:
//! there the first signal already cleans up and exits ([`install_aborting`]).

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

use convflow::io::stop::StopFlag;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

const HANDLED: [i32; 3] = [SIGINT, SIGTERM, SIGHUP];

/// The first stop signal received (0: none), and how many were received; both set inside the
/// signal handler.
static FIRST: AtomicI32 = AtomicI32::new(0);
static COUNT: AtomicUsize = AtomicUsize::new(0);

/// The first stop signal received, if any.
pub fn received() -> Option<i32> {
    match FIRST.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The signal's usual name, for messages.
pub fn name(sig: i32) -> &'static str {
    match sig {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// Set for commands that have nothing to finalize (benchmarks): the first signal already
/// removes every temporary and rolls back the outputs committed so far, then exits.
static ABORT_ON_FIRST: AtomicBool = AtomicBool::new(false);

/// For commands that have nothing to finalize: the first SIGINT, SIGTERM or SIGHUP removes
/// what the command was writing (and what it committed, see `io::atomic::Run`) and exits with
/// 128 + its number.
pub fn install_aborting() -> std::io::Result<()> {
    ABORT_ON_FIRST.store(true, Ordering::SeqCst);
    install(&StopFlag::default())
}

/// Routes SIGINT, SIGTERM and SIGHUP to `stop` (see the module documentation).
pub fn install(stop: &StopFlag) -> std::io::Result<()> {
    for sig in HANDLED {
        let stop = stop.clone();
        let action = move || {
            let _ = FIRST.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
            COUNT.fetch_add(1, Ordering::SeqCst);
            stop.store(true, Ordering::SeqCst);
            convflow::io::stop::request();
        };
        // SAFETY: the action only stores to atomics, which is async-signal-safe.
        unsafe { signal_hook::low_level::register(sig, action) }?;
    }
    // The cleanup of a second signal cannot run inside a handler (it takes a lock and removes
    // files): signal-hook wakes this thread instead.
    let mut signals = signal_hook::iterator::Signals::new(HANDLED)?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                let aborting = ABORT_ON_FIRST.load(Ordering::SeqCst);
                if COUNT.load(Ordering::SeqCst) < 2 && !aborting {
                    continue;
                }
                convflow::io::atomic::remove_all_pending();
                if aborting {
                    convflow::say!("convflow: stopped by {}; nothing was written", name(sig));
                } else {
                    convflow::say!(
                        "convflow: stopped at once by a second {}; the output was removed",
                        name(sig)
                    );
                }
                // SAFETY: _exit ends the process without running anything else; every temporary
                // was removed above and no output exists under a real name that is not complete.
                unsafe { libc::_exit(128 + sig) };
            }
        })?;
    Ok(())
}
