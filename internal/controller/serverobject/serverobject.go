// Package serverobject holds the contract every kind that manages one named
// object on a PostgreSQLInstance's server shares (roles, databases,
// schemas): refuse a changed external name, observe in one round trip, bind
// to the Instance and server on first sight, check before anything is
// created, decide ownership from the object's marker (owned, released,
// Conflict, observe-only import) and set the matching condition. Each kind
// plugs in through a small Kind adapter; what differs (its catalog query,
// its checks, how it compares the object with its spec) stays with the
// kind, and every branch here is tested without a server.
package serverobject

import (
	"context"
	"fmt"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/conflict"
	"github.com/ayatori/provider-postgresql/internal/controller/drift"
	"github.com/ayatori/provider-postgresql/internal/controller/management"
	"github.com/ayatori/provider-postgresql/internal/controller/oninstance"
	"github.com/ayatori/provider-postgresql/internal/controller/pending"
)

// ErrGone is returned by a Kind's Observe when the object cannot be read
// because what holds it is gone (a schema whose database was dropped) and
// the resource is being deleted: there is nothing left to observe or drop.
var ErrGone = errors.New("gone with what held it")

// An Observed object, as a Kind's catalog query returns it.
type Observed[O any] struct {
	// Object is nil when the object does not exist.
	Object *O
	// Marker is the UID of the ownership marker the object carries, "" for
	// none.
	Marker string
	// System is the system identifier of the server that answered.
	System string
	// Successor: the marker names another UID with the seal a resource of
	// mg's kind, namespace and name wrote (oninstance.Connection.Succeeds).
	// When no resource of that UID exists any more, mg is it, brought
	// back from a backup or applied again, and takes its place.
	Successor bool
}

// A Kind is what the shared observation needs of one kind of object. T is
// the managed resource, O what the kind's catalog query returns.
type Kind[T resource.Managed, O any] interface {
	// Noun names the kind in messages: "role", "database", "schema".
	Noun() string
	// Name is the PostgreSQL name mg manages.
	Name(mg T) string
	// Observe reads the object in one round trip.
	Observe(ctx context.Context, mg T) (Observed[O], error)
	// Binding returns where mg records the UID of its Instance and the
	// system identifier of its server.
	Binding(mg T) (instanceUID, systemIdentifier *string)
	// CheckCreate refuses creating the object where it must not be (the
	// privilege boundary, missing prerequisites), before anything is sent;
	// nil lets Create run.
	CheckCreate(ctx context.Context, mg T) error
	// Foreign describes an object of mg's name that mg did not create,
	// whose ownership marker names marker ("" for none), for its Conflict
	// message (conflict.Foreign): what it is, whose it is, how to check,
	// and, for an unmarked one, the statement that marks it as mg's.
	Foreign(ctx context.Context, mg T, got *O, marker string) (conflict.Object, error)
	// Record writes what was observed into mg's status.
	Record(mg T, got *O)
}

// A Describer is a Kind that names its objects in messages more fully than
// by noun and name (a schema with its database). ours says whether the
// object carries mg's own marker (a resource of the provider's, observed
// read-only for a while) rather than being an import.
type Describer[T resource.Managed] interface {
	Describe(mg T, ours bool) string
}

// A Restorer is a Kind that records the resource a restored one succeeded
// (Observed.Successor).
type Restorer[T resource.Managed] interface {
	// Restored records in mg that it succeeded the resource of UID from,
	// durably: the update that follows rewrites the marker, after which
	// nothing on the server says so any more.
	Restored(ctx context.Context, mg T, from string) error
}

// A Drifter is a Kind whose changes made on the server, not through the
// resource, are reported (package drift).
type Drifter[T resource.Managed, O any] interface {
	// DriftFields are the fields mg manages, as got has them.
	DriftFields(mg T, got *O) drift.Fields
	// Drift is mg's drift status and the recorder of its kind.
	Drift(mg T) (*v1alpha1.DriftStatus, drift.Recorder)
}

// A Planner is a Kind that shows the statements its next step would
// send (package pending), computed by the builders that send them.
type Planner[T resource.Managed, O any] interface {
	// Plan is where mg records its plan.
	Plan(mg T) **v1alpha1.Plan
	// CreateStatements are what creating mg's object sends.
	CreateStatements(ctx context.Context, mg T) ([]string, error)
	// UpdateStatements are what bringing got to mg's spec sends.
	UpdateStatements(ctx context.Context, mg T, got *O) ([]string, error)
}

// A Noter is a Planner whose plan may hold a statement its spec change
// does not explain (a password set again): Note says why, in the plan's
// summary, for the plan UpdateStatements or CreateStatements just made.
type Noter[T resource.Managed] interface {
	Note(mg T) string
}

// A DeletePlanner is a Planner that also shows what deleting its object
// sends.
type DeletePlanner[T resource.Managed, O any] interface {
	Plan(mg T) **v1alpha1.Plan
	// DeleteStatements are what Delete sends to drop got.
	DeleteStatements(ctx context.Context, mg T, got *O) ([]string, error)
}

// Planned records in mg the plan of action: the statements a Planner
// computes for got (nil: absent, the create). It returns whether nothing
// is pending. Kinds that are not Planners plan nothing and are up to
// date.
func Planned[T resource.Managed, O any](ctx context.Context, k Kind[T, O], mg T, got *O) (bool, error) {
	p, ok := k.(Planner[T, O])
	if !ok {
		return true, nil
	}
	action, stmts, err := v1alpha1.PlanUpdate, []string(nil), error(nil)
	if got == nil {
		action = v1alpha1.PlanCreate
		stmts, err = p.CreateStatements(ctx, mg)
	} else {
		stmts, err = p.UpdateStatements(ctx, mg, got)
	}
	if err != nil {
		return false, err
	}
	why := ""
	if n, ok := k.(Noter[T]); ok {
		why = n.Note(mg)
	}
	pending.SetWhy(mg, p.Plan(mg), action, stmts, why)
	return len(stmts) == 0, nil
}

// Drifted tells k's drift recorder what an observation of mg found: got,
// in line with the spec or not (inSync). Kinds that are not Drifters
// report nothing.
func Drifted[T resource.Managed, O any](k Kind[T, O], mg T, got *O, inSync bool) {
	d, ok := k.(Drifter[T, O])
	if !ok || got == nil {
		return
	}
	st, r := d.Drift(mg)
	r.Observe(mg, st, drift.Observation{Found: d.DriftFields(mg, got), InSync: inSync, ObserveOnly: management.ObserveOnly(mg)})
}

// Observe runs the steps every kind shares. When they decide the
// observation (the object is absent, released, someone else's, an import,
// or going away), it returns done with the observation and error the
// reconciler gets. Otherwise the object is mg's to manage: it returns it,
// recorded, for the kind to compare with its spec.
func Observe[T resource.Managed, O any](ctx context.Context, k Kind[T, O], in *v1alpha1.PostgreSQLInstance, mg T) (got *O, obs managed.ExternalObservation, done bool, err error) {
	name := k.Name(mg)
	if err := checkExternalName(mg, k.Noun(), name); err != nil {
		mg.SetConditions(v1alpha1.Conflict(err.Error()))
		return nil, managed.ExternalObservation{}, true, err
	}
	o, err := k.Observe(ctx, mg)
	if errors.Is(err, ErrGone) && meta.WasDeleted(mg) {
		return nil, managed.ExternalObservation{}, true, nil
	}
	if err != nil {
		return nil, managed.ExternalObservation{}, true, err
	}
	uid, system := k.Binding(mg)
	if err := oninstance.Bind(mg, in, o.System, uid, system); err != nil {
		return nil, managed.ExternalObservation{}, true, err
	}
	if o.Object == nil {
		if meta.WasDeleted(mg) {
			return nil, managed.ExternalObservation{}, true, nil
		}
		if err := oninstance.CheckProvisioning(in); err != nil {
			return nil, managed.ExternalObservation{}, true, err
		}
		if err := k.CheckCreate(ctx, mg); err != nil {
			return nil, managed.ExternalObservation{}, true, err
		}
		// With managementPolicies [Observe] the plan is what widening
		// them would create.
		_, err := Planned(ctx, k, mg, nil)
		return nil, managed.ExternalObservation{}, true, err
	}
	if done, err := refused(ctx, k, mg, o); done {
		return nil, managed.ExternalObservation{}, true, err
	}
	k.Record(mg, o.Object)
	if meta.WasDeleted(mg) {
		// Shown while the drop is refused (sessions, objects in the way)
		// and retried.
		if d, ok := k.(DeletePlanner[T, O]); ok && management.Deletes(mg) {
			stmts, err := d.DeleteStatements(ctx, mg, o.Object)
			if err != nil {
				return nil, managed.ExternalObservation{}, true, err
			}
			pending.Set(mg, d.Plan(mg), v1alpha1.PlanDelete, stmts)
		}
		return nil, managed.ExternalObservation{ResourceExists: true}, true, nil
	}
	if management.ObserveOnly(mg) {
		what := fmt.Sprintf("%s %q", k.Noun(), name)
		if d, ok := k.(Describer[T]); ok {
			what = d.Describe(mg, o.Marker == string(mg.GetUID()))
		}
		mg.SetConditions(v1alpha1.ObserveOnly(what))
		// Changes made on the server are reported, never corrected.
		Drifted(k, mg, o.Object, true)
		// The dry run: what widening the policies would send.
		upToDate, err := Planned(ctx, k, mg, o.Object)
		// An import publishes nothing: what it holds is not the
		// provider's to hand out.
		return nil, managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: upToDate}, true, err
	}
	return o.Object, managed.ExternalObservation{}, false, nil
}

// foreign describes o, which mg did not create, for its Conflict.
func foreign[T resource.Managed, O any](ctx context.Context, k Kind[T, O], mg T, o Observed[O]) (conflict.Object, error) {
	f, err := k.Foreign(ctx, mg, o.Object, o.Marker)
	f.Marker, f.Namespace = o.Marker, mg.GetNamespace()
	f.Created = createRecorded(mg)
	return f, err
}

// createRecorded is when mg records that it created an object of its
// name: its last create-succeeded annotation, or a later create-pending
// one that no create-failed annotation answers. The provider does not
// write the create-succeeded annotation after its own creates
// (reconciler/created.go): a create it began either committed, marker
// included, or is found missing, or cut short, by the next observation
// and made again under a newer create-pending time.
func createRecorded(mg resource.Managed) time.Time {
	succeeded, pending, failed := meta.GetExternalCreateSucceeded(mg), meta.GetExternalCreatePending(mg), meta.GetExternalCreateFailed(mg)
	if pending.After(succeeded) && pending.After(failed) {
		return pending
	}
	return succeeded
}

// refused decides from o's ownership marker whether mg's observation ends
// here (done), before anything of o is recorded: o was not made by mg and
// mg lets go of it, or it is someone else's (a Conflict, the error). A
// read-only import of an object another resource made goes on, unless
// that resource is another namespace's: its owner, settings and comment
// are that namespace's to see.
func refused[T resource.Managed, O any](ctx context.Context, k Kind[T, O], mg T, o Observed[O]) (bool, error) {
	switch ownershipOf(mg, o.Marker) {
	case release:
		// Never created by mg: letting go touches nothing on the server.
		return true, nil
	case owned:
		if o.Marker == "" || o.Marker == string(mg.GetUID()) {
			return false, nil
		}
		f, err := foreign(ctx, k, mg, o)
		if err != nil {
			return true, err
		}
		if f.MarkedBy.Kind == "" || f.MarkedBy.Namespace == mg.GetNamespace() {
			return false, nil
		}
		return true, conflicted(mg, f)
	default:
		f, err := foreign(ctx, k, mg, o)
		if err != nil {
			return true, err
		}
		if o.Successor && f.MarkedBy.Kind == "" {
			// Restored: the object is mg's, and the update that follows
			// writes mg's own marker on it.
			if r, ok := k.(Restorer[T]); ok {
				if err := r.Restored(ctx, mg, o.Marker); err != nil {
					return true, err
				}
			}
			return false, nil
		}
		return true, conflicted(mg, f)
	}
}

// conflicted sets mg's Conflict about f, and returns it as the error.
func conflicted(mg resource.Managed, f conflict.Object) error {
	msg := conflict.Foreign(f).String()
	mg.SetConditions(v1alpha1.Conflict(msg))
	return errors.Errorf("%w: %s", oninstance.ErrConflict, msg)
}

// checkExternalName refuses a crossplane.io/external-name annotation that
// differs from the name the resource manages (kind is "role" or
// "database"): an object is never re-pointed implicitly.
func checkExternalName(mg resource.Object, kind, name string) error {
	en := meta.GetExternalName(mg)
	if en == "" || en == name {
		return nil
	}
	return errors.Errorf("%w: %s", oninstance.ErrConflict, conflict.Message{
		Target:    fmt.Sprintf("The crossplane.io/external-name annotation %q", en),
		Found:     fmt.Sprintf("differs from the %s's name %q: a %s is never re-pointed implicitly", kind, name, kind),
		Step:      conflict.StepObserve,
		Confirmed: fmt.Sprintf("this resource manages %s %q", kind, name),
		Uncertain: fmt.Sprintf("which %s the annotation was meant to name", kind),
		Check:     fmt.Sprintf("kubectl -n %s get pg%s %s -o jsonpath='{.metadata.annotations}'", mg.GetNamespace(), kind, mg.GetName()),
		Next:      fmt.Sprintf("Restore the annotation to %q, or create a new resource for the other %s", name, kind),
	})
}

// ownership is what an observed object means to the resource observing it.
type ownership int

// Ownerships.
const (
	// owned: the object carries the resource's marker, or the resource only
	// observes (an import).
	owned ownership = iota
	// release: the resource is being deleted and never owned the object:
	// letting go of the resource touches nothing on the server.
	release
	// notOurs: the object was not created by the resource, which must not
	// act on it (Conflict).
	notOurs
)

// ownershipOf decides what an observed object whose ownership marker names
// markerUID ("" for none) means to mg.
func ownershipOf(mg resource.Managed, markerUID string) ownership {
	switch {
	case markerUID == string(mg.GetUID()) || management.ObserveOnly(mg):
		return owned
	case meta.WasDeleted(mg):
		return release
	default:
		return notOurs
	}
}
