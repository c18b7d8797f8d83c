//! Small formatting helpers shared by the judge and the reporters (`fmt_secs`).

/// Formats seconds compactly: `4.832s`, `-0.162s`, `14s`, `312ms`.
pub fn fmt_secs(s: f64) -> String {
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
}

/// How far ahead a saturated deadline lies: beyond any run, and far from `Instant`'s own limit.
const FAR_FUTURE: std::time::Duration = std::time::Duration::from_secs(30 * 365 * 86_400);

/// `at + d`, saturating at 30 years ahead instead of panicking on overflow, so no duration
/// from a suite or a flag (`timeout: 500000000000y`) can panic the runner's deadline arithmetic.
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
pub fn after_tokio(d: std::time::Duration) -> tokio::time::Instant {
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
pub fn emit(args: std::fmt::Arguments) {
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
