// Command kube-apiserver is the upstream Kubernetes API server, built from the
// k8s.io/kubernetes Go module at the version pinned in go.mod, so Isolane's tests
// run against a real apiserver without downloading release binaries.
//
// Build it with hack/build-apiserver.sh, which sets the version ldflags and caches
// the binary.
package main

import (
	"os"

	_ "time/tzdata" // the apiserver's CronJob validation accepts TZ names

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // for JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // load all the prometheus client-go plugins
	_ "k8s.io/component-base/metrics/prometheus/version"  // for version metric registration
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	command := app.NewAPIServerCommand()
	code := cli.Run(command)
	os.Exit(code)
}
