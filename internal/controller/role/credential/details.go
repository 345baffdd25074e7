package credential

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
)

// Details are the connection details of user (with pw, "" for none) on
// the server at ep, connecting to database (ep's when ""): everything a
// client needs, in the forms clients take.
func Details(ep postgres.Endpoint, database, user, pw string) managed.ConnectionDetails {
	db := database
	if db == "" {
		db = ep.Database
	}
	port := strconv.Itoa(ep.Port)
	q := url.Values{}
	q.Set("sslmode", ep.SSLMode)
	q.Set("hostaddr", ep.Hostaddr)
	// JoinHostPort brackets an IPv6 address, as both URL forms need.
	hostPort := net.JoinHostPort(ep.Host, port)
	u := url.URL{Scheme: "postgresql", Host: hostPort, Path: "/" + db, RawQuery: q.Encode()}
	if pw != "" {
		u.User = url.UserPassword(user, pw)
	} else {
		u.User = url.User(user)
	}
	jq := url.Values{}
	jq.Set("sslmode", ep.SSLMode)
	jq.Set("user", user)
	if pw != "" {
		jq.Set("password", pw)
	}
	d := managed.ConnectionDetails{
		KeyUsername: []byte(user),
		"host":      []byte(ep.Host),
		"hostaddr":  []byte(ep.Hostaddr),
		"port":      []byte(port),
		"database":  []byte(db),
		"sslmode":   []byte(ep.SSLMode),
		"uri":       []byte(u.String()),
		"jdbc-url":  []byte("jdbc:postgresql://" + hostPort + "/" + url.PathEscape(db) + "?" + jq.Encode()),
	}
	if pw != "" {
		d[KeyPassword] = []byte(pw)
		d["pgpass"] = []byte(pgpassLine(ep.Host, port, user, pw))
	}
	d["pg_service.conf"] = []byte(serviceFragment(user, ep.Host, ep.Hostaddr, port, db, user, ep.SSLMode))
	if len(ep.CAPEM) > 0 {
		d["ca.crt"] = ep.CAPEM
	}
	return d
}

// pgpassLine is the role's line of a libpq password file (PGPASSFILE, or
// ~/.pgpass): for the server's host and port, any database. libpq wants
// ':' and '\' escaped with a backslash, and the file mode 0600.
func pgpassLine(host, port, user, pw string) string {
	esc := strings.NewReplacer(`\`, `\\`, `:`, `\:`)
	return strings.Join([]string{esc.Replace(host), port, "*", esc.Replace(user), esc.Replace(pw)}, ":") + "\n"
}

// serviceFragment is a libpq connection service (PGSERVICEFILE, or
// ~/.pg_service.conf) named after the role: everything but the password
// (which pgpass holds) and the CA file (whose path depends on where the
// Secret is mounted: set sslrootcert or PGSSLROOTCERT to its ca.crt).
func serviceFragment(service, host, hostaddr, port, db, user, sslmode string) string {
	lines := []string{"[" + service + "]", "host=" + host}
	if hostaddr != "" {
		lines = append(lines, "hostaddr="+hostaddr)
	}
	lines = append(lines, "port="+port, "dbname="+db, "user="+user, "sslmode="+sslmode)
	return strings.Join(lines, "\n") + "\n"
}
