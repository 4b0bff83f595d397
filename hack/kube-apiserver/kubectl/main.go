// Command kubectl is upstream kubectl at the same version as the kube-apiserver
// beside it, for machines that have no kubectl (hack/install-deps.sh builds it
// only then). It mirrors k8s.io/kubernetes/cmd/kubectl.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"

	_ "k8s.io/client-go/plugin/pkg/client/auth" // client auth plugins (exec, OIDC)
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
