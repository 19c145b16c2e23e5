//! Go duration strings as Karpenter reads them (`time.ParseDuration`, used by
//! `metav1.Duration` and Karpenter's `NillableDuration` with its `"Never"`), and a
//! compact human rendering of durations for messages.

use chrono::Duration;

/// Go's duration units in nanoseconds.
const UNITS: [(&str, u128); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("\u{b5}s", 1_000),  // micro sign
    ("\u{3bc}s", 1_000), // Greek mu
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// A Go duration string ("30s", "1h30m", "720h", "1.5h", "300ms") -> chrono::Duration; Err is a clear message.
///
/// Follows Go's `time.ParseDuration`: an optional sign, then one or more
/// `<number>[.<fraction>]<unit>` parts with units ns, us (µs, μs), ms, s, m, h;
/// a bare "0" is allowed; the total must fit Go's int64 nanoseconds.
/// Fractions are truncated to whole nanoseconds.
pub fn parse_go_duration(s: &str) -> Result<Duration, String> {
    let bad = |why: &str| Err(format!("invalid duration {s:?}: {why}"));
    let (negative, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(Duration::zero());
    }
    if rest.is_empty() {
        return bad("empty");
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int_part, after) = rest.split_at(int_len);
        let (frac_part, after) = match after.strip_prefix('.') {
            Some(f) => f.split_at(f.bytes().take_while(u8::is_ascii_digit).count()),
            None => ("", after),
        };
        if int_part.is_empty() && frac_part.is_empty() {
            return bad("expected a number");
        }
        let unit_len = after
            .char_indices()
            .find(|&(_, c)| c == '.' || c.is_ascii_digit())
            .map_or(after.len(), |(i, _)| i);
        let (unit, tail) = after.split_at(unit_len);
        if unit.is_empty() {
            return bad("missing unit");
        }
        let Some(&(_, scale)) = UNITS.iter().find(|(name, _)| *name == unit) else {
            return bad(&format!("unknown unit {unit:?}"));
        };
        // Like Go, read at most ~18 fraction digits; more cannot add a nanosecond in practice.
        let whole: u128 = if int_part.is_empty() {
            0
        } else {
            int_part
                .parse()
                .map_err(|_| format!("invalid duration {s:?}: too large"))?
        };
        let frac_digits = &frac_part[..frac_part.len().min(18)];
        let frac_value: u128 = frac_digits.parse().unwrap_or(0);
        let frac_ns = frac_value * scale / 10u128.pow(frac_digits.len() as u32);
        total = whole
            .checked_mul(scale)
            .and_then(|w| w.checked_add(frac_ns))
            .and_then(|p| p.checked_add(total))
            .filter(|t| *t <= 1u128 << 63)
            .ok_or_else(|| format!("invalid duration {s:?}: too large"))?;
        rest = tail;
    }
    let limit = if negative {
        1u128 << 63
    } else {
        (1u128 << 63) - 1
    };
    if total > limit {
        return bad("too large");
    }
    let signed = if negative {
        -(total as i128)
    } else {
        total as i128
    };
    Ok(Duration::nanoseconds(signed as i64))
}

/// Karpenter NillableDuration: "Never" -> Never, else a Go duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NillableDuration {
    Never,
    After(Duration),
}

/// Parses a NillableDuration (`expireAfter`, `consolidateAfter`). "Never" is case-sensitive, as in Karpenter.
pub fn parse_nillable(s: &str) -> Result<NillableDuration, String> {
    if s == "Never" {
        Ok(NillableDuration::Never)
    } else {
        parse_go_duration(s).map(NillableDuration::After)
    }
}

/// Compact human rendering ("14m", "2h5m", "3d4h", "45s").
///
/// The two largest non-zero units among d, h, m, s (truncated); below a second, milliseconds.
pub fn human(d: Duration) -> String {
    let sign = if d < Duration::zero() { "-" } else { "" };
    let d = d.abs();
    let secs = d.num_seconds();
    if secs == 0 {
        let ms = d.num_milliseconds();
        return if ms == 0 {
            "0s".into()
        } else {
            format!("{sign}{ms}ms")
        };
    }
    let parts = [
        (secs / 86_400, "d"),
        (secs / 3_600 % 24, "h"),
        (secs / 60 % 60, "m"),
        (secs % 60, "s"),
    ];
    let first = parts.iter().position(|(n, _)| *n != 0).unwrap_or(3);
    let mut out = sign.to_string();
    for (n, unit) in &parts[first..(first + 2).min(4)] {
        if *n != 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    out
}

/// The durations [`human`] gives the same words for as `d`: from the first (inclusive) to
/// the second (exclusive). None below a second or for a negative duration, where the
/// words follow the milliseconds or the sign.
pub fn human_span(d: Duration) -> Option<(Duration, Duration)> {
    let secs = d.num_seconds();
    if secs < 1 || d < Duration::zero() {
        return None;
    }
    // The words name the two largest units: they change with the smaller of the two.
    let unit = match secs {
        86_400.. => 3_600,
        3_600.. => 60,
        _ => 1,
    };
    let from = secs - secs % unit;
    Some((Duration::seconds(from), Duration::seconds(from + unit)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every duration of the span reads alike, and the durations just outside it
        /// do not.
        #[test]
        fn a_span_is_exactly_the_durations_that_read_alike(ms in 1_000i64..40_000_000_000) {
            let d = Duration::milliseconds(ms);
            let (from, to) = human_span(d).unwrap();
            let milli = Duration::milliseconds(1);
            prop_assert!(from <= d && d < to);
            prop_assert_eq!(human(from), human(d));
            prop_assert_eq!(human(to - milli), human(d));
            prop_assert_ne!(human(to), human(d));
            prop_assert_ne!(human(from - milli), human(d));
        }
    }

    #[test]
    fn no_span_below_a_second_or_before_zero() {
        assert_eq!(human_span(Duration::milliseconds(999)), None);
        assert_eq!(human_span(Duration::seconds(-5)), None);
        assert_eq!(
            human_span(Duration::hours(76) + Duration::minutes(3)),
            Some((Duration::hours(76), Duration::hours(77)))
        );
    }

    fn ns(s: &str) -> i64 {
        parse_go_duration(s).unwrap().num_nanoseconds().unwrap()
    }

    #[test]
    fn all_units() {
        assert_eq!(ns("7ns"), 7);
        assert_eq!(ns("7us"), 7_000);
        assert_eq!(ns("7µs"), 7_000);
        assert_eq!(ns("7μs"), 7_000);
        assert_eq!(ns("300ms"), 300_000_000);
        assert_eq!(ns("30s"), 30_000_000_000);
        assert_eq!(ns("5m"), 300_000_000_000);
        assert_eq!(ns("720h"), 720 * 3_600_000_000_000);
    }

    #[test]
    fn compound_fractions_and_signs() {
        assert_eq!(parse_go_duration("1h30m").unwrap(), Duration::minutes(90));
        assert_eq!(parse_go_duration("1.5h").unwrap(), Duration::minutes(90));
        assert_eq!(parse_go_duration(".5m").unwrap(), Duration::seconds(30));
        assert_eq!(parse_go_duration("1.m").unwrap(), Duration::minutes(1));
        assert_eq!(parse_go_duration("2h0m0s").unwrap(), Duration::hours(2));
        assert_eq!(parse_go_duration("1m1m").unwrap(), Duration::minutes(2));
        assert_eq!(parse_go_duration("-1h").unwrap(), Duration::hours(-1));
        assert_eq!(parse_go_duration("+15s").unwrap(), Duration::seconds(15));
        assert_eq!(parse_go_duration("0").unwrap(), Duration::zero());
        assert_eq!(parse_go_duration("-0").unwrap(), Duration::zero());
        assert_eq!(ns("1.0000000019s"), 1_000_000_001);
        assert_eq!(ns("9223372036854775807ns"), i64::MAX);
        assert_eq!(ns("-9223372036854775808ns"), i64::MIN);
    }

    #[test]
    fn invalid() {
        for s in [
            "",
            "-",
            "+",
            "1",
            "10",
            "h",
            ".h",
            ".",
            "1d",
            "1w",
            "1hh",
            "1 h",
            " 1h",
            "1h ",
            "1.5.5h",
            "Never",
            "true",
            "9223372036854775808ns",
            "2562048h",
            "1e3s",
            "--1s",
        ] {
            assert!(parse_go_duration(s).is_err(), "{s:?} should be rejected");
        }
        assert!(parse_go_duration("1d")
            .unwrap_err()
            .contains("unknown unit \"d\""));
        assert!(parse_go_duration("10")
            .unwrap_err()
            .contains("missing unit"));
    }

    #[test]
    fn nillable() {
        assert_eq!(parse_nillable("Never"), Ok(NillableDuration::Never));
        assert_eq!(
            parse_nillable("720h"),
            Ok(NillableDuration::After(Duration::days(30)))
        );
        assert!(parse_nillable("never").is_err());
    }

    #[test]
    fn human_rendering() {
        assert_eq!(human(Duration::minutes(14)), "14m");
        assert_eq!(human(Duration::minutes(125)), "2h5m");
        assert_eq!(human(Duration::hours(76) + Duration::minutes(3)), "3d4h");
        assert_eq!(human(Duration::seconds(45)), "45s");
        assert_eq!(human(Duration::seconds(14 * 60 + 30)), "14m30s");
        assert_eq!(human(Duration::hours(48)), "2d");
        assert_eq!(human(Duration::hours(1) + Duration::seconds(5)), "1h");
        assert_eq!(human(Duration::milliseconds(300)), "300ms");
        assert_eq!(human(Duration::zero()), "0s");
        assert_eq!(human(Duration::minutes(-3)), "-3m");
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in "\\PC{0,24}") {
            let _ = parse_go_duration(&s);
            let _ = parse_nillable(&s);
        }

        #[test]
        fn parse_never_panics_on_duration_like(s in "[-+]?([0-9]{0,21}(\\.[0-9]{0,25})?(ns|us|µs|ms|s|m|h|x)?){1,4}") {
            if let Ok(d) = parse_go_duration(&s) {
                let _ = human(d);
            }
        }

        #[test]
        fn round_trips_whole_units(h in 0i64..100_000, m in 0i64..60, sec in 0i64..60) {
            let d = parse_go_duration(&format!("{h}h{m}m{sec}s")).unwrap();
            prop_assert_eq!(d, Duration::hours(h) + Duration::minutes(m) + Duration::seconds(sec));
        }
    }
}
