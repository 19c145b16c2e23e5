//! Which Karpenter release the cluster runs, from the best evidence the model holds, and
//! the finding for a release outside the window kelp is tested in.
//!
//! The evidence, best first:
//! 1. the controller pods' image tag (`public.ecr.aws/karpenter/controller:1.15.0@sha256:...`);
//! 2. the controller's `karpenter_build_info{version}` (exact too, but only where kelp reads
//!    the controller's metrics, and only in builds that stamp it);
//! 3. the NodePool CRD's schema: not a release, a bound (a default or an enum value that
//!    only some releases have).

use crate::findings::{Code, Finding, KarpenterInfo, ObjectRef, Severity};
use crate::karpenter::version::{Detected, Known, Release, Source, Window, NEWEST, OLDEST};
use crate::model::{Cluster, ObjectKind};

/// The best evidence of the release the cluster runs; None when there is none.
pub fn detect(c: &Cluster) -> Option<Detected> {
    from_image(c)
        .or_else(|| from_metrics(c))
        .or_else(|| from_crd(c))
        .map(|(version, source, evidence)| Detected {
            window: version.window(),
            version,
            source,
            evidence,
        })
}

type Evidence = (Known, Source, String);

fn from_image(c: &Cluster) -> Option<Evidence> {
    // Every running controller pod's release: mid-upgrade two may differ, and the newest
    // is the one the rest become.
    let mut seen: Vec<(Release, String)> = c
        .controller_pods()
        .filter(|p| p.active())
        .filter_map(|p| {
            let images = || p.spec.containers.iter();
            // The chart names its container `controller`; else any that carries a release.
            let c = images()
                .find(|c| c.name == "controller")
                .filter(|c| Release::from_image(&c.image).is_some())
                .or_else(|| images().find(|c| Release::from_image(&c.image).is_some()))?;
            let pod = format!(
                "{}/{}",
                p.metadata.namespace.as_deref().unwrap_or_default(),
                p.metadata.name
            );
            // The digest says nothing a person reads.
            let image = c.image.split('@').next().unwrap_or_default();
            Some((
                Release::from_image(&c.image)?,
                format!("controller image {image} of pod {pod}"),
            ))
        })
        .collect();
    seen.sort();
    let (newest, evidence) = seen.last()?.clone();
    let oldest = &seen[0].0;
    let evidence = if *oldest != newest {
        format!("{evidence} (other controller pods run {oldest}: an upgrade in progress?)")
    } else {
        evidence
    };
    Some((Known::Exact(newest), Source::Image, evidence))
}

fn from_metrics(c: &Cluster) -> Option<Evidence> {
    let v = c.metrics.as_ref()?.build_version.as_deref()?;
    let release = v.parse::<Release>().ok()?;
    Some((
        Known::Exact(release),
        Source::Metrics,
        format!("karpenter_build_info{{version=\"{v}\"}}"),
    ))
}

fn from_crd(c: &Cluster) -> Option<Evidence> {
    let crd = c.crds.get("nodepools.karpenter.sh")?;
    let v1 = crd.spec.versions.iter().find(|v| v.name == "v1")?;
    let s = &v1.schema;
    let has = |list: &[String], value: &str| list.iter().any(|v| v == value);
    let (known, field) = if let Some(d) = &s.consolidate_after_default {
        (
            Known::AtLeast(Release::new(1, 15, 0)),
            format!("spec.disruption.consolidateAfter defaults to {d}"),
        )
    } else if has(&s.budget_reasons, "Unhealthy") {
        (
            Known::AtLeast(Release::new(1, 15, 0)),
            "budget reasons include Unhealthy".to_string(),
        )
    } else if has(&s.consolidation_policies, "Balanced") {
        (
            Known::Minor(Release::new(1, 14, 0)),
            "consolidationPolicy allows Balanced, and consolidateAfter has no default".to_string(),
        )
    } else if !s.consolidation_policies.is_empty() {
        (
            Known::Before(Release::new(1, 14, 0)),
            "consolidationPolicy has no Balanced".to_string(),
        )
    } else {
        return None;
    };
    Some((known, Source::Crd, format!("the NodePool CRD: {field}")))
}

/// One info finding when the release is outside the window kelp is tested in.
pub fn findings(info: &KarpenterInfo) -> Vec<Finding> {
    let Some(d) = &info.version else {
        return Vec::new();
    };
    let (side, stale) = match d.window {
        Window::Supported => return Vec::new(),
        Window::Older => (
            format!("older than {}, the oldest release kelp is tested against", OLDEST.minor_name()),
            "kelp reads the rules of its oldest tested release: event texts, DisruptionBlocked reasons and consolidation answers that changed since may be misread",
        ),
        Window::Newer => (
            format!("newer than {}, the newest release kelp knows", NEWEST.minor_name()),
            "kelp reads the rules of the newest release it knows: new event reasons, budget reasons and disruption methods are not read, and changed messages may be misread",
        ),
    };
    vec![Finding::new(
        Code::KarpenterVersionUntested,
        Severity::Info,
        ObjectRef::cluster(
            ObjectKind::CustomResourceDefinition,
            "nodepools.karpenter.sh",
        ),
        format!(
            "Karpenter {} ({}) is {side}: {stale}. kelp is tested against {} to {}",
            d.version,
            d.evidence,
            OLDEST.minor_name(),
            NEWEST.minor_name()
        ),
    )
    .details(serde_json::json!({
        "version": d.version,
        "source": d.source,
        "window": d.window,
    }))]
}
