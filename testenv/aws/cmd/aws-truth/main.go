// Command aws-truth runs karpenter-provider-aws's own instance-type code, offline, over EC2
// DescribeInstanceTypes data (the provider's pkg/fake set and, with -moto, the set moto
// serves), and writes what kelp is checked against:
//
//	-catalog FILE  gzipped JSON lines: a header, then per kubelet setting and type the
//	               capacity, kube-reserved, system-reserved, eviction threshold and
//	               allocatable (non-zero quantities, in milli-units), and with the default
//	               setting the type's requirements (the provider's Resolve, as its
//	               scheduler sees each type);
//	-table FILE    the raw facts of each type (tab-separated) that kelp carries as data:
//	               what DescribeInstanceTypes says, plus the provider's generated
//	               network-bandwidth and branch-ENI tables;
//	-hash-cases IN -hash-out OUT
//	               for each case of IN (a name and two EC2NodeClass specs, a and b), the
//	               provider's EC2NodeClass hash of each (the karpenter.k8s.aws/ec2nodeclass-hash
//	               its static drift compares, with no CA bundle) and whether they differ.
//
// It talks to no AWS endpoint: the provider's resolver takes the data directly.
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "github.com/aws/karpenter-provider-aws/pkg/apis/v1"
	"github.com/aws/karpenter-provider-aws/pkg/fake"
	"github.com/aws/karpenter-provider-aws/pkg/operator/options"
	"github.com/aws/karpenter-provider-aws/pkg/providers/instancetype"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
)

// The kubelet settings each type is resolved at: the default, and two that move every
// figure the provider derives from them.
var settings = []struct {
	Name    string
	Kubelet map[string]any
}{
	{"default", nil},
	{"reserved", map[string]any{
		"maxPods":        20,
		"kubeReserved":   map[string]string{"cpu": "250m", "memory": "1Gi", "ephemeral-storage": "3Gi"},
		"systemReserved": map[string]string{"cpu": "100m", "memory": "200Mi"},
		"evictionHard":   map[string]string{"memory.available": "5%", "nodefs.available": "15%"},
	}},
	{"per-core", map[string]any{
		"podsPerCore":  4,
		"evictionHard": map[string]string{"memory.available": "300Mi"},
	}},
}

const region = "us-west-2"

var zones = []string{"us-west-2a", "us-west-2b", "us-west-2c"}

type resolved struct {
	Setting           string              `json:"setting"`
	Name              string              `json:"name"`
	Capacity          map[string]int64    `json:"capacity"`
	KubeReserved      map[string]int64    `json:"kubeReserved"`
	SystemReserved    map[string]int64    `json:"systemReserved"`
	EvictionThreshold map[string]int64    `json:"evictionThreshold"`
	Allocatable       map[string]int64    `json:"allocatable"`
	Labels            map[string][]string `json:"labels,omitempty"`
	Absent            []string            `json:"absent,omitempty"`
}

type header struct {
	Provider string         `json:"provider"`
	Sources  []string       `json:"sources"`
	Note     string         `json:"note"`
	Settings map[string]any `json:"settings"`
}

// Requirements that come from where a type is offered (the NodeClass's subnets, the
// region, reservations), not from the type: left out.
var offeringKeys = map[string]bool{
	"topology.kubernetes.io/zone":   true,
	"topology.kubernetes.io/region": true,
	"topology.k8s.aws/zone-id":      true,
	"karpenter.sh/capacity-type":    true,
}

func main() {
	motoPath := flag.String("moto", "", "moto's ec2/resources/instance_types.json.gz (optional)")
	motoVersion := flag.String("moto-version", "", "the moto release the file came from")
	providerVersion := flag.String("provider-version", "v1.15.2", "the karpenter-provider-aws release built in")
	catalogPath := flag.String("catalog", "", "write the resolved catalogue here")
	tablePath := flag.String("table", "", "write the facts table here")
	hashCases := flag.String("hash-cases", "", "EC2NodeClass spec pairs to hash")
	hashOut := flag.String("hash-out", "", "write the hashes of -hash-cases here")
	flag.Parse()
	if (*hashCases == "") != (*hashOut == "") {
		fail("-hash-cases and -hash-out go together")
	}
	if *hashCases != "" {
		if err := hashAll(*hashCases, *hashOut); err != nil {
			fail(err.Error())
		}
		if *catalogPath == "" && *tablePath == "" {
			return
		}
	}
	if *catalogPath == "" && *tablePath == "" {
		fail("nothing to do: give -catalog, -table or -hash-cases")
	}
	infos, sources, err := load(*motoPath, *motoVersion, *providerVersion)
	if err != nil {
		fail(err.Error())
	}
	if *tablePath != "" {
		if err := writeTable(*tablePath, infos, sources); err != nil {
			fail(err.Error())
		}
	}
	if *catalogPath != "" {
		h := header{
			Provider: "github.com/aws/karpenter-provider-aws " + *providerVersion,
			Sources:  sources,
			Note:     "allocatable = capacity - kubeReserved - systemReserved - evictionThreshold; non-zero quantities, in milli-units; AMI family AL2023, VM memory overhead 0.075, no reserved ENIs",
			Settings: map[string]any{},
		}
		lines := []any{&h}
		for _, s := range settings {
			h.Settings[s.Name] = s.Kubelet
			rs, err := resolveAll(infos, s.Name, s.Kubelet)
			if err != nil {
				fail(fmt.Sprintf("setting %s: %v", s.Name, err))
			}
			for i := range rs {
				lines = append(lines, &rs[i])
			}
		}
		if err := writeLines(*catalogPath, lines); err != nil {
			fail(err.Error())
		}
	}
}

type hashCase struct {
	Name string          `json:"name"`
	A    json.RawMessage `json:"a"`
	B    json.RawMessage `json:"b"`
}

type hashed struct {
	Name    string `json:"name"`
	A       string `json:"a"`
	B       string `json:"b"`
	Drifted bool   `json:"drifted"`
	Version string `json:"version"`
}

func hashAll(in, out string) error {
	raw, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var cases []hashCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	hash := func(spec json.RawMessage) (string, error) {
		// As the controller reads it from the API server: a custom resource is stored and
		// served through generic maps, so its objects' keys come back sorted.
		var generic any
		if err := json.Unmarshal(spec, &generic); err != nil {
			return "", err
		}
		served, err := json.Marshal(generic)
		if err != nil {
			return "", err
		}
		nc := &v1.EC2NodeClass{}
		if err := json.Unmarshal(served, &nc.Spec); err != nil {
			return "", err
		}
		return nc.Hash(nil), nil
	}
	var results []hashed
	for _, c := range cases {
		a, err := hash(c.A)
		if err != nil {
			return fmt.Errorf("%s a: %w", c.Name, err)
		}
		b, err := hash(c.B)
		if err != nil {
			return fmt.Errorf("%s b: %w", c.Name, err)
		}
		results = append(results, hashed{Name: c.Name, A: a, B: b, Drifted: a != b, Version: v1.EC2NodeClassHashVersion})
	}
	raw, err = json.MarshalIndent(results, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(raw, '\n'), 0o644)
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "aws-truth:", msg)
	os.Exit(1)
}

// load gives every type the provider would list (hvm, x86_64 or arm64: its
// DescribeInstanceTypes filters), the provider's own data first.
func load(motoPath, motoVersion, providerVersion string) ([]ec2types.InstanceTypeInfo, []string, error) {
	out, err := fake.NewEC2API().DescribeInstanceTypes(context.Background(), nil)
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	var infos []ec2types.InstanceTypeInfo
	add := func(i ec2types.InstanceTypeInfo) {
		name := string(i.InstanceType)
		if seen[name] || !listed(i) {
			return
		}
		seen[name] = true
		infos = append(infos, i)
	}
	for _, i := range out.InstanceTypes {
		add(i)
	}
	sources := []string{fmt.Sprintf("karpenter-provider-aws %s pkg/fake (%d types)", providerVersion, len(infos))}
	if motoPath != "" {
		f, err := os.Open(motoPath)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", motoPath, err)
		}
		raw, err := io.ReadAll(gz)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", motoPath, err)
		}
		var byName map[string]ec2types.InstanceTypeInfo
		if err := json.Unmarshal(raw, &byName); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", motoPath, err)
		}
		names := make([]string, 0, len(byName))
		for n := range byName {
			names = append(names, n)
		}
		sort.Strings(names)
		before := len(infos)
		for _, n := range names {
			add(byName[n])
		}
		sources = append(sources, fmt.Sprintf("moto %s ec2/resources/instance_types.json.gz (%d more types)", motoVersion, len(infos)-before))
	}
	sort.Slice(infos, func(a, b int) bool { return infos[a].InstanceType < infos[b].InstanceType })
	return infos, sources, nil
}

func listed(i ec2types.InstanceTypeInfo) bool {
	hvm := false
	for _, v := range i.SupportedVirtualizationTypes {
		hvm = hvm || v == ec2types.VirtualizationTypeHvm
	}
	arch := false
	if i.ProcessorInfo != nil {
		for _, a := range i.ProcessorInfo.SupportedArchitectures {
			arch = arch || a == "x86_64" || a == "arm64"
		}
	}
	usable := i.VCpuInfo != nil && i.VCpuInfo.DefaultVCpus != nil && i.MemoryInfo != nil &&
		i.MemoryInfo.SizeInMiB != nil && i.NetworkInfo != nil && len(i.NetworkInfo.NetworkCards) > 0
	return hvm && arch && usable
}

func nodeClass(kubelet map[string]any) (*v1.EC2NodeClass, error) {
	kc := v1.KubeletConfiguration{}
	for k, v := range kubelet {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		kc[k] = apiextensionsv1.JSON{Raw: raw}
	}
	nc := &v1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "truth"},
		Spec: v1.EC2NodeClassSpec{
			AMISelectorTerms: []v1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Kubelet:          kc,
		},
	}
	for i, z := range zones {
		nc.Status.Subnets = append(nc.Status.Subnets, v1.Subnet{ID: fmt.Sprintf("subnet-%d", i), Zone: z, ZoneID: "usw2-az" + strconv.Itoa(i+1)})
	}
	return nc, nil
}

func resolveAll(infos []ec2types.InstanceTypeInfo, setting string, kubelet map[string]any) ([]resolved, error) {
	ctx := options.ToContext(context.Background(), &options.Options{VMMemoryOverheadPercent: 0.075})
	nc, err := nodeClass(kubelet)
	if err != nil {
		return nil, err
	}
	parsed, err := v1.ParseKubeletConfig(nc.KubeletConfiguration())
	if err != nil {
		return nil, err
	}
	resolver := instancetype.NewDefaultResolver(region, nil)
	var out []resolved
	for _, info := range infos {
		it, err := resolver.Resolve(ctx, info, zones, nc, parsed)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", info.InstanceType, err)
		}
		if it == nil {
			continue
		}
		r := describe(it)
		r.Setting = setting
		if setting != settings[0].Name {
			r.Labels, r.Absent = nil, nil
		}
		out = append(out, r)
	}
	return out, nil
}

func milli(rl corev1.ResourceList) map[string]int64 {
	m := map[string]int64{}
	for k, q := range rl {
		if v := q.MilliValue(); v != 0 {
			m[string(k)] = v
		}
	}
	return m
}

func describe(it *cloudprovider.InstanceType) resolved {
	r := resolved{
		Name:              it.Name,
		Capacity:          milli(it.Capacity),
		KubeReserved:      milli(it.Overhead.KubeReserved),
		SystemReserved:    milli(it.Overhead.SystemReserved),
		EvictionThreshold: milli(it.Overhead.EvictionThreshold),
		Allocatable:       milli(it.Allocatable()),
		Labels:            map[string][]string{},
		Absent:            []string{},
	}
	for key, req := range it.Requirements {
		if offeringKeys[key] {
			continue
		}
		switch req.Operator() {
		case corev1.NodeSelectorOpIn:
			vals := req.Values()
			sort.Strings(vals)
			r.Labels[key] = vals
		case corev1.NodeSelectorOpDoesNotExist:
			r.Absent = append(r.Absent, key)
		}
	}
	sort.Strings(r.Absent)
	return r
}

// writeLines writes one JSON document per line, gzipped (no timestamp in the header, so
// the same input gives the same bytes).
func writeLines(path string, lines []any) error {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(gz)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// The facts table's columns, in order.
var columns = []string{
	"name", "architectures", "vcpus", "memory_mib", "hypervisor", "cpu_manufacturer", "clock_ghz",
	"ebs_optimized", "ebs_max_mbps", "network_mbps", "storage_gb", "nvme", "encryption_in_transit",
	"enis", "ipv4_per_eni", "efa", "gpus", "inference", "neuron", "branch_enis", "vpc_ipv4_per_eni", "usage_classes",
}

func writeTable(path string, infos []ec2types.InstanceTypeInfo, sources []string) error {
	var b strings.Builder
	b.WriteString("# The facts kelp computes the AWS provider's instance types from (generated by testenv/aws-truth; do not edit).\n")
	for _, s := range sources {
		b.WriteString("# source: EC2 DescribeInstanceTypes as in " + s + "\n")
	}
	b.WriteString("# source: network_mbps, branch_enis and vpc_ipv4_per_eni from karpenter-provider-aws's generated bandwidth and VPC-limits tables\n")
	b.WriteString("# lists: gpus manufacturer:name:count:memory_mib, inference manufacturer:name:count, neuron name:count:cores_per_device; ';' between items\n")
	b.WriteString(strings.Join(columns, "\t") + "\n")
	for _, i := range infos {
		b.WriteString(strings.Join(row(i), "\t") + "\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func str(s *string) string { return clean(deref(s)) }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// clean keeps the table's separators out of a value.
func clean(s string) string {
	return strings.NewReplacer("\t", " ", "\n", " ", ";", ",", ":", " ").Replace(s)
}

func row(i ec2types.InstanceTypeInfo) []string {
	name := string(i.InstanceType)
	var archs []string
	for _, a := range i.ProcessorInfo.SupportedArchitectures {
		archs = append(archs, string(a))
	}
	opt := func(ok bool, s string) string {
		if ok {
			return s
		}
		return ""
	}
	clock := ""
	if i.ProcessorInfo.SustainedClockSpeedInGhz != nil {
		clock = strconv.FormatFloat(*i.ProcessorInfo.SustainedClockSpeedInGhz, 'f', -1, 64)
	}
	ebsOpt, ebsMax := "", ""
	if i.EbsInfo != nil {
		ebsOpt = string(i.EbsInfo.EbsOptimizedSupport)
		if i.EbsInfo.EbsOptimizedInfo != nil && i.EbsInfo.EbsOptimizedInfo.MaximumBandwidthInMbps != nil {
			ebsMax = strconv.Itoa(int(*i.EbsInfo.EbsOptimizedInfo.MaximumBandwidthInMbps))
		}
	}
	bw, ok := instancetype.InstanceTypeBandwidthMegabits[name]
	storage, nvme := "", ""
	if i.InstanceStorageInfo != nil {
		nvme = string(i.InstanceStorageInfo.NvmeSupport)
		if i.InstanceStorageInfo.TotalSizeInGB != nil {
			storage = strconv.FormatInt(*i.InstanceStorageInfo.TotalSizeInGB, 10)
		}
	}
	ni := i.NetworkInfo
	enis := deref(ni.NetworkCards[deref(ni.DefaultNetworkCardIndex)].MaximumNetworkInterfaces)
	efa := ""
	if ni.EfaInfo != nil && ni.EfaInfo.MaximumEfaInterfaces != nil {
		efa = strconv.Itoa(int(*ni.EfaInfo.MaximumEfaInterfaces))
	}
	var gpus, inference, neuron []string
	if i.GpuInfo != nil {
		for _, g := range i.GpuInfo.Gpus {
			mem := int32(0)
			if g.MemoryInfo != nil {
				mem = deref(g.MemoryInfo.SizeInMiB)
			}
			gpus = append(gpus, fmt.Sprintf("%s:%s:%d:%d", str(g.Manufacturer), str(g.Name), deref(g.Count), mem))
		}
	}
	if i.InferenceAcceleratorInfo != nil {
		for _, a := range i.InferenceAcceleratorInfo.Accelerators {
			inference = append(inference, fmt.Sprintf("%s:%s:%d", str(a.Manufacturer), str(a.Name), deref(a.Count)))
		}
	}
	if i.NeuronInfo != nil {
		for _, d := range i.NeuronInfo.NeuronDevices {
			cores := int32(0)
			if d.CoreInfo != nil {
				cores = deref(d.CoreInfo.Count)
			}
			neuron = append(neuron, fmt.Sprintf("%s:%d:%d", str(d.Name), deref(d.Count), cores))
		}
	}
	branch, vpcIPv4 := "0", "0"
	if l, ok := instancetype.Limits[name]; ok {
		vpcIPv4 = strconv.Itoa(l.IPv4PerInterface)
		if l.IsTrunkingCompatible {
			branch = strconv.Itoa(l.BranchInterface)
		}
	}
	var classes []string
	for _, c := range i.SupportedUsageClasses {
		classes = append(classes, string(c))
	}
	return []string{
		name,
		strings.Join(archs, ","),
		strconv.Itoa(int(deref(i.VCpuInfo.DefaultVCpus))),
		strconv.FormatInt(deref(i.MemoryInfo.SizeInMiB), 10),
		clean(string(i.Hypervisor)),
		str(i.ProcessorInfo.Manufacturer),
		clock,
		ebsOpt,
		ebsMax,
		opt(ok, strconv.FormatInt(bw, 10)),
		storage,
		nvme,
		strconv.FormatBool(deref(ni.EncryptionInTransitSupported)),
		strconv.Itoa(int(enis)),
		strconv.Itoa(int(deref(ni.Ipv4AddressesPerInterface))),
		efa,
		strings.Join(gpus, ";"),
		strings.Join(inference, ";"),
		strings.Join(neuron, ";"),
		branch,
		vpcIPv4,
		strings.Join(classes, ","),
	}
}
