// The peer of the RateLimit benches: Kyma api-gateway's own RateLimit reconciler
// (internal/controller/gateway/ratelimit), run alone in a controller-runtime manager, as
// api-gateway's cmd/main.go sets it up but without the other controllers and webhooks.
//
// It imports internal/ packages, so it builds only inside a checkout of
// github.com/kyma-project/api-gateway: the bench copies this file to
// <checkout>/cmd/bench-ratelimit-peer/main.go and runs `go build` there, with the checkout's own
// go.mod (its dependencies come from the Go module proxy). See README.md beside this file.
package main

import (
	"flag"
	"os"

	"github.com/kyma-project/api-gateway/internal/controller"
	"github.com/kyma-project/api-gateway/internal/controller/gateway/ratelimit"
	"go.uber.org/zap/zapcore"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ratelimitv1alpha1 "github.com/kyma-project/api-gateway/apis/gateway/ratelimit/v1alpha1"
	operatorv1alpha1 "github.com/kyma-project/api-gateway/apis/operator/v1alpha1"
	networkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
)

func main() {
	var metricsAddr, probeAddr string
	var leaderElect bool
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "metrics endpoint")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "probe endpoint")
	flag.BoolVar(&leaderElect, "leader-elect", true, "leader election (Lease in kyma-system)")
	// JSON logs with epoch-millisecond timestamps: the bench times start-up from them.
	opts := zap.Options{
		Development:     false,
		StacktraceLevel: zapcore.DPanicLevel,
		TimeEncoder:     zapcore.EpochMillisTimeEncoder,
	}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("peer")

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(ratelimitv1alpha1.AddToScheme(scheme))
	utilruntime.Must(operatorv1alpha1.AddToScheme(scheme))
	utilruntime.Must(networkingv1alpha3.AddToScheme(scheme))

	// The same manager options as api-gateway's cmd/main.go, minus webhooks and its cache tweaks
	// for Secrets and APIRules (no controller here reads them).
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        "69358922.kyma-project.io",
		LeaderElectionNamespace: "kyma-system",
	})
	if err != nil {
		log.Error(err, "unable to create the manager")
		os.Exit(1)
	}
	// api-gateway's defaults for its controllers' work queue (cmd/main.go flags).
	limits := controller.RateLimiterConfig{
		Burst:            controller.RateLimiterBurst,
		Frequency:        controller.RateLimiterFrequency,
		FailureBaseDelay: controller.RateLimiterFailureBaseDelay,
		FailureMaxDelay:  controller.RateLimiterFailureMaxDelay,
	}
	if err := ratelimit.NewRateLimitReconciler(mgr).SetupWithManager(mgr, limits); err != nil {
		log.Error(err, "unable to set up the RateLimit controller")
		os.Exit(1)
	}
	utilruntime.Must(mgr.AddHealthzCheck("healthz", healthz.Ping))
	utilruntime.Must(mgr.AddReadyzCheck("readyz", healthz.Ping))
	log.Info("starting the RateLimit controller")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "manager stopped")
		os.Exit(1)
	}
}
