//! Small formatting helpers shared by the judge and the reporters (`fmt_secs`).

pub mod backoff;

/// Formats seconds compactly: `4.832s`, `-0.162s`, `14s`, `312ms`.
pub(crate) fn fmt_secs(s: f64) -> String {
    if s.abs() < 1.0 && s != 0.0 {
        let ms = s * 1000.0;
        if (ms - ms.round()).abs() < 1e-6 {
            return format!("{}ms", ms.round() as i64);
        }
        return format!("{ms:.1}ms");
    }
    let r = (s * 1000.0).round() / 1000.0;
    if (r - r.round()).abs() < 1e-9 {
        format!("{}s", r.round() as i64)
    } else {
        let t = format!("{r:.3}");
        format!("{}s", t.trim_end_matches('0'))
    }
}

#[cfg(test)]
mod tests {
    use super::fmt_secs;

    #[test]
    fn formats() {
        assert_eq!(fmt_secs(4.832), "4.832s");
        assert_eq!(fmt_secs(14.0), "14s");
        assert_eq!(fmt_secs(0.312), "312ms");
        assert_eq!(fmt_secs(-0.162), "-162ms");
        assert_eq!(fmt_secs(2.5), "2.5s");
        assert_eq!(fmt_secs(0.0), "0s");
    }

    #[test]
    fn cpu_quantities() {
        use super::cpu_cores;
        assert_eq!(cpu_cores("2"), Some(2.0));
        assert_eq!(cpu_cores("2500m"), Some(2.5));
        assert_eq!(cpu_cores("1.5"), Some(1.5));
        assert_eq!(cpu_cores("two"), None);
        assert_eq!(cpu_cores("-1"), None);
    }
}

/// How far ahead a saturated deadline lies: beyond any run, and far from `Instant`'s own limit.
const FAR_FUTURE: std::time::Duration = std::time::Duration::from_secs(30 * 365 * 86_400);

/// `at + d`, saturating at 30 years ahead instead of panicking on overflow, so no duration
/// from a suite or a flag (`timeout: 500000000000y`) can panic the runner's deadline arithmetic.
/// A Kubernetes CPU quantity in cores: `2`, `1.5`, `2500m`.
pub(crate) fn cpu_cores(q: &str) -> Option<f64> {
    let q = q.trim();
    let v = match q.strip_suffix('m') {
        Some(milli) => milli.parse::<f64>().ok()? / 1000.0,
        None => q.parse::<f64>().ok()?,
    };
    (v.is_finite() && v >= 0.0).then_some(v)
}

pub fn add(at: std::time::Instant, d: std::time::Duration) -> std::time::Instant {
    at.checked_add(d.min(FAR_FUTURE))
        .or_else(|| at.checked_add(FAR_FUTURE))
        .unwrap_or(at)
}

/// `Instant::now() + d`, saturating (see `add`).
pub fn after(d: std::time::Duration) -> std::time::Instant {
    add(std::time::Instant::now(), d)
}

/// `tokio::time::Instant::now() + d`, saturating (see `add`).
pub(crate) fn after_tokio(d: std::time::Duration) -> tokio::time::Instant {
    tokio::time::Instant::from_std(after(d))
}

#[cfg(test)]
mod deadline_tests {
    #[test]
    fn deadlines_saturate_instead_of_panicking() {
        let huge = std::time::Duration::from_secs(u64::MAX);
        let now = std::time::Instant::now();
        assert!(super::add(now, huge) > now);
        assert!(super::after_tokio(huge) > tokio::time::Instant::now());
    }
}

/// Set once stdout is found closed: the rest of the output is dropped.
static STDOUT_CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Writes to stdout without ever panicking (`print!` panics on a closed pipe: `podlife list |
/// head -1` exited 101). Once the reader is gone (`BrokenPipe`) the rest of the output is
/// dropped quietly and the command finishes as it would have — a run still cleans up and keeps
/// its exit code; another write error is reported once on stderr.
pub(crate) fn emit(args: std::fmt::Arguments) {
    use std::io::Write;
    use std::sync::atomic::Ordering;
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|_| out.flush())
        && !STDOUT_CLOSED.swap(true, Ordering::Relaxed)
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        eprintln!("warning: writing to stdout: {e}");
    }
}

/// `print!` through `util::emit` (never panics on a closed stdout).
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => {
        $crate::util::emit(format_args!($($t)*))
    };
}

/// `println!` through `util::emit` (never panics on a closed stdout).
#[macro_export]
macro_rules! outln {
    () => {
        $crate::util::emit(format_args!("\n"))
    };
    ($($t:tt)*) => {
        $crate::util::emit(format_args!("{}\n", format_args!($($t)*)))
    };
}

/// Characters that must not reach a terminal as they are: C0/C1 controls (ESC starts escape
/// sequences that recolour, move the cursor or retitle the window) and the Unicode bidi
/// controls (U+202E makes `ok.yaml` read as something else: "Trojan Source").
fn unprintable(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Text read from files (case names, evidence, log lines, error messages that quote data)
/// made safe to print: every control or bidi character becomes a visible `\u{..}` escape
/// (`\n` and `\t` too, so one item stays one line). Every print of file-derived text goes
/// through here.
pub(crate) fn printable(text: &str) -> String {
    if !text.chars().any(unprintable) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unprintable(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Like `printable`, but keeps line breaks (multi-line reports: tables, verdict lists).
pub(crate) fn printable_lines(text: &str) -> String {
    text.split('\n').map(printable).collect::<Vec<_>>().join("\n")
}

/// Prints `error: <message>` on stderr, made printable (see `printable`).
pub(crate) fn print_error(message: impl std::fmt::Display) {
    eprintln!("error: {}", printable(&message.to_string()));
}

#[cfg(test)]
mod printable_tests {
    use super::printable;

    #[test]
    fn escapes_terminal_controls_and_bidi_overrides() {
        assert_eq!(printable("ok"), "ok");
        assert_eq!(printable("a\u{1b}[31mred"), "a\\u{1b}[31mred");
        assert_eq!(printable("x\u{202e}lmth.exe"), "x\\u{202e}lmth.exe");
        assert_eq!(printable("one\ntwo"), "one\\u{a}two");
        assert_eq!(printable("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(printable("é ü 日本"), "é ü 日本");
    }
}

/// `t + d` on timestamps that come from outside (status times, log times, receive times):
/// saturates at jiff's range (years -9999..=9999) instead of panicking. A status time of
/// `9999-12-30T22:00:00Z` is nonsense from a node or a file, but it must make a verdict fail,
/// never crash podlife ("adding signed duration to timestamp overflowed").
pub fn ts_add(t: jiff::Timestamp, d: jiff::SignedDuration) -> jiff::Timestamp {
    t.checked_add(d).unwrap_or(if d.is_negative() {
        jiff::Timestamp::MIN
    } else {
        jiff::Timestamp::MAX
    })
}

#[cfg(test)]
mod ts_tests {
    #[test]
    fn timestamp_arithmetic_saturates() {
        let s = jiff::SignedDuration::from_secs(1);
        assert_eq!(super::ts_add(jiff::Timestamp::MAX, s), jiff::Timestamp::MAX);
        assert_eq!(super::ts_add(jiff::Timestamp::MIN, -s), jiff::Timestamp::MIN);
        let t: jiff::Timestamp = "2026-12-01T00:00:00Z".parse().unwrap();
        assert_eq!(super::ts_add(t, s).to_string(), "2026-12-01T00:00:01Z");
    }
}

/// Clock time for evidence: `21:07:26.881`.
pub fn hms(t: jiff::Timestamp) -> String {
    let z = t.to_zoned(jiff::tz::TimeZone::UTC);
    let ms = z.subsec_nanosecond() / 1_000_000;
    format!("{:02}:{:02}:{:02}.{:03}", z.hour(), z.minute(), z.second(), ms)
}

/// FNV-1a: a stable hash (unlike std's hasher), so a digest means the same in every run, with
/// every Rust version, on every platform.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}
