//! The AWS provider's instance types as its own code computes them
//! (karpenter-provider-aws v1.15, `pkg/providers/instancetype`): from a type's EC2 facts
//! ([`facts`]) and what of an EC2NodeClass they depend on ([`Settings`]: the AMI family,
//! kubelet settings, the root volume), its capacity, Karpenter's overhead (kube-reserved,
//! system-reserved, eviction threshold), its allocatable and its labels. The same rules
//! hold from v1.0; only the kubelet's open map and CEL expressions (off unless the
//! `NodeClassCEL` gate is on) are new in v1.15. EC2NodeClass conditions and drift are in
//! [`nodeclass`].

pub mod facts;
pub mod nodeclass;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

pub use facts::Facts;

use super::instance_types::{GI, MI};
use super::labels;
use super::resources::{quantity_value, Resources};

/// The AWS provider's instance labels.
pub const FAMILY: &str = "karpenter.k8s.aws/instance-family";
pub const SIZE: &str = "karpenter.k8s.aws/instance-size";
pub const CATEGORY: &str = "karpenter.k8s.aws/instance-category";
pub const GENERATION: &str = "karpenter.k8s.aws/instance-generation";
pub const CPU: &str = "karpenter.k8s.aws/instance-cpu";
/// In MiB of the EC2 memory figure.
pub const MEMORY: &str = "karpenter.k8s.aws/instance-memory";
const CPU_MANUFACTURER: &str = "karpenter.k8s.aws/instance-cpu-manufacturer";
const CLOCK: &str = "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz";
const EBS_BANDWIDTH: &str = "karpenter.k8s.aws/instance-ebs-bandwidth";
const NETWORK_BANDWIDTH: &str = "karpenter.k8s.aws/instance-network-bandwidth";
const FLEX: &str = "karpenter.k8s.aws/instance-capability-flex";
const LOCAL_NVME: &str = "karpenter.k8s.aws/instance-local-nvme";
const GPU_NAME: &str = "karpenter.k8s.aws/instance-gpu-name";
const GPU_MANUFACTURER: &str = "karpenter.k8s.aws/instance-gpu-manufacturer";
const GPU_COUNT: &str = "karpenter.k8s.aws/instance-gpu-count";
const GPU_MEMORY: &str = "karpenter.k8s.aws/instance-gpu-memory";
const ACCELERATOR_NAME: &str = "karpenter.k8s.aws/instance-accelerator-name";
const ACCELERATOR_MANUFACTURER: &str = "karpenter.k8s.aws/instance-accelerator-manufacturer";
const ACCELERATOR_COUNT: &str = "karpenter.k8s.aws/instance-accelerator-count";
const HYPERVISOR: &str = "karpenter.k8s.aws/instance-hypervisor";
const ENCRYPTION_IN_TRANSIT: &str = "karpenter.k8s.aws/instance-encryption-in-transit-supported";
const TENANCY: &str = "karpenter.k8s.aws/instance-tenancy";
const WINDOWS_BUILD: &str = "node.kubernetes.io/windows-build";

/// The provider's default hard eviction threshold for memory.
pub const EVICTION_MEMORY: f64 = 100.0 * MI;

/// The provider's default VM memory overhead (`VM_MEMORY_OVERHEAD_PERCENT`).
pub const VM_MEMORY_OVERHEAD: f64 = 0.075;

/// The AMI family an EC2NodeClass names, as far as instance types go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AmiFamily {
    Al2,
    #[default]
    Al2023,
    Bottlerocket,
    /// Windows, with the build its nodes carry (`node.kubernetes.io/windows-build`).
    Windows(&'static str),
    Custom,
}

impl AmiFamily {
    /// `spec.amiFamily`, else the family of the first alias term (`al2023@latest`). Any
    /// other name is the provider's default, AL2; neither (validation forbids it) is
    /// Custom.
    pub fn of(ami_family: Option<&str>, aliases: &[&str]) -> AmiFamily {
        let named = |n: &str| match n.to_ascii_lowercase().as_str() {
            "al2023" => AmiFamily::Al2023,
            "bottlerocket" => AmiFamily::Bottlerocket,
            "windows2019" => AmiFamily::Windows("10.0.17763"),
            "windows2022" => AmiFamily::Windows("10.0.20348"),
            "windows2025" => AmiFamily::Windows("10.0.26100"),
            "custom" => AmiFamily::Custom,
            _ => AmiFamily::Al2,
        };
        if let Some(f) = ami_family {
            return named(f);
        }
        match aliases.first() {
            Some(a) => named(a.split('@').next().unwrap_or_default()),
            None => AmiFamily::Custom,
        }
    }

    /// Kube-reserved memory counts the ENI-limited pods, whatever maxPods says.
    fn eni_limited_memory_overhead(self) -> bool {
        matches!(self, AmiFamily::Al2 | AmiFamily::Al2023 | AmiFamily::Custom)
    }

    fn pods_per_core(self) -> bool {
        !matches!(self, AmiFamily::Bottlerocket)
    }

    fn eni_limited_pod_density(self) -> bool {
        !matches!(self, AmiFamily::Windows(_))
    }

    /// The device the family's ephemeral storage is on, and its default size.
    fn ephemeral_device(self) -> (Option<&'static str>, f64) {
        match self {
            AmiFamily::Al2 | AmiFamily::Al2023 => (Some("/dev/xvda"), 20.0 * GI),
            AmiFamily::Bottlerocket => (Some("/dev/xvdb"), 20.0 * GI),
            AmiFamily::Windows(_) => (Some("/dev/sda1"), 50.0 * GI),
            AmiFamily::Custom => (None, 20.0 * GI),
        }
    }
}

/// One of an EC2NodeClass's `blockDeviceMappings`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BlockDevice {
    pub device_name: Option<String>,
    pub root_volume: bool,
    /// Bytes.
    pub volume_size: Option<f64>,
}

/// The kubelet settings the provider reads (`spec.kubelet`). Values that are CEL
/// expressions count only with the `NodeClassCEL` gate on (it is off by default); kelp
/// reads them as the default controller does, ignored.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Kubelet {
    pub max_pods: Option<i64>,
    pub pods_per_core: Option<i64>,
    pub kube_reserved: BTreeMap<String, f64>,
    pub system_reserved: BTreeMap<String, f64>,
    /// `memory.available` and `nodefs.available`, as written (`5%` or a quantity).
    pub eviction_hard: BTreeMap<String, String>,
}

impl Kubelet {
    /// Read from an EC2NodeClass's `spec.kubelet` (an open map). A value that reads as
    /// neither a number nor a quantity is one the provider would take as an expression.
    pub fn from_json(v: &serde_json::Value) -> Kubelet {
        let map = |key: &str| -> BTreeMap<String, f64> {
            v.get(key)
                .and_then(|m| m.as_object())
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, q)| Some((k.clone(), quantity_value(q.as_str()?).ok()?)))
                        .collect()
                })
                .unwrap_or_default()
        };
        let eviction_hard = v
            .get("evictionHard")
            .and_then(|m| m.as_object())
            .map(|m| {
                m.iter()
                    .filter_map(|(k, q)| Some((k.clone(), q.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        Kubelet {
            max_pods: v.get("maxPods").and_then(serde_json::Value::as_i64),
            pods_per_core: v.get("podsPerCore").and_then(serde_json::Value::as_i64),
            kube_reserved: map("kubeReserved"),
            system_reserved: map("systemReserved"),
            eviction_hard,
        }
    }
}

/// What of an EC2NodeClass (and the controller's settings) a type's figures depend on.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub family: AmiFamily,
    pub kubelet: Kubelet,
    pub block_devices: Vec<BlockDevice>,
    /// `instanceStorePolicy: RAID0`: ephemeral storage is the instance store.
    pub raid0: bool,
    /// The controller's `VM_MEMORY_OVERHEAD_PERCENT`.
    pub vm_memory_overhead: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            family: AmiFamily::default(),
            kubelet: Kubelet::default(),
            block_devices: Vec::new(),
            raid0: false,
            vm_memory_overhead: VM_MEMORY_OVERHEAD,
        }
    }
}

/// One type as the provider's scheduler sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub capacity: Resources,
    pub kube_reserved: Resources,
    pub system_reserved: Resources,
    pub eviction_threshold: Resources,
    /// Capacity less the three (not floored: a negative figure fits nothing).
    pub allocatable: Resources,
    /// Its labels, except where it is offered (zone, region, capacity type).
    pub labels: BTreeMap<String, Vec<String>>,
}

/// A type's category and generation as the provider reads them from its name
/// (`m5.large`: `m`, `5`; `u-6tb1.metal`: `u`, `1`); None for a name that does not say.
pub fn category_generation(name: &str) -> Option<(&str, &str)> {
    re!(SCHEME = r"^([a-z]+)(-[0-9]+tb)?([0-9]+).*\.");
    let c = SCHEME.captures(name)?;
    Some((c.get(1)?.as_str(), c.get(3)?.as_str()))
}

/// Kube-reserved CPU in millicores for `vcpus`: 6% of the first core, 1% of the second,
/// 0.5% of the third and fourth, 0.25% of each above, each band truncated to whole
/// millicores.
pub fn kube_reserved_millicpu(vcpus: u64) -> u64 {
    let milli = vcpus * 1000;
    [(0, 1000, 0.06), (1000, 2000, 0.01), (2000, 4000, 0.005)]
        .into_iter()
        .chain([(4000, 1u64 << 31, 0.0025)])
        .filter(|&(start, _, _)| milli >= start)
        .map(|(start, end, share)| ((milli.min(end) - start) as f64 * share) as u64)
        .sum()
}

/// Kube-reserved memory (bytes) for `pods` pods: 11Mi each plus 255Mi.
pub fn kube_reserved_memory(pods: f64) -> f64 {
    (11.0 * pods + 255.0) * MI
}

/// The pods the VPC CNI gives a type: ENIs x (addresses per ENI - 1) + 2.
pub fn eni_limited_pods(f: &Facts) -> u64 {
    if f.enis == 0 {
        return 0;
    }
    u64::from(f.enis) * u64::from(f.ipv4_per_eni.saturating_sub(1)) + 2
}

/// The range of pods a type of `cores` vCPUs may run under its ENI limits, for a type
/// kelp has no facts of: the fewest any type kelp knows allows, and the most any type it
/// knows of at most that many vCPUs allows (at least two vCPUs' worth).
pub fn pods_range(cores: f64) -> (f64, f64) {
    let (fewest, most) = facts::pods_envelope(cores.max(2.0));
    (fewest as f64, most as f64)
}

/// The memory capacity (bytes) the provider gives a type before a node of it is seen:
/// its EC2 figure (less 64Mi on Graviton), less the VM overhead rounded up to whole MiB.
pub fn memory_capacity(memory_mib: u64, arm64: bool, overhead: f64) -> f64 {
    let mib = memory_mib.saturating_sub(if arm64 { 64 } else { 0 }) as f64;
    (mib - (mib * MI * overhead / 1024.0 / 1024.0).ceil()) * MI
}

/// The lower-kebab case the provider writes names in (`Tesla T4` -> `tesla-t4`).
fn kebab(s: &str) -> String {
    s.replace(' ', "-").to_lowercase()
}

/// Kubernetes' name for an EC2 architecture, the first one it knows.
fn architecture(f: &Facts) -> Option<&'static str> {
    f.architectures.iter().find_map(|a| match a.as_str() {
        "x86_64" => Some("amd64"),
        "arm64" => Some("arm64"),
        _ => None,
    })
}

/// The provider's figures and labels for one type under `s`. `discovered_memory` is the
/// memory capacity of a node of this type the provider has seen (it replaces the
/// estimate, not the eviction threshold computed from it).
pub fn resolve(f: &Facts, s: &Settings, discovered_memory: Option<f64>) -> Resolved {
    let arch = architecture(f);
    let arm64 = f.architectures.first().is_some_and(|a| a == "arm64");
    let vcpus = f64::from(f.vcpus);
    let estimated_memory = memory_capacity(f.memory_mib, arm64, s.vm_memory_overhead);
    let storage = ephemeral_storage(f, s);
    let eni_pods = eni_limited_pods(f) as f64;
    let mut pods = match s.kubelet.max_pods {
        Some(n) => n as f64,
        None if s.family.eni_limited_pod_density() => eni_pods,
        None => 110.0,
    };
    if let Some(ppc) = s.kubelet.pods_per_core.filter(|&p| p > 0) {
        if s.family.pods_per_core() {
            pods = pods.min(ppc as f64 * vcpus);
        }
    }
    let vendor = |m: &str| -> f64 {
        f.gpus
            .iter()
            .filter(|g| g.manufacturer == m)
            .map(|g| f64::from(g.count))
            .sum()
    };
    let mut capacity = BTreeMap::from([
        ("cpu".to_string(), vcpus),
        (
            "memory".to_string(),
            discovered_memory.unwrap_or(estimated_memory),
        ),
        ("ephemeral-storage".to_string(), storage),
        ("pods".to_string(), pods),
        (
            "vpc.amazonaws.com/pod-eni".to_string(),
            f64::from(f.branch_enis),
        ),
        ("nvidia.com/gpu".to_string(), vendor("NVIDIA")),
        ("amd.com/gpu".to_string(), vendor("AMD")),
        ("habana.ai/gaudi".to_string(), vendor("Habana")),
        (
            "aws.amazon.com/neuron".to_string(),
            f.neuron.iter().map(|d| f64::from(d.count)).sum(),
        ),
        (
            "aws.amazon.com/neuroncore".to_string(),
            f.neuron
                .first()
                .map_or(0.0, |d| f64::from(d.count * d.cores_per_device)),
        ),
        (
            "vpc.amazonaws.com/efa".to_string(),
            f.efa.map_or(0.0, f64::from),
        ),
    ]);
    let windows = matches!(s.family, AmiFamily::Windows(_));
    if windows && arch == Some("amd64") {
        let ipv4 = f.vpc_ipv4_per_eni.checked_sub(1).map_or(0.0, f64::from);
        capacity.insert("vpc.amazonaws.com/PrivateIPv4Address".to_string(), ipv4);
    }
    capacity.retain(|_, v| *v != 0.0);

    let memory_pods = if s.family.eni_limited_memory_overhead() {
        eni_pods
    } else {
        pods
    };
    let mut kube = BTreeMap::from([
        (
            "cpu".to_string(),
            kube_reserved_millicpu(u64::from(f.vcpus)) as f64 / 1000.0,
        ),
        ("memory".to_string(), kube_reserved_memory(memory_pods)),
        ("ephemeral-storage".to_string(), GI),
    ]);
    kube.extend(s.kubelet.kube_reserved.clone());
    let system = s.kubelet.system_reserved.clone();
    let mut eviction = BTreeMap::from([
        ("memory".to_string(), EVICTION_MEMORY),
        (
            "ephemeral-storage".to_string(),
            (storage / 100.0 * 10.0).ceil(),
        ),
    ]);
    for (signal, resource, of) in [
        ("memory.available", "memory", estimated_memory),
        ("nodefs.available", "ephemeral-storage", storage),
    ] {
        if let Some(v) = s.kubelet.eviction_hard.get(signal) {
            if let Some(q) = eviction_signal(of, v) {
                eviction.insert(resource.to_string(), q);
            }
        }
    }
    let mut allocatable = capacity.clone();
    for (k, v) in &mut allocatable {
        for overhead in [&kube, &system, &eviction] {
            *v -= overhead.get(k).copied().unwrap_or(0.0);
        }
    }
    Resolved {
        capacity: Resources(capacity),
        kube_reserved: Resources(kube),
        system_reserved: Resources(system),
        eviction_threshold: Resources(eviction),
        allocatable: Resources(allocatable),
        labels: type_labels(f, s.family, arch),
    }
}

/// An eviction signal's quantity: a percentage of `of` (100% turns it off), rounded up,
/// or a quantity as written. None for one that reads as neither (the provider panics).
fn eviction_signal(of: f64, v: &str) -> Option<f64> {
    match v.strip_suffix('%') {
        Some(p) => {
            let p: f64 = p.trim().parse().ok()?;
            let p = if p == 100.0 { 0.0 } else { p };
            Some((of / 100.0 * p).ceil())
        }
        None => quantity_value(v).ok(),
    }
}

/// Ephemeral storage: the instance store under RAID0, else the root volume's size, else
/// the family's ephemeral device's, else 20Gi.
fn ephemeral_storage(f: &Facts, s: &Settings) -> f64 {
    if s.raid0 {
        if let Some(gb) = f.storage_gb {
            return gb as f64 * 1e9;
        }
    }
    let (device, default) = s.family.ephemeral_device();
    if !s.block_devices.is_empty() {
        if let Some(size) = s
            .block_devices
            .iter()
            .find(|b| b.root_volume)
            .and_then(|b| b.volume_size)
        {
            return size;
        }
        if s.family == AmiFamily::Custom {
            return s
                .block_devices
                .last()
                .and_then(|b| b.volume_size)
                .unwrap_or(20.0 * GI);
        }
        if let Some(size) = s
            .block_devices
            .iter()
            .find(|b| b.device_name.as_deref() == device)
            .and_then(|b| b.volume_size)
        {
            return size;
        }
    }
    default
}

/// The labels a node of the type gets from the type itself.
fn type_labels(
    f: &Facts,
    family: AmiFamily,
    arch: Option<&'static str>,
) -> BTreeMap<String, Vec<String>> {
    let mut l: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut put = |k: &str, v: String| {
        l.insert(k.to_string(), vec![v]);
    };
    put(labels::INSTANCE_TYPE, f.name.clone());
    put(
        labels::ARCH,
        arch.map_or_else(
            || format!("[{}]", f.architectures.join(" ")),
            str::to_string,
        ),
    );
    put(CPU, f.vcpus.to_string());
    put(MEMORY, f.memory_mib.to_string());
    put(HYPERVISOR, f.hypervisor.clone());
    put(ENCRYPTION_IN_TRANSIT, f.encryption_in_transit.to_string());
    if let Some((category, generation)) = category_generation(&f.name) {
        put(CATEGORY, category.to_string());
        put(GENERATION, generation.to_string());
    }
    let parts: Vec<&str> = f.name.split('.').collect();
    if let [family_name, size] = parts[..] {
        put(FAMILY, family_name.to_string());
        put(SIZE, size.to_string());
    }
    if let Some(gb) = f.storage_gb.filter(|_| f.nvme != "unsupported") {
        put(LOCAL_NVME, gb.to_string());
    }
    put(FLEX, parts[0].contains("-flex").to_string());
    if let Some(mbps) = f.network_mbps {
        put(NETWORK_BANDWIDTH, mbps.to_string());
    }
    if let [g] = &f.gpus[..] {
        put(GPU_NAME, kebab(&g.name));
        put(GPU_MANUFACTURER, kebab(&g.manufacturer));
        put(GPU_COUNT, g.count.to_string());
        put(GPU_MEMORY, g.memory_mib.to_string());
    }
    if let ([a], []) = (&f.inference[..], &f.neuron[..]) {
        put(ACCELERATOR_NAME, kebab(&a.name));
        put(ACCELERATOR_MANUFACTURER, kebab(&a.manufacturer));
        put(ACCELERATOR_COUNT, a.count.to_string());
    }
    if let [d] = &f.neuron[..] {
        put(ACCELERATOR_NAME, kebab(&d.name));
        put(ACCELERATOR_MANUFACTURER, "aws".to_string());
        put(ACCELERATOR_COUNT, d.count.to_string());
    }
    if let AmiFamily::Windows(build) = family {
        put(WINDOWS_BUILD, build.to_string());
    }
    put(CPU_MANUFACTURER, kebab(&f.cpu_manufacturer));
    put(
        CLOCK,
        ((f.clock_ghz.unwrap_or(0.0) * 1000.0).round() as i64).to_string(),
    );
    if f.ebs_optimized == "default" {
        if let Some(mbps) = f.ebs_max_mbps {
            put(EBS_BANDWIDTH, mbps.to_string());
        }
    }
    let os = match family {
        AmiFamily::Windows(_) if arch == Some("amd64") => vec!["windows".to_string()],
        AmiFamily::Windows(_) => Vec::new(),
        _ => vec!["linux".to_string()],
    };
    l.insert(labels::OS.to_string(), os);
    l.insert(
        TENANCY.to_string(),
        vec!["dedicated".to_string(), "default".to_string()],
    );
    l
}
