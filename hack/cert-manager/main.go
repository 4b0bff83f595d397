// The cert-manager controller the ACME tests run (isolane_testenv::CertManager):
// cert-manager v1.21's control loops for Issuers, ClusterIssuers, Certificates,
// CertificateRequests and ACME Orders and Challenges, started from the
// packages of its Go module. The release's own main lives in a separate
// module (cmd/controller) that the module proxy does not serve, so this small
// main wires the same public pieces: a ContextFactory, the named controllers
// from the package registry, and their shared informers. There is no webhook
// and no cainjector: the tests create valid objects only.
// Built by hack/build-cert-manager.sh from the modules pinned in go.mod.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"k8s.io/klog/v2"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	// Each package registers its control loops with controllerpkg in init.
	_ "github.com/cert-manager/cert-manager/pkg/controller/acmechallenges"
	_ "github.com/cert-manager/cert-manager/pkg/controller/acmeorders"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/acme"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	// Issuer kinds register themselves with the issuer factory in init.
	_ "github.com/cert-manager/cert-manager/pkg/issuer/acme"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// version is the cert-manager release whose packages this main runs.
const version = "v1.21.2"

// controllers are the control loops this build runs, by their registered names.
var controllers = []string{
	"issuers", "clusterissuers",
	"certificates-trigger", "certificates-issuing", "certificates-key-manager",
	"certificates-request-manager", "certificates-readiness", "certificates-revision-manager",
	"certificaterequests-approver", "certificaterequests-issuer-acme",
	"certificaterequests-issuer-ca", "certificaterequests-issuer-selfsigned",
	"orders", "challenges",
}

type options struct {
	kubeconfig      string
	clusterResource string
	nameservers     string
	solverImage     string
	healthzAddr     string
	ownerRef        bool
	showVersion     bool
}

func parseFlags() options {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the API server")
	flag.StringVar(&o.clusterResource, "cluster-resource-namespace", "cert-manager",
		"namespace of the Secrets that ClusterIssuers refer to")
	flag.StringVar(&o.nameservers, "acme-http01-solver-nameservers", "",
		"comma-separated host:port DNS servers for the HTTP-01 self-check")
	flag.StringVar(&o.solverImage, "acme-http01-solver-image", "cert-manager-acmesolver:"+version,
		"image of the HTTP-01 solver Pods cert-manager creates")
	flag.StringVar(&o.healthzAddr, "healthz-addr", "",
		"host:port answering GET /healthz with 200 once the informer caches have synced")
	flag.BoolVar(&o.ownerRef, "enable-certificate-owner-ref", false,
		"make each Certificate the owner of its Secret, so that the Secret is deleted with it")
	flag.BoolVar(&o.showVersion, "version", false, "print the version and exit")
	klog.InitFlags(flag.CommandLine)
	flag.Parse()
	return o
}

func contextOptions(o options) controllerpkg.ContextOptions {
	opts := controllerpkg.ContextOptions{Kubeconfig: o.kubeconfig}
	opts.ClusterResourceNamespace = o.clusterResource
	opts.HTTP01SolverImage = o.solverImage
	opts.ACMEHTTP01SolverRunAsNonRoot = true
	if o.nameservers != "" {
		opts.HTTP01SolverNameservers = strings.Split(o.nameservers, ",")
	}
	opts.MaxConcurrentChallenges = 60
	opts.CertificateOptions.EnableOwnerRef = o.ownerRef
	return opts
}

func run(ctx context.Context, o options) error {
	factory, err := controllerpkg.NewContextFactory(ctx, contextOptions(o))
	if err != nil {
		return err
	}
	known := controllerpkg.Known()
	loops := make(map[string]controllerpkg.Interface, len(controllers))
	for _, name := range controllers {
		construct, ok := known[name]
		if !ok {
			return fmt.Errorf("no control loop named %q is registered", name)
		}
		loop, err := construct(factory)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		loops[name] = loop
	}
	shared, err := factory.Build()
	if err != nil {
		return err
	}
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.SharedInformerFactory.Start(ctx.Done())
	shared.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	if shared.GatewaySolverEnabled {
		shared.GWShared.Start(ctx.Done())
	}
	go func() {
		shared.SharedInformerFactory.WaitForCacheSync(ctx.Done())
		serveHealthz(ctx, o.healthzAddr)
	}()
	return runLoops(ctx, loops)
}

// serveHealthz answers GET /healthz on addr (if set) until ctx ends.
func serveHealthz(ctx context.Context, addr string) {
	if addr == "" || ctx.Err() != nil {
		return
	}
	server := &http.Server{Addr: addr, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	})}
	go func() {
		<-ctx.Done()
		_ = server.Close()
	}()
	if err := server.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		logf.FromContext(ctx).Error(err, "healthz server failed")
	}
}

func runLoops(ctx context.Context, loops map[string]controllerpkg.Interface) error {
	log := logf.FromContext(ctx)
	errs := make(chan error, len(loops))
	var wg sync.WaitGroup
	for name, loop := range loops {
		wg.Go(func() {
			log.Info("starting control loop", "controller", name)
			if err := loop.Run(5, ctx); err != nil {
				errs <- fmt.Errorf("%s: %w", name, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func main() {
	o := parseFlags()
	if o.showVersion {
		fmt.Println("cert-manager-controller " + version)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf.InitLogs()
	ctx = logf.NewContext(ctx, logf.Log)
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager-controller:", err)
		os.Exit(1)
	}
}
