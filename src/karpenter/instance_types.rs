//! Karpenter's instance-type rules as plain numbers: the kwok provider's built-in types
//! (Karpenter v1.14.1's generator: sizes, families, prices and labels), its fixed
//! kube-reserved (the AWS provider's rules are in [`super::aws`]), and the words of the scheduler's instance-type
//! filter errors (`filterInstanceTypesByRequirements`).

pub const MI: f64 = 1024.0 * 1024.0;
pub const GI: f64 = 1024.0 * MI;

/// `karpenter.kwok.sh/...` labels the kwok provider sets from each type.
pub const KWOK_SIZE: &str = "karpenter.kwok.sh/instance-size";
pub const KWOK_FAMILY: &str = "karpenter.kwok.sh/instance-family";
pub const KWOK_CPU: &str = "karpenter.kwok.sh/instance-cpu";
pub const KWOK_MEMORY: &str = "karpenter.kwok.sh/instance-memory";
/// The zones of the kwok provider's built-in offerings.
pub const KWOK_ZONES: [&str; 4] = ["test-zone-a", "test-zone-b", "test-zone-c", "test-zone-d"];

/// One of the kwok provider's built-in instance types.
#[derive(Debug, Clone, PartialEq)]
pub struct KwokType {
    pub name: String,
    pub cpu: f64,
    /// Bytes.
    pub memory: f64,
    pub pods: f64,
    pub arch: &'static str,
    pub os: &'static str,
    /// The on-demand price; spot is [`KWOK_SPOT`] of it, in every zone.
    pub on_demand: f64,
}

/// The spot discount of the kwok provider's built-in offerings.
pub const KWOK_SPOT: f64 = 0.7;

/// The kwok provider's price for a type: 0.025 per CPU and 0.001 per 10^9 bytes of memory.
pub fn kwok_price(cpu: f64, memory: f64) -> f64 {
    0.025 * cpu + 0.001 * memory / 1e9
}

/// The kwok provider's built-in catalogue (used unless its `INSTANCE_TYPES_FILE_PATH`
/// names another): 12 sizes x 3 memory ratios (families c, s, m: 2, 4, 8 GiB per CPU) x
/// linux/windows x amd64/arm64, pods 16 per CPU up to 1024, 20Gi of ephemeral storage.
pub fn kwok_builtin() -> Vec<KwokType> {
    let mut out = Vec::new();
    for cpu in [1u32, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256] {
        for (factor, family) in [(2u32, "c"), (4, "s"), (8, "m")] {
            for os in ["linux", "windows"] {
                for arch in ["amd64", "arm64"] {
                    let memory = f64::from(cpu * factor) * GI;
                    let cpu = f64::from(cpu);
                    out.push(KwokType {
                        name: format!("{family}-{cpu}x-{arch}-{os}"),
                        cpu,
                        memory,
                        pods: (cpu * 16.0).min(1024.0),
                        arch,
                        os,
                        on_demand: kwok_price(cpu, memory),
                    });
                }
            }
        }
    }
    out
}

/// The kwok provider's overhead for every type: kube-reserved 100m CPU and 10Mi memory.
pub fn kwok_overhead() -> [(&'static str, f64); 2] {
    [("cpu", 0.1), ("memory", 10.0 * MI)]
}

/// A kwok type's family label: its name up to the first `.` or `-`.
pub fn kwok_family(name: &str) -> &str {
    name.split(['.', '-']).next().unwrap_or(name)
}

/// Which of the instance-type filter's checks any one type passed (Karpenter's
/// `InstanceTypeFilterError`): each alone, and each pair without the third.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FilterTally {
    pub requirements: bool,
    pub fits: bool,
    pub offering: bool,
    pub requirements_and_fits: bool,
    pub requirements_and_offering: bool,
    pub fits_and_offering: bool,
}

impl FilterTally {
    /// Count one type's outcome.
    pub fn add(&mut self, compatible: bool, fits: bool, offering: bool) {
        self.requirements |= compatible;
        self.fits |= fits;
        self.offering |= offering;
        self.requirements_and_fits |= compatible && fits && !offering;
        self.requirements_and_offering |= compatible && offering && !fits;
        self.fits_and_offering |= fits && offering && !compatible;
    }

    /// Karpenter's words for why no type is left, first match wins (as v1.14.1 orders
    /// them); the caller appends `, requirements=..., resources=...`.
    pub fn words(&self) -> &'static str {
        let t = self;
        match (t.requirements, t.fits, t.offering) {
            (false, false, false) => "no instance type met the scheduling requirements or had enough resources or had a required offering",
            (false, false, _) => "no instance type met the scheduling requirements or had enough resources",
            (false, _, false) => "no instance type met the scheduling requirements or had a required offering",
            (_, false, false) => "no instance type had enough resources or had a required offering",
            (false, _, _) => "no instance type met all requirements",
            (_, false, _) => "no instance type has enough resources",
            (_, _, false) => "no instance type has the required offering",
            _ if t.requirements_and_fits => "no instance type which met the scheduling requirements and had enough resources, had a required offering",
            _ if t.fits_and_offering => "no instance type which had enough resources and the required offering met the scheduling requirements",
            _ if t.requirements_and_offering => "no instance type which met the scheduling requirements and the required offering had the required resources",
            _ => "no instance type met the requirements/resources/offering tuple",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kwok_builtin_catalogue_has_karpenters_sizes_and_prices() {
        let all = kwok_builtin();
        assert_eq!(all.len(), 144);
        let c1 = all.iter().find(|t| t.name == "c-1x-amd64-linux").unwrap();
        assert_eq!((c1.cpu, c1.memory, c1.pods), (1.0, 2.0 * GI, 16.0));
        // The figures the real instance_types.json carries.
        assert!((c1.on_demand - 0.027147483648).abs() < 1e-12);
        assert!((c1.on_demand * KWOK_SPOT - 0.019003238553599998).abs() < 1e-12);
        let m192 = all.iter().find(|t| t.name == "m-192x-amd64-linux").unwrap();
        assert_eq!(m192.pods, 1024.0);
        assert!((m192.on_demand - 6.449267441664).abs() < 1e-9);
        assert_eq!(kwok_family("c-2x-amd64-linux"), "c");
        assert_eq!(kwok_family("m5.large"), "m5");
    }

    #[test]
    fn filter_words_follow_karpenters_order() {
        let mut t = FilterTally::default();
        assert!(t.words().starts_with(
            "no instance type met the scheduling requirements or had enough resources or"
        ));
        t.add(true, false, true);
        assert_eq!(t.words(), "no instance type has enough resources");
        let mut t = FilterTally::default();
        t.add(true, true, false);
        t.add(false, true, true);
        t.add(true, false, true);
        assert_eq!(t.words(), "no instance type which met the scheduling requirements and had enough resources, had a required offering");
    }
}
