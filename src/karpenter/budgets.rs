//! NodePool disruption budgets (`spec.disruption.budgets`) evaluated the way Karpenter
//! does: cron schedules in UTC with robfig/cron's standard grammar, node counts or
//! percentages rounded up, the per-reason minimum, fail-closed on misconfiguration,
//! and the pod `karpenter.sh/do-not-disrupt` annotation with its v1.12+ durations.

use std::fmt;

use chrono::{DateTime, Datelike, Duration, Utc};
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;
use serde::{Deserialize, Deserializer, Serialize};

use super::duration::parse_go_duration;

/// What Karpenter reports when no active budget limits a reason (Go's `math.MaxInt32`).
pub const UNBOUNDED: usize = i32::MAX as usize;

/// One entry of `spec.disruption.budgets`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    /// An integer or a percentage; the CRD defaults it to "10%". An unquoted YAML
    /// integer (which the API server would reject) is read as its string.
    #[serde(default = "ten_percent", deserialize_with = "string_or_int")]
    pub nodes: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasons: Option<Vec<String>>,
}

impl Default for Budget {
    /// The CRD default budget: `{nodes: "10%"}`.
    fn default() -> Self {
        Budget {
            nodes: ten_percent(),
            schedule: None,
            duration: None,
            reasons: None,
        }
    }
}

fn ten_percent() -> String {
    "10%".into()
}

fn string_or_int<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    struct Visitor;
    impl serde::de::Visitor<'_> for Visitor {
        type Value = String;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a node count or percentage")
        }
        fn visit_str<E>(self, v: &str) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_u64<E>(self, v: u64) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_i64<E>(self, v: i64) -> Result<String, E> {
            Ok(v.to_string())
        }
    }
    d.deserialize_any(Visitor)
}

/// The disruption reasons a budget can name, spelled as Karpenter spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum DisruptionReason {
    Underutilized,
    Empty,
    Drifted,
}

impl DisruptionReason {
    pub const ALL: [DisruptionReason; 3] = [Self::Underutilized, Self::Empty, Self::Drifted];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Underutilized => "Underutilized",
            Self::Empty => "Empty",
            Self::Drifted => "Drifted",
        }
    }
}

impl fmt::Display for DisruptionReason {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const WEEKDAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// Parses a budget schedule as robfig/cron's `ParseStandard` accepts it: five fields
/// (minute hour day-of-month month day-of-week) or a lower-case descriptor. Croner does
/// the parsing; this first rejects what croner accepts but robfig does not (L, W, #, +,
/// names outside month and weekday fields, weekday 7, seconds or year fields).
fn parse_schedule(spec: &str) -> Result<Cron, String> {
    let bad = |why: String| format!("invalid schedule {spec:?}: {why}");
    let spec_trimmed = spec.trim();
    let pattern = match spec_trimmed {
        "@yearly" | "@annually" | "@monthly" | "@weekly" | "@daily" | "@hourly" => {
            spec_trimmed.to_string()
        }
        "@midnight" => "@daily".to_string(),
        s if s.starts_with('@') => return Err(bad("unrecognized descriptor".into())),
        s => {
            let fields: Vec<&str> = s.split_whitespace().collect();
            if fields.len() != 5 {
                return Err(bad(format!(
                    "expected exactly 5 fields, found {}",
                    fields.len()
                )));
            }
            for (index, field) in fields.iter().enumerate() {
                check_field(index, field).map_err(bad)?;
            }
            fields
                .iter()
                .enumerate()
                .map(|(index, field)| match index {
                    2 | 4 if has_star(field) => "*",
                    _ => field,
                })
                .collect::<Vec<_>>()
                .join(" ")
                .replace('?', "*")
        }
    };
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .sloppy_ranges(true) // robfig reads "N/step" as "N-max/step"
        .build()
        .parse(&pattern)
        .map_err(|e| bad(e.to_string()))
}

/// Whether robfig/cron marks a day field as a star: an item `*` or `?`, alone or with a
/// step of 1 (`*/1`). With either day field a star, a day must match both fields; with
/// neither, either. Croner calls only a bare `*` a star, so such a field is handed to it
/// as `*` (it already stands for every day).
fn has_star(field: &str) -> bool {
    field.split(',').any(|item| {
        let mut parts = item.split('/');
        let range = parts.next().unwrap_or_default();
        let star = matches!(range.split('-').next(), Some("*" | "?"));
        star && parts.next().is_none_or(|step| step.parse::<u32>() == Ok(1))
    })
}

/// How many parsed schedules [`schedule`] keeps; past that it starts over.
const SCHEDULES_KEPT: usize = 256;

/// [`parse_schedule`], kept by the schedule's text: every pass asks each pool's budgets
/// for each disruption reason, and the same few schedules stay in the NodePools for
/// months. A bad schedule's error is kept as well.
fn schedule(spec: &str) -> Result<Cron, String> {
    type Kept = std::collections::HashMap<String, Result<Cron, String>>;
    static KEPT: std::sync::LazyLock<std::sync::Mutex<Kept>> =
        std::sync::LazyLock::new(Default::default);
    let kept = || KEPT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(parsed) = kept().get(spec) {
        return parsed.clone();
    }
    let parsed = parse_schedule(spec);
    let mut kept = kept();
    if kept.len() >= SCHEDULES_KEPT {
        kept.clear();
    }
    kept.insert(spec.to_string(), parsed.clone());
    parsed
}

/// Each field's bounds as robfig/cron's standard parser has them.
const BOUNDS: [(u32, u32); 5] = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 6)];

/// One field checked item by item as robfig/cron's `getRange` does, so every schedule
/// Karpenter rejects is rejected here (and fails closed), and every field that passes
/// allows at least one value: an empty item (`", * * * *"`), a zero step, a reversed or
/// out-of-range span are errors, never an empty set for croner to search forever.
fn check_field(index: usize, field: &str) -> Result<(), String> {
    let names: &[&str] = match index {
        3 => &MONTHS,
        4 => &WEEKDAYS,
        _ => &[],
    };
    let (min, max) = BOUNDS[index];
    if let Some(c) = field
        .chars()
        .find(|c| !c.is_ascii_alphanumeric() && !"*?,-/".contains(*c))
    {
        return Err(format!("unsupported character {c:?} in {field:?}"));
    }
    // Go's strconv.Atoi, then robfig's "negative number" check; a name where allowed.
    let value = |v: &str| -> Result<u32, String> {
        if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(v)) {
            // Months count from 1, weekdays from 0.
            return Ok(i as u32 + u32::from(index == 3));
        }
        if v.bytes().any(|b| b.is_ascii_alphabetic()) {
            return Err(format!("unknown name {v:?}"));
        }
        v.parse::<u32>()
            .map_err(|_| format!("failed to parse int from {v:?}"))
    };
    for item in field.split(',') {
        let mut parts = item.split('/');
        let range = parts.next().unwrap_or_default();
        let step = parts.next();
        if parts.next().is_some() {
            return Err(format!("too many slashes: {item:?}"));
        }
        let bounds: Vec<&str> = range.split('-').collect();
        let (start, end) = if bounds[0] == "*" || bounds[0] == "?" {
            (min, max)
        } else {
            let start = value(bounds[0])?;
            match bounds.len() {
                1 if step.is_some() => (start, max), // "N/step" is "N-max/step"
                1 => (start, start),
                2 => (start, value(bounds[1])?),
                _ => return Err(format!("too many hyphens: {item:?}")),
            }
        };
        if let Some(step) = step {
            let step: u32 = step
                .parse()
                .map_err(|_| format!("failed to parse int from {step:?}"))?;
            if step == 0 {
                return Err(format!(
                    "step of range should be a positive number: {item:?}"
                ));
            }
        }
        if start < min {
            return Err(format!(
                "beginning of range ({start}) below minimum ({min}): {item:?}"
            ));
        }
        if end > max {
            return Err(format!(
                "end of range ({end}) above maximum ({max}): {item:?}"
            ));
        }
        if start > end {
            return Err(format!(
                "beginning of range ({start}) beyond end of range ({end}): {item:?}"
            ));
        }
    }
    Ok(())
}

/// How far robfig/cron's `Next` looks before giving up (it returns the zero time).
const SEARCH_YEARS: i32 = 5;

/// Active at `now`? No schedule: always. Schedule: Karpenter's rule (the next cron hit after now-duration is not after now), UTC. Err for a bad schedule/duration.
///
/// So a budget is active from each hit (inclusive) for `duration` (exclusive end).
/// A schedule with no hit (e.g. "0 0 31 2 *") counts as always active, because
/// robfig/cron then returns the zero time, which is never after now. A duration
/// without a schedule is an error (Karpenter fails to parse the empty schedule);
/// a schedule without a duration is never active.
pub fn is_active(b: &Budget, now: DateTime<Utc>) -> Result<bool, String> {
    if b.schedule.is_none() && b.duration.is_none() {
        return Ok(true);
    }
    let cron = schedule(b.schedule.as_deref().unwrap_or(""))?;
    let window = match &b.duration {
        Some(d) => parse_go_duration(d)?,
        None => Duration::zero(),
    };
    let checkpoint = now
        .checked_sub_signed(window)
        .ok_or_else(|| format!("duration {window} out of range"))?;
    // robfig/cron stops 5 years after the checkpoint and returns the zero time, which is
    // never after now: a schedule with no hit in that span is active, as in Karpenter.
    let limit = checkpoint.year().saturating_add(SEARCH_YEARS);
    Ok(cron
        .find_next_occurrence(&checkpoint, false)
        .map_or(true, |next| next.year() > limit || next <= now))
}

/// nodes as a count: an int, or a percent of `total` rounded UP.
///
/// Parsed like Go's `strconv.Atoi` (optional sign, digits); negative counts are an
/// error (the CRD pattern forbids them).
pub fn budget_nodes(b: &Budget, total: usize) -> Result<usize, String> {
    let nodes = b.nodes.as_str();
    let count = |s: &str| -> Result<usize, &str> {
        let (negative, digits) = match s.strip_prefix('-') {
            Some(d) => (true, d),
            None => (false, s.strip_prefix('+').unwrap_or(s)),
        };
        if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
            Err("not an integer or percentage")
        } else if negative && digits.bytes().any(|c| c != b'0') {
            Err("negative")
        } else {
            digits.parse().map_err(|_| "out of range")
        }
    };
    let bad = |why: &str| format!("invalid budget nodes {nodes:?}: {why}");
    match nodes.strip_suffix('%') {
        Some(percent) => {
            let p = count(percent).map_err(bad)? as u128;
            let scaled = (p * total as u128).div_ceil(100);
            Ok(usize::try_from(scaled).unwrap_or(usize::MAX))
        }
        None => count(nodes).map_err(bad),
    }
}

/// Allowed disruptions for one NodePool and reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Allowed {
    /// What Karpenter may still start now: `limit` minus unavailable nodes, at least 0
    /// (`UNBOUNDED` minus them when no budget limits the reason).
    pub allowed: usize,
    /// Minimum over the active budgets for the reason; None = unbounded.
    pub limit: Option<usize>,
    /// Index (in the budget list) of the budget that set the minimum.
    pub active_budget: Option<usize>,
    /// A misconfigured budget: Karpenter fails closed, allowed 0.
    pub error: Option<String>,
}

/// Karpenter's allowed disruptions for a pool and reason: budgets that apply to the reason (reasons unset = all), active at now; min of their counts against `total` nodes; minus `unavailable` (nodes NotReady or deleting), floored at 0. `None` budgets = the CRD default [{nodes: "10%"}].
///
/// As in Karpenter, `total` counts the pool's managed, initialized nodes whose NodeClaim
/// is not InstanceTerminating, and `unavailable` those of them whose Ready condition is
/// not True or that are marked for deletion. An explicitly empty list is unbounded.
/// Any misconfigured budget of the pool, even one for another reason, makes the
/// result 0 (Karpenter's `MustGetAllowedDisruptions` drops the value on any error);
/// `active_budget` then points at the first bad budget. An inactive budget's `nodes`
/// is never read, so a bad value there is not an error.
pub fn allowed_disruptions(
    budgets: Option<&[Budget]>,
    reason: DisruptionReason,
    now: DateTime<Utc>,
    total: usize,
    unavailable: usize,
) -> Allowed {
    let i = DisruptionReason::ALL
        .iter()
        .position(|r| *r == reason)
        .unwrap_or_default();
    let [a, b, c] = allowed_for_each(budgets, now, total, unavailable);
    match i {
        0 => a,
        1 => b,
        _ => c,
    }
}

/// [`allowed_disruptions`] for every reason, in [`DisruptionReason::ALL`]'s order, each
/// budget's schedule read once.
pub fn allowed_for_each(
    budgets: Option<&[Budget]>,
    now: DateTime<Utc>,
    total: usize,
    unavailable: usize,
) -> [Allowed; 3] {
    let default = [Budget::default()];
    let budgets = budgets.unwrap_or(&default);
    let mut min: [Option<(usize, usize)>; 3] = [None; 3];
    let mut errors = Vec::new();
    for (index, budget) in budgets.iter().enumerate() {
        let count = match is_active(budget, now) {
            Ok(true) => budget_nodes(budget, total),
            Ok(false) => continue,
            Err(e) => Err(e),
        };
        let count = match count {
            Ok(n) => n,
            Err(e) => {
                errors.push((index, format!("budget {index}: {e}")));
                continue;
            }
        };
        for (slot, reason) in min.iter_mut().zip(DisruptionReason::ALL) {
            let applies = budget
                .reasons
                .as_ref()
                .is_none_or(|r| r.iter().any(|r| r == reason.as_str()));
            if applies && slot.is_none_or(|(m, _)| count < m) {
                *slot = Some((count, index));
            }
        }
    }
    if let Some(&(first, _)) = errors.first() {
        let message = errors
            .into_iter()
            .map(|(_, e)| e)
            .collect::<Vec<_>>()
            .join("; ");
        let failed = || Allowed {
            allowed: 0,
            limit: Some(0),
            active_budget: Some(first),
            error: Some(message.clone()),
        };
        return [failed(), failed(), failed()];
    }
    min.map(|min| Allowed {
        allowed: min
            .map_or(UNBOUNDED, |(n, _)| n)
            .saturating_sub(unavailable),
        limit: min.map(|(n, _)| n),
        active_budget: min.map(|(_, i)| i),
        error: None,
    })
}

/// How the pod annotation `karpenter.sh/do-not-disrupt` protects a pod at some instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DoNotDisrupt {
    /// "true": blocks disruption indefinitely.
    Forever,
    /// A duration still running: blocks until this instant.
    Until(DateTime<Utc>),
    /// A duration that ran out at this instant: no longer blocks.
    Elapsed(DateTime<Utc>),
    /// Neither "true" nor a positive Go duration: Karpenter ignores the annotation
    /// (does not block) and, from v1.12, emits an InvalidDoNotDisruptAnnotation event.
    Invalid,
}

/// Pod annotation karpenter.sh/do-not-disrupt: "true" -> Forever; a Go duration (v1.12+) counted from `since` -> Until/Elapsed at now; else Invalid.
///
/// `since` must be the pod's `status.startTime` (when the kubelet accepted it, not its
/// creation or container start): Karpenter protects while `now - startTime < duration`.
/// A pod without a startTime stays protected by any valid duration, so a caller
/// lacking it should treat a non-Invalid result as blocking. Values are exact:
/// "True" or " true" are Invalid, as are zero and negative durations. Before v1.12
/// only "true" blocked; a duration there is ignored.
pub fn pod_do_not_disrupt(value: &str, since: DateTime<Utc>, now: DateTime<Utc>) -> DoNotDisrupt {
    if value == "true" {
        return DoNotDisrupt::Forever;
    }
    match parse_go_duration(value) {
        Ok(d) if d > Duration::zero() => match since.checked_add_signed(d) {
            Some(until) if now < until => DoNotDisrupt::Until(until),
            Some(until) => DoNotDisrupt::Elapsed(until),
            None => DoNotDisrupt::Forever,
        },
        _ => DoNotDisrupt::Invalid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_at_once_reads_each_budget_for_the_reasons_it_names() {
        let b = |nodes: &str, schedule: Option<&str>, reasons: Option<&[&str]>| Budget {
            nodes: nodes.into(),
            schedule: schedule.map(Into::into),
            duration: schedule.map(|_| "8h".into()),
            reasons: reasons.map(|r| r.iter().map(|s| s.to_string()).collect()),
        };
        let limits = |set: &[Budget], t: &str| {
            allowed_for_each(Some(set), t.parse().unwrap(), 12, 1).map(|a| (a.allowed, a.limit))
        };
        // Underutilized, Empty, Drifted: 3 for the first two (one unavailable), 1 for drift.
        let split = [
            b("3", None, Some(&["Empty", "Underutilized"])),
            b("1", None, Some(&["Drifted"])),
        ];
        assert_eq!(
            limits(&split, "2026-12-07T10:00:00Z"),
            [(2, Some(3)), (2, Some(3)), (0, Some(1))]
        );
        // 20% of 12 is 3 (rounded up) for all; a window of 0 for Drifted from 09:00 to 17:00.
        let window = [
            b("20%", None, None),
            b("0", Some("0 9 * * *"), Some(&["Drifted"])),
        ];
        assert_eq!(
            limits(&window, "2026-12-07T10:00:00Z"),
            [(2, Some(3)), (2, Some(3)), (0, Some(0))]
        );
        assert_eq!(
            limits(&window, "2026-12-07T20:00:00Z"),
            [(2, Some(3)), (2, Some(3)), (2, Some(3))]
        );
        // A bad budget, even one for another reason, stops every reason.
        let bad = allowed_for_each(
            Some(&[b("x", None, Some(&["Empty"])), b("2", None, None)]),
            Utc::now(),
            12,
            0,
        );
        assert!(
            bad.iter().all(|a| a.allowed == 0 && a.error.is_some()),
            "{bad:?}"
        );
    }

    use chrono::TimeZone;
    use proptest::prelude::*;

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
    }

    /// A kept schedule answers as a fresh parse does, a bad one keeps its error, and
    /// more schedules than are kept still each get their own answer.
    #[test]
    fn kept_schedules_answer_as_parsed_ones() {
        let from = at(2025, 1, 6, 9, 0);
        let next = |r: Result<Cron, String>| r.map(|c| c.find_next_occurrence(&from, false).ok());
        for spec in [
            "0 9 * * MON-FRI",
            "@daily",
            "*/7 * * * *",
            "61 * * * *",
            "@nope",
        ] {
            for _ in 0..3 {
                assert_eq!(next(schedule(spec)), next(parse_schedule(spec)), "{spec}");
            }
        }
        assert!(schedule("61 * * * *")
            .unwrap_err()
            .contains("above maximum"));
        for minute in 0..(SCHEDULES_KEPT + 10) {
            let spec = format!("{} {} * * *", minute % 60, minute / 60 % 24);
            assert_eq!(next(schedule(&spec)), next(parse_schedule(&spec)), "{spec}");
        }
    }

    fn windowed(schedule: &str, duration: &str, nodes: &str) -> Budget {
        Budget {
            nodes: nodes.into(),
            schedule: Some(schedule.into()),
            duration: Some(duration.into()),
            reasons: None,
        }
    }

    fn nodes(n: &str) -> Budget {
        Budget {
            nodes: n.into(),
            ..Budget::default()
        }
    }

    #[test]
    fn business_hours_boundaries() {
        // 2025-01-06 is a Monday.
        let b = windowed("0 9 * * 1-5", "8h", "0");
        let active = |t| is_active(&b, t).unwrap();
        assert!(active(at(2025, 1, 6, 9, 0)));
        assert!(active(at(2025, 1, 6, 16, 59)));
        assert!(active(at(2025, 1, 6, 16, 59) + Duration::seconds(59)));
        assert!(!active(at(2025, 1, 6, 17, 0)));
        assert!(!active(at(2025, 1, 6, 8, 59)));
        assert!(!active(at(2025, 1, 11, 12, 0)), "Saturday");
        assert!(!active(at(2025, 1, 12, 12, 0)), "Sunday");
        assert!(active(at(2025, 1, 10, 12, 0)), "Friday");
        let named = windowed("0 9 * * mon-FRI", "8h", "0");
        assert!(is_active(&named, at(2025, 1, 6, 9, 0)).unwrap());
        assert!(!is_active(&named, at(2025, 1, 11, 9, 0)).unwrap());
    }

    #[test]
    fn descriptors_and_midnight_crossing() {
        let daily = windowed("@daily", "1h", "0");
        assert!(is_active(&daily, at(2025, 3, 4, 0, 0)).unwrap());
        assert!(is_active(&daily, at(2025, 3, 4, 0, 59)).unwrap());
        assert!(!is_active(&daily, at(2025, 3, 4, 1, 0)).unwrap());
        let midnight = windowed("@midnight", "1h", "0");
        assert!(is_active(&midnight, at(2025, 3, 4, 0, 30)).unwrap());
        let weekly = windowed("@weekly", "24h", "0"); // Sundays
        assert!(is_active(&weekly, at(2025, 1, 12, 23, 0)).unwrap());
        assert!(!is_active(&weekly, at(2025, 1, 13, 0, 0)).unwrap());
        // 22:00 to 04:00, across midnight.
        let night = windowed("0 22 * * *", "6h", "0");
        assert!(is_active(&night, at(2025, 3, 4, 23, 30)).unwrap());
        assert!(is_active(&night, at(2025, 3, 5, 3, 59)).unwrap());
        assert!(!is_active(&night, at(2025, 3, 5, 4, 0)).unwrap());
        assert!(!is_active(&night, at(2025, 3, 5, 21, 59)).unwrap());
        // Overlapping hits extend the window: every 30 minutes for 1 hour is always on.
        assert!(is_active(&windowed("*/30 * * * *", "1h", "0"), at(2025, 3, 5, 7, 45)).unwrap());
    }

    #[test]
    fn schedule_edge_cases() {
        let no_duration = Budget {
            schedule: Some("* * * * *".into()),
            ..Budget::default()
        };
        assert_eq!(is_active(&no_duration, at(2025, 1, 1, 0, 0)), Ok(false));
        let no_schedule = Budget {
            duration: Some("1h".into()),
            ..Budget::default()
        };
        assert!(is_active(&no_schedule, at(2025, 1, 1, 0, 0)).is_err());
        // Never fires: robfig returns the zero time, which Karpenter reads as active.
        assert_eq!(
            is_active(&windowed("0 0 31 2 *", "1h", "0"), at(2025, 1, 1, 0, 0)),
            Ok(true)
        );
        // "N/step" is "N-max/step".
        let stepped = windowed("5/20 * * * *", "1m", "0");
        assert!(is_active(&stepped, at(2025, 1, 1, 3, 25)).unwrap());
        assert!(!is_active(&stepped, at(2025, 1, 1, 3, 20)).unwrap());
        // Day-of-month and day-of-week both restricted: either matches.
        let either = windowed("0 0 1 * 1", "1h", "0");
        assert!(
            is_active(&either, at(2025, 1, 6, 0, 0)).unwrap(),
            "a Monday"
        );
        assert!(is_active(&either, at(2025, 2, 1, 0, 0)).unwrap(), "the 1st");
        assert!(!is_active(&either, at(2025, 1, 7, 0, 0)).unwrap());
        assert!(is_active(&windowed("0 9 ? * 1", "1h", "0"), at(2025, 1, 6, 9, 0)).unwrap());
        // A day field written `*/1`, or a list with `*` in it, is a star to robfig: both
        // day fields must match (weekdays only here; 2025-01-04 is a Saturday).
        let (saturday, monday) = (at(2025, 1, 4, 10, 0), at(2025, 1, 6, 10, 0));
        for spec in ["0 9 */1 * MON-FRI", "0 9 1,* * MON-FRI"] {
            let w = windowed(spec, "8h", "0");
            assert!(!is_active(&w, saturday).unwrap(), "{spec}");
            assert!(is_active(&w, monday).unwrap(), "{spec}");
        }
        // Every weekday and every day of the month: every day.
        assert!(is_active(&windowed("0 9 * * 1-5,*/1", "8h", "0"), saturday).unwrap());
        // A step over 1 is no star: either field matches (the 1st, 3rd, ... or a Monday).
        let odd_days = windowed("0 9 */2 * MON", "1h", "0");
        assert!(
            is_active(&odd_days, at(2025, 1, 6, 9, 0)).unwrap(),
            "a Monday"
        );
        assert!(
            is_active(&odd_days, at(2025, 1, 3, 9, 0)).unwrap(),
            "the 3rd"
        );
        for bad in [
            "",
            "@every 1h",
            "@DAILY",
            "0 9 * *",
            "0 0 9 * * 1",
            "0 9 * * 7",
            "0 9 L * *",
            "0 9 * * 1#2",
            "0 9 * * +1",
            "0 9 15W * *",
            "0 9 JAN * MON",
            "0 25 * * *",
            "*/0 * * * *",
            "0 9 * * 1-5/x",
            // Empty items: robfig fails to parse them; croner searched forever.
            ", * * * *",
            "0 , * * 0",
            "0 4 * * ,",
            "/5 * * * *",
            "5-1 * * * *",
            "1-2-3 * * * *",
            "*/5/2 * * * *",
            "-1 * * * *",
            "0 0 0 * *",
            "0 0 * 13 *",
        ] {
            assert!(
                is_active(&windowed(bad, "1h", "0"), at(2025, 1, 1, 0, 0)).is_err(),
                "{bad:?}"
            );
        }
        assert!(is_active(&windowed("0 9 * * 1", "8 hours", "0"), at(2025, 1, 1, 0, 0)).is_err());
    }

    #[test]
    fn percent_rounds_up() {
        assert_eq!(budget_nodes(&nodes("10%"), 5), Ok(1));
        assert_eq!(budget_nodes(&nodes("10%"), 11), Ok(2));
        assert_eq!(budget_nodes(&nodes("10%"), 10), Ok(1));
        assert_eq!(budget_nodes(&nodes("10%"), 0), Ok(0));
        assert_eq!(budget_nodes(&nodes("0%"), 50), Ok(0));
        assert_eq!(budget_nodes(&nodes("100%"), 7), Ok(7));
        assert_eq!(budget_nodes(&nodes("3"), 100), Ok(3));
        assert_eq!(budget_nodes(&nodes("+3"), 1), Ok(3));
        for bad in [
            "",
            "%",
            "ten",
            "1.5",
            "10.5%",
            "-1",
            "-5%",
            " 1",
            "99999999999999999999999",
        ] {
            assert!(budget_nodes(&nodes(bad), 10).is_err(), "{bad:?}");
        }
        assert!(budget_nodes(&nodes("-1"), 1)
            .unwrap_err()
            .contains("negative"));
    }

    #[test]
    fn default_budget() {
        let now = at(2025, 1, 1, 0, 0);
        let a = allowed_disruptions(None, DisruptionReason::Drifted, now, 25, 0);
        assert_eq!(
            a,
            Allowed {
                allowed: 3,
                limit: Some(3),
                active_budget: Some(0),
                error: None
            }
        );
        let empty = allowed_disruptions(Some(&[]), DisruptionReason::Drifted, now, 25, 2);
        assert_eq!((empty.allowed, empty.limit), (UNBOUNDED - 2, None));
    }

    #[test]
    fn reasons_filter_and_minimum() {
        let now = at(2025, 1, 6, 10, 0); // Monday, inside business hours
        let budgets = [
            nodes("20%"),
            Budget {
                reasons: Some(vec!["Drifted".into()]),
                ..nodes("1")
            },
            Budget {
                reasons: Some(vec!["Empty".into(), "Underutilized".into()]),
                ..windowed("0 9 * * 1-5", "8h", "0")
            },
            Budget {
                reasons: Some(vec![]),
                ..nodes("0")
            },
        ];
        let drift = allowed_disruptions(Some(&budgets), DisruptionReason::Drifted, now, 20, 0);
        assert_eq!((drift.allowed, drift.active_budget), (1, Some(1)));
        let empty = allowed_disruptions(Some(&budgets), DisruptionReason::Empty, now, 20, 0);
        assert_eq!(
            (empty.allowed, empty.limit, empty.active_budget),
            (0, Some(0), Some(2))
        );
        let evening = allowed_disruptions(
            Some(&budgets),
            DisruptionReason::Underutilized,
            at(2025, 1, 6, 18, 0),
            20,
            0,
        );
        assert_eq!((evening.allowed, evening.active_budget), (4, Some(0)));
        // Only budgets for other reasons: unbounded.
        let other = [Budget {
            reasons: Some(vec!["Empty".into()]),
            ..nodes("0")
        }];
        let drift = allowed_disruptions(Some(&other), DisruptionReason::Drifted, now, 20, 0);
        assert_eq!((drift.limit, drift.active_budget), (None, None));
        // Equal minimums keep the first budget.
        let tie = allowed_disruptions(
            Some(&[nodes("2"), nodes("10%")]),
            DisruptionReason::Empty,
            now,
            20,
            0,
        );
        assert_eq!(tie.active_budget, Some(0));
    }

    #[test]
    fn unavailable_nodes_are_subtracted() {
        let now = at(2025, 1, 1, 0, 0);
        let budgets = [nodes("3")];
        let a = allowed_disruptions(Some(&budgets), DisruptionReason::Empty, now, 10, 2);
        assert_eq!((a.allowed, a.limit), (1, Some(3)));
        let a = allowed_disruptions(Some(&budgets), DisruptionReason::Empty, now, 10, 5);
        assert_eq!((a.allowed, a.limit), (0, Some(3)));
    }

    #[test]
    fn misconfigured_budget_fails_closed() {
        let now = at(2025, 1, 1, 0, 0);
        let budgets = [
            nodes("5"),
            Budget {
                reasons: Some(vec!["Drifted".into()]),
                ..windowed("0 9 * * 8", "1h", "0")
            },
        ];
        // The bad budget names only Drifted, yet Empty is blocked too, as in Karpenter.
        let a = allowed_disruptions(Some(&budgets), DisruptionReason::Empty, now, 10, 0);
        assert_eq!((a.allowed, a.limit, a.active_budget), (0, Some(0), Some(1)));
        assert!(a
            .error
            .as_deref()
            .unwrap()
            .starts_with("budget 1: invalid schedule"));
        let bad_nodes =
            allowed_disruptions(Some(&[nodes("lots")]), DisruptionReason::Empty, now, 10, 0);
        assert_eq!(bad_nodes.allowed, 0);
        assert!(bad_nodes.error.unwrap().contains("lots"));
        // An inactive budget's nodes are never read.
        let inactive = [windowed("0 9 * * 1", "1h", "lots")];
        let a = allowed_disruptions(Some(&inactive), DisruptionReason::Empty, now, 10, 0);
        assert_eq!((a.limit, a.error), (None, None));
    }

    #[test]
    fn serde_shape() {
        let b: Budget = serde_json::from_str(r#"{"schedule":"@daily","duration":"1h"}"#).unwrap();
        assert_eq!(b.nodes, "10%");
        let b: Budget = serde_json::from_str(r#"{"nodes":0,"reasons":["Drifted"]}"#).unwrap();
        assert_eq!(
            (b.nodes.as_str(), b.reasons.as_deref()),
            ("0", Some(&["Drifted".to_string()][..]))
        );
        assert_eq!(
            serde_json::to_string(&nodes("5")).unwrap(),
            r#"{"nodes":"5"}"#
        );
        assert_eq!(DisruptionReason::Underutilized.to_string(), "Underutilized");
        assert_eq!(
            serde_json::to_string(&DisruptionReason::Drifted).unwrap(),
            r#""Drifted""#
        );
        let a = Allowed {
            allowed: 1,
            limit: None,
            active_budget: None,
            error: None,
        };
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            r#"{"allowed":1,"limit":null,"activeBudget":null,"error":null}"#
        );
    }

    #[test]
    fn do_not_disrupt() {
        let start = at(2025, 1, 1, 12, 0);
        let now = at(2025, 1, 1, 12, 30);
        assert_eq!(
            pod_do_not_disrupt("true", start, now),
            DoNotDisrupt::Forever
        );
        assert_eq!(
            pod_do_not_disrupt("1h", start, now),
            DoNotDisrupt::Until(at(2025, 1, 1, 13, 0))
        );
        assert_eq!(
            pod_do_not_disrupt("30m", start, now),
            DoNotDisrupt::Elapsed(now)
        );
        assert_eq!(
            pod_do_not_disrupt("10m", start, now),
            DoNotDisrupt::Elapsed(at(2025, 1, 1, 12, 10))
        );
        for bad in ["True", "false", "", " true", "0s", "-5m", "5", "1d", "yes"] {
            assert_eq!(
                pod_do_not_disrupt(bad, start, now),
                DoNotDisrupt::Invalid,
                "{bad:?}"
            );
        }
    }

    proptest! {
        #[test]
        fn budget_evaluation_never_panics(
            nodes in "\\PC{0,12}",
            schedule in proptest::option::of("[0-9*?,/@a-zA-Z# +-]{0,24}"),
            duration in proptest::option::of("\\PC{0,10}"),
            total in 0usize..100_000,
            unavailable in 0usize..1000,
            minute in 0i64..600_000,
        ) {
            let now = at(2024, 1, 1, 0, 0) + Duration::minutes(minute);
            let budget = Budget { nodes, schedule, duration, reasons: None };
            let _ = budget_nodes(&budget, total);
            let a = allowed_disruptions(Some(&[budget]), DisruptionReason::Drifted, now, total, unavailable);
            prop_assert!(a.error.is_none() || a.allowed == 0);
            prop_assert!(a.allowed <= UNBOUNDED);
        }

        /// Five well-formed-looking fields: every one either fails to parse (and the budget
        /// fails closed) or answers at once; an empty set used to spin for minutes.
        #[test]
        fn every_five_field_schedule_answers(
            fields in proptest::collection::vec("[0-9*?,/-]{1,6}", 5),
            minute in 0i64..600_000,
        ) {
            let now = at(2024, 1, 1, 0, 0) + Duration::minutes(minute);
            let budget = windowed(&fields.join(" "), "1h", "1");
            let a = allowed_disruptions(Some(&[budget]), DisruptionReason::Drifted, now, 10, 0);
            prop_assert!(a.error.is_none() || a.allowed == 0);
        }

        #[test]
        fn percent_never_below_exact_share(p in 0u32..=100, total in 0usize..10_000) {
            let n = budget_nodes(&nodes(&format!("{p}%")), total).unwrap();
            prop_assert!(n as f64 >= p as f64 * total as f64 / 100.0);
            prop_assert!((n as f64) < p as f64 * total as f64 / 100.0 + 1.0);
        }

        #[test]
        fn do_not_disrupt_never_panics(v in "\\PC{0,16}", offset in -1_000_000i64..1_000_000) {
            let now = at(2025, 1, 1, 0, 0);
            let _ = pod_do_not_disrupt(&v, now + Duration::seconds(offset), now);
        }
    }
}
