//! How text from the user or an input file is echoed in error messages: control characters
//! escaped (so every message stays one line) and long text shortened, so a 100 KB kernel spec
//! or a binary header never floods the terminal.

/// Characters of echoed text kept before it is shortened with '…'.
pub const MAX_ECHO: usize = 40;

/// `s` escaped and shortened for an error message.
pub fn quote(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == MAX_ECHO {
            out.push_str(&format!("… ({} bytes)", s.len()));
            break;
        }
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

/// A line of text from a library (an encoder's message) for an error message: control
/// characters escaped, shortened to 160 characters.
pub fn quote_line(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == 160 {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

/// `s` with every control character escaped (`\n`, `\u{1b}`, …): a message that stays on one
/// line whatever bytes a path or a library put in it.
pub fn escape_controls(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

/// The error for a name that is not one of `names`: `unknown WHAT 'S' (expected a, b or c)`.
pub fn unknown(what: &str, s: &str, names: &[&str]) -> String {
    let list = match names {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    };
    format!("unknown {what} '{}' (expected {list})", quote(s))
}

/// Parses a named choice (an enum deriving strum's `EnumString` and `VariantNames`) with the
/// one-line error of [`unknown`].
pub fn parse_named<T>(what: &str, s: &str) -> Result<T, String>
where
    T: std::str::FromStr + strum::VariantNames,
{
    s.parse().map_err(|_| unknown(what, s, T::VARIANTS))
}

/// A path for a message, whole: bytes that are not UTF-8 shown as `\xNN` (two different names
/// never print the same), control characters escaped.
pub fn path(p: &std::path::Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for chunk in p.as_os_str().as_bytes().utf8_chunks() {
        out.push_str(&escape_controls(chunk.valid()));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    out
}

/// Bytes (not necessarily UTF-8) escaped and shortened for an error message.
pub fn quote_bytes(b: &[u8]) -> String {
    let mut out: String = b
        .iter()
        .take(MAX_ECHO)
        .flat_map(|c| c.escape_ascii())
        .map(char::from)
        .collect();
    if b.len() > MAX_ECHO {
        out.push_str(&format!("… ({} bytes)", b.len()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_show_every_byte() {
        use std::os::unix::ffi::OsStrExt;
        let p = std::path::Path::new(std::ffi::OsStr::from_bytes(b"caf\xe9\n.png"));
        assert_eq!(path(p), "caf\\xE9\\n.png");
    }

    #[test]
    fn echoes_stay_one_short_line() {
        assert_eq!(quote("gaussian:5"), "gaussian:5");
        assert_eq!(quote("a\nb\r"), "a\\nb\\r");
        let long = "1,".repeat(50_000);
        let q = quote(&long);
        assert!(q.len() < 80 && q.ends_with("(100000 bytes)"), "{q}");
        assert_eq!(quote_bytes(b"C\xff\n"), "C\\xff\\n");
    }
}
