//! The instance-type catalogue: what Karpenter's cloud provider can launch (each type's
//! labels, capacity, allocatable and offerings), and where kelp learnt it. Its serde form
//! is kelp's own catalogue file (`kind: InstanceTypeCatalog`), which `kelp catalog`
//! writes and `--catalog` reads. Reading files is the source room's; building a
//! catalogue from Karpenter's metrics and the nodes is the analysis room's.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde::{Deserialize, Serialize};

use crate::karpenter::instance_types::{self as rules, KwokType};
use crate::karpenter::labels;
use crate::karpenter::resources::{format_quantity, Resources};

/// The catalogue file's `apiVersion` and `kind`.
pub const CATALOG_API_VERSION: &str = "kelp.dev/v1";
pub const CATALOG_KIND: &str = "InstanceTypeCatalog";

/// Where a catalogue came from, which says how much of it is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CatalogSource {
    /// A catalogue file (`--catalog`, or embedded in a snapshot).
    File,
    /// A kwok provider instance-types file (`INSTANCE_TYPES_FILE_PATH`'s format).
    KwokFile,
    /// The kwok provider's built-in types, for a cluster whose pools use KWOKNodeClass.
    KwokBuiltin,
    /// The AWS provider's `karpenter_cloudprovider_instance_type_*` metrics, with the
    /// labels and allocatable of nodes of each type where kelp has one.
    KarpenterMetrics,
}

impl CatalogSource {
    pub fn describe(self) -> &'static str {
        match self {
            CatalogSource::File => "a catalogue file",
            CatalogSource::KwokFile => "a kwok instance-types file",
            CatalogSource::KwokBuiltin => "the kwok provider's built-in instance types",
            CatalogSource::KarpenterMetrics => "Karpenter's instance-type metrics",
        }
    }
}

/// The instance types a provider offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Catalog {
    #[serde(default = "api_version")]
    pub api_version: String,
    #[serde(default = "kind")]
    pub kind: String,
    #[serde(default = "file")]
    pub source: CatalogSource,
    /// For a file: where its types came from (`kelp catalog` writes its source, which
    /// reads back here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<CatalogSource>,
    #[serde(default)]
    pub instance_types: Vec<InstanceType>,
    /// Per EC2NodeClass whose settings (kubelet, AMI family, root volume) move its types'
    /// figures: the same types as that class gets them. Not part of the file.
    #[serde(skip)]
    pub variants: BTreeMap<String, std::sync::Arc<Catalog>>,
}

fn file() -> CatalogSource {
    CatalogSource::File
}

fn api_version() -> String {
    CATALOG_API_VERSION.into()
}
fn kind() -> String {
    CATALOG_KIND.into()
}

/// One instance type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceType {
    pub name: String,
    /// The label values a node of this type gets, by key. Several values mean "one of
    /// these, kelp does not know which" (an architecture no node of the type showed).
    #[serde(default)]
    pub labels: BTreeMap<String, Vec<String>>,
    #[serde(with = "quantities", default)]
    pub capacity: Resources,
    /// What pods can use: capacity less Karpenter's overhead (kube-reserved,
    /// system-reserved, eviction threshold). Where only a range is known, the least.
    #[serde(with = "quantities", default)]
    pub allocatable: Resources,
    /// Where only a range is known: the most a type could have (absent: exactly
    /// `allocatable`).
    #[serde(
        with = "quantities_opt",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub allocatable_most: Option<Resources>,
    /// Label keys whose listed values are only what the type may have: it has one of
    /// them, kelp does not know which.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncertain: Vec<String>,
    /// Whether `capacity` names every resource the type has; when not, an extended
    /// resource (a GPU) it does not name may still be there.
    #[serde(default = "yes")]
    pub complete: bool,
    #[serde(default)]
    pub offerings: Vec<TypeOffering>,
}

fn yes() -> bool {
    true
}

/// Where and how a type can be bought.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypeOffering {
    pub zone: String,
    pub capacity_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<f64>,
    #[serde(default = "yes")]
    pub available: bool,
}

impl Catalog {
    pub fn new(source: CatalogSource, instance_types: Vec<InstanceType>) -> Self {
        Catalog {
            api_version: api_version(),
            kind: kind(),
            source,
            from: None,
            instance_types,
            variants: BTreeMap::new(),
        }
    }

    /// The catalogue a pool of `node_class` (an EC2NodeClass's name) is judged with.
    pub fn for_node_class<'a>(
        self: &'a std::sync::Arc<Self>,
        node_class: Option<&str>,
    ) -> &'a std::sync::Arc<Catalog> {
        node_class
            .and_then(|n| self.variants.get(n))
            .unwrap_or(self)
    }

    /// The kwok provider's built-in types.
    pub fn kwok_builtin() -> Self {
        let types = rules::kwok_builtin()
            .into_iter()
            .map(|t| {
                let spot = t.on_demand * rules::KWOK_SPOT;
                let offerings = rules::KWOK_ZONES
                    .iter()
                    .flat_map(|z| {
                        [("spot", spot), ("on-demand", t.on_demand)].map(|(ct, price)| {
                            TypeOffering {
                                zone: z.to_string(),
                                capacity_type: ct.into(),
                                price: Some(price),
                                available: true,
                            }
                        })
                    })
                    .collect();
                InstanceType::kwok(&t, offerings)
            })
            .collect();
        Catalog::new(CatalogSource::KwokBuiltin, types)
    }

    /// Where the types came from, in words (a file says what it was written from).
    pub fn describe(&self) -> String {
        match self.from {
            Some(from) => format!(
                "{} (written from {})",
                self.source.describe(),
                from.describe()
            ),
            None => self.source.describe().to_string(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&InstanceType> {
        self.instance_types.iter().find(|t| t.name == name)
    }
}

impl InstanceType {
    /// A kwok type as the kwok provider builds it: its labels (type, arch, OS, and the
    /// four `karpenter.kwok.sh/instance-*` labels) and kube-reserved 100m CPU, 10Mi.
    pub fn kwok(t: &KwokType, offerings: Vec<TypeOffering>) -> Self {
        let capacity = Resources(BTreeMap::from([
            ("cpu".to_string(), t.cpu),
            ("memory".to_string(), t.memory),
            ("pods".to_string(), t.pods),
            ("ephemeral-storage".to_string(), 20.0 * rules::GI),
        ]));
        InstanceType::kwok_from(&t.name, t.arch, &[t.os], capacity, offerings)
    }

    /// A kwok type from its parts (a kwok instance-types file has them so).
    pub fn kwok_from(
        name: &str,
        arch: &str,
        oses: &[&str],
        capacity: Resources,
        offerings: Vec<TypeOffering>,
    ) -> Self {
        let one = |v: String| vec![v];
        let cpu = format_quantity("cpu", capacity.get("cpu"));
        let labels = BTreeMap::from([
            (labels::INSTANCE_TYPE.to_string(), one(name.into())),
            (labels::ARCH.to_string(), one(arch.into())),
            (
                labels::OS.to_string(),
                oses.iter().map(|o| o.to_string()).collect(),
            ),
            (rules::KWOK_SIZE.to_string(), one(cpu.clone())),
            (
                rules::KWOK_FAMILY.to_string(),
                one(rules::kwok_family(name).into()),
            ),
            (rules::KWOK_CPU.to_string(), one(cpu)),
            (
                rules::KWOK_MEMORY.to_string(),
                one(format_quantity("memory", capacity.get("memory"))),
            ),
        ]);
        let mut allocatable = capacity.clone();
        for (k, v) in rules::kwok_overhead() {
            if let Some(a) = allocatable.0.get_mut(k) {
                // In millicores, as quantities are: 1 - 0.1 is not 0.9 in floating point.
                *a = ((*a - v) * 1000.0).round() / 1000.0;
            }
        }
        InstanceType::exact(name, labels, capacity, allocatable, true, offerings)
    }

    /// A type whose allocatable is known exactly and whose labels are all certain.
    pub fn exact(
        name: &str,
        labels: BTreeMap<String, Vec<String>>,
        capacity: Resources,
        allocatable: Resources,
        complete: bool,
        offerings: Vec<TypeOffering>,
    ) -> Self {
        InstanceType {
            name: name.into(),
            labels,
            capacity,
            allocatable,
            allocatable_most: None,
            uncertain: Vec::new(),
            complete,
            offerings,
        }
    }

    /// The most of `resource` pods could have on this type.
    pub fn allocatable_most(&self, resource: &str) -> f64 {
        match &self.allocatable_most {
            Some(most) => most.get(resource),
            None => self.allocatable.get(resource),
        }
    }
}

/// Resource lists as Kubernetes quantity strings in the file.
mod quantities {
    use super::*;

    pub fn serialize<S: serde::Serializer>(r: &Resources, s: S) -> Result<S::Ok, S::Error> {
        let shown: BTreeMap<&String, String> =
            r.0.iter()
                .map(|(k, v)| (k, format_quantity(k, *v)))
                .collect();
        shown.serialize(s)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Resources, D::Error> {
        let raw = BTreeMap::<String, Quantity>::deserialize(d)?;
        Resources::from_quantities(&raw).map_err(serde::de::Error::custom)
    }
}

mod quantities_opt {
    use super::*;

    pub fn serialize<S: serde::Serializer>(r: &Option<Resources>, s: S) -> Result<S::Ok, S::Error> {
        match r {
            Some(r) => super::quantities::serialize(r, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Resources>, D::Error> {
        super::quantities::deserialize(d).map(Some)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn the_kwok_builtin_types_carry_the_providers_labels_and_overhead() {
        let c = Catalog::kwok_builtin();
        let t = c.get("m-192x-amd64-linux").unwrap();
        assert_eq!(t.labels[rules::KWOK_MEMORY], vec!["1536Gi"]);
        assert_eq!(t.labels[rules::KWOK_FAMILY], vec!["m"]);
        assert_eq!(t.labels[rules::KWOK_SIZE], vec!["192"]);
        // Allocatable as the live node showed it: 191900m CPU, 1536Gi - 10Mi.
        assert!((t.allocatable.get("cpu") - 191.9).abs() < 1e-9);
        assert_eq!(
            t.allocatable.get("memory"),
            1536.0 * rules::GI - 10.0 * rules::MI
        );
        assert_eq!(t.offerings.len(), 8);
    }

    #[test]
    fn the_file_form_round_trips() {
        let c = Catalog::kwok_builtin();
        let text = serde_json::to_string(&c).unwrap();
        assert!(
            text.contains("\"capacity\":{\"cpu\":\"1\""),
            "{}",
            &text[..300]
        );
        let back: Catalog = serde_json::from_str(&text).unwrap();
        assert_same(&back, &c);
    }

    /// Equal, prices and quantities within a rounding step (neither serde_json's float
    /// parsing nor the quantity parser is exact to the last bit).
    pub fn assert_same(a: &Catalog, b: &Catalog) {
        let milli = |r: &mut Resources| {
            for v in r.0.values_mut() {
                *v = (*v * 1000.0).round();
            }
        };
        assert_eq!(a.instance_types.len(), b.instance_types.len());
        for (x, y) in a.instance_types.iter().zip(&b.instance_types) {
            let (mut x, mut y) = (x.clone(), y.clone());
            for r in [
                &mut x.capacity,
                &mut x.allocatable,
                &mut y.capacity,
                &mut y.allocatable,
            ] {
                milli(r);
            }
            let y = &y;
            for (o, p) in x.offerings.iter_mut().zip(&y.offerings) {
                if let (Some(a), Some(b)) = (o.price, p.price) {
                    assert!((a - b).abs() < 1e-12, "{}", y.name);
                    o.price = p.price;
                }
            }
            assert_eq!(&x, y);
        }
        assert_eq!(a.source, b.source);
    }
}
