// Package conflict builds the message of every Conflict condition: a
// resource found something it must not act on. Each message names the
// target and the step that stopped, says what is confirmed and what is
// uncertain, how to check by hand, and what can be done; none suggests
// anything that replaces a password or makes a resource Ready without the
// object being its own.
package conflict

import (
	"fmt"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
)

// A Message is a Conflict, in the parts every one has.
type Message struct {
	// Target is what it is about: `database "inventory" on
	// PostgreSQLInstance "main"`.
	Target string
	// Step is where the provider stopped: "observe, before anything is
	// created or changed".
	Step string
	// Found is what was found, as a clause following the target.
	Found string
	// Confirmed and Uncertain are what the provider knows and does not.
	Confirmed, Uncertain string
	// Check is how to verify by hand.
	Check string
	// Next is what can be done about it.
	Next string
}

// String is the condition's message. "Nothing was changed" is part of
// every one: a Conflict stops the provider before it acts.
func (m Message) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s (step: %s). Confirmed: %s. Uncertain: %s. Nothing was changed.", m.Target, m.Found, m.Step, m.Confirmed, m.Uncertain)
	if m.Check != "" {
		fmt.Fprintf(&b, " Check by hand: %s.", m.Check)
	}
	if m.Next != "" {
		fmt.Fprintf(&b, " %s", m.Next)
	}
	return b.String()
}

// StepObserve is the step of a Conflict found while observing, before the
// provider created or changed anything.
const StepObserve = "observe, before anything is created or changed"

// An Object is something on the server (a database, a schema, a role)
// that the resource observing it did not create.
type Object struct {
	// Noun and Name say what it is: "database", "inventory".
	Noun, Name string
	// In is where it is: `on PostgreSQLInstance "main"`.
	In string
	// Kind is the kind of the resource that found it: "PostgreSQLDatabase".
	Kind string
	// Marker is the UID the object's ownership marker names, "" for none.
	Marker string
	// MarkedBy is the resource that UID is, zero when none exists now.
	MarkedBy Owner
	// Namespace is the namespace of the resource that found it. An object
	// another namespace's resource made is said to be so, and no more: a
	// namespace learns nothing of another's resources from a Conflict.
	Namespace string
	// Check is a psql command that shows it.
	Check string
	// Adopt is the statement an admin runs to mark the object as the
	// resource's own, offered only for an object that carries no marker
	// at all: one that is another resource's is never handed over from
	// here, whoever asks. "" offers none.
	Adopt string
	// Created is when the resource records that it created an object of
	// this name (Crossplane's external-create-pending annotation that no
	// create-failed one answers, or a create-succeeded one), zero if it
	// records none. An unmarked object of a
	// resource that did create one lost its marker since: its comment was
	// replaced (by its owner, who may, or an admin), or it was dropped and
	// made again.
	Created time.Time
}

// An Owner is the resource an ownership marker names.
type Owner struct {
	Kind, Namespace, Name string
}

// String is "PostgreSQLDatabase victims/inventory", "" for none.
func (o Owner) String() string {
	if o.Kind == "" {
		return ""
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// Foreign is the Conflict of an object the resource did not create.
func Foreign(o Object) Message {
	m := Message{
		Target: fmt.Sprintf("%s %q %s", o.Noun, o.Name, o.In),
		Step:   StepObserve,
		Check:  o.Check,
	}
	switch {
	case o.MarkedBy.Kind != "" && o.MarkedBy.Namespace != o.Namespace:
		m.Found = fmt.Sprintf("exists and is managed from another namespace (its ownership marker names a %s there)", o.MarkedBy.Kind)
		m.Confirmed = fmt.Sprintf("another namespace's resource manages this %s", o.Noun)
		m.Uncertain = "nothing that would let this resource act on it or read it: nothing of it is recorded here"
		m.Next = fmt.Sprintf("An object that is another namespace's is never handed over nor observed from here, read-only imports included: give this %s another name", o.Kind)
	case o.Marker != "" && o.MarkedBy.Kind != "":
		m.Found = fmt.Sprintf("exists and is %s's: its ownership marker names that resource (UID %s)", o.MarkedBy, o.Marker)
		m.Confirmed = fmt.Sprintf("another resource manages this %s", o.Noun)
		m.Uncertain = "nothing that would let this resource act on it"
		m.Next = fmt.Sprintf("An object that is another resource's is never handed over: give this %s another name", o.Kind)
	case o.Marker != "":
		m.Found = fmt.Sprintf("exists and was created by the provider for another resource, which no longer exists (its ownership marker names UID %s)", o.Marker)
		m.Confirmed = fmt.Sprintf("the %s was made for a resource other than this one and outlived it (retained)", o.Noun)
		m.Uncertain = "whose data it holds now and who may rely on it"
		m.Next = fmt.Sprintf("It is not handed over from here: give this %s another name, or import the %s read-only (managementPolicies [\"Observe\"]); an admin who has established whose it is decides what becomes of it", o.Kind, o.Noun)
		if o.Adopt != "" {
			// A resource restored from a backup is recognised by the
			// marker's seal; without it (the provider's seal key was not
			// restored, or the marker predates seals) this is the one step
			// that hands the object back (docs/operations.md).
			m.Next += fmt.Sprintf(". If this %s is that resource brought back from a backup, and its seal key was not restored with it, an admin who has established so marks the %s as this one's: %s", o.Kind, o.Noun, o.Adopt)
		}
	case !o.Created.IsZero():
		// The record of the create is the resource's own annotation, which
		// whoever may edit the resource can write: it is reported as a
		// record, never as a fact, so that a forged one does not read as
		// a reason to hand the object over.
		m.Found = fmt.Sprintf("exists but its ownership marker is gone: this %s records that it created a %s of this name at %s, and since then its comment was replaced (by someone allowed to comment on it, such as its owner or an admin) or it was dropped and made again", o.Kind, o.Noun, o.Created.UTC().Format(time.RFC3339))
		m.Confirmed = fmt.Sprintf("the %s exists and carries no ownership marker", o.Noun)
		m.Uncertain = fmt.Sprintf("whether it is the %s this resource created, its marker removed, or another made in its place (the record of the create is the resource's %s annotation, which whoever may edit the resource can write), and who relies on it", o.Noun, meta.AnnotationKeyExternalCreatePending)
		m.Next = `The server's log names the session that changed it when log_statement is ddl or all. To manage it read-only meanwhile, set managementPolicies to ["Observe"]`
		if o.Adopt != "" {
			m.Next += ". If the server's log shows it is the one this resource created, an admin restores the marker: " + o.Adopt
		}
	default:
		m.Found = fmt.Sprintf("exists but was not created by this %s (its comment carries no ownership marker)", o.Kind)
		m.Confirmed = fmt.Sprintf("the %s exists and no resource of the provider claims it", o.Noun)
		m.Uncertain = "who made it (by hand, another tool, or a create of this resource interrupted before its marker was written) and who relies on it"
		m.Next = `To manage it read-only, set managementPolicies to ["Observe"]; or have an admin drop or rename it`
		if o.Adopt != "" {
			m.Next += ". If it is this resource's own (an interrupted create), an admin can mark it as such: " + o.Adopt
		}
	}
	return m
}
