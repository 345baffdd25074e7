package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Defaults of the pool registry, each overridable by a provider flag.
const (
	DefaultMaxConnsPerPool = 2
	DefaultMaxConns        = 10
	DefaultIdleTimeout     = time.Minute
)

// A pool nobody asked for during this long is closed altogether.
const staleAfter = 10 * time.Minute

// RegistryOptions bound the registry's connections.
type RegistryOptions struct {
	// MaxConnsPerPool bounds each (instance, database) pool.
	MaxConnsPerPool int32
	// MaxConns bounds the open connections across every pool together.
	MaxConns int
	// IdleTimeout closes connections idle for longer.
	IdleTimeout time.Duration
}

// A Target is what a pool connects to: a database on an Instance's server,
// with a role's credentials.
type Target struct {
	// InstanceUID is the UID of the PostgreSQLInstance.
	InstanceUID string
	// InstanceName labels the pool's metrics.
	InstanceName string
	// Endpoint, whose Database is the database the pool opens.
	Endpoint    Endpoint
	Credentials Credentials
}

// A poolKey identifies a pool. A different endpoint or credential for the
// same instance and database is a different key: the old pool is closed
// rather than reused, so nothing keeps talking to a server the Instance no
// longer names, or with a password it no longer holds. Endpoint and
// credential are kept as digests so that no password sits in a map key.
type poolKey struct {
	instanceUID string
	database    string
	endpoint    string
	credential  string
}

func keyOf(t Target) poolKey {
	e := sha256.New()
	ep := t.Endpoint
	_, _ = fmt.Fprintf(e, "%s\x00%s\x00%d\x00%s\x00", ep.Host, ep.Hostaddr, ep.Port, ep.SSLMode)
	e.Write(ep.CAPEM)
	_, _ = fmt.Fprintf(e, "\x00%v", ep.AllowPasswordMethods)
	c := sha256.Sum256([]byte(t.Credentials.Username + "\x00" + t.Credentials.Password))
	return poolKey{
		instanceUID: t.InstanceUID,
		database:    ep.Database,
		endpoint:    hex.EncodeToString(e.Sum(nil)),
		credential:  hex.EncodeToString(c[:]),
	}
}

type pooled struct {
	pool     *pgxpool.Pool
	instance string
	lastUsed time.Time
}

// A Registry shares small connection pools between every controller and
// every reconcile. There is one pool per (instance, endpoint, credential,
// database); the number of server connections depends on the databases in
// use and is bounded by MaxConns, never by the number of managed resources.
//
// The global bound is enforced at dial time: every connection takes a slot
// before it dials and frees it when it closes. When no slot is free, the
// idle connections of the least recently used other pool are closed to make
// room, so one busy database can always make progress.
type Registry struct {
	opts  RegistryOptions
	slots chan struct{}

	mu    sync.Mutex
	pools map[poolKey]*pooled

	slotWaits     atomic.Int64
	slotWaitNanos atomic.Int64
}

// NewRegistry returns an empty registry.
func NewRegistry(o RegistryOptions) *Registry {
	if o.MaxConnsPerPool <= 0 {
		o.MaxConnsPerPool = DefaultMaxConnsPerPool
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	return &Registry{opts: o, slots: make(chan struct{}, o.MaxConns), pools: map[poolKey]*pooled{}}
}

// Pool returns the pool for a target, creating it if needed. Pools connect
// lazily: getting one does no I/O, and the pool outlives ctx.
func (r *Registry) Pool(ctx context.Context, t Target) (*pgxpool.Pool, error) {
	key := keyOf(t)
	now := time.Now()

	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.pools[key]; ok {
		p.lastUsed = now
		return p.pool, nil
	}
	for k, p := range r.pools {
		sameTarget := k.instanceUID == key.instanceUID && k.database == key.database
		if sameTarget || now.Sub(p.lastUsed) > staleAfter {
			delete(r.pools, k)
			// Close waits for borrowed connections to come back.
			go p.pool.Close()
		}
	}

	cfg, err := pgxpool.ParseConfig("sslmode=disable")
	if err != nil {
		return nil, errors.Wrap(err, "cannot build pool configuration")
	}
	if err := applyEndpoint(&cfg.ConnConfig.Config, t.Endpoint, t.Credentials); err != nil {
		return nil, err
	}
	cfg.MaxConns = r.opts.MaxConnsPerPool
	cfg.MinConns = 0
	cfg.MaxConnIdleTime = r.opts.IdleTimeout
	cfg.HealthCheckPeriod = max(r.opts.IdleTimeout/2, time.Second)
	cfg.ShouldPing = shouldPing
	cfg.ConnConfig.DialFunc = r.dialer(key)
	pool, err := pgxpool.NewWithConfig(context.WithoutCancel(ctx), cfg)
	if err != nil {
		return nil, errors.Wrap(err, "cannot create connection pool")
	}
	r.pools[key] = &pooled{pool: pool, instance: t.InstanceName, lastUsed: now}
	return pool, nil
}

// pingAfterIdle is how long a connection may sit idle before it is pinged
// when next acquired.
const pingAfterIdle = 30 * time.Second

// shouldPing decides whether an acquired connection is checked with a
// round trip first. pgx pings one idle for over a second, which in steady
// state is nearly every acquisition (each object is looked at once a poll),
// a quarter more statements than the observations themselves. A connection
// used within the last half minute is known to be alive; one idle for
// longer (a server restarted, a firewall's idle timeout) is checked. A
// connection that died sooner fails one reconcile, which is retried.
func shouldPing(_ context.Context, p pgxpool.ShouldPingParams) bool {
	return p.IdleDuration > pingAfterIdle
}

// dialer returns a dial function that takes a slot of the global cap
// before it dials and frees it when the connection closes.
func (r *Registry) dialer(key poolKey) pgconn.DialFunc {
	d := &net.Dialer{KeepAlive: 30 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if err := r.takeSlot(ctx, key); err != nil {
			return nil, err
		}
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			r.freeSlot()
			return nil, err
		}
		return &slotConn{Conn: c, free: r.freeSlot}, nil
	}
}

// Authenticate logs in to t's server afresh and logs out again, under the
// global connection cap: it proves that t's credentials work now. A pool
// cannot: its sessions stay logged in after the password changes on the
// server, and the failure would only show at the next new connection, up
// to an hour later and for everything at once. It returns
// ErrPasswordRejected when the server refuses the password.
func (r *Registry) Authenticate(ctx context.Context, t Target) error {
	cfg, err := ConnConfig(t.Endpoint, t.Credentials)
	if err != nil {
		return err
	}
	cfg.DialFunc = r.dialer(keyOf(t))
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		if IsCode(err, CodeInvalidPassword) {
			return errors.Errorf("%w: %w", ErrPasswordRejected, err)
		}
		return errors.Wrapf(ClassifyConnectError(err), "cannot log in as %q", t.Credentials.Username)
	}
	return errors.Wrap(conn.Close(ctx), "cannot log out")
}

// CloseInstance closes every pool of an Instance, for when it goes.
func (r *Registry) CloseInstance(uid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, p := range r.pools {
		if k.instanceUID == uid {
			delete(r.pools, k)
			go p.pool.Close()
		}
	}
}

// CloseDatabase closes an Instance's pools for one database and waits for
// their connections to close, so that they do not block DROP DATABASE. A
// pool's Close waits for every borrowed connection, which another
// reconcile may hold for long (a role's release runs on its own deadline):
// the wait ends with ctx, so that a shutdown is never held up by it, and
// the pools go on closing in the background.
func (r *Registry) CloseDatabase(ctx context.Context, uid, database string) error {
	r.mu.Lock()
	var closing []*pooled
	for k, p := range r.pools {
		if k.instanceUID == uid && k.database == database {
			delete(r.pools, k)
			closing = append(closing, p)
		}
	}
	r.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, p := range closing {
			p.pool.Close()
		}
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return errors.Wrapf(ctx.Err(), "cannot close the provider's sessions on database %q", database)
	}
}

// Close closes every pool and waits for their connections to close.
func (r *Registry) Close() {
	r.mu.Lock()
	pools := r.pools
	r.pools = map[poolKey]*pooled{}
	r.mu.Unlock()
	for _, p := range pools {
		p.pool.Close()
	}
}

// OpenConns returns the number of server connections open across all pools.
func (r *Registry) OpenConns() int { return len(r.slots) }

// takeSlot blocks until a connection slot is free, making room by closing
// the idle connections of the least recently used other pool.
func (r *Registry) takeSlot(ctx context.Context, asking poolKey) error {
	select {
	case r.slots <- struct{}{}:
		return nil
	default:
	}
	start := time.Now()
	defer func() {
		r.slotWaits.Add(1)
		r.slotWaitNanos.Add(int64(time.Since(start)))
	}()
	for {
		r.releaseIdle(asking)
		select {
		case r.slots <- struct{}{}:
			return nil
		case <-ctx.Done():
			return errors.Wrapf(ctx.Err(), "no free connection slot: all %d are in use", r.opts.MaxConns)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (r *Registry) freeSlot() { <-r.slots }

// releaseIdle closes the idle connections of the least recently used pool
// other than the one asking that holds idle connections and none in use.
// The pool itself stays usable.
func (r *Registry) releaseIdle(except poolKey) {
	r.mu.Lock()
	var victim *pooled
	for k, p := range r.pools {
		if k == except {
			continue
		}
		s := p.pool.Stat()
		if s.AcquiredConns() > 0 || s.IdleConns() == 0 {
			continue
		}
		if victim == nil || p.lastUsed.Before(victim.lastUsed) {
			victim = p
		}
	}
	r.mu.Unlock()
	if victim != nil {
		victim.pool.Reset()
	}
}

// A slotConn frees its slot once, when it is closed and the server has let
// go of the session.
type slotConn struct {
	net.Conn
	once sync.Once
	free func()
	err  error
}

// serverGoneTimeout bounds how long Close waits for the server to close its
// side of a session.
const serverGoneTimeout = time.Second

// Close waits briefly for the server to close its end before freeing the
// slot. pgx has sent Terminate by now; the backend leaves pg_stat_activity
// before its socket closes, so waiting for end-of-stream makes the cap hold
// on the server too, not only in this process. A session the server does
// not end is closed after serverGoneTimeout.
func (c *slotConn) Close() error {
	c.once.Do(func() {
		_ = c.SetReadDeadline(time.Now().Add(serverGoneTimeout))
		_, _ = io.Copy(io.Discard, c.Conn)
		c.err = c.Conn.Close()
		c.free()
	})
	return c.err
}

var (
	descPoolConns = prometheus.NewDesc("provider_postgresql_pool_connections",
		"Server connections of a pool, by state (acquired, idle, constructing).", []string{"instance", "database", "state"}, nil)
	descPoolMax = prometheus.NewDesc("provider_postgresql_pool_max_connections",
		"Maximum size of a pool.", []string{"instance", "database"}, nil)
	descPoolWait = prometheus.NewDesc("provider_postgresql_pool_acquire_wait_seconds_total",
		"Time spent waiting for a connection of a pool because none was free.", []string{"instance", "database"}, nil)
	descPoolAcquires = prometheus.NewDesc("provider_postgresql_pool_acquires_total",
		"Connections acquired from a pool.", []string{"instance", "database"}, nil)
	descOpen = prometheus.NewDesc("provider_postgresql_connections",
		"Server connections open across all pools.", nil, nil)
	descMax = prometheus.NewDesc("provider_postgresql_max_connections",
		"Maximum server connections across all pools.", nil, nil)
	descSlotWait = prometheus.NewDesc("provider_postgresql_connection_slot_wait_seconds_total",
		"Time spent waiting for a free connection slot under the global cap.", nil, nil)
)

// Describe implements prometheus.Collector.
func (r *Registry) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPoolConns, descPoolMax, descPoolWait, descPoolAcquires, descOpen, descMax, descSlotWait} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (r *Registry) Collect(ch chan<- prometheus.Metric) {
	r.mu.Lock()
	type snap struct {
		instance, database string
		stat               *pgxpool.Stat
	}
	snaps := make([]snap, 0, len(r.pools))
	for k, p := range r.pools {
		snaps = append(snaps, snap{p.instance, k.database, p.pool.Stat()})
	}
	r.mu.Unlock()
	for _, s := range snaps {
		ch <- prometheus.MustNewConstMetric(descPoolConns, prometheus.GaugeValue, float64(s.stat.AcquiredConns()), s.instance, s.database, "acquired")
		ch <- prometheus.MustNewConstMetric(descPoolConns, prometheus.GaugeValue, float64(s.stat.IdleConns()), s.instance, s.database, "idle")
		ch <- prometheus.MustNewConstMetric(descPoolConns, prometheus.GaugeValue, float64(s.stat.ConstructingConns()), s.instance, s.database, "constructing")
		ch <- prometheus.MustNewConstMetric(descPoolMax, prometheus.GaugeValue, float64(s.stat.MaxConns()), s.instance, s.database)
		ch <- prometheus.MustNewConstMetric(descPoolWait, prometheus.CounterValue, s.stat.EmptyAcquireWaitTime().Seconds(), s.instance, s.database)
		ch <- prometheus.MustNewConstMetric(descPoolAcquires, prometheus.CounterValue, float64(s.stat.AcquireCount()), s.instance, s.database)
	}
	ch <- prometheus.MustNewConstMetric(descOpen, prometheus.GaugeValue, float64(r.OpenConns()))
	ch <- prometheus.MustNewConstMetric(descMax, prometheus.GaugeValue, float64(r.opts.MaxConns))
	ch <- prometheus.MustNewConstMetric(descSlotWait, prometheus.CounterValue, time.Duration(r.slotWaitNanos.Load()).Seconds())
}
