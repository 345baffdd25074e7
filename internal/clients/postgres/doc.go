// Package postgres talks to PostgreSQL servers for the provider's
// controllers: connection configuration and TLS verification, and (one file
// per object type) the catalog queries that observe an object next to the
// statements that create, alter and drop it.
package postgres
