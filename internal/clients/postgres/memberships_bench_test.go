package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkAdminMemberships measures what a managed-service admin does
// as the roles it created grow: on PostgreSQL 16+ a CREATEROLE admin is
// granted ADMIN OPTION on every role it creates, and other projects saw
// logins and CREATE DATABASE slow to seconds once an admin held about
// 2,000 such grants. At 100, 2,000 and 5,000 roles created by the admin:
// a fresh login as the admin (what an Instance's readiness check does
// each poll), a role's observation, and a database created with one of
// those roles as its owner (through ActingAs, as the controller does),
// each the median of several, and each as a ratio to 100 roles.
//
//	PG_BIN_DIR=$(hack/postgresql.sh 17) KUBEBUILDER_ASSETS=… go test -run '^$' -bench AdminMemberships -benchtime 1x ./internal/clients/postgres/
func BenchmarkAdminMemberships(b *testing.B) {
	suite.Versions(b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	su, err := server.Connect(ctx, "postgres")
	if err != nil {
		b.Fatal(err)
	}
	defer su.Close(context.WithoutCancel(ctx)) //nolint:errcheck // Benchmark cleanup.
	if _, err := su.Exec(ctx, "CREATE ROLE bench_admin LOGIN CREATEDB CREATEROLE PASSWORD 'pw-bench-admin'"); err != nil {
		b.Fatal(err)
	}
	r := NewRegistry(RegistryOptions{MaxConnsPerPool: 2, MaxConnsPerDatabase: 1, MaxConns: 4})
	defer r.Close()
	tg := target("uid-bench-admin", "postgres")
	tg.Credentials = Credentials{Username: "bench_admin", Password: "pw-bench-admin"}
	p, err := r.Pool(ctx, tg)
	if err != nil {
		b.Fatal(err)
	}
	median := func(n int, f func() error) time.Duration {
		var d []time.Duration
		for range n {
			start := time.Now()
			if err := f(); err != nil {
				b.Fatal(err)
			}
			d = append(d, time.Since(start))
		}
		slices.Sort(d)
		return d[len(d)/2]
	}
	created := 0
	var base [3]time.Duration
	for _, n := range []int{100, 2000, 5000} {
		// Created by the admin as the provider creates roles: without
		// keeping SET or INHERIT (on 16+ it holds ADMIN OPTION only).
		for created < n {
			var stmts []string
			for ; created < n && len(stmts) < 500; created++ {
				stmts = append(stmts, fmt.Sprintf("CREATE ROLE bench_m%d", created))
			}
			if _, err := p.Exec(ctx, strings.Join(stmts, "; ")); err != nil {
				b.Fatal(err)
			}
		}
		// What autovacuum does to the shared catalogs soon after a wave
		// of roles: measured right after the CREATE ROLEs instead, the
		// planner still sized pg_authid as it was and read every role.
		if _, err := su.Exec(ctx, "ANALYZE pg_catalog.pg_authid; ANALYZE pg_catalog.pg_auth_members"); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("roles=%d", n), func(b *testing.B) {
			for range b.N {
				login := median(15, func() error { return r.Authenticate(ctx, tg) })
				observe := median(50, func() error {
					_, _, err := ObserveRole(ctx, p, "bench_m1", false)
					return err
				})
				i := 0
				create := median(5, func() error {
					i++
					name, uid := fmt.Sprintf("bench_db_%d_%d", n, i), fmt.Sprintf("uid-bench-%d-%d", n, i)
					c := CreateDatabaseStatements(name, StagingDatabaseName(uid), false,
						DatabaseSettings{Owner: "bench_m1", ConnectionLimit: -1, AllowConnections: true}, DatabaseCreateOptions{Template: DefaultTemplate}, Mark{UID: uid})
					err := ActingAs(ctx, p, []RoleNeed{{Role: "bench_m1", Set: true, Inherit: true}}, func() error { return CreateDatabase(ctx, p, uid, c) })
					if err != nil {
						return err
					}
					_, err = su.Exec(ctx, DropDatabaseStatement(name, false))
					return err
				})
				now := [3]time.Duration{login, observe, create}
				if n == 100 {
					base = now
				}
				b.ReportMetric(float64(login.Microseconds())/1000, "ms-admin-login")
				b.ReportMetric(float64(observe.Microseconds())/1000, "ms-role-observe")
				b.ReportMetric(float64(create.Microseconds())/1000, "ms-database-create")
				b.ReportMetric(float64(now[0])/float64(base[0]), "x-login-vs-100")
				b.ReportMetric(float64(now[1])/float64(base[1]), "x-observe-vs-100")
				b.ReportMetric(float64(now[2])/float64(base[2]), "x-create-vs-100")
				b.ReportMetric(0, "ns/op")
			}
		})
	}
}
