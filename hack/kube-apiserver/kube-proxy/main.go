// Command kube-proxy is upstream kube-proxy at the same version as the
// kube-apiserver beside it, for the tests' single-node cluster (crates/testenv).
// It mirrors k8s.io/kubernetes/cmd/kube-proxy.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"            // for JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/restclient" // for client metric registration
	_ "k8s.io/component-base/metrics/prometheus/version"    // for version metric registration
	"k8s.io/kubernetes/cmd/kube-proxy/app"
)

func main() {
	command := app.NewProxyCommand()
	code := cli.Run(command)
	os.Exit(code)
}
