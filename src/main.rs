//! The `convflow` binary: the command line lives in [`cli`] (arguments, one module per
//! command, the report, signals); everything it runs is the `convflow` library.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
