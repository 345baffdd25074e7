package install

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
)

// TestKubeletRestartsAnExitedProvider: the stand-in kubelet's own logic
// (no API server behaviour is under test, so a fake clientset serves the
// Deployment): a provider that exits on its own is started again after
// its back-off, counted as a restart and not as a new start, and the
// report says how it exited; a replaced Deployment is a new start.
func TestKubeletRestartsAnExitedProvider(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	bin := filepath.Join(dir, "provider")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho giving up on the caches\nexit 3\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	dep := func(uid string) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "provider-" + uid, Namespace: "crossplane-system", UID: k8stypes.UID("uid-" + uid), CreationTimestamp: metav1.Now()},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"pkg.crossplane.io/provider": "p"}},
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{ServiceAccountName: "sa", Containers: []corev1.Container{{Name: "package-runtime"}}}},
			},
		}
	}
	kc := fake.NewSimpleClientset(dep("a"), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa", Namespace: "crossplane-system"}})
	// The fake has no token subresource: answer as the API server would.
	kc.PrependReactor("create", "serviceaccounts", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, &authnv1.TokenRequest{Status: authnv1.TokenRequestStatus{Token: "token"}}, nil
	})
	k := &kubelet{kc: kc, cfg: &rest.Config{Host: "https://127.0.0.1:1"}, provider: "p", bin: bin, dir: dir, backoff: 200 * time.Millisecond}
	defer k.stop()

	sync := func() {
		t.Helper()
		if err := k.sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sync()
	deadline := time.Now().Add(10 * time.Second)
	for k.restarts < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		sync()
	}
	if k.starts != 1 || k.restarts < 2 {
		t.Fatalf("after exits: %d starts, %d restarts; want 1 start and at least 2 restarts", k.starts, k.restarts)
	}
	if st := k.status(); !strings.Contains(st, "exit status 3") || !strings.Contains(st, "giving up on the caches") {
		t.Errorf("the report does not say how the provider exited and what it logged: %s", st)
	}
	if len(k.crashes()) < 2 {
		t.Errorf("crashes: %v", k.crashes())
	}

	// Crossplane replaces the Deployment (an upgrade): a new start.
	if err := kc.AppsV1().Deployments("crossplane-system").Delete(ctx, "provider-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.AppsV1().Deployments("crossplane-system").Create(ctx, dep("b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sync()
	if k.starts != 2 {
		t.Errorf("a replaced Deployment: %d starts, want 2", k.starts)
	}
}
