//! A pod's containers as kelp keeps them: name, effective requests (a missing request
//! taken from its limit), whether an init container is a sidecar, and the host ports it
//! takes on its node.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde::{Deserialize, Serialize};

use super::memo::null_default;
use super::shared::Compact;

/// Resource names and their quantities: a container's requests or limits, a node's
/// capacity.
pub type ResourceList = BTreeMap<String, Quantity>;

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    #[serde(default)]
    pub name: String,
    /// Its image: for Karpenter's own pods, the tag says which release runs.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "super::memo::null_default"
    )]
    pub image: String,
    #[serde(default)]
    pub resources: ContainerResources,
    /// `Always` on an init container makes it a sidecar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<String>,
    /// The few environment variables of Karpenter's own settings kelp reads
    /// ([`KARPENTER_SETTINGS`], given inline); every other one is dropped as it is read.
    #[serde(
        default,
        deserialize_with = "karpenter_settings",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub env: Vec<EnvVar>,
    /// The ports it takes on its node (those with a `hostPort`).
    #[serde(
        default,
        rename = "ports",
        deserialize_with = "host_ports",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub host_ports: Vec<HostPort>,
}

/// Karpenter's settings (its controller's environment) that change what it decides, as kelp
/// judges it: its preference policy (`Ignore` drops preferred terms from its simulation),
/// its feature gates, default topology spread (v1.15), and the legacy repair controller.
pub const KARPENTER_SETTINGS: [&str; 4] = [
    "PREFERENCE_POLICY",
    "FEATURE_GATES",
    "SCHEDULER_CONFIG",
    "LEGACY_NODE_REPAIR",
];

/// An environment variable given inline (`name`, `value`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize, Serialize)]
pub struct EnvVar {
    pub name: String,
    #[serde(default)]
    pub value: String,
}

/// Only Karpenter's settings, and only those given inline: a value from a ConfigMap or a
/// Secret is a reference kelp never follows.
fn karpenter_settings<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<EnvVar>, D::Error> {
    let all: Vec<KeptEnv> = null_default(d)?;
    Ok(all.into_iter().filter_map(|e| e.0).collect())
}

/// An environment variable's name: kept (copied) only when it is one of Karpenter's
/// settings, compared in place otherwise.
struct SettingName(Option<String>);

impl<'de> Deserialize<'de> for SettingName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = SettingName;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, s: &str) -> Result<SettingName, E> {
                Ok(SettingName(
                    KARPENTER_SETTINGS.contains(&s).then(|| s.to_string()),
                ))
            }
        }
        d.deserialize_str(Visit)
    }
}

/// One environment variable as it is read: kept only when it is one of Karpenter's
/// settings. Every pod has them, so the others cost nothing: once the name (which
/// Kubernetes writes first) says it is not a setting, its value is skipped unread (a
/// value that is not UTF-8 included, as any field kelp does not keep).
struct KeptEnv(Option<EnvVar>);

impl<'de> Deserialize<'de> for KeptEnv {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(field_identifier, rename_all = "camelCase")]
        enum Field {
            Name,
            Value,
            #[serde(other)]
            Other,
        }
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = KeptEnv;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("struct EnvVar")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<KeptEnv, A::Error> {
                let (mut name, mut value): (Option<String>, Option<String>) = (None, None);
                let mut kept = None;
                while let Some(field) = map.next_key::<Field>()? {
                    match field {
                        Field::Name => {
                            name = map.next_value::<SettingName>()?.0;
                            kept = Some(name.is_some());
                        }
                        Field::Value if kept != Some(false) => value = map.next_value()?,
                        _ => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(KeptEnv(match (name, value) {
                    (Some(name), Some(value)) => Some(EnvVar { name, value }),
                    _ => None,
                }))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// A port a container takes on its node.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostPort {
    pub host_port: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    #[serde(default, rename = "hostIP", skip_serializing_if = "Option::is_none")]
    pub host_ip: Option<String>,
}

impl HostPort {
    /// Whether two host ports clash on one node (Karpenter's `HostPort.Matches`, as the
    /// scheduler's NodePorts): the same port and protocol (TCP when unset), and the same
    /// address or either one unspecified.
    pub fn clashes(&self, other: &HostPort) -> bool {
        let protocol = |p: &HostPort| p.protocol.as_deref().unwrap_or("TCP").to_string();
        let any = |ip: &Option<String>| {
            ip.as_deref()
                .is_none_or(|i| i.is_empty() || i == "0.0.0.0" || i == "::")
        };
        self.host_port == other.host_port
            && protocol(self) == protocol(other)
            && (any(&self.host_ip) || any(&other.host_ip) || self.host_ip == other.host_ip)
    }
}

/// Only the ports with a `hostPort`: the others take nothing on the node.
fn host_ports<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<HostPort>, D::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Port {
        #[serde(default)]
        host_port: Option<i32>,
        #[serde(default)]
        protocol: Option<String>,
        #[serde(default, rename = "hostIP")]
        host_ip: Option<String>,
    }
    let all: Vec<Port> = null_default(d)?;
    Ok(all
        .into_iter()
        .filter_map(|p| {
            Some(HostPort {
                host_port: p.host_port.filter(|h| *h > 0)?,
                protocol: p.protocol,
                host_ip: p.host_ip,
            })
        })
        .collect())
}

/// A container's effective requests: a missing request is taken from the limit (as
/// Kubernetes defaults it and Karpenter reads it). Limits themselves are not kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ContainerResources {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub requests: ResourceList,
}

impl<'de> Deserialize<'de> for ContainerResources {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Named as Kubernetes names it, for errors ("expected struct ResourceRequirements").
        #[derive(Default, Deserialize)]
        #[serde(expecting = "struct ResourceRequirements")]
        struct Raw {
            #[serde(default, deserialize_with = "null_default")]
            requests: ResourceList,
            #[serde(default, deserialize_with = "null_default")]
            limits: ResourceList,
        }
        let Raw {
            mut requests,
            limits,
        } = Option::<Raw>::deserialize(d)?.unwrap_or_default();
        for (k, v) in limits {
            requests.entry(k).or_insert(v);
        }
        Ok(ContainerResources { requests })
    }
}

impl Compact for Container {
    fn compact(&mut self) {}
}

impl ContainerResources {
    pub fn effective_requests(&self) -> ResourceList {
        self.requests.clone()
    }
}
