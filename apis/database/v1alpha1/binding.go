package v1alpha1

// An InstanceUser is a resource that lives on a PostgreSQLInstance.
// +kubebuilder:object:generate=false
type InstanceUser interface {
	// InstanceBinding returns the name of the Instance the resource refers
	// to and the UID of the one it was bound to ("" before its first
	// connect).
	InstanceBinding() (name, uid string)
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
