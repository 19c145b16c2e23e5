use super::*;

fn m5_large() -> &'static Facts {
    facts::get("m5.large").expect("the table has m5.large")
}

#[test]
fn m5_large_by_default_is_what_the_provider_gives_it() {
    let r = resolve(m5_large(), &Settings::default(), None);
    assert_eq!(r.capacity.get("cpu"), 2.0);
    // 8192 MiB less 7.5% rounded up (615 MiB).
    assert_eq!(r.capacity.get("memory"), 7577.0 * MI);
    // 3 ENIs of 10 addresses: 3 x 9 + 2.
    assert_eq!(r.capacity.get("pods"), 29.0);
    assert_eq!(r.capacity.get("vpc.amazonaws.com/pod-eni"), 9.0);
    assert!((r.allocatable.get("cpu") - 1.93).abs() < 1e-9);
    // Less 11 x 29 + 255 MiB kube-reserved and 100 MiB eviction.
    assert_eq!(r.allocatable.get("memory"), (7577.0 - 574.0 - 100.0) * MI);
    // 20Gi root volume, less 1Gi kube-reserved and 10% eviction.
    assert_eq!(
        r.allocatable.get("ephemeral-storage"),
        20.0 * GI - GI - 2.0 * GI
    );
    assert_eq!(r.labels[labels::ARCH], vec!["amd64"]);
    assert_eq!(r.labels[FAMILY], vec!["m5"]);
    assert_eq!(r.labels[CPU_MANUFACTURER], vec!["intel"]);
    assert!(!r.labels.contains_key(GPU_COUNT));
}

#[test]
fn a_node_seen_replaces_the_memory_estimate_but_not_the_eviction_it_came_from() {
    let seen = 7910320.0 * 1024.0;
    let s = Settings {
        kubelet: Kubelet {
            eviction_hard: [("memory.available".to_string(), "10%".to_string())].into(),
            ..Kubelet::default()
        },
        ..Settings::default()
    };
    let r = resolve(m5_large(), &s, Some(seen));
    assert_eq!(r.capacity.get("memory"), seen);
    // 10% of the estimate (7577 MiB), rounded up to whole bytes.
    let eviction = (7577.0 * MI / 100.0 * 10.0).ceil();
    assert_eq!(r.eviction_threshold.get("memory"), eviction);
    assert_eq!(r.allocatable.get("memory"), seen - 574.0 * MI - eviction);
}

#[test]
fn kubelet_settings_move_pods_and_overhead_as_the_family_allows() {
    let f = m5_large();
    let per_core = Kubelet {
        pods_per_core: Some(4),
        ..Kubelet::default()
    };
    let al2023 = Settings {
        kubelet: per_core.clone(),
        ..Settings::default()
    };
    let r = resolve(f, &al2023, None);
    assert_eq!(r.capacity.get("pods"), 8.0);
    // AL2023 still reserves memory for the ENI-limited 29 pods.
    assert_eq!(r.kube_reserved.get("memory"), 574.0 * MI);
    // Bottlerocket ignores podsPerCore, and its ephemeral storage is on /dev/xvdb.
    let bottlerocket = Settings {
        family: AmiFamily::Bottlerocket,
        kubelet: Kubelet {
            max_pods: Some(50),
            ..per_core
        },
        block_devices: vec![BlockDevice {
            device_name: Some("/dev/xvdb".into()),
            root_volume: false,
            volume_size: Some(100.0 * GI),
        }],
        ..Settings::default()
    };
    let r = resolve(f, &bottlerocket, None);
    assert_eq!(r.capacity.get("pods"), 50.0);
    assert_eq!(r.kube_reserved.get("memory"), (11.0 * 50.0 + 255.0) * MI);
    assert_eq!(r.capacity.get("ephemeral-storage"), 100.0 * GI);
    // Windows: 110 pods, a 50Gi root, its build label and private IPv4 addresses.
    let windows = Settings {
        family: AmiFamily::of(None, &["windows2022@latest"]),
        ..Settings::default()
    };
    let r = resolve(f, &windows, None);
    assert_eq!(r.capacity.get("pods"), 110.0);
    assert_eq!(r.capacity.get("ephemeral-storage"), 50.0 * GI);
    assert_eq!(r.labels[labels::OS], vec!["windows"]);
    assert_eq!(r.labels[WINDOWS_BUILD], vec!["10.0.20348"]);
    assert_eq!(r.capacity.get("vpc.amazonaws.com/PrivateIPv4Address"), 9.0);
}

#[test]
fn the_ami_family_comes_from_the_spec_then_the_alias() {
    assert_eq!(
        AmiFamily::of(Some("Bottlerocket"), &["al2023@latest"]),
        AmiFamily::Bottlerocket
    );
    assert_eq!(AmiFamily::of(None, &["al2@v20250101"]), AmiFamily::Al2);
    assert_eq!(AmiFamily::of(None, &["al2023@latest"]), AmiFamily::Al2023);
    // Ubuntu and any other name are the provider's default.
    assert_eq!(AmiFamily::of(Some("Ubuntu"), &[]), AmiFamily::Al2);
    assert_eq!(AmiFamily::of(None, &[]), AmiFamily::Custom);
}

#[test]
fn kube_reserved_cpu_truncates_each_band_to_whole_millicores() {
    assert_eq!(kube_reserved_millicpu(1), 60);
    assert_eq!(kube_reserved_millicpu(2), 70);
    assert_eq!(kube_reserved_millicpu(4), 80);
    // The fifth core's 2.5m is 2m.
    assert_eq!(kube_reserved_millicpu(5), 82);
    assert_eq!(kube_reserved_millicpu(96), 80 + 230);
}

#[test]
fn names_say_category_and_generation() {
    assert_eq!(category_generation("m5.large"), Some(("m", "5")));
    assert_eq!(category_generation("c7gn.xlarge"), Some(("c", "7")));
    assert_eq!(category_generation("u-6tb1.metal"), Some(("u", "1")));
    assert_eq!(category_generation("inf2.xlarge"), Some(("inf", "2")));
    assert_eq!(category_generation("weird"), None);
}

#[test]
fn eviction_signals_read_as_the_provider_reads_them() {
    assert_eq!(eviction_signal(1000.0, "5%"), Some(50.0));
    assert_eq!(eviction_signal(1000.0, "100%"), Some(0.0));
    assert_eq!(eviction_signal(1000.0, "200Mi"), Some(200.0 * MI));
    assert_eq!(eviction_signal(1000.0, "lots"), None);
}

#[test]
fn the_pods_range_of_an_unknown_type_holds_every_known_type_of_its_size() {
    let (fewest, most) = pods_range(2.0);
    assert!(fewest <= 4.0 && most >= 29.0);
    for f in ["m5.large", "c6g.xlarge", "m5.24xlarge"].map(|n| facts::get(n).unwrap()) {
        let (fewest, most) = pods_range(f64::from(f.vcpus));
        let pods = eni_limited_pods(f) as f64;
        assert!(fewest <= pods && pods <= most, "{}: {pods}", f.name);
    }
}
