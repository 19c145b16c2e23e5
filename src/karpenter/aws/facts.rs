//! The facts kelp carries for each EC2 instance type (`data/aws-instance-types.tsv`): what
//! EC2's DescribeInstanceTypes says of it, plus the AWS provider's generated network
//! bandwidth and branch-ENI tables. `testenv/aws-truth` writes the file; the header names
//! its sources. Parsed once, on first use.

use std::collections::HashMap;
use std::sync::LazyLock;

/// The table as built in.
const TABLE: &str = include_str!("../../../data/aws-instance-types.tsv");

/// One GPU entry of a type (`GpuInfo.Gpus`).
#[derive(Debug, Clone, PartialEq)]
pub struct Gpu {
    pub manufacturer: String,
    pub name: String,
    pub count: u32,
    pub memory_mib: u64,
}

/// One inference accelerator entry (`InferenceAcceleratorInfo.Accelerators`).
#[derive(Debug, Clone, PartialEq)]
pub struct Accelerator {
    pub manufacturer: String,
    pub name: String,
    pub count: u32,
}

/// One Neuron device entry (`NeuronInfo.NeuronDevices`).
#[derive(Debug, Clone, PartialEq)]
pub struct Neuron {
    pub name: String,
    pub count: u32,
    pub cores_per_device: u32,
}

/// What kelp knows of one EC2 instance type, as EC2 reports it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Facts {
    pub name: String,
    /// `ProcessorInfo.SupportedArchitectures`, in EC2's order (`x86_64`, `arm64`, ...).
    pub architectures: Vec<String>,
    pub vcpus: u32,
    pub memory_mib: u64,
    pub hypervisor: String,
    pub cpu_manufacturer: String,
    pub clock_ghz: Option<f64>,
    /// `EbsInfo.EbsOptimizedSupport` (`default`, `supported`, `unsupported`).
    pub ebs_optimized: String,
    pub ebs_max_mbps: Option<u64>,
    /// From the provider's bandwidth table, where it has the type.
    pub network_mbps: Option<u64>,
    /// `InstanceStorageInfo.TotalSizeInGB`, where the type has instance storage.
    pub storage_gb: Option<u64>,
    /// `InstanceStorageInfo.NvmeSupport` (empty without instance storage).
    pub nvme: String,
    pub encryption_in_transit: bool,
    /// Network interfaces of the default network card.
    pub enis: u32,
    pub ipv4_per_eni: u32,
    pub efa: Option<u32>,
    pub gpus: Vec<Gpu>,
    pub inference: Vec<Accelerator>,
    pub neuron: Vec<Neuron>,
    /// Branch interfaces for security groups for pods (0 where the type does not trunk).
    pub branch_enis: u32,
    /// IPv4 addresses per interface in the VPC resource controller's limits (what a
    /// Windows node's `vpc.amazonaws.com/PrivateIPv4Address` counts), 0 where it has none.
    pub vpc_ipv4_per_eni: u32,
    pub usage_classes: Vec<String>,
}

static BY_NAME: LazyLock<HashMap<String, Facts>> = LazyLock::new(|| {
    // A row that does not read is left out (the type is then estimated): the file is
    // built in and tested, so this does not happen.
    rows(TABLE)
        .filter_map(Result::ok)
        .map(|f| (f.name.clone(), f))
        .collect()
});

/// The fewest pods any type's ENIs allow, and per vCPU count the most any type of at
/// most that many vCPUs allows (ascending).
static PODS: LazyLock<(u64, Vec<(u32, u64)>)> = LazyLock::new(|| {
    let mut by_cpu: Vec<(u32, u64)> = BY_NAME
        .values()
        .map(|f| (f.vcpus, super::eni_limited_pods(f)))
        .collect();
    by_cpu.sort_unstable();
    let fewest = by_cpu
        .iter()
        .map(|p| p.1)
        .filter(|&p| p > 0)
        .min()
        .unwrap_or(0);
    let mut most = 0;
    let envelope = by_cpu
        .into_iter()
        .map(|(cpu, pods)| {
            most = most.max(pods);
            (cpu, most)
        })
        .collect();
    (fewest, envelope)
});

/// The fewest pods any type kelp knows allows, and the most any of at most `cores` vCPUs.
pub fn pods_envelope(cores: f64) -> (u64, u64) {
    let (fewest, envelope) = &*PODS;
    let most = envelope
        .iter()
        .take_while(|(cpu, _)| f64::from(*cpu) <= cores)
        .last()
        .map_or(*fewest, |e| e.1);
    (*fewest, most)
}

/// The facts of `name`, if kelp carries them.
pub fn get(name: &str) -> Option<&'static Facts> {
    BY_NAME.get(name)
}

/// How many types kelp carries.
pub fn count() -> usize {
    BY_NAME.len()
}

/// Where the table's facts come from (its `# source:` lines).
pub fn sources() -> Vec<&'static str> {
    TABLE
        .lines()
        .filter_map(|l| l.strip_prefix("# source: "))
        .collect()
}

/// Every data row of a table in this format, in order.
pub fn rows(text: &str) -> impl Iterator<Item = Result<Facts, String>> + '_ {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .skip(1) // the column names
        .map(row)
}

fn row(line: &str) -> Result<Facts, String> {
    let cols: Vec<&str> = line.split('\t').collect();
    let [name, architectures, vcpus, memory_mib, hypervisor, cpu_manufacturer, clock_ghz, ebs_optimized, ebs_max_mbps, network_mbps, storage_gb, nvme, encryption_in_transit, enis, ipv4_per_eni, efa, gpus, inference, neuron, branch_enis, vpc_ipv4_per_eni, usage_classes] =
        cols[..]
    else {
        return Err(format!("{} columns, want 22: {line}", cols.len()));
    };
    let bad = |what: &str, v: &str| format!("{name}: {what} {v:?} does not read");
    let num = |what: &str, v: &str| v.parse::<u64>().map_err(|_| bad(what, v));
    let opt = |what: &str, v: &str| (!v.is_empty()).then(|| num(what, v)).transpose();
    let list = |v: &str| -> Vec<String> {
        v.split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    let items = |s: &str| -> Vec<Vec<String>> {
        s.split(';')
            .filter(|i| !i.is_empty())
            .map(|i| i.split(':').map(str::to_string).collect())
            .collect()
    };
    let u32_of = |what: &str, v: &str| v.parse::<u32>().map_err(|_| bad(what, v));
    let gpus = items(gpus)
        .into_iter()
        .map(|p| match &p[..] {
            [m, n, c, mem] => Ok(Gpu {
                manufacturer: m.clone(),
                name: n.clone(),
                count: u32_of("gpu count", c)?,
                memory_mib: num("gpu memory", mem)?,
            }),
            _ => Err(bad("gpu", &p.join(":"))),
        })
        .collect::<Result<_, _>>()?;
    let inference = items(inference)
        .into_iter()
        .map(|p| match &p[..] {
            [m, n, c] => Ok(Accelerator {
                manufacturer: m.clone(),
                name: n.clone(),
                count: u32_of("accelerator count", c)?,
            }),
            _ => Err(bad("accelerator", &p.join(":"))),
        })
        .collect::<Result<_, _>>()?;
    let neuron = items(neuron)
        .into_iter()
        .map(|p| match &p[..] {
            [n, c, cores] => Ok(Neuron {
                name: n.clone(),
                count: u32_of("neuron count", c)?,
                cores_per_device: u32_of("neuron cores", cores)?,
            }),
            _ => Err(bad("neuron", &p.join(":"))),
        })
        .collect::<Result<_, _>>()?;
    Ok(Facts {
        name: name.to_string(),
        architectures: list(architectures),
        vcpus: u32_of("vcpus", vcpus)?,
        memory_mib: num("memory", memory_mib)?,
        hypervisor: hypervisor.to_string(),
        cpu_manufacturer: cpu_manufacturer.to_string(),
        clock_ghz: (!clock_ghz.is_empty())
            .then(|| {
                clock_ghz
                    .parse::<f64>()
                    .map_err(|_| bad("clock", clock_ghz))
            })
            .transpose()?,
        ebs_optimized: ebs_optimized.to_string(),
        ebs_max_mbps: opt("ebs bandwidth", ebs_max_mbps)?,
        network_mbps: opt("network bandwidth", network_mbps)?,
        storage_gb: opt("storage", storage_gb)?,
        nvme: nvme.to_string(),
        encryption_in_transit: encryption_in_transit == "true",
        enis: u32_of("enis", enis)?,
        ipv4_per_eni: u32_of("ipv4 per eni", ipv4_per_eni)?,
        efa: (!efa.is_empty()).then(|| u32_of("efa", efa)).transpose()?,
        gpus,
        inference,
        neuron,
        branch_enis: u32_of("branch enis", branch_enis)?,
        vpc_ipv4_per_eni: u32_of("vpc ipv4 per eni", vpc_ipv4_per_eni)?,
        usage_classes: list(usage_classes),
    })
}
