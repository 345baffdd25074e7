// Package locked reads and writes what Locks leave on the objects they
// protect: the locked and lock-reasons annotations. The Lock controller
// writes them; the kinds whose deletion options destroy data read them.
package locked

import (
	"context"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/activation"
)

// Databases returns, for each database on the Instance with UID
// instanceUID whose PostgreSQLDatabase carries Locks, the names of those
// Locks. Options that destroy data inside a database (a role's
// ownedObjectsOnDelete Drop, a schema's cascadeOnDelete) are refused where
// a Lock protects the database: a Lock guards the data, not only the
// object.
func Databases(ctx context.Context, kube client.Reader, instanceUID string) (map[string][]string, error) {
	l := &v1alpha1.PostgreSQLDatabaseList{}
	// Without the kind (not activated, under Crossplane's safe-start) no
	// PostgreSQLDatabase exists, so none is locked.
	if err := activation.List(ctx, kube, l, client.UnsafeDisableDeepCopy); err != nil {
		return nil, errors.Wrap(err, "cannot list the PostgreSQLDatabases to tell which are locked")
	}
	out := map[string][]string{}
	for _, d := range l.Items {
		ap := d.Status.AtProvider
		if ap.InstanceUID != instanceUID || ap.Name == "" {
			continue
		}
		if names := Names(d.GetAnnotations()[v1alpha1.AnnotationLocked]); len(names) > 0 {
			out[ap.Name] = append(out[ap.Name], names...)
		}
	}
	return out, nil
}

// Names parses the locked annotation.
func Names(v string) []string {
	var out []string
	for _, n := range strings.Split(v, ",") {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// Format writes the locked annotation: sorted names, comma-separated.
func Format(names []string) string {
	s := slices.Clone(names)
	slices.Sort(s)
	return strings.Join(slices.Compact(s), ",")
}

// Reasons parses the lock-reasons annotation: by Lock name, its reason.
func Reasons(v string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(v, "\n") {
		if name, reason, ok := strings.Cut(line, ": "); ok && name != "" && reason != "" {
			out[name] = reason
		}
	}
	return out
}

// FormatReasons writes the lock-reasons annotation for the Locks names:
// "name: reason" lines, in the order of names, for those that have one.
func FormatReasons(names []string, reasons map[string]string) string {
	var lines []string
	for _, n := range slices.Compact(slices.Sorted(slices.Values(names))) {
		if r := reasons[n]; r != "" {
			lines = append(lines, n+": "+r)
		}
	}
	return strings.Join(lines, "\n")
}
