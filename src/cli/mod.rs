//! The command line: arguments ([`args`]) become a validated configuration, one module per
//! command runs it, [`report`] prints what happened. This is the only place that uses
//! `anyhow`: library errors arrive typed and are mapped to exit codes here — 0 success (a
//! closed stdout included), 1 a failed run, 2 bad usage (clap's errors and [`UsageError`]s,
//! such as an output that would overwrite an input), 128 + N after signal N
//! ([`signals`]).

mod args;
mod bench;
mod filter;
mod inspect;
mod report;
mod signals;

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;
use convflow::say;

use args::{BenchCommand, Cli, Command};
use convflow::{io, pipeline};

/// A mistake in how convflow was called (exit status 2), found after clap's own checks.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Wraps any error as a usage error.
pub fn usage(e: impl std::fmt::Display) -> anyhow::Error {
    UsageError(e.to_string()).into()
}

/// Runs the command line and returns the process's exit status.
pub fn main() -> ExitCode {
    quiet_caught_panics();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    // A write past `ulimit -f` must fail with "File too large" (and be cleaned up like any
    // other failure) instead of killing the process: SIGXFSZ is caught and does nothing.
    let _ = signal_hook::flag::register(
        signal_hook::consts::SIGXFSZ,
        std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
    );
    // What linked libraries print on descriptor 2 is kept for error messages, unless -v.
    if !matches!(&cli.command, Command::Filter(a) if a.verbose) {
        convflow::console::capture_foreign_output();
    }
    let result = run_catching(cli);
    if let Some(sig) = signals::received() {
        match &result {
            Ok(()) => say!("convflow: stopped by {}", signals::name(sig)),
            Err(e) => say!("convflow: {}", one_line(e)),
        }
        return ExitCode::from((128 + sig) as u8);
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            say!("convflow: error: {}{}", one_line(&e), no_gpu_hint(&e));
            if e.chain().any(is_usage) {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// An error as one line: its chain joined, then the first error a linked library printed on
/// its own (x264's "malloc … failed") when the chain does not hold it; every control character
/// (a newline in a path, an escape sequence from a library) escaped.
fn one_line(e: &anyhow::Error) -> String {
    let mut text = format!("{e:#}");
    if let Some(foreign) = convflow::console::foreign_error() {
        if !text.contains(&foreign) {
            text = format!("{text} ({foreign})");
        }
    }
    convflow::quote::escape_controls(&text)
}

/// clap's errors: help and version print as clap prints them (exit 0); a usage error is one
/// line — the error and clap's tips, without the usage block — with exit status 2.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return if e.use_stderr() {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        };
    }
    let text = e.render().to_string();
    let parts: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:"))
        .filter(|l| !l.is_empty() && !l.starts_with("For more information"))
        .collect();
    let mut line = String::new();
    for p in parts {
        if !line.is_empty() {
            line.push_str(if line.ends_with(':') { " " } else { "; " });
        }
        line.push_str(p);
    }
    let line = line.strip_prefix("error: ").unwrap_or(&line);
    let line = format!("{line}{}", usage_hint(&e));
    say!(
        "convflow: error: {}",
        convflow::quote::escape_controls(&line)
    );
    ExitCode::from(2)
}

/// True for the errors that mean the command was called wrongly (exit status 2): ours, and an
/// output the library finds unsuitable for the input from the arguments alone.
fn is_usage(e: &(dyn std::error::Error + 'static)) -> bool {
    e.is::<UsageError>()
        || matches!(
            e.downcast_ref::<io::IoError>(),
            Some(io::IoError::Unsuitable { .. } | io::IoError::Unsplittable { .. })
        )
}

/// A tip for the usage mistakes clap cannot name: `convflow filter in.png out.png` (the output
/// is an option) gets "name the output with -o".
fn usage_hint(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let in_filter = e
        .get(ContextKind::Usage)
        .is_some_and(|u| u.to_string().contains("convflow filter"));
    match (e.kind(), e.get(ContextKind::InvalidArg)) {
        (ErrorKind::UnknownArgument, Some(ContextValue::String(arg)))
            if in_filter && !arg.starts_with('-') =>
        {
            format!("; tip: the output is an option: -o {arg}")
        }
        _ => String::new(),
    }
}

/// The first panic outside the decoders, with where it happened.
static PANIC: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Panics print nothing as they happen: those a decoder raised on hostile bytes are caught
/// and reported as one-line errors (`io::still`); any other is a bug, kept here and named in
/// the run's one error line ([`main`]).
fn quiet_caught_panics() {
    std::panic::set_hook(Box::new(|info| {
        if io::still::panics_are_caught() {
            return;
        }
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info
            .location()
            .map(|l| format!(" at {l}"))
            .unwrap_or_default();
        let mut first = PANIC.lock().unwrap_or_else(|e| e.into_inner());
        first.get_or_insert(format!("{msg}{at}"));
    }));
}

/// Runs the command; a panic on this thread becomes an error, and any panic seen on any thread
/// is named as a bug in the error.
fn run_catching(cli: Cli) -> Result<()> {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(cli)))
        .unwrap_or_else(|_| Err(anyhow::anyhow!("the command panicked")));
    let panic = PANIC.lock().unwrap_or_else(|e| e.into_inner()).take();
    match (result, panic) {
        (Err(e), Some(p)) => {
            Err(e.context(format!("internal error (a bug; please report it): {p}")))
        }
        (result, _) => result,
    }
}

/// The fix for a run that asked for the GPU where there is none (no driver, no device, no
/// NVRTC): the CPU backend.
fn no_gpu_hint(e: &anyhow::Error) -> &'static str {
    let unavailable = e.chain().any(|c| {
        c.downcast_ref::<convflow::backend::BackendError>()
            .is_some_and(|b| b.is_unavailable())
            || matches!(
                c.downcast_ref::<convflow::bench::BenchError>(),
                Some(convflow::bench::BenchError::Backend(b)) if b.is_unavailable()
            )
    });
    match unavailable {
        true => " (no usable GPU here: --backend cpu-par runs on the CPU)",
        false => "",
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || matches!(
                c.downcast_ref::<io::IoError>(),
                Some(io::IoError::ClosedPipe)
            )
            || matches!(
                c.downcast_ref::<pipeline::PipelineError>(),
                Some(pipeline::PipelineError::Io(io::IoError::ClosedPipe))
            )
    })
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Filter(args) => filter::run(args),
        Command::Kernels { spec, kernel_file } => {
            inspect::kernels(spec.as_deref(), kernel_file.as_deref())
        }
        Command::Info => inspect::info(),
        Command::Concat {
            parts,
            output,
            quiet,
        } => {
            // A signal removes the unfinished output and exits.
            signals::install_aborting()?;
            filter::concat(&parts, &output, quiet)
        }
        Command::Completions { shell } => inspect::completions(shell),
        Command::Man => inspect::man(),
        Command::Bench { which } => {
            signals::install_aborting()?;
            // CSV, JSON and charts are committed together (see `io::atomic::Run`).
            let outputs = io::atomic::Run::begin();
            let result = bench_command(which);
            if result.is_ok() {
                outputs.finish();
            }
            result
        }
    }
}

fn bench_command(which: BenchCommand) -> Result<()> {
    match which {
        BenchCommand::Kernels(args) => bench::kernels(args),
        BenchCommand::Pipeline(args) => bench::pipeline(args),
        BenchCommand::Plot { from, plot } => bench::plot(&from, &plot),
        BenchCommand::Separable(a) => bench::suite("separable", a),
        BenchCommand::Threads(a) => bench::suite("threads", a),
        BenchCommand::Memory(a) => bench::suite("memory", a),
        BenchCommand::Blocks(a) => bench::suite("blocks", a),
        BenchCommand::Resolution(a) => bench::suite("resolution", a),
        BenchCommand::BigKernels(a) => bench::suite("big-kernels", a),
        BenchCommand::Pinned(a) => bench::suite("pinned", a),
        BenchCommand::All(a) => bench::suite("all", a),
    }
}
