//! What kelp reads of a NodeClass's spec (kept whole, as JSON, on [`NodeClass`]): for an
//! EC2NodeClass, the fields the AWS provider's instance types depend on (AMI family,
//! kubelet settings, block devices, instance store policy), turned into
//! [`aws::Settings`].

use serde::{Deserialize, Serialize};

use super::kinds::NodeClass;
use crate::karpenter::aws;
use crate::karpenter::resources::quantity_value;

/// The spec fields the instance types depend on.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeClassSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ami_family: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ami_selector_terms: Vec<AmiSelectorTerm>,
    /// An open map in v1.15 (any kubelet field), typed before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubelet: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub block_device_mappings: Vec<BlockDeviceMapping>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_store_policy: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AmiSelectorTerm {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockDeviceMapping {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_name: Option<String>,
    #[serde(default)]
    pub root_volume: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ebs: Option<Ebs>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ebs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_size: Option<String>,
}

impl NodeClass {
    /// For an EC2NodeClass, what its instance types' figures depend on.
    pub fn aws_settings(&self) -> Option<aws::Settings> {
        if self.kind != "EC2NodeClass" {
            return None;
        }
        Some(aws_settings_of(&self.spec))
    }
}

/// An EC2NodeClass spec's settings. A spec that does not read (a field of the wrong
/// type) is taken as the defaults, as far as the instance types go; the controller's
/// validation says what is wrong with it.
pub fn aws_settings_of(spec: &serde_json::Value) -> aws::Settings {
    NodeClassSpec::deserialize(spec)
        .unwrap_or_default()
        .aws_settings()
}

impl NodeClassSpec {
    /// The EC2NodeClass settings, read as the AWS provider reads them.
    pub fn aws_settings(&self) -> aws::Settings {
        let aliases: Vec<&str> = self
            .ami_selector_terms
            .iter()
            .filter_map(|t| t.alias.as_deref().filter(|a| !a.is_empty()))
            .collect();
        aws::Settings {
            family: aws::AmiFamily::of(self.ami_family.as_deref(), &aliases),
            kubelet: self
                .kubelet
                .as_ref()
                .map(aws::Kubelet::from_json)
                .unwrap_or_default(),
            block_devices: self
                .block_device_mappings
                .iter()
                .map(|b| aws::BlockDevice {
                    device_name: b.device_name.clone(),
                    root_volume: b.root_volume,
                    volume_size: b
                        .ebs
                        .as_ref()
                        .and_then(|e| e.volume_size.as_deref())
                        .and_then(|q| quantity_value(q).ok()),
                })
                .collect(),
            raid0: self.instance_store_policy.as_deref() == Some("RAID0"),
            ..aws::Settings::default()
        }
    }
}
