// Command kube-controller-manager is upstream kube-controller-manager at the same
// version as the kube-apiserver beside it, for the tests' single-node cluster
// (crates/testenv). It mirrors k8s.io/kubernetes/cmd/kube-controller-manager.
package main

import (
	"os"

	_ "time/tzdata" // for CronJob time zone support

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // for JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // load all the prometheus client-go plugin
	_ "k8s.io/component-base/metrics/prometheus/version"  // for version metric registration
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	command := app.NewControllerManagerCommand()
	code := cli.Run(command)
	os.Exit(code)
}
