//! Instance-type catalogue files (`--catalog`): kelp's own `InstanceTypeCatalog` (JSON or
//! YAML, as `kelp catalog` writes it) or a kwok provider instance-types file (the JSON
//! list its `INSTANCE_TYPES_FILE_PATH` names), told apart by their shape.

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde::Deserialize;

use crate::karpenter::labels;
use crate::karpenter::resources::Resources;
use crate::model::catalog::{CATALOG_API_VERSION, CATALOG_KIND};
use crate::model::{Catalog, CatalogSource, InstanceType, TypeOffering};
use crate::source::error::{Error, Result};

/// The largest catalogue kelp reads: AWS has about 900 types, a catalogue of them is a few
/// MiB. Counted while reading, so a pipe or a device is held to it too.
pub const MAX_BYTES: u64 = 16 << 20;

/// One entry of a kwok instance-types file (Go field names, as the provider reads them).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct KwokOptions {
    name: String,
    #[serde(default)]
    architecture: String,
    #[serde(default)]
    operating_systems: Vec<String>,
    #[serde(default)]
    resources: BTreeMap<String, Quantity>,
    #[serde(default)]
    offerings: Vec<KwokOffering>,
}

#[derive(Deserialize)]
struct KwokOffering {
    #[serde(rename = "Price", default)]
    price: Option<f64>,
    #[serde(rename = "Requirements", default)]
    requirements: Vec<KwokRequirement>,
}

#[derive(Deserialize)]
struct KwokRequirement {
    key: String,
    #[serde(default)]
    values: Vec<String>,
}

/// Read a catalogue file.
pub fn read(path: &Path) -> Result<Catalog> {
    let name = path.display().to_string();
    let fail = |message: String| Error::Parse {
        path: name.clone(),
        message,
    };
    let read_err = |source| Error::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_err)?;
    let expected = file
        .metadata()
        .ok()
        .filter(|m| m.is_file())
        .map_or(0, |m| m.len());
    let bytes = super::limits::read_at_most(file, MAX_BYTES, expected)
        .map_err(read_err)?
        .ok_or_else(|| {
            fail(format!(
                "larger than {} MiB, the most kelp reads from one catalogue",
                MAX_BYTES >> 20
            ))
        })?;
    let text = String::from_utf8(bytes).map_err(|_| fail("not UTF-8 text".into()))?;
    parse(&text).map_err(fail)
}

/// Parse a catalogue's text (kelp's or kwok's format, JSON or YAML).
pub fn parse(text: &str) -> std::result::Result<Catalog, String> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        let list: Vec<KwokOptions> = serde_json::from_str(text)
            .map_err(|e| format!("not a kwok instance-types file: {e}"))?;
        return kwok(list);
    }
    let wrong = || {
        format!(
            "not an instance-type catalogue: expected apiVersion {CATALOG_API_VERSION}, kind {CATALOG_KIND} (as `kelp catalog -o yaml` writes), or a kwok instance-types JSON list"
        )
    };
    let head = |kind: Option<&str>, api: Option<&str>| {
        kind == Some(CATALOG_KIND) && api == Some(CATALOG_API_VERSION)
    };
    let mut c: Catalog = if trimmed.starts_with('{') {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let field = |k: &str| value.get(k).and_then(|v| v.as_str());
        if !head(field("kind"), field("apiVersion")) {
            return Err(wrong());
        }
        serde_json::from_value(value).map_err(|e| format!("catalogue: {e}"))?
    } else {
        // Depth first: serde_norway's scanner costs the square of the flow nesting. YAML is
        // read through its own tree, not JSON's: that keeps `.nan` and `.inf` as what they
        // are (for `check` to refuse) and refuses a key given twice.
        super::limits::check_yaml(text).map_err(|e| e.to_string())?;
        let value: serde_norway::Value =
            serde_norway::from_str(text).map_err(|e| format!("not YAML: {e}"))?;
        if value.is_sequence() {
            let list: Vec<KwokOptions> = serde_norway::from_value(value)
                .map_err(|e| format!("not a kwok instance-types file: {e}"))?;
            return kwok(list);
        }
        let field = |k: &str| value.get(k).and_then(|v| v.as_str());
        if !head(field("kind"), field("apiVersion")) {
            return Err(wrong());
        }
        serde_norway::from_value(value).map_err(|e| format!("catalogue: {e}"))?
    };
    // Read from a file, it is a file's; where its types came from stays said.
    if c.source != CatalogSource::File {
        c.from = Some(c.source);
        c.source = CatalogSource::File;
    }
    check(c)
}

/// A catalogue kelp can judge with: some types, each named once, every quantity finite.
fn check(c: Catalog) -> std::result::Result<Catalog, String> {
    if c.instance_types.is_empty() {
        return Err("the catalogue has no instance types".into());
    }
    if !c
        .instance_types
        .iter()
        .any(|t| t.offerings.iter().any(|o| o.available))
    {
        return Err("no instance type in the catalogue has an available offering".into());
    }
    let mut names = std::collections::BTreeSet::new();
    for t in &c.instance_types {
        if t.name.is_empty() {
            return Err(format!("an instance type has no name ({:?})", t.labels));
        }
        if !names.insert(t.name.as_str()) {
            return Err(format!("instance type {} is listed twice", t.name));
        }
        let quantities = t
            .capacity
            .0
            .values()
            .chain(t.allocatable.0.values())
            .chain(t.allocatable_most.iter().flat_map(|m| m.0.values()));
        let prices = t.offerings.iter().filter_map(|o| o.price);
        if quantities.copied().chain(prices).any(|v| !v.is_finite()) {
            return Err(format!(
                "instance type {}: a quantity or price is not a finite number",
                t.name
            ));
        }
    }
    Ok(c)
}

/// A kwok instance-types file as the provider loads it: every offering available.
fn kwok(list: Vec<KwokOptions>) -> std::result::Result<Catalog, String> {
    let mut types = Vec::with_capacity(list.len());
    for o in list {
        if o.name.is_empty() {
            return Err("kwok instance-types file: an entry has no name".into());
        }
        let mut capacity = Resources::from_quantities(&o.resources)
            .map_err(|e| format!("kwok instance type {}: {e}", o.name))?;
        // The provider gives a type 110 pods when its file names none.
        capacity.0.entry("pods".into()).or_insert(110.0);
        let offerings = o
            .offerings
            .iter()
            .flat_map(|off| {
                let values = |key: &str| {
                    off.requirements
                        .iter()
                        .filter(|r| r.key == key)
                        .flat_map(|r| r.values.clone())
                        .collect::<Vec<_>>()
                };
                let zones = values(labels::ZONE);
                let types = values(labels::CAPACITY_TYPE);
                zones
                    .into_iter()
                    .flat_map(move |z| {
                        types.clone().into_iter().map(move |ct| TypeOffering {
                            zone: z.clone(),
                            capacity_type: ct,
                            price: off.price,
                            available: true,
                        })
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        let oses: Vec<&str> = o.operating_systems.iter().map(String::as_str).collect();
        types.push(InstanceType::kwok_from(
            &o.name,
            &o.architecture,
            &oses,
            capacity,
            offerings,
        ));
    }
    check(Catalog::new(CatalogSource::KwokFile, types))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The real kwok provider file, where the Go module cache has it (the testenv's
    /// Karpenter v1.14.1 is built from there).
    fn real_kwok_file() -> Option<String> {
        let out = std::process::Command::new("go")
            .args(["env", "GOMODCACHE"])
            .output()
            .ok()?;
        let cache = String::from_utf8(out.stdout).ok()?;
        let path = Path::new(cache.trim())
            .join("sigs.k8s.io/karpenter@v1.14.1/kwok/cloudprovider/instance_types.json");
        std::fs::read_to_string(path).ok()
    }

    #[test]
    fn kwoks_own_file_equals_the_builtin_catalogue() {
        let Some(text) = real_kwok_file() else {
            eprintln!("skipped: no Karpenter v1.14.1 in the Go module cache");
            return;
        };
        let file = parse(&text).unwrap();
        let builtin = Catalog::kwok_builtin();
        assert_eq!(file.instance_types.len(), builtin.instance_types.len());
        for t in &builtin.instance_types {
            let f = file
                .get(&t.name)
                .unwrap_or_else(|| panic!("{} missing", t.name));
            assert_eq!(
                (&f.labels, &f.capacity, &f.allocatable),
                (&t.labels, &t.capacity, &t.allocatable),
                "{}",
                t.name
            );
            let offerings = |t: &'_ InstanceType| {
                let mut v: Vec<_> = t
                    .offerings
                    .iter()
                    .map(|o| {
                        (
                            o.zone.clone(),
                            o.capacity_type.clone(),
                            o.price.map(|p| (p * 1e9).round()),
                        )
                    })
                    .collect();
                v.sort_by(|x, y| x.partial_cmp(y).unwrap());
                v
            };
            assert_eq!(offerings(f), offerings(t), "{}", t.name);
        }
    }

    #[test]
    fn a_kwok_file_entry_becomes_a_type() {
        let text = r#"[{"name":"c-1x-amd64-linux","architecture":"amd64","operatingSystems":["linux"],
 "resources":{"cpu":"1","ephemeral-storage":"20Gi","memory":"2Gi","pods":"16"},
 "offerings":[{"Price":0.019,"Available":false,"Requirements":[
   {"key":"karpenter.sh/capacity-type","operator":"In","values":["spot"]},
   {"key":"topology.kubernetes.io/zone","operator":"In","values":["test-zone-a"]}]}]}]"#;
        let c = parse(text).unwrap();
        assert_eq!(c.source, CatalogSource::KwokFile);
        let t = &c.instance_types[0];
        assert!((t.allocatable.get("cpu") - 0.9).abs() < 1e-9);
        // The provider makes every offering available.
        assert!(t.offerings[0].available);
        assert_eq!(t.offerings[0].zone, "test-zone-a");
    }

    #[test]
    fn kelps_own_format_reads_back_and_anything_else_is_one_clear_error() {
        let yaml = serde_norway::to_string(&Catalog::kwok_builtin()).unwrap();
        let mut back = parse(&yaml).unwrap();
        assert_eq!(
            (back.source, back.from),
            (CatalogSource::File, Some(CatalogSource::KwokBuiltin))
        );
        back.source = CatalogSource::KwokBuiltin;
        crate::model::catalog::tests::assert_same(&back, &Catalog::kwok_builtin());
        let e = parse("apiVersion: v1\nkind: Pod\n").unwrap_err();
        assert!(e.contains("not an instance-type catalogue"), "{e}");
        let e = parse("apiVersion: kelp.dev/v1\nkind: InstanceTypeCatalog\nsource: file\ninstanceTypes: [{name: x, capacity: {cpu: lots}}]\n").unwrap_err();
        assert!(e.contains("lots"), "{e}");
    }

    #[test]
    fn a_catalogue_kelp_cannot_judge_with_is_refused_in_one_line() {
        let head = "apiVersion: kelp.dev/v1\nkind: InstanceTypeCatalog\n";
        let e = parse(&format!("{head}instanceTypes: []\n")).unwrap_err();
        assert_eq!(e, "the catalogue has no instance types");
        let e = parse(&format!("{head}instanceTypes: [{{name: a}}]\n")).unwrap_err();
        assert_eq!(
            e,
            "no instance type in the catalogue has an available offering"
        );
        let one = "{name: a, offerings: [{zone: z, capacityType: spot, price: 0.1}]}";
        let e = parse(&format!("{head}instanceTypes: [{one}, {one}]\n")).unwrap_err();
        assert_eq!(e, "instance type a is listed twice");
        // A file says it is one, and keeps where its types came from.
        let c = parse(&format!(
            "{head}source: karpenter-metrics\ninstanceTypes: [{one}]\n"
        ))
        .unwrap();
        assert_eq!(
            (c.source, c.from),
            (CatalogSource::File, Some(CatalogSource::KarpenterMetrics))
        );
        assert_eq!(
            c.describe(),
            "a catalogue file (written from Karpenter's instance-type metrics)"
        );
        // The source may be left out of a hand-written file.
        assert_eq!(
            parse(&format!("{head}instanceTypes: [{one}]\n"))
                .unwrap()
                .source,
            CatalogSource::File
        );
    }
    #[test]
    fn yaml_that_json_cannot_hold_is_refused_not_dropped() {
        let head = "apiVersion: kelp.dev/v1\nkind: InstanceTypeCatalog\n";
        for price in [".nan", ".inf", "-.inf"] {
            let t = format!(
                "{head}instanceTypes: [{{name: a, offerings: [{{zone: z, capacityType: spot, price: {price}}}]}}]\n"
            );
            let e = parse(&t).unwrap_err();
            assert_eq!(
                e, "instance type a: a quantity or price is not a finite number",
                "{price}"
            );
        }
        let e = parse(&format!("{head}instanceTypes: []\ninstanceTypes: []\n")).unwrap_err();
        assert!(
            e.contains("given twice") && e.contains("instanceTypes"),
            "{e}"
        );
    }

    #[test]
    fn a_device_or_a_pipe_is_held_to_the_cap_while_reading() {
        let e = read(Path::new("/dev/zero")).unwrap_err().to_string();
        assert_eq!(
            e,
            "/dev/zero: larger than 16 MiB, the most kelp reads from one catalogue"
        );
    }
}
