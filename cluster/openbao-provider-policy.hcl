# The OpenBao (or Vault) policy of provider-postgresql: it writes tenants'
# credentials below <prefix>/ of the KV v2 engine <mount> (an Instance's
# spec.credentialVault mount and pathPrefix), reads them back, marks each
# path as its own (custom metadata) and destroys a path when its role is
# dropped. Nothing else. Replace <mount> and <prefix>, then:
#   bao policy write provider-postgresql openbao-provider-policy.hcl
# and bind it to the provider (a Kubernetes auth role bound to its
# ServiceAccount, see docs/credentials.md).
path "<mount>/data/<prefix>/*" {
  capabilities = ["create", "read", "update"]
}
path "<mount>/metadata/<prefix>/*" {
  capabilities = ["create", "read", "update", "delete"]
}
