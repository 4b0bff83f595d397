// Command kubelet is upstream kubelet at the same version as the kube-apiserver
// beside it, for the tests' single-node cluster (crates/testenv). It mirrors
// k8s.io/kubernetes/cmd/kubelet; hack/build-apiserver.sh builds and caches it.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"            // for JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/restclient" // for client metric registration
	_ "k8s.io/component-base/metrics/prometheus/version"    // for version metric registration
	"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	command := app.NewKubeletCommand()
	code := cli.Run(command)
	os.Exit(code)
}
