//! Parsing kernels from text: the `--kernel SPEC` grammar and the `--kernel-file` format.
//!
//! Grammar (see README): `NAME[:SIZE[:PARAM...]]`, SIZE is `N` or `WxH`, numbers may be written
//! as fractions (`1/16`). The file format is rows of numbers separated by blanks or commas, with
//! optional `divisor D` and `offset O` lines and `#` comments.

use std::path::Path;

use super::kernel::{Kernel, MAX_SIDE, MAX_TAPS};
use super::library;
use super::FilterError;
use crate::quote::quote;

/// Largest kernel file read (bytes): far more than the text of a kernel of [`MAX_TAPS`] taps.
pub const MAX_FILE_BYTES: u64 = 256 << 20;

fn spec_err(spec: &str, msg: impl Into<String>) -> FilterError {
    FilterError::Spec {
        spec: quote(spec),
        msg: msg.into(),
    }
}

/// Parses a number, allowing a fraction `a/b`.
fn number(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let not_a_number = || format!("'{}' is not a number", quote(s));
    let v = match s.split_once('/') {
        Some((a, b)) => {
            let a: f64 = a.trim().parse().map_err(|_| not_a_number())?;
            let b: f64 = b.trim().parse().map_err(|_| not_a_number())?;
            if b == 0.0 {
                return Err(format!("'{}' divides by zero", quote(s)));
            }
            a / b
        }
        None => s.parse().map_err(|_| not_a_number())?,
    };
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!("'{}' is not a finite number", quote(s)))
    }
}

fn dim(spec: &str, s: &str) -> Result<usize, FilterError> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(spec_err(
            spec,
            format!("size '{}' is not a positive integer", quote(s)),
        ));
    }
    match s.parse::<usize>() {
        Ok(0) => Err(spec_err(spec, "kernel size must be at least 1")),
        Ok(n) if n <= MAX_SIDE => Ok(n),
        _ => Err(spec_err(
            spec,
            format!(
                "kernel size {} is larger than {MAX_SIDE} (the largest kernel side)",
                quote(s)
            ),
        )),
    }
}

/// `N` or `WxH` → (width, height), both within [`MAX_SIDE`] and W·H within [`MAX_TAPS`]:
/// checked here, before any generator allocates its weights.
fn size(spec: &str, s: Option<&str>) -> Result<(usize, usize), FilterError> {
    let s = s.ok_or_else(|| spec_err(spec, "missing kernel size (write e.g. ':5' or ':7x3')"))?;
    let (w, h) = match s.split_once(['x', 'X']) {
        Some((w, h)) => (dim(spec, w)?, dim(spec, h)?),
        None => {
            let n = dim(spec, s)?;
            (n, n)
        }
    };
    if w * h > MAX_TAPS {
        return Err(spec_err(
            spec,
            format!(
                "a {w}x{h} kernel has {} taps, more than the limit of {MAX_TAPS}",
                w * h
            ),
        ));
    }
    Ok((w, h))
}

fn square(spec: &str, s: Option<&str>) -> Result<usize, FilterError> {
    let (w, h) = size(spec, s)?;
    if w != h {
        return Err(spec_err(
            spec,
            "this kernel must be square (give one size N)",
        ));
    }
    Ok(w)
}

fn positive(spec: &str, what: &str, s: Option<&str>) -> Result<Option<f64>, FilterError> {
    match s {
        None => Ok(None),
        Some(s) => {
            let v = number(s).map_err(|m| spec_err(spec, format!("{what}: {m}")))?;
            if v <= 0.0 {
                return Err(spec_err(
                    spec,
                    format!("{what} must be positive (omit it for the default)"),
                ));
            }
            Ok(Some(v))
        }
    }
}

/// Parses `--kernel SPEC`. Sizes and parameters are checked before any weight is computed,
/// and the weights after (finite, bounded: [`Kernel::new`]).
pub fn parse_spec(spec: &str) -> Result<Kernel, FilterError> {
    parse_spec_inner(spec).map_err(|e| match e {
        FilterError::Invalid(msg) => spec_err(spec, msg),
        e => e,
    })
}

fn parse_spec_inner(spec: &str) -> Result<Kernel, FilterError> {
    let spec = spec.trim();
    if spec.is_empty() {
        return Err(spec_err(spec, "empty kernel spec"));
    }
    let mut parts = spec.splitn(
        if spec.starts_with("custom:") {
            3
        } else {
            usize::MAX
        },
        ':',
    );
    let name = parts.next().unwrap_or_default();
    let args: Vec<&str> = parts.collect();
    let max_args = |n: usize| {
        if args.len() > n {
            Err(spec_err(
                spec,
                format!("too many fields for '{name}' (at most {n})"),
            ))
        } else {
            Ok(())
        }
    };
    let label = spec.to_string();
    if let Some(w) = library::stencil(name) {
        max_args(0)?;
        return Kernel::new(label, 3, 3, w.to_vec());
    }
    match name {
        "box" => {
            max_args(1)?;
            let (w, h) = size(spec, args.first().copied())?;
            library::box_filter(w, h, label)
        }
        "gaussian" => {
            max_args(2)?;
            let (w, h) = size(spec, args.first().copied())?;
            let sigma = positive(spec, "sigma", args.get(1).copied())?;
            library::gaussian(w, h, sigma, label)
        }
        "binomial" => {
            max_args(1)?;
            let (w, h) = size(spec, args.first().copied())?;
            if w.max(h) > 1024 {
                return Err(spec_err(
                    spec,
                    "binomial kernels are limited to 1024 taps per side",
                ));
            }
            library::binomial(w, h, label)
        }
        "log" => {
            max_args(2)?;
            let n = square(spec, args.first().copied())?;
            let sigma = positive(spec, "sigma", args.get(1).copied())?;
            library::log(n, sigma, label)
        }
        "unsharp" => {
            max_args(3)?;
            let n = square(spec, args.first().copied())?;
            let sigma = positive(spec, "sigma", args.get(1).copied())?;
            let amount = positive(spec, "amount", args.get(2).copied())?.unwrap_or(1.0);
            library::unsharp(n, sigma, amount, label)
        }
        "custom" => {
            let (w, h) = size(spec, args.first().copied())?;
            let values = args
                .get(1)
                .ok_or_else(|| spec_err(spec, "missing values (write custom:WxH:v1,v2,...)"))?;
            let weights = values
                .split(',')
                .map(|v| number(v).map(|x| x as f32))
                .collect::<Result<Vec<f32>, String>>()
                .map_err(|m| spec_err(spec, m))?;
            if weights.len() != w * h {
                return Err(spec_err(
                    spec,
                    format!("{w}x{h} needs {} values, got {}", w * h, weights.len()),
                ));
            }
            Kernel::new(label, w, h, weights)
        }
        _ => Err(spec_err(
            spec,
            match library::suggest(name).as_slice() {
                [] => format!(
                    "unknown kernel '{}' (run 'convflow kernels' for the list)",
                    quote(name)
                ),
                near => format!(
                    "unknown kernel '{}': did you mean '{}'? (run 'convflow kernels' for the \
                     list)",
                    quote(name),
                    near.join("' or '")
                ),
            },
        )),
    }
}

/// Parses the bytes of a kernel file: UTF-8 text as [`parse_kernel_text`] reads it.
pub fn parse_kernel_bytes(origin: &str, bytes: &[u8]) -> Result<Kernel, FilterError> {
    let text = std::str::from_utf8(bytes).map_err(|e| FilterError::File {
        path: origin.to_string(),
        line: 1 + bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count(),
        msg: "not text (invalid UTF-8)".into(),
    })?;
    parse_kernel_text(origin, text)
}

/// Parses the text of a kernel file (see module docs); `origin` names it in errors.
pub fn parse_kernel_text(origin: &str, text: &str) -> Result<Kernel, FilterError> {
    let err = |line: usize, msg: String| FilterError::File {
        path: origin.to_string(),
        line,
        msg,
    };
    let (mut rows, mut divisor, mut offset) = (Vec::<Vec<f64>>::new(), None, None);
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or_default().to_ascii_lowercase();
        if first == "divisor" || first == "offset" {
            let rest: Vec<&str> = words.collect();
            if rest.len() != 1 {
                return Err(err(line_no, format!("'{first}' takes exactly one number")));
            }
            let v = number(rest[0]).map_err(|m| err(line_no, m))?;
            let slot = if first == "divisor" {
                &mut divisor
            } else {
                &mut offset
            };
            if slot.replace(v).is_some() {
                return Err(err(line_no, format!("'{first}' given twice")));
            }
            continue;
        }
        // Counted as it is read: a row longer than any kernel is refused before it is stored.
        let mut row = Vec::new();
        for word in line
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|s| !s.is_empty())
        {
            if row.len() == MAX_SIDE {
                return Err(err(line_no, format!("row has more than {MAX_SIDE} values")));
            }
            row.push(number(word).map_err(|m| err(line_no, m))?);
        }
        if let Some(first_row) = rows.first() {
            if row.len() != first_row.len() {
                return Err(err(
                    line_no,
                    format!(
                        "row has {} values but the first row has {}",
                        row.len(),
                        first_row.len()
                    ),
                ));
            }
        }
        if row.len() > MAX_SIDE || rows.len() >= MAX_SIDE || (rows.len() + 1) * row.len() > MAX_TAPS
        {
            return Err(err(
                line_no,
                format!("kernel larger than {MAX_SIDE} per side or {MAX_TAPS} taps"),
            ));
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(err(0, "no kernel rows found".into()));
    }
    let d = divisor.unwrap_or(1.0);
    if d == 0.0 {
        return Err(err(0, "divisor must not be zero".into()));
    }
    let (w, h) = (rows[0].len(), rows.len());
    let weights = rows.iter().flatten().map(|&v| (v / d) as f32).collect();
    Kernel::new(origin.to_string(), w, h, weights)
        .and_then(|k| k.with_offset(offset.unwrap_or(0.0)))
        .map_err(|e| err(0, e.to_string()))
}

/// Reads and parses a kernel file (a regular file of at most [`MAX_FILE_BYTES`]).
pub fn parse_kernel_file(path: &Path) -> Result<Kernel, FilterError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file_err = |msg: String| FilterError::File {
        path: crate::quote::path(path),
        line: 0,
        msg,
    };
    let open_err = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => file_err("does not exist".into()),
        _ => file_err(format!("cannot be read: {e}")),
    };
    // Opened without waiting for a writer: a FIFO or device is refused, not read forever.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(open_err)?;
    if !file.metadata().map_err(open_err)?.is_file() {
        return Err(file_err("is not a regular file".into()));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| file_err(format!("cannot be read: {e}")))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(file_err(format!(
            "larger than {} MiB: not a kernel file",
            MAX_FILE_BYTES >> 20
        )));
    }
    Ok(parse_kernel_bytes(&crate::quote::path(path), &bytes)?
        .with_name(format!("file:{}", crate::quote::path(path))))
}
