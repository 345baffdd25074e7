// Command rbac-manager runs Crossplane's RBAC manager controllers, exactly
// those of the core module (cmd/crossplane/rbac), for tests that install
// provider packages. It differs from `crossplane rbac start` in one way:
// controller-runtime's metrics server stays off, because upstream's binary
// binds :8080 on every interface and offers no flag to move it, and tests
// here bind loopback only.
package main

import (
	"github.com/alecthomas/kong"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/crossplane/crossplane/apis/v2"
	"github.com/crossplane/crossplane/v2/cmd/crossplane/rbac"
)

func main() {
	metricsserver.DefaultBindAddress = "0"

	zl := zap.New(zap.UseDevMode(true)).WithName("rbac-manager")
	ctrl.SetLogger(zl)

	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, rbacv1.AddToScheme,
		coordinationv1.AddToScheme, extv1.AddToScheme, apis.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	c := &rbac.Command{}
	ctx := kong.Parse(c, kong.Name("rbac-manager"), kong.BindTo(logging.NewLogrLogger(zl), (*logging.Logger)(nil)))
	ctx.FatalIfErrorf(ctx.Run(s))
}
