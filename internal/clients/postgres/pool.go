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
	DefaultMaxConnsPerPool     = 2
	DefaultMaxConnsPerDatabase = 1
	DefaultMaxConns            = 10
	DefaultIdleTimeout         = time.Minute
)

// A pool nobody asked for during this long is closed altogether.
const staleAfter = 10 * time.Minute

// RegistryOptions bound the registry's connections.
type RegistryOptions struct {
	// MaxConnsPerPool bounds the pool of each Instance's own database
	// (Target.HomeDatabase), where roles and databases are observed.
	MaxConnsPerPool int32
	// MaxConnsPerDatabase bounds the pool of each other database, where
	// schemas, grants, default privileges and extensions are. One by
	// default: the objects of a database are polled at the same moment
	// (config.PollIntervalHook) and then take turns on one session, where
	// a second would be dialled, under the cap, for a few milliseconds.
	MaxConnsPerDatabase int32
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
	// HomeDatabase is the database the Instance's endpoint names ("" for
	// a target of no Instance): a pool into it is sized MaxConnsPerPool,
	// one into any other MaxConnsPerDatabase.
	HomeDatabase string
}

// In returns t for another database of the same server, as the same role.
func (t Target) In(database string) Target {
	t.Endpoint.Database = database
	return t
}

// inTenantDatabase says whether t's sessions run in a database other than
// its Instance's own: one whose owner may be a tenant.
func (t Target) inTenantDatabase() bool {
	return t.HomeDatabase == "" || t.Endpoint.Database != t.HomeDatabase
}

// maxConns is the size of t's pool under o.
func (o RegistryOptions) maxConns(t Target) int32 {
	if t.HomeDatabase == "" || t.Endpoint.Database == t.HomeDatabase {
		return o.MaxConnsPerPool
	}
	return o.MaxConnsPerDatabase
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
	secret := "password\x00" + t.Credentials.Password
	if t.Credentials.Token != nil {
		// A pool outlives its tokens: each new connection gets the
		// current one (Registry.Pool).
		secret = "token\x00" + t.Credentials.Token.ID()
	}
	c := sha256.Sum256([]byte(t.Credentials.Username + "\x00" + secret))
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
// dial queues (slotQueue) and one connection is closed for it: the idle
// connection of the least recently used other pool, or else the next one
// any pool is given back. So one busy database can always make progress,
// and no more sessions are closed than the queue needs.
type Registry struct {
	opts    RegistryOptions
	slots   *slotQueue
	admit   admission
	roles   roleLocks
	markers markers

	mu    sync.Mutex
	pools map[poolKey]*pooled
	// shared are the shares of the pools used on behalf of namespaces
	// (Shared), by pool.
	shared map[poolKey]*shares
	// open counts the connections of each key that hold a slot: the
	// pools closeIdle looks in, at most MaxConns of them, where the
	// registry may hold thousands of pools.
	open map[poolKey]int

	slotWaits     atomic.Int64
	slotWaitNanos atomic.Int64
	// opened counts the sessions dialled: with many databases under the
	// cap, how often one is closed to let another in.
	opened atomic.Int64
}

// NewRegistry returns an empty registry.
func NewRegistry(o RegistryOptions) *Registry {
	if o.MaxConnsPerPool <= 0 {
		o.MaxConnsPerPool = DefaultMaxConnsPerPool
	}
	if o.MaxConnsPerDatabase <= 0 {
		o.MaxConnsPerDatabase = DefaultMaxConnsPerDatabase
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	return &Registry{opts: o, slots: newSlotQueue(o.MaxConns), pools: map[poolKey]*pooled{}, open: map[poolKey]int{}}
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
			delete(r.shared, k)
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
	pinSession(&cfg.ConnConfig.Config, !t.inTenantDatabase())
	cfg.MaxConns = r.opts.maxConns(t)
	cfg.MinConns = 0
	cfg.MaxConnIdleTime = r.opts.IdleTimeout
	cfg.HealthCheckPeriod = max(r.opts.IdleTimeout/2, time.Second)
	cfg.ShouldPing = shouldPing
	cfg.ConnConfig.DialFunc = r.dialer(key)
	cfg.ConnConfig.Tracer = handOver{slots: r.slots, token: t.Credentials.Token, admit: &r.admit, database: databaseKey(t)}
	if src := t.Credentials.Token; src != nil {
		// Asked for at each login, not at each statement: a session
		// logged in stays so when its token expires.
		cfg.BeforeConnect = func(ctx context.Context, cc *pgx.ConnConfig) error {
			tok, err := t.Credentials.password(ctx)
			cc.Password = tok
			return err
		}
	}
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
			r.freeSlot(key)
			return nil, err
		}
		r.opened.Add(1)
		return &slotConn{Conn: c, free: func() { r.freeSlot(key) }}, nil
	}
}

// Authenticate logs in to t's server afresh and logs out again, under the
// global connection cap: it proves that t's credentials work now. A pool
// cannot: its sessions stay logged in after the password changes on the
// server, and the failure would only show at the next new connection, up
// to an hour later and for everything at once. It returns
// ErrPasswordRejected when the server refuses the password, and nil when
// it accepts it but refuses the database (no CONNECT privilege).
func (r *Registry) Authenticate(ctx context.Context, t Target) error {
	err := r.authenticate(ctx, t)
	if errors.Is(err, ErrPasswordRejected) && t.Credentials.Token != nil {
		// A token refused (revoked, or the password behind it rotated
		// before the token said it expires): once more with a new one.
		t.Credentials.Token.Forget()
		err = r.authenticate(ctx, t)
	}
	return err
}

func (r *Registry) authenticate(ctx context.Context, t Target) error {
	cfg, err := ConnConfig(t.Endpoint, t.Credentials)
	if err != nil {
		return err
	}
	if cfg.Password, err = t.Credentials.password(ctx); err != nil {
		return err
	}
	// It only logs in and out: the pins keep a database's settings from
	// failing the login (local_preload_libraries), no reset is needed.
	pinSession(&cfg.Config, false)
	cfg.DialFunc = r.dialer(keyOf(t))
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if IsCode(err, CodeInsufficientPrivilege) {
		// The server checks CONNECT on the database only once the
		// password was accepted: a role that may not connect to t's
		// database (PUBLIC's CONNECT revoked there) still proved it.
		return nil
	}
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
			delete(r.shared, k)
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
func (r *Registry) OpenConns() int { return r.slots.inUse() }

// OpenedConns returns the number of server connections opened so far.
func (r *Registry) OpenedConns() int64 { return r.opened.Load() }

// takeSlot blocks until a connection slot is given to asking's dial.
func (r *Registry) takeSlot(ctx context.Context, asking poolKey) error {
	start := time.Now()
	waited, err := r.slots.take(ctx, func() bool { return r.closeIdle(ctx, asking) })
	if err == nil {
		r.mu.Lock()
		r.open[asking]++
		r.mu.Unlock()
	}
	if waited {
		r.slotWaits.Add(1)
		r.slotWaitNanos.Add(int64(time.Since(start)))
	}
	return errors.Wrapf(err, "no free connection slot: all %d are in use", r.opts.MaxConns)
}

// freeSlot gives up a slot of key's, to the first waiting dial if any.
func (r *Registry) freeSlot(key poolKey) {
	r.mu.Lock()
	if r.open[key]--; r.open[key] <= 0 {
		delete(r.open, key)
	}
	r.mu.Unlock()
	r.slots.free()
}

// closeIdle starts closing one idle connection, of the least recently used
// pool that holds one other than asking's (asking's own only when no other
// does), and reports whether it found one. Only the pools holding
// connections are looked at.
func (r *Registry) closeIdle(ctx context.Context, asking poolKey) bool {
	// A connection seen idle may be taken before it is grabbed; a few
	// looks are enough, after which the next one given back serves.
	for range 3 {
		r.mu.Lock()
		var victim, own *pooled
		for k := range r.open {
			p, ok := r.pools[k]
			if !ok || p.pool.Stat().IdleConns() == 0 {
				continue
			}
			if k == asking {
				own = p
				continue
			}
			if victim == nil || p.lastUsed.Before(victim.lastUsed) {
				victim = p
			}
		}
		r.mu.Unlock()
		if victim == nil {
			victim = own
		}
		if victim == nil {
			return false
		}
		idle := victim.pool.AcquireAllIdle(ctx)
		if len(idle) == 0 {
			// Taken between the look and the grab: look again.
			continue
		}
		conn := idle[0].Hijack()
		for _, c := range idle[1:] {
			c.Release()
		}
		go conn.Close(context.WithoutCancel(ctx)) //nolint:errcheck // Its slot is what matters, freed whatever the error.
		return true
	}
	return false
}

// handOver closes a connection given back to its pool while dials wait
// for a slot and no other close is under way for them: its slot goes to
// the first. It is a pool's release tracer because that is called as the
// connection is given back, before it goes idle: pgxpool's AfterRelease
// hook runs later, on its own goroutine, and a query right after another
// on the same pool would find no idle connection and dial a second.
//
// It closes the connection even when the reconcile giving it back, or the
// next one into its database, wants it again a moment later. Keeping the
// sessions of databases that reconciles are at work in, until the last of
// them leaves, was measured (BenchmarkScale, 2,000 objects at the shipped
// cap of 10): at best it opened 8% fewer sessions (2,125 against 2,310)
// and made the wave 38 to 54% slower, because the cap's slots then turn
// over once per reconcile, its API writes included, instead of once per
// statement. Under a cap smaller than the number of databases the workers
// are in, a login (6 to 7 ms) costs less than a slot held through a
// reconcile.
type handOver struct {
	slots *slotQueue
	// token, when set, is forgotten when the server refuses it.
	token TokenSource
	// admit counts the logins to the pool's database (Registry.Enter).
	admit    *admission
	database string
}

// TraceConnectStart implements pgx.ConnectTracer: a login to the pool's
// database starts.
func (h handOver) TraceConnectStart(ctx context.Context, _ pgx.TraceConnectStartData) context.Context {
	if h.admit != nil {
		h.admit.login(h.database, 1)
	}
	return ctx
}

// TraceConnectEnd implements pgx.ConnectTracer: the login ended; a token
// the server refused is not offered again.
func (h handOver) TraceConnectEnd(_ context.Context, d pgx.TraceConnectEndData) {
	if h.admit != nil {
		h.admit.login(h.database, -1)
	}
	if h.token != nil && IsCode(d.Err, CodeInvalidPassword) {
		h.token.Forget()
	}
}

// TraceRelease implements pgxpool.ReleaseTracer. A closed connection is
// destroyed by the pool, which frees its slot.
func (h handOver) TraceRelease(_ *pgxpool.Pool, d pgxpool.TraceReleaseData) {
	if h.slots.wantsRoom() {
		// A release has no context; closing is bounded by serverGoneTimeout.
		_ = d.Conn.Close(context.Background())
	}
}

// TraceQueryStart implements pgx.QueryTracer, which a pool's tracer must.
func (handOver) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (handOver) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

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
	descOpened = prometheus.NewDesc("provider_postgresql_connections_opened_total",
		"Server connections opened, across all pools and logins.", nil, nil)
	descBusy = prometheus.NewDesc("provider_postgresql_database_busy_total",
		"Reconciles turned away from a database other than an Instance's own because as many as it may hold were at work in it, waiting (a lock held there, most likely).", nil, nil)
)

// Describe implements prometheus.Collector.
func (r *Registry) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPoolConns, descPoolMax, descPoolWait, descPoolAcquires, descOpen, descMax, descSlotWait, descOpened, descBusy} {
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
	ch <- prometheus.MustNewConstMetric(descOpened, prometheus.CounterValue, float64(r.OpenedConns()))
	ch <- prometheus.MustNewConstMetric(descBusy, prometheus.CounterValue, float64(r.BusyRefusals()))
}
