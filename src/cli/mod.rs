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
    let cli = Cli::parse();
    let result = run(cli);
    if let Some(sig) = signals::received() {
        match &result {
            Ok(()) => eprintln!("convflow: stopped by {}", signals::name(sig)),
            Err(e) => eprintln!("convflow: {e:#}"),
        }
        return ExitCode::from((128 + sig) as u8);
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("convflow: error: {e:#}");
            if e.chain().any(|c| c.is::<UsageError>()) {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// Panics that a decoder raised on hostile bytes are caught and reported as one-line errors
/// (`io::still`): the default hook must not print them as well.
fn quiet_caught_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !io::still::panics_are_caught() {
            default(info);
        }
    }));
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
        Command::Bench { which } => match which {
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
        },
    }
}
