//! Kubernetes resource quantities (`25m`, `40Mi`, `1.5`, `2e3`) parsed to an exact value, so a
//! resize step is validated as the API server would and reported resources are compared by value
//! (`1000m` is `1`, `1024Mi` is `1Gi`), never as text.

/// A quantity in nano-units (10⁻⁹ of the unit: millicores × 10⁶, bytes × 10⁹). i128 holds the
/// largest suffix (`Ei` = 2⁶⁰) times 10⁹ with room to spare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Quantity(pub i128);

const NANO: i128 = 1_000_000_000;

/// A text that is no Kubernetes quantity, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid quantity {text:?}: {why} (use e.g. 250m, 1.5, 64Mi, 1G)")]
pub(crate) struct QuantityError {
    pub text: String,
    pub why: QuantityProblem,
}

/// What is wrong with a quantity's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum QuantityProblem {
    #[error("empty or padded")]
    EmptyOrPadded,
    #[error("no number")]
    NoNumber,
    #[error("bad exponent")]
    BadExponent,
    #[error("exponent out of range")]
    ExponentOutOfRange,
    #[error("unknown suffix")]
    UnknownSuffix,
    #[error("too many digits")]
    TooManyDigits,
    #[error("not a number")]
    NotANumber,
    #[error("too large")]
    TooLarge,
    #[error("too small")]
    TooSmall,
}

impl Quantity {
    /// Parses the Kubernetes quantity grammar: a signed decimal number, then a binary suffix
    /// (`Ki`…`Ei`), a decimal one (`n`, `u`, `m`, ``, `k`, `M`, `G`, `T`, `P`, `E`) or a decimal
    /// exponent (`e3`, `E-2`). Precision below a nano-unit is rounded up, as the API does.
    pub fn parse(s: &str) -> Result<Quantity, QuantityError> {
        use QuantityProblem::*;
        let bad = |why: QuantityProblem| QuantityError {
            text: s.to_string(),
            why,
        };
        let t = s.trim();
        if t.is_empty() || t != s {
            return Err(bad(EmptyOrPadded));
        }
        let (neg, rest) = match t.as_bytes()[0] {
            b'-' => (true, &t[1..]),
            b'+' => (false, &t[1..]),
            _ => (false, t),
        };
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (num, suffix) = rest.split_at(num_end);
        if num.is_empty() || num == "." || num.matches('.').count() > 1 {
            return Err(bad(NoNumber));
        }
        let (int, frac) = num.split_once('.').unwrap_or((num, ""));
        // (multiplier numerator, 10-exponent) of the suffix
        let (mul, exp10): (i128, i32) = match suffix {
            "" => (1, 0),
            "Ki" => (1 << 10, 0),
            "Mi" => (1 << 20, 0),
            "Gi" => (1 << 30, 0),
            "Ti" => (1 << 40, 0),
            "Pi" => (1 << 50, 0),
            "Ei" => (1 << 60, 0),
            "n" => (1, -9),
            "u" => (1, -6),
            "m" => (1, -3),
            "k" => (1, 3),
            "M" => (1, 6),
            "G" => (1, 9),
            "T" => (1, 12),
            "P" => (1, 15),
            "E" => (1, 18),
            e if e.starts_with(['e', 'E']) => {
                let x: i32 = e[1..].parse().map_err(|_| bad(BadExponent))?;
                if !(-30..=30).contains(&x) {
                    return Err(bad(ExponentOutOfRange));
                }
                (1, x)
            }
            _ => return Err(bad(UnknownSuffix)),
        };
        if int.len() + frac.len() > 30 {
            return Err(bad(TooManyDigits));
        }
        // digits as an integer, scaled by 10^-(frac.len())
        let digits: i128 = format!("{int}{frac}").parse().map_err(|_| bad(NotANumber))?;
        // value in nano-units = digits * mul * 10^(exp10 + 9 - frac.len())
        let scale = exp10 + 9 - frac.len() as i32;
        let base = digits.checked_mul(mul).ok_or_else(|| bad(TooLarge))?;
        let nanos = if scale >= 0 {
            10i128
                .checked_pow(scale as u32)
                .and_then(|p| base.checked_mul(p))
                .ok_or_else(|| bad(TooLarge))?
        } else {
            let p = 10i128.checked_pow((-scale) as u32).ok_or_else(|| bad(TooSmall))?;
            // rounded up: a quantity never loses its last bit of precision downwards
            (base + p - 1) / p
        };
        // Beyond 2^63 units no quantity fits the API's int64.
        if nanos / NANO > i64::MAX as i128 {
            return Err(bad(TooLarge));
        }
        Ok(Quantity(if neg { -nanos } else { nanos }))
    }

    /// The value in thousandths (millicores for cpu), rounded up as the kubelet does.
    pub(crate) fn milli(&self) -> i128 {
        let p = 1_000_000;
        if self.0 >= 0 { (self.0 + p - 1) / p } else { self.0 / p }
    }

    /// The value in whole units (bytes for memory), rounded up.
    pub(crate) fn units(&self) -> i128 {
        if self.0 >= 0 {
            (self.0 + NANO - 1) / NANO
        } else {
            self.0 / NANO
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_the_api_accepts() {
        assert_eq!(Quantity::parse("25m").unwrap().milli(), 25);
        assert_eq!(Quantity::parse("1").unwrap().milli(), 1000);
        assert_eq!(Quantity::parse("1.5").unwrap().milli(), 1500);
        assert_eq!(Quantity::parse("40Mi").unwrap().units(), 40 << 20);
        assert_eq!(Quantity::parse("1Gi").unwrap(), Quantity::parse("1024Mi").unwrap());
        assert_eq!(Quantity::parse("1000m").unwrap(), Quantity::parse("1").unwrap());
        assert_eq!(Quantity::parse("2e3").unwrap().units(), 2000);
        assert_eq!(Quantity::parse("10Ki").unwrap().units(), 10240);
        assert_eq!(Quantity::parse("1G").unwrap().units(), 1_000_000_000);
        assert_eq!(Quantity::parse("0.1m").unwrap().milli(), 1, "rounded up");
    }

    #[test]
    fn refuses_what_the_api_refuses() {
        for bad in [
            "",
            " 1",
            "1 ",
            "abc",
            "1.2.3",
            "12Q",
            "m",
            "1e99",
            "99999999999999999999999999999999Ei",
            ".",
        ] {
            assert!(Quantity::parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}
