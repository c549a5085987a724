//! `convflow kernels` (the kernel library, or one kernel's weights and factors),
//! `convflow info` (what this build and machine can run), and the command line describing
//! itself: `convflow completions SHELL` (clap_complete) and `convflow man` (clap_mangen).

use std::io::Write;
use std::path::Path;

use anyhow::Result;

use convflow::backend::{self, BackendKind, Schedule};
use convflow::filter::{library, spec, Filter, Mode};

pub fn kernels(spec_text: Option<&str>, file: Option<&Path>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let kernel = match (spec_text, file) {
        (Some(s), _) => spec::parse_spec(s).map_err(super::usage)?,
        (None, Some(f)) => spec::parse_kernel_file(f)?,
        (None, None) => {
            writeln!(
                out,
                "Kernel specs (sizes N or WxH; anchor at (W/2, H/2); numbers may be fractions):"
            )?;
            for (form, what) in library::CATALOGUE {
                writeln!(out, "  {form:<42} {what}")?;
            }
            writeln!(
                out,
                "\nKernel files: rows of numbers (blank or comma separated), optional 'divisor \
                D' and"
            )?;
            writeln!(
                out,
                "'offset O' lines, '#' comments. Run 'convflow kernels SPEC' to print the weights."
            )?;
            return Ok(());
        }
    };
    let (ax, ay) = kernel.anchor();
    writeln!(
        out,
        "{}: {}x{}, anchor ({ax}, {ay}), offset {}, sum {:.9}",
        kernel.name,
        kernel.width(),
        kernel.height(),
        kernel.offset(),
        kernel.sum()
    )?;
    for row in kernel.weights().chunks(kernel.width()) {
        let cells: Vec<String> = row.iter().map(|w| format!("{w:>12.8}")).collect();
        writeln!(out, "  {}", cells.join(" "))?;
    }
    match kernel.factors() {
        Some((col, row)) => {
            writeln!(out, "separable (rank 1):")?;
            writeln!(out, "  column {:?}", col)?;
            writeln!(out, "  row    {:?}", row)?;
        }
        None => writeln!(out, "not separable")?,
    }
    // What every backend runs for this kernel in each mode (the plan depends on the filter
    // and --mode only, never on the backend).
    for mode in [Mode::Auto, Mode::Full, Mode::Separable] {
        let mut f = Filter::new(kernel.clone());
        f.mode = mode;
        let name: &str = mode.into();
        match f.plan() {
            Ok(plan) => writeln!(out, "plan with --mode {name}: {}", plan.decomposition)?,
            Err(_) => writeln!(out, "plan with --mode {name}: refused (rank > 1)")?,
        }
    }
    Ok(())
}

pub fn info() -> Result<()> {
    let mut out = std::io::stdout().lock();
    let build = backend::build_info();
    writeln!(out, "convflow {}", env!("CARGO_PKG_VERSION"))?;
    writeln!(
        out,
        "logical CPUs: {}",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    )?;
    writeln!(out, "backends:")?;
    writeln!(out, "  cpu-seq  sequential reference")?;
    writeln!(
        out,
        "  cpu-par  rayon row bands (in column strips where they pay), default {} threads, {}",
        rayon::current_num_threads(),
        build.simd
    )?;
    match backend::create(BackendKind::Cuda, &Schedule::default()) {
        Ok(b) => {
            writeln!(out, "  cuda     {}", b.name())?;
            for line in b.device_details() {
                writeln!(out, "           {line}")?;
            }
        }
        Err(e) => writeln!(out, "  cuda     unavailable: {e}")?,
    }
    match &build.driver {
        Ok(v) => writeln!(out, "CUDA driver: {v}")?,
        Err(e) => writeln!(out, "CUDA driver: {e}")?,
    }
    if !build.variants.is_empty() {
        writeln!(out, "cuda variants (--variant):")?;
        for (name, about) in &build.variants {
            writeln!(out, "  {name:<17} {about}")?;
        }
    }
    writeln!(
        out,
        "default (--backend auto): {}",
        backend::create(BackendKind::Auto, &Schedule::default())?.name()
    )?;
    Ok(())
}

/// Writes the completion script for `shell` on stdout.
pub fn completions(shell: clap_complete::Shell) -> Result<()> {
    let mut cmd = <super::args::Cli as clap::CommandFactory>::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "convflow", &mut out);
    write_stdout(&out)
}

/// Writes the manual page (roff, section 1) on stdout: every command's options, its examples.
pub fn man() -> Result<()> {
    let cmd = <super::args::Cli as clap::CommandFactory>::command();
    let mut out = Vec::new();
    let page = clap_mangen::Man::new(cmd.clone());
    page.render_title(&mut out)?;
    page.render_name_section(&mut out)?;
    page.render_synopsis_section(&mut out)?;
    page.render_description_section(&mut out)?;
    page.render_options_section(&mut out)?;
    // The commands are sections of this one page (clap_mangen would point at pages per
    // command that are not installed).
    writeln!(out, ".SH COMMANDS")?;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        writeln!(
            out,
            ".TP\n\\fBconvflow {}\\fR\n{}",
            sub.get_name(),
            roff_text(&about)
        )?;
    }
    // Each command's own options, as `convflow help COMMAND` shows them.
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        render_command(&mut out, &format!("convflow {}", sub.get_name()), sub)?;
    }
    page.render_extra_section(&mut out)?;
    page.render_version_section(&mut out)?;
    // What clap_mangen heads "extra" is each command's examples (its after-help text); the
    // help's non-ASCII characters (…, →, σ) become roff's \[uXXXX] escapes, which every
    // formatter reads whatever its input encoding.
    let mut text = String::new();
    for line in String::from_utf8_lossy(&out).lines() {
        let line = match line {
            ".SH EXTRA" => ".SH EXAMPLES",
            ".SS EXTRA" => ".SS EXAMPLES",
            l => l,
        };
        for c in line.chars() {
            match c.is_ascii() {
                true => text.push(c),
                false => text.push_str(&format!("\\[u{:04X}]", u32::from(c))),
            }
        }
        text.push('\n');
    }
    write_stdout(text.as_bytes())
}

/// One command's section of the manual page: its synopsis, text, options and examples, then
/// its own subcommands the same way.
fn render_command(out: &mut Vec<u8>, name: &str, cmd: &clap::Command) -> Result<()> {
    let cmd = cmd.clone().bin_name(name).display_name(name);
    writeln!(out, ".SH \"{}\"", name.to_uppercase())?;
    let page = clap_mangen::Man::new(cmd.clone());
    let mut body = Vec::new();
    page.render_synopsis_section(&mut body)?;
    page.render_description_section(&mut body)?;
    page.render_options_section(&mut body)?;
    page.render_extra_section(&mut body)?;
    // The sections' own headings become plain paragraphs headed in bold under this one.
    for line in String::from_utf8_lossy(&body).lines() {
        match line.strip_prefix(".SH ") {
            Some(h) => writeln!(out, ".SS {h}")?,
            None => writeln!(out, "{line}")?,
        }
    }
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        render_command(out, &format!("{name} {}", sub.get_name()), sub)?;
    }
    Ok(())
}

/// Plain text as a roff paragraph: a leading `.` or `'` cannot start a request, backslashes
/// are escaped.
fn roff_text(text: &str) -> String {
    let text = text.replace('\\', "\\e");
    match text.starts_with(['.', '\'']) {
        true => format!("\\&{text}"),
        false => text,
    }
}

/// Writes all of `bytes` to stdout; a closed stdout is not an error (see the binary's exit
/// codes).
fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()?;
    Ok(())
}
