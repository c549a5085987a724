//! How much host memory a run may take. Frame buffer pools and image decoders check what they
//! need against this budget before allocating, so an absurd frame size in an input file is a
//! clear "needs N GB" error rather than an abort or a visit from the out-of-memory killer.
//!
//! The budget is `CONVFLOW_MEMORY_LIMIT` (bytes, with an optional K, M, G or T suffix, powers
//! of 1024) when set; else the memory the system reports available (`MemAvailable` in
//! /proc/meminfo), lowered to what the cgroup v2 limit leaves (`memory.max − memory.current`)
//! when one is set; else no limit. Either way it is lowered to the address space the process's
//! own limits (`ulimit -v`, `ulimit -d`) leave.

/// The variable that overrides the budget.
pub const LIMIT_VAR: &str = "CONVFLOW_MEMORY_LIMIT";

/// An allocation refused by [`check`]: it would exceed the memory budget.
#[derive(Debug, thiserror::Error)]
#[error("{what} needs {} of memory but {} is \
    available{}", human(*need), human(*have), hint(*from_env))]
pub struct MemoryError {
    /// What the memory was for, as the caller named it.
    pub what: String,
    /// Bytes asked for.
    pub need: u64,
    /// Bytes the budget allows.
    pub have: u64,
    from_env: bool,
}

fn hint(from_env: bool) -> &'static str {
    if from_env {
        " (CONVFLOW_MEMORY_LIMIT)"
    } else {
        " (use a smaller --inflight, or set CONVFLOW_MEMORY_LIMIT)"
    }
}

/// `bytes` as "12.9 GB" / "512.0 MB" / "900 bytes" (powers of 1000, as disks and `free -h`
/// headers read).
pub fn human(bytes: u64) -> String {
    let b = bytes as f64;
    match bytes {
        0..=9_999 => format!("{bytes} bytes"),
        10_000..=9_999_999 => format!("{:.1} kB", b / 1e3),
        10_000_000..=9_999_999_999 => format!("{:.1} MB", b / 1e6),
        _ => format!("{:.1} GB", b / 1e9),
    }
}

/// Parses `123`, `64K`, `512M`, `2G`, `1T` (powers of 1024).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 1u64 << 10),
        (i, 'm' | 'M') => (&s[..i], 1 << 20),
        (i, 'g' | 'G') => (&s[..i], 1 << 30),
        (i, 't' | 'T') => (&s[..i], 1 << 40),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mult)
}

fn meminfo_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

fn cgroup_room() -> Option<u64> {
    let read = |f: &str| std::fs::read_to_string(format!("/sys/fs/cgroup/{f}")).ok();
    let max: u64 = read("memory.max")?.trim().parse().ok()?; // "max" (no limit) fails here
    let current: u64 = read("memory.current")?.trim().parse().ok()?;
    Some(max.saturating_sub(current))
}

/// Address space left under the process's own limits (`ulimit -v`, `ulimit -d`), if any.
fn rlimit_room() -> Option<u64> {
    let limit = |res| {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit fills the struct we own.
        let ok = unsafe { libc::getrlimit(res, &mut r) } == 0;
        (ok && r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur)
    };
    let cap = match (limit(libc::RLIMIT_AS), limit(libc::RLIMIT_DATA)) {
        (Some(a), Some(d)) => a.min(d),
        (a, d) => a.or(d)?,
    };
    // Virtual size in pages, the first field of /proc/self/statm.
    let pages: u64 = std::fs::read_to_string("/proc/self/statm")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    Some(cap.saturating_sub(pages * page))
}

/// The budget in bytes and whether it came from [`LIMIT_VAR`]; None when nothing is known.
/// The process's own address-space limits lower it in either case.
pub fn budget() -> Option<(u64, bool)> {
    let rlimit = rlimit_room();
    if let Some(v) = std::env::var(LIMIT_VAR).ok().and_then(|v| parse_size(&v)) {
        return Some((rlimit.map_or(v, |r| v.min(r)), true));
    }
    [meminfo_available(), cgroup_room(), rlimit]
        .into_iter()
        .flatten()
        .min()
        .map(|a| (a, false))
}

/// Refuses `need` bytes for `what` when they exceed the budget.
pub fn check(what: &str, need: u64) -> Result<(), MemoryError> {
    match budget() {
        Some((have, from_env)) if need > have => Err(MemoryError {
            what: what.to_string(),
            need,
            have,
            from_env,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_human_numbers() {
        assert_eq!(parse_size("64K"), Some(65536));
        assert_eq!(parse_size("2g"), Some(2 << 30));
        assert_eq!(parse_size(" 100 "), Some(100));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size("99999999999T"), None);
        assert_eq!(human(12_884_901_888), "12.9 GB");
        assert_eq!(human(900), "900 bytes");
    }
}
