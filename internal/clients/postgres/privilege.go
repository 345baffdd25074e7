package postgres

import (
	"slices"
	"strings"
)

// An ObjectKind is a kind of object privileges are granted on.
type ObjectKind string

// Object kinds, named as GRANT names them.
const (
	KindDatabase ObjectKind = "DATABASE"
	KindSchema   ObjectKind = "SCHEMA"
	KindTable    ObjectKind = "TABLE"
	KindSequence ObjectKind = "SEQUENCE"
	KindFunction ObjectKind = "FUNCTION"
	KindType     ObjectKind = "TYPE"
	// KindTablespace is a tablespace: like a database, one object of the
	// whole server, granted on from any database.
	KindTablespace ObjectKind = "TABLESPACE"
)

// single reports whether a grant on kind names one object, the target
// itself (a database, a schema, a tablespace), not objects in a schema.
func (k ObjectKind) single() bool {
	return k == KindDatabase || k == KindSchema || k == KindTablespace
}

// Version17 is server_version_num of the first PostgreSQL with MAINTAIN.
const (
	Version16 = 160000
	Version17 = 170000
)

// AllPrivileges returns the privileges ALL stands for on kind, on a server
// of the given server_version_num, in PostgreSQL's order.
func AllPrivileges(kind ObjectKind, version int) []string {
	switch kind {
	case KindDatabase:
		return []string{"CREATE", "TEMPORARY", "CONNECT"}
	case KindSchema:
		return []string{"USAGE", "CREATE"}
	case KindTable:
		p := []string{"SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER"}
		if version >= Version17 {
			p = append(p, "MAINTAIN")
		}
		return p
	case KindSequence:
		return []string{"USAGE", "SELECT", "UPDATE"}
	case KindFunction:
		return []string{"EXECUTE"}
	case KindType:
		return []string{"USAGE"}
	case KindTablespace:
		return []string{"CREATE"}
	}
	return nil
}

// ExpandPrivileges returns privileges with ALL replaced by what it stands
// for, sorted and without duplicates. A privilege the server does not know
// (MAINTAIN before 17) is returned in unsupported.
func ExpandPrivileges(kind ObjectKind, version int, privileges []string) (expanded, unsupported []string) {
	all := AllPrivileges(kind, version)
	for _, p := range privileges {
		switch {
		case p == "ALL":
			expanded = append(expanded, all...)
		case slices.Contains(all, p):
			expanded = append(expanded, p)
		default:
			unsupported = append(unsupported, p)
		}
	}
	slices.Sort(expanded)
	return slices.Compact(expanded), unsupported
}

// Held is what a role holds on one object: privilege → whether it holds it
// with grant option.
type Held map[string]bool

// parseACLItems reads the privilege_type values the observation queries
// return, where a trailing "+" means "with grant option".
func parseACLItems(items []string) Held {
	h := Held{}
	for _, i := range items {
		p, grantable := strings.CutSuffix(i, "+")
		h[p] = h[p] || grantable
	}
	return h
}

// has reports whether h holds p, with grant option when grantOption.
func (h Held) has(p string, grantOption bool) bool {
	g, ok := h[p]
	return ok && (g || !grantOption)
}

// PrivilegeWant is what a grant asks for, and what it has applied so far.
type PrivilegeWant struct {
	// Privileges the grant owns, expanded (no ALL).
	Privileges  []string
	GrantOption bool
	// Applied are the privileges the grant has granted before.
	Applied []string
	// AppliedGrantOption is true when the grant gave the grant option.
	AppliedGrantOption bool
}

// A PrivilegePlan says what to change so that objects hold what a grant
// asks for: grant Grant (on the objects in GrantOn), revoke Revoke (from
// every object), and revoke the grant option of RevokeGrantOption.
type PrivilegePlan struct {
	Grant             []string
	GrantOn           []int
	Revoke            []string
	RevokeGrantOption []string
}

// Empty reports whether the plan changes nothing.
func (p PrivilegePlan) Empty() bool {
	return len(p.Grant) == 0 && len(p.Revoke) == 0 && len(p.RevokeGrantOption) == 0
}

// PlanPrivileges compares what each object holds with w. A privilege the
// grant never granted is never revoked: the grantee may hold it by other
// means (provider-sql #240, #465).
func PlanPrivileges(w PrivilegeWant, held []Held) PrivilegePlan {
	var p PrivilegePlan
	grant := map[string]bool{}
	for i, h := range held {
		missing := false
		for _, priv := range w.Privileges {
			if !h.has(priv, w.GrantOption) {
				grant[priv], missing = true, true
			}
		}
		if missing {
			p.GrantOn = append(p.GrantOn, i)
		}
	}
	for priv := range grant {
		p.Grant = append(p.Grant, priv)
	}
	slices.Sort(p.Grant)
	for _, priv := range w.Applied {
		if slices.Contains(w.Privileges, priv) {
			continue
		}
		for _, h := range held {
			if _, ok := h[priv]; ok {
				p.Revoke = append(p.Revoke, priv)
				break
			}
		}
	}
	if !w.GrantOption && w.AppliedGrantOption {
		for _, priv := range w.Privileges {
			for _, h := range held {
				if h[priv] {
					p.RevokeGrantOption = append(p.RevokeGrantOption, priv)
					break
				}
			}
		}
	}
	return p
}

// HeldByAll returns the privileges of want that every object holds (with
// grant option when grantOption), sorted.
func HeldByAll(want []string, grantOption bool, held []Held) []string {
	var out []string
	for _, priv := range want {
		all := len(held) > 0
		for _, h := range held {
			all = all && h.has(priv, grantOption)
		}
		if all {
			out = append(out, priv)
		}
	}
	return out
}

// After returns what the grant has applied once p has run: the privileges
// it still owns that it granted before or now, and whether it gave the
// grant option.
func (w PrivilegeWant) After(p PrivilegePlan) (applied []string, grantOption bool) {
	for _, priv := range w.Privileges {
		if slices.Contains(w.Applied, priv) || slices.Contains(p.Grant, priv) {
			applied = append(applied, priv)
		}
	}
	slices.Sort(applied)
	return applied, w.GrantOption && (w.AppliedGrantOption || len(p.Grant) > 0)
}

// Intent returns what to record before p runs, so that a crash between
// running it and recording its result never loses track of a privilege
// the grant gave: everything applied before, plus what p grants.
func (w PrivilegeWant) Intent(p PrivilegePlan) (applied []string, grantOption bool) {
	applied = slices.Clone(w.Applied)
	for _, priv := range p.Grant {
		if !slices.Contains(applied, priv) {
			applied = append(applied, priv)
		}
	}
	slices.Sort(applied)
	return applied, w.AppliedGrantOption || (w.GrantOption && len(p.Grant) > 0)
}
