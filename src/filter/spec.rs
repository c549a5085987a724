//! Parsing kernels from text: the `--kernel SPEC` grammar and the `--kernel-file` format.
//!
//! Grammar (see README): `NAME[:SIZE[:PARAM...]]`, SIZE is `N` or `WxH`, numbers may be written
//! as fractions (`1/16`). The file format is rows of numbers separated by blanks or commas, with
//! optional `divisor D` and `offset O` lines and `#` comments.

use std::path::Path;

use super::kernel::Kernel;
use super::library;
use super::FilterError;

fn spec_err(spec: &str, msg: impl Into<String>) -> FilterError {
    FilterError::Spec {
        spec: spec.to_string(),
        msg: msg.into(),
    }
}

/// Parses a number, allowing a fraction `a/b`.
fn number(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let v = match s.split_once('/') {
        Some((a, b)) => {
            let a: f64 = a.trim().parse().map_err(|_| format!("'{s}' is not a number"))?;
            let b: f64 = b.trim().parse().map_err(|_| format!("'{s}' is not a number"))?;
            if b == 0.0 {
                return Err(format!("'{s}' divides by zero"));
            }
            a / b
        }
        None => s.parse().map_err(|_| format!("'{s}' is not a number"))?,
    };
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!("'{s}' is not a finite number"))
    }
}

fn dim(spec: &str, s: &str) -> Result<usize, FilterError> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| spec_err(spec, format!("size '{s}' is not a positive integer")))?;
    if n == 0 {
        return Err(spec_err(spec, "kernel size must be at least 1"));
    }
    Ok(n)
}

/// `N` or `WxH` → (width, height).
fn size(spec: &str, s: Option<&str>) -> Result<(usize, usize), FilterError> {
    let s = s.ok_or_else(|| spec_err(spec, "missing kernel size (write e.g. ':5' or ':7x3')"))?;
    match s.split_once(['x', 'X']) {
        Some((w, h)) => Ok((dim(spec, w)?, dim(spec, h)?)),
        None => {
            let n = dim(spec, s)?;
            Ok((n, n))
        }
    }
}

fn square(spec: &str, s: Option<&str>) -> Result<usize, FilterError> {
    let (w, h) = size(spec, s)?;
    if w != h {
        return Err(spec_err(spec, "this kernel must be square (give one size N)"));
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

/// Parses `--kernel SPEC`.
pub fn parse_spec(spec: &str) -> Result<Kernel, FilterError> {
    let spec = spec.trim();
    if spec.is_empty() {
        return Err(spec_err(spec, "empty kernel spec"));
    }
    let mut parts = spec.splitn(if spec.starts_with("custom:") { 3 } else { usize::MAX }, ':');
    let name = parts.next().unwrap_or_default();
    let args: Vec<&str> = parts.collect();
    let max_args = |n: usize| {
        if args.len() > n {
            Err(spec_err(spec, format!("too many fields for '{name}' (at most {n})")))
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
                return Err(spec_err(spec, "binomial kernels are limited to 1024 taps per side"));
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
            Kernel::new(label, w, h, weights).map_err(|e| spec_err(spec, e.to_string()))
        }
        _ => Err(spec_err(
            spec,
            format!("unknown kernel '{name}' (run 'convflow kernels' for the list)"),
        )),
    }
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
            let slot = if first == "divisor" { &mut divisor } else { &mut offset };
            if slot.replace(v).is_some() {
                return Err(err(line_no, format!("'{first}' given twice")));
            }
            continue;
        }
        let row = line
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|s| !s.is_empty())
            .map(number)
            .collect::<Result<Vec<f64>, String>>()
            .map_err(|m| err(line_no, m))?;
        if let Some(first_row) = rows.first() {
            if row.len() != first_row.len() {
                return Err(err(
                    line_no,
                    format!("row has {} values but the first row has {}", row.len(), first_row.len()),
                ));
            }
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
    let k = Kernel::new(origin.to_string(), w, h, weights).map_err(|e| err(0, e.to_string()))?;
    Ok(k.with_offset(offset.unwrap_or(0.0) as f32))
}

/// Reads and parses a kernel file.
pub fn parse_kernel_file(path: &Path) -> Result<Kernel, FilterError> {
    let text = std::fs::read_to_string(path).map_err(|e| FilterError::File {
        path: path.display().to_string(),
        line: 0,
        msg: e.to_string(),
    })?;
    Ok(parse_kernel_text(&path.display().to_string(), &text)?.with_name(format!("file:{}", path.display())))
}
