//! A small, offline picture of the EC2 instance types Karpenter's AWS provider can launch,
//! enough to estimate how many types and families a NodePool's requirements leave. It is
//! deliberately approximate: common families of generations 2 to 8 with their usual sizes
//! and vCPU counts (a size's vCPUs follow AWS's pattern: large 2, xlarge 4, Nxlarge 4N;
//! metal as the largest size). Regions, offerings and memory are unknown offline, so a
//! count is an upper bound for requirements on keys this table does not know.

use std::collections::BTreeSet;

use crate::karpenter::requirements::{Requirement, Requirements};

pub const INSTANCE_TYPE: &str = "node.kubernetes.io/instance-type";
pub const FAMILY: &str = "karpenter.k8s.aws/instance-family";
pub const CATEGORY: &str = "karpenter.k8s.aws/instance-category";
pub const GENERATION: &str = "karpenter.k8s.aws/instance-generation";
pub const SIZE: &str = "karpenter.k8s.aws/instance-size";
pub const CPU: &str = "karpenter.k8s.aws/instance-cpu";
pub const ARCH: &str = "kubernetes.io/arch";

const T: &[&str] = &[
    "nano", "micro", "small", "medium", "large", "xlarge", "2xlarge",
];
const STD5: &[&str] = &[
    "large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "metal",
];
const STD6: &[&str] = &[
    "large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge",
    "32xlarge", "metal",
];
const STD7: &[&str] = &[
    "large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge",
    "48xlarge", "metal",
];
const GRAVITON: &[&str] = &[
    "medium", "large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "metal",
];
const GRAVITON4: &[&str] = &[
    "medium", "large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge",
    "24xlarge", "48xlarge", "metal",
];
const FLEX: &[&str] = &["large", "xlarge", "2xlarge", "4xlarge", "8xlarge"];
const GEN4: &[&str] = &[
    "large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge",
];
const GEN3: &[&str] = &["medium", "large", "xlarge", "2xlarge", "4xlarge", "8xlarge"];
const STORAGE: &[&str] = &[
    "large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge", "metal",
];
const DENSE: &[&str] = &["xlarge", "2xlarge", "4xlarge", "8xlarge"];
const GPU: &[&str] = &[
    "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge",
];
const HUGE: &[&str] = &["24xlarge", "48xlarge"];
const X: &[&str] = &["16xlarge", "32xlarge"];

/// Family name and its sizes.
const FAMILIES: &[(&str, &[&str])] = &[
    // burstable
    ("t2", T),
    ("t3", T),
    ("t3a", T),
    ("t4g", T),
    // general purpose
    ("m3", GEN3),
    ("m4", GEN4),
    ("m5", STD5),
    ("m5a", STD5),
    ("m5ad", STD5),
    ("m5d", STD5),
    ("m5dn", STD5),
    ("m5n", STD5),
    ("m5zn", STD5),
    ("m6a", STD7),
    ("m6g", GRAVITON),
    ("m6gd", GRAVITON),
    ("m6i", STD6),
    ("m6id", STD6),
    ("m6idn", STD6),
    ("m6in", STD6),
    ("m7a", STD7),
    ("m7g", GRAVITON),
    ("m7gd", GRAVITON),
    ("m7i", STD7),
    ("m7i-flex", FLEX),
    ("m8g", GRAVITON4),
    // compute optimised
    ("c3", GEN3),
    ("c4", GEN4),
    ("c5", STD5),
    ("c5a", STD5),
    ("c5ad", STD5),
    ("c5d", STD5),
    ("c5n", STD5),
    ("c6a", STD7),
    ("c6g", GRAVITON),
    ("c6gd", GRAVITON),
    ("c6gn", GRAVITON),
    ("c6i", STD6),
    ("c6id", STD6),
    ("c6in", STD6),
    ("c7a", STD7),
    ("c7g", GRAVITON),
    ("c7gd", GRAVITON),
    ("c7gn", GRAVITON),
    ("c7i", STD7),
    ("c7i-flex", FLEX),
    ("c8g", GRAVITON4),
    // memory optimised
    ("r3", GEN3),
    ("r4", GEN4),
    ("r5", STD5),
    ("r5a", STD5),
    ("r5ad", STD5),
    ("r5b", STD5),
    ("r5d", STD5),
    ("r5dn", STD5),
    ("r5n", STD5),
    ("r6a", STD7),
    ("r6g", GRAVITON),
    ("r6gd", GRAVITON),
    ("r6i", STD6),
    ("r6id", STD6),
    ("r6idn", STD6),
    ("r6in", STD6),
    ("r7a", STD7),
    ("r7g", GRAVITON),
    ("r7gd", GRAVITON),
    ("r7i", STD7),
    ("r7iz", STD6),
    ("r8g", GRAVITON4),
    ("x1", X),
    ("x1e", X),
    ("x2gd", GRAVITON),
    ("x2idn", HUGE),
    ("x2iedn", STD6),
    ("z1d", STORAGE),
    // storage optimised
    ("d2", DENSE),
    ("d3", DENSE),
    ("d3en", DENSE),
    ("i3", STORAGE),
    ("i3en", STORAGE),
    ("i4g", STORAGE),
    ("i4i", STD6),
    ("im4gn", STORAGE),
    ("is4gen", STORAGE),
    // accelerated
    ("g4ad", GPU),
    ("g4dn", GPU),
    ("g5", GPU),
    ("g5g", GPU),
    ("g6", GPU),
    ("g6e", GPU),
    ("inf1", GPU),
    ("inf2", GPU),
    ("p3", GPU),
    ("p4d", HUGE),
    ("p5", HUGE),
    ("trn1", HUGE),
];

/// Xen-era families outside c, m and r that `old-generation-allowed` flags too.
const XEN_ERA: &[&str] = &["t2", "d2", "i3", "x1", "x1e"];

/// Whether a family counts as old generation: compute, general-purpose and memory families
/// of generation 4 or older (c3, c4, m3, m4, r3, r4), and the Xen-era t2, d2, i3, x1 and x1e.
/// The generation digit means little across categories (i4i, d3 and x2gd are current), so
/// other families are left alone, accelerated ones included.
pub fn is_old(family: &str) -> bool {
    XEN_ERA.contains(&family)
        || split_family(family).is_some_and(|(c, g, _)| g <= 4 && matches!(c, "c" | "m" | "r"))
}

/// One instance type as the catalog knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceType {
    pub name: String,
    pub family: &'static str,
    pub category: String,
    pub generation: u32,
    pub size: &'static str,
    pub cpu: u32,
    pub arch: &'static str,
}

/// `m7gd` -> (`m`, 7, `gd`).
pub fn split_family(family: &str) -> Option<(&str, u32, &str)> {
    let digits_at = family.find(|c: char| c.is_ascii_digit())?;
    let (category, rest) = family.split_at(digits_at);
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let generation = rest[..digits].parse().ok()?;
    (!category.is_empty()).then_some((category, generation, &rest[digits..]))
}

fn cpus(category: &str, size: &str, sizes: &[&str]) -> u32 {
    match size {
        "nano" | "micro" | "small" => 2,
        "medium" if category == "t" => 2,
        "medium" => 1,
        "large" => 2,
        "xlarge" => 4,
        "metal" => sizes
            .iter()
            .filter(|s| **s != "metal")
            .map(|s| cpus(category, s, sizes))
            .max()
            .unwrap_or(0),
        other => other
            .strip_suffix("xlarge")
            .and_then(|n| n.parse::<u32>().ok())
            .map_or(0, |n| n * 4),
    }
}

/// Every instance type in the catalog.
pub fn all() -> Vec<InstanceType> {
    let mut out = Vec::new();
    for (family, sizes) in FAMILIES {
        let Some((category, generation, suffix)) = split_family(family) else {
            continue;
        };
        // Graviton families carry a `g` right after the generation (m7g, c6gn, x2gd, g5g).
        let arch = if suffix.starts_with('g') {
            "arm64"
        } else {
            "amd64"
        };
        for size in *sizes {
            out.push(InstanceType {
                name: format!("{family}.{size}"),
                family,
                category: category.to_string(),
                generation,
                size,
                cpu: cpus(category, size, sizes),
                arch,
            });
        }
    }
    out
}

pub fn known_family(family: &str) -> bool {
    FAMILIES.iter().any(|(f, _)| *f == family)
}

/// What a NodePool's requirements leave of the catalog.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Space {
    /// Catalog types the requirements allow.
    pub types: Vec<InstanceType>,
    /// Instance types the pool lists that the catalog does not know (counted as allowed).
    pub extra_types: BTreeSet<String>,
    /// Families the pool lists that the catalog does not know (their sizes are unknown).
    pub extra_families: BTreeSet<String>,
    /// The pool lists a category or generation the catalog does not know: counts are
    /// lower bounds and kelp says nothing about "too few".
    pub uncertain: bool,
}

impl Space {
    /// Evaluate `reqs` (the pool's parsed requirements) against the catalog; `raw` are the
    /// requirements as written, for the values of `In` lists.
    pub fn of(reqs: &Requirements, raw: &[Requirement]) -> Space {
        let catalog = all();
        let listed = |key: &str| -> Vec<&String> {
            raw.iter()
                .filter(|r| r.key == key && r.operator == "In")
                .flat_map(|r| &r.values)
                .collect()
        };
        let allowed = |t: &InstanceType| {
            reqs.allows(INSTANCE_TYPE, &t.name)
                && reqs.allows(FAMILY, t.family)
                && reqs.allows(CATEGORY, &t.category)
                && reqs.allows(GENERATION, &t.generation.to_string())
                && reqs.allows(SIZE, t.size)
                && reqs.allows(CPU, &t.cpu.to_string())
                && reqs.allows(ARCH, t.arch)
        };
        let types: Vec<InstanceType> = catalog.iter().filter(|t| allowed(t)).cloned().collect();
        let family_ok = |f: &str| {
            reqs.allows(FAMILY, f)
                && split_family(f).is_none_or(|(c, g, _)| {
                    reqs.allows(CATEGORY, c) && reqs.allows(GENERATION, &g.to_string())
                })
        };
        let extra_types = listed(INSTANCE_TYPE)
            .into_iter()
            .filter(|n| !catalog.iter().any(|t| &t.name == *n))
            .filter(|n| family_ok(n.split('.').next().unwrap_or(n)))
            .cloned()
            .collect();
        let extra_families = listed(FAMILY)
            .into_iter()
            .filter(|f| !known_family(f) && family_ok(f))
            .cloned()
            .collect();
        let uncertain = listed(CATEGORY)
            .iter()
            .any(|c| !catalog.iter().any(|t| &&t.category == c))
            || listed(GENERATION)
                .iter()
                .any(|g| !catalog.iter().any(|t| t.generation.to_string() == **g));
        Space {
            types,
            extra_types,
            extra_families,
            uncertain,
        }
    }

    /// Distinct families allowed.
    pub fn families(&self) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = self.types.iter().map(|t| t.family.to_string()).collect();
        out.extend(self.extra_families.iter().cloned());
        out.extend(
            self.extra_types
                .iter()
                .map(|t| t.split('.').next().unwrap_or(t).to_string()),
        );
        out
    }

    /// Allowed instance types, or `None` when the count cannot be told offline.
    pub fn type_count(&self) -> Option<usize> {
        (!self.uncertain && self.extra_families.is_empty())
            .then(|| self.types.len() + self.extra_types.len())
    }

    /// Whether anything at all is known to be allowed (otherwise the catalog has a gap).
    pub fn is_empty(&self) -> bool {
        self.types.is_empty() && self.extra_types.is_empty() && self.extra_families.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::karpenter::requirements::testing::req;

    fn space(raw: &[Requirement]) -> Space {
        Space::of(&Requirements::from_requirements(raw).unwrap(), raw)
    }

    #[test]
    fn families_split_and_sizes_have_cpus() {
        assert_eq!(split_family("m7gd"), Some(("m", 7, "gd")));
        assert_eq!(split_family("im4gn"), Some(("im", 4, "gn")));
        assert_eq!(split_family("c7i-flex"), Some(("c", 7, "i-flex")));
        let all = all();
        let m5 = |s: &str| {
            all.iter()
                .find(|t| t.name == format!("m5.{s}"))
                .unwrap()
                .cpu
        };
        assert_eq!((m5("large"), m5("4xlarge"), m5("metal")), (2, 16, 96));
        assert!(all
            .iter()
            .any(|t| t.name == "m7g.large" && t.arch == "arm64"));
        assert!(all
            .iter()
            .any(|t| t.name == "g4dn.xlarge" && t.arch == "amd64"));
    }

    #[test]
    fn old_generations_are_the_xen_era_ones() {
        for f in ["m4", "c4", "r4", "c3", "t2", "i3", "x1e"] {
            assert!(is_old(f), "{f}");
        }
        for f in [
            "m5", "t3", "i4i", "i4g", "i3en", "d3", "x2gd", "g4dn", "z1d", "hpc7g",
        ] {
            assert!(!is_old(f), "{f}");
        }
    }

    #[test]
    fn requirements_narrow_the_space() {
        let wide = space(&[]);
        assert!(wide.families().len() > 50 && wide.type_count().unwrap() > 500);
        let narrow = space(&[
            req(CATEGORY, "In", &["c"]),
            req(GENERATION, "Gt", &["6"]),
            req(CPU, "In", &["4", "8"]),
        ]);
        assert_eq!(
            narrow.families().into_iter().collect::<Vec<_>>(),
            ["c7a", "c7g", "c7gd", "c7gn", "c7i", "c7i-flex", "c8g"]
        );
        assert_eq!(narrow.type_count(), Some(14));
        let listed = space(&[req(INSTANCE_TYPE, "In", &["m5.large", "m99.large"])]);
        assert_eq!(listed.type_count(), Some(2));
        assert_eq!(listed.families().len(), 2);
        let unknown = space(&[req(CATEGORY, "In", &["hpc"])]);
        assert!(unknown.uncertain && unknown.type_count().is_none());
    }
}
