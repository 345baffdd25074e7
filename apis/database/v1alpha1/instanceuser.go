package v1alpha1

// An InstanceUser is a resource that lives on a PostgreSQLInstance.
// +kubebuilder:object:generate=false
type InstanceUser interface {
	// InstanceBinding returns the name of the Instance the resource refers
	// to and the UID of the one it was bound to ("" before its first
	// connect).
	InstanceBinding() (name, uid string)
}

// A DatabaseUser is a resource whose statements run in one database of
// its Instance (not the Instance's own), over a session into it.
// +kubebuilder:object:generate=false
type DatabaseUser interface {
	// ObservedIn returns the UID of the Instance and the database the
	// resource's last observation ran in ("" before the first).
	ObservedIn() (instanceUID, database string)
}

// ObservedIn implements DatabaseUser.
func (s *PostgreSQLSchema) ObservedIn() (string, string) {
	return s.Status.AtProvider.InstanceUID, s.Status.AtProvider.Database
}

// ObservedIn implements DatabaseUser. A grant on a database or a
// tablespace, or of a role's membership, runs in the Instance's own
// database: none.
func (g *PostgreSQLGrant) ObservedIn() (string, string) {
	switch g.Spec.ForProvider.ObjectType {
	case GrantObjectDatabase, GrantObjectMembership, GrantObjectTablespace:
		return g.Status.AtProvider.InstanceUID, ""
	default:
		return g.Status.AtProvider.InstanceUID, g.Status.AtProvider.Database
	}
}

// ObservedIn implements DatabaseUser.
func (d *PostgreSQLDefaultPrivileges) ObservedIn() (string, string) {
	return d.Status.AtProvider.InstanceUID, d.Status.AtProvider.Database
}

// InstanceBinding implements InstanceUser.
func (r *PostgreSQLRole) InstanceBinding() (string, string) {
	return r.Spec.InstanceRef.Name, r.Status.AtProvider.InstanceUID
}

// InstanceBinding implements InstanceUser.
func (d *PostgreSQLDatabase) InstanceBinding() (string, string) {
	return d.Spec.InstanceRef.Name, d.Status.AtProvider.InstanceUID
}

// InstanceBinding implements InstanceUser.
func (s *PostgreSQLSchema) InstanceBinding() (string, string) {
	return s.Spec.InstanceRef.Name, s.Status.AtProvider.InstanceUID
}

// InstanceBinding implements InstanceUser.
func (g *PostgreSQLGrant) InstanceBinding() (string, string) {
	return g.Spec.InstanceRef.Name, g.Status.AtProvider.InstanceUID
}

// InstanceBinding implements InstanceUser.
func (d *PostgreSQLDefaultPrivileges) InstanceBinding() (string, string) {
	return d.Spec.InstanceRef.Name, d.Status.AtProvider.InstanceUID
}
