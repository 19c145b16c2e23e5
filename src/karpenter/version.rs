//! Which Karpenter release kelp judges: a release as Karpenter tags it, what a cluster
//! says about it (an exact release, or a bound from its CRDs), the support window, and
//! the rules that changed between releases.
//!
//! How the version is found is analysis' (`analysis::version`); this module knows how to
//! read a tag, what a detection says, and what each release does.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};

/// A Karpenter release, `v1.15.0` (a `v` or not, as image tags and `karpenter_build_info`
/// write it; a pre-release like `v1.15.0-rc.1` sorts before its release).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Release(semver::Version);

/// The oldest minor kelp is tested against: v1.9, Karpenter's long-term support release.
pub const OLDEST: Release = Release::new(1, 9, 0);
/// The newest release kelp knows the rules of.
pub const NEWEST: Release = Release::new(1, 15, 0);
/// Every minor in the window, oldest first, as `testenv` builds each (its newest patch on
/// the Go module proxy when kelp was last tested).
pub const TESTED: [Release; 4] = [
    Release::new(1, 9, 0),
    Release::new(1, 12, 1),
    Release::new(1, 14, 3),
    Release::new(1, 15, 0),
];

impl Release {
    pub const fn new(major: u64, minor: u64, patch: u64) -> Release {
        Release(semver::Version {
            major,
            minor,
            patch,
            pre: semver::Prerelease::EMPTY,
            build: semver::BuildMetadata::EMPTY,
        })
    }
    pub fn major(&self) -> u64 {
        self.0.major
    }
    pub fn minor(&self) -> u64 {
        self.0.minor
    }
    /// The release an image runs, from its tag: `public.ecr.aws/karpenter/controller:1.15.0@sha256:...`
    /// says v1.15.0. None for a digest alone, `latest`, or a tag that is no release.
    pub fn from_image(image: &str) -> Option<Release> {
        let image = image.split('@').next().unwrap_or_default();
        // The tag follows the last ':' after the last '/' (a registry may carry a port).
        let last = image.rsplit('/').next().unwrap_or_default();
        let (_, tag) = last.rsplit_once(':')?;
        tag.parse().ok()
    }
    /// Where this release stands against the window kelp is tested in.
    pub fn window(&self) -> Window {
        let minor = |r: &Release| (r.0.major, r.0.minor);
        if minor(self) < minor(&OLDEST) {
            Window::Older
        } else if minor(self) > minor(&NEWEST) {
            Window::Newer
        } else {
            Window::Supported
        }
    }
    /// `v1.15`, the minor alone.
    pub fn minor_name(&self) -> String {
        format!("v{}.{}", self.0.major, self.0.minor)
    }
    fn at_least(&self, major: u64, minor: u64) -> bool {
        (self.0.major, self.0.minor) >= (major, minor)
    }
}

impl PartialOrd for Release {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Release {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.cmp_precedence(&other.0)
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.0)
    }
}

impl Serialize for Release {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Why a text is not a Karpenter release.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a Karpenter release (write it as v1.15.0, or 1.15)")]
pub struct BadRelease(String);

impl FromStr for Release {
    type Err = BadRelease;
    /// `v1.15.0`, `1.15.0`, `v1.15.0-rc.1`, or a minor alone (`1.15`, read as its `.0`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadRelease(s.to_string());
        let t = s.trim();
        let t = t.strip_prefix('v').unwrap_or(t);
        let full = if t
            .split(['-', '+'])
            .next()
            .unwrap_or_default()
            .matches('.')
            .count()
            == 1
        {
            format!("{t}.0")
        } else {
            t.to_string()
        };
        let v = semver::Version::parse(&full).map_err(|_| bad())?;
        // Karpenter v1 is all kelp speaks; v0.x had other APIs (and other kelp findings).
        if v.major != 1 {
            return Err(bad());
        }
        Ok(Release(v))
    }
}

/// Where a release stands against the tested window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Window {
    Supported,
    Older,
    Newer,
}

impl Window {
    pub fn as_str(self) -> &'static str {
        match self {
            Window::Supported => "supported",
            Window::Older => "older",
            Window::Newer => "newer",
        }
    }
}

/// What a cluster says about its Karpenter: a release, or only a bound (its CRDs carry no
/// version, but a field or an enum value that only some releases have).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Known {
    /// This release exactly.
    Exact(Release),
    /// This release or a newer one.
    AtLeast(Release),
    /// Some patch of this release's minor.
    Minor(Release),
    /// Older than this release (and v1: kelp reads karpenter.sh/v1).
    Before(Release),
}

impl Known {
    /// Where it stands against the window: `Before` the oldest is older; a bound inside is
    /// supported as far as kelp can tell.
    pub fn window(&self) -> Window {
        match self {
            Known::Exact(r) | Known::AtLeast(r) | Known::Minor(r) => r.window(),
            Known::Before(r) if r <= &OLDEST => Window::Older,
            Known::Before(_) => Window::Supported,
        }
    }
}

impl fmt::Display for Known {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Known::Exact(r) => write!(f, "{r}"),
            Known::AtLeast(r) => write!(f, "{} or newer", r.minor_name()),
            Known::Minor(r) => write!(f, "{}", r.minor_name()),
            Known::Before(r) => write!(f, "older than {}", r.minor_name()),
        }
    }
}

impl Serialize for Known {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Where a detected version came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    Image,
    Metrics,
    Crd,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Image => "image",
            Source::Metrics => "metrics",
            Source::Crd => "crd",
        }
    }
}

/// The release kelp judges, and why it thinks so.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Detected {
    /// `v1.15.0`, `v1.15 or newer`, `older than v1.14`.
    pub version: Known,
    pub source: Source,
    /// What was read: the image and its pod, the metric, or the CRD field.
    pub evidence: String,
    pub window: Window,
}

impl Detected {
    /// Whether it lies outside the window kelp is tested in.
    pub fn untested(&self) -> bool {
        self.window != Window::Supported
    }
}

// ------------------------------------------------------------------ the rules that changed

/// Whether the NodePool CRD requires `spec.disruption.consolidateAfter` once
/// `spec.disruption` is written: up to v1.14 it does (the API server rejects a NodePool
/// without it); from v1.15 it is optional and defaulted to `0s`.
pub fn consolidate_after_required(r: &Release) -> bool {
    !r.at_least(1, 15)
}

/// Whether budgets know the `Unhealthy` reason, and node repair runs as a disruption
/// method under them when its feature gate is on (v1.15 on).
pub fn has_unhealthy_budgets(r: &Release) -> bool {
    r.at_least(1, 15)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> Release {
        s.parse().unwrap()
    }

    #[test]
    fn releases_are_read_as_karpenter_tags_them() {
        assert_eq!(r("v1.15.0"), Release::new(1, 15, 0));
        assert_eq!(r("1.15.0"), Release::new(1, 15, 0));
        assert_eq!(r(" 1.9 "), Release::new(1, 9, 0));
        assert_eq!(r("v1.15.0").to_string(), "v1.15.0");
        assert!(r("v1.15.0-rc.1") < r("v1.15.0"));
        assert!(r("v1.9.0") < r("v1.12.1"));
        for bad in [
            "",
            "latest",
            "unspecified",
            "v0.37.0",
            "2.0.0",
            "1",
            "v1.x",
            "1.15.0.1",
        ] {
            let e = bad.parse::<Release>().unwrap_err();
            assert!(
                e.to_string().contains("is not a Karpenter release"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn an_image_tag_names_its_release() {
        let cases = [
            (
                "public.ecr.aws/karpenter/controller:1.15.0@sha256:abc",
                Some("v1.15.0"),
            ),
            (
                "registry.local:5000/karpenter/controller:v1.9.0",
                Some("v1.9.0"),
            ),
            ("registry.local:5000/karpenter/controller", None),
            ("karpenter/controller@sha256:abc", None),
            ("karpenter/controller:latest", None),
            ("controller:1.14.3", Some("v1.14.3")),
        ];
        for (image, want) in cases {
            let got = Release::from_image(image).map(|r| r.to_string());
            assert_eq!(got.as_deref(), want, "{image}");
        }
    }

    #[test]
    fn the_window_runs_from_the_lts_to_the_newest_known() {
        assert_eq!(r("1.8.2").window(), Window::Older);
        assert_eq!(r("1.9.0").window(), Window::Supported);
        assert_eq!(r("1.15.9").window(), Window::Supported);
        assert_eq!(r("1.16.0").window(), Window::Newer);
        assert_eq!(Known::Before(r("1.14")).window(), Window::Supported);
        assert_eq!(Known::Before(r("1.9")).window(), Window::Older);
        assert_eq!(Known::AtLeast(r("1.15")).window(), Window::Supported);
        assert!(TESTED.iter().all(|t| t.window() == Window::Supported));
        assert_eq!(TESTED.last(), Some(&NEWEST));
    }

    #[test]
    fn bounds_say_what_they_know() {
        assert_eq!(Known::AtLeast(r("1.15")).to_string(), "v1.15 or newer");
        assert_eq!(Known::Before(r("1.14")).to_string(), "older than v1.14");
        assert_eq!(Known::Minor(r("1.14")).to_string(), "v1.14");
        assert_eq!(Known::Minor(r("1.16")).window(), Window::Newer);
    }

    #[test]
    fn consolidate_after_is_required_until_v1_15() {
        assert!(consolidate_after_required(&r("1.9.0")));
        assert!(consolidate_after_required(&r("1.14.3")));
        assert!(!consolidate_after_required(&r("1.15.0")));
        assert!(!has_unhealthy_budgets(&r("1.14.3")) && has_unhealthy_budgets(&r("1.15.0")));
    }
}
