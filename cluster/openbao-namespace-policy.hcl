# The OpenBao (or Vault) policy of one application namespace's
# SecretStore: it reads the credentials delivered to that namespace, on
# every Instance, and nothing else, so a tenant that points its
# ExternalSecret at another namespace's path gets a permission error. Each
# + matches exactly one path segment (<prefix>/<instance>/<namespace>/<name>):
# a trailing * would match deeper paths too, and with another Instance's
# prefix nested in this one (postgresql and postgresql/eu) a namespace
# named like that Instance would read all its credentials. Replace
# <mount>, <prefix> and <namespace>, then:
#   bao policy write postgresql-<namespace> openbao-namespace-policy.hcl
# and bind it to that namespace's store (a Kubernetes auth role bound to
# the store's ServiceAccount in that namespace only).
path "<mount>/data/<prefix>/+/<namespace>/+" {
  capabilities = ["read"]
}
