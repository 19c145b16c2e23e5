// Command kelp-cp is the test control plane used by kelp's end-to-end tests:
// one binary that runs, depending on its first argument (or on the name it is
// invoked under), an embedded etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler or kubectl. One binary links once, which keeps the cold build
// short (see ../../README.md for the measurements).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	_ "time/tzdata" // CronJob time zones in the controller manager

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

// components maps a component name to a function that runs it and returns
// the exit code. Each reads its arguments from os.Args, which main rewrites
// to look as if the component had been started on its own.
var components = map[string]func() int{
	"etcd": runEtcd,
	"kube-apiserver": func() int {
		return cli.Run(apiserver.NewAPIServerCommand())
	},
	"kube-controller-manager": func() int {
		return cli.Run(controllermanager.NewControllerManagerCommand())
	},
	"kube-scheduler": func() int {
		return cli.Run(scheduler.NewSchedulerCommand())
	},
	"kubectl": runKubectl,
}

func runKubectl() int {
	// kubectl reads os.Args itself (plugins, verbosity), hence the rewrite.
	logs.GlogSetter(kubectl.GetLogVerbosity(os.Args)) //nolint:errcheck
	if err := cli.RunNoErrOutput(kubectl.NewDefaultKubectlCommand()); err != nil {
		kubectlutil.CheckErr(err) // prints the error and exits non-zero
	}
	return 0
}

func usage() int {
	names := make([]string, 0, len(components))
	for n := range components {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "usage: kelp-cp <%s> [flags]\n", strings.Join(names, "|"))
	return 2
}

func main() {
	// Invoked through a symlink named after a component (e.g. "kubectl")?
	if run, ok := components[filepath.Base(os.Args[0])]; ok {
		os.Args[0] = filepath.Base(os.Args[0])
		os.Exit(run())
	}
	if len(os.Args) < 2 {
		os.Exit(usage())
	}
	run, ok := components[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "kelp-cp: unknown component %q\n", os.Args[1])
		os.Exit(usage())
	}
	os.Args = os.Args[1:] // drop "kelp-cp": the component name becomes argv[0]
	os.Exit(run())
}
