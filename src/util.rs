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
