// Package postgres is rota's store for many nodes: every rota process (a
// server, or a program that embeds the library) points at one PostgreSQL
// database and shares its jobs. It implements store.Store with the same
// semantics as store/sqlite and passes the same conformance suite.
//
// Layout: jobs live in a hot table (pending, running, paused) with small
// partial indexes for claims, next-run lookups and lease sweeps, and move to
// a table of ended jobs in the transaction that ends them, so that the hot
// table's size follows the backlog rather than the history. Claims use
// FOR UPDATE SKIP LOCKED in batches; completions and inserts are set-based
// statements over arrays.
//
// Time: the store stamps rows with the database's clock (now(), the start of
// the transaction), so that leases set and checked on different nodes agree.
// Times that callers pass (RunAt, DueBy, Snooze) are absolute and stored as
// given. ExpireLeases(now) is read relative to the calling node's clock: it
// sweeps leases that ended before the database's now plus (now − the node's
// now), so a monitor passing time.Now() sweeps by the database's clock.
//
// Durability: adds, finishes, cancels and other producer writes commit with
// the database's synchronous_commit (on by default), so an acknowledged
// write survives a crash of any node or of the database. Claims and
// heartbeats without data commit with synchronous_commit = off: losing one
// in a database crash only makes a job run again, and the next synchronous
// commit flushes them too.
//
// Wake-ups across nodes: after each commit the store delivers its changes to
// its own Watch callbacks and queues them for other nodes, which a sender
// goroutine publishes with NOTIFY outside the writing transaction, batched
// (one NOTIFY transaction in flight per node) and split into payloads under
// 8000 bytes. Each node LISTENs on a dedicated connection that reconnects by
// itself; lost notifications only delay a wake-up, since acceptors re-poll.
// Nodes announce themselves on the channel (hello, here, bye), and a node
// sends its changes only while another listens (peers in notify.go).
// When a flush has more changes than Config.NotifyMaxPayloads can carry, the
// rest go out as per-type hints, which Watch delivers as a Change with ID 0
// and State Pending: "jobs of this type changed on another node".
//
// Sweeps that must run once (ExpireLeases) run on one elected node: the one
// holding a session-level advisory lock on a dedicated connection. Others
// return at once from ExpireLeases and try to take over at their next call,
// so when the leader dies (its session ends and PostgreSQL releases the
// lock) another node sweeps within about one Config.LeaderRetry.
//
// Failover: given every host in its DSN with target_session_attrs=read-write,
// each new connection (pooled, LISTEN, leader) goes to the current primary,
// so the store follows a promotion by itself. A primary that hangs without
// closing connections is found out by bounds: a connection attempt per host
// (connect_timeout, 10 s unless the DSN sets it), the check of an idle pooled
// connection (5 s), the LISTEN connection's check of its server after 10 s
// without a notification, and an election or sweep (10 s).
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/rotajobs/rota/internal/backend"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/internal/sqlfile"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/rotajobs/rota/internal/migrate"
	"github.com/rotajobs/rota/store"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Config tunes a Store. The zero value is ready to use.
type Config struct {
	// Schema holds rota's tables; it is created if missing. Give it a
	// schema of its own. Empty means "rota".
	Schema string
	// MaxConns bounds the connection pool; zero means the DSN's
	// pool_max_conns, or else max(4, number of CPUs). A node uses up to
	// MaxConns connections plus one for LISTEN and one while it is the
	// sweep leader.
	MaxConns int32
	// SkipMigrate makes Open leave the schema alone, for deployments that
	// run migrations explicitly (rota migrate, or Migrate). Operations fail
	// if the schema is missing or older than this rota needs.
	SkipMigrate bool
	// NoListen disables the LISTEN connection, for connection poolers in
	// transaction mode (see docs/postgres.md). Changes from other nodes
	// are then not delivered to Watch; acceptors fall back to polling.
	NoListen bool
	// NoNotify disables sending changes to other nodes with NOTIFY.
	NoNotify bool
	// SessionDSN, when set, is where the two connections that need a
	// session of their own go: the LISTEN connection and the sweep
	// leader's (which holds a session-level advisory lock). Behind a
	// connection pooler in transaction mode, point it at PostgreSQL
	// directly. Empty means the DSN given to Open.
	SessionDSN string
	// NotifyMaxPayloads bounds how many NOTIFY payloads (of under 8000
	// bytes each) one flush sends before it summarises the rest as
	// per-type hints; zero means 16.
	NotifyMaxPayloads int
	// LeaderRetry is how often a node that is not the sweep leader tries to
	// become it, and how long ExpireLeases tells it to sleep; zero means 1s.
	LeaderRetry time.Duration
	// Logger receives connection-loss and reconnection messages; nil means
	// slog.Default().
	Logger *slog.Logger
	// tracer, when set, sees the statements and batches of the pool's
	// connections (tests count an accept's round trips with it).
	tracer pgx.QueryTracer
}

// defaultConnectTimeout bounds each connection attempt, per host, when
// the DSN sets no connect_timeout.
const defaultConnectTimeout = 10 * time.Second

// pingTimeout bounds the check of an idle pooled connection before use,
// and the LISTEN connection's checks of its server (every peerBeat).
const pingTimeout = 5 * time.Second

// ErrUnavailable marks errors caused by a lost or refused database
// connection. The pool and the LISTEN connection reconnect by themselves;
// the call can be retried. A write whose connection broke after the
// statement was sent may or may not have been applied. It is
// store.ErrUnavailable, which the HTTP API answers with 503.
var ErrUnavailable = store.ErrUnavailable

// Store is the PostgreSQL store. It implements store.Store.
type Store struct {
	cfg     Config
	session *pgx.ConnConfig // for the LISTEN and leader connections
	schema  string          // quoted identifier
	channel string          // NOTIFY channel
	// limited: the types whose last accept found a bound on their running
	// jobs or a rate (a limits value), whose next accept takes the type's
	// lock in its first round trip: in the head step (headLimitedSQL), or,
	// when the limits were close to binding (binds), in the accept's
	// transaction (acceptor.headLocked)
	limited sync.Map
	node    string // this Store's id in notifications
	pool    *pgxpool.Pool
	log     *slog.Logger

	closed  atomic.Bool
	closeMu sync.Once
	ctx     context.Context // ends at Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	stmts  sqlfile.Statements // the named statements of sql/*.sql, the schema filled in
	inline *strings.Replacer  // fills the schema into accept.go's inline statements (q)
	qMu    sync.RWMutex
	qs     map[string]string // inline statements with the schema filled in

	typesMu sync.RWMutex
	types   map[string]struct{} // type names committed in the types table

	feed backend.Watchers // serialises deliveries, so each watcher sees one sequence

	out    *outbox // changes waiting to be sent to other nodes
	peers  peers   // the other nodes known to listen
	leader leader
	adder  adder // group commit of concurrent adds

	userMu sync.Mutex
	userDB *sql.DB
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at dsn (a postgres:// URL or key=value
// string, as pgx accepts), brings the schema up to date unless
// cfg.SkipMigrate, and starts listening for other nodes' changes.
func Open(ctx context.Context, dsn string, cfg Config) (*Store, error) {
	if cfg.Schema == "" {
		cfg.Schema = "rota"
	}
	if err := checkSchemaName(cfg.Schema); err != nil {
		return nil, err
	}
	if cfg.NotifyMaxPayloads <= 0 {
		cfg.NotifyMaxPayloads = 16
	}
	if cfg.LeaderRetry <= 0 {
		cfg.LeaderRetry = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, check.Invalidf("postgres: bad connection string: %v", err)
	}
	session := pc.ConnConfig
	if cfg.SessionDSN != "" {
		if session, err = pgx.ParseConfig(cfg.SessionDSN); err != nil {
			return nil, check.Invalidf("postgres: bad session connection string: %v", err)
		}
	}
	if cfg.MaxConns > 0 {
		pc.MaxConns = cfg.MaxConns
	}
	// A server that hangs, or a network that drops every packet, answers
	// nothing and closes nothing: without these bounds a connection
	// attempt, or the ping of an idle pooled connection, would wait for
	// it for as long as TCP does (minutes), instead of moving on to the
	// next host of a multi-host DSN after a failover.
	for _, c := range []*pgx.ConnConfig{pc.ConnConfig, session} {
		if c.ConnectTimeout == 0 {
			c.ConnectTimeout = defaultConnectTimeout
		}
	}
	if pc.PingTimeout == 0 {
		pc.PingTimeout = pingTimeout
	}
	if cfg.tracer != nil {
		pc.ConnConfig.Tracer = cfg.tracer
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	s := &Store{
		cfg:     cfg,
		session: session,
		schema:  pgx.Identifier{cfg.Schema}.Sanitize(),
		channel: channelName(cfg.Schema),
		node:    backend.NewToken()[:16],
		pool:    pool,
		log:     cfg.Logger,
		ctx:     sctx,
		cancel:  cancel,
		qs:      map[string]string{},
		types:   map[string]struct{}{},
	}
	if s.stmts, err = loadStatements(s.schema, s.channel); err != nil {
		cancel()
		pool.Close()
		return nil, err
	}
	s.inline = strings.NewReplacer("rota.", s.schema+".")
	s.out = newOutbox(s)
	s.peers.always = cfg.NoListen
	s.leader.s = s
	fail := func(err error) (*Store, error) {
		cancel()
		pool.Close()
		return nil, err
	}
	var encoding string
	if err := pool.QueryRow(ctx, s.stmt("server_encoding")).Scan(&encoding); err != nil {
		return fail(s.wrap("open", err))
	}
	if encoding != "UTF8" {
		// Job data, names and errors are UTF-8 text to the database.
		return fail(fmt.Errorf("postgres: open: the database's encoding is %s; rota needs a UTF8 database", encoding))
	}
	if !cfg.SkipMigrate {
		if err := s.Migrate(ctx); err != nil {
			return fail(err)
		}
	}
	if err := s.reloadTypes(ctx); err != nil && !cfg.SkipMigrate {
		return fail(err)
	}
	if !cfg.NoListen {
		l, err := s.listen(ctx)
		if err != nil {
			return fail(s.wrap("listen", err))
		}
		s.wg.Add(1)
		go s.listenLoop(l)
	}
	if !cfg.NoNotify {
		s.wg.Add(1)
		go s.out.run()
	}
	return s, nil
}

func checkSchemaName(name string) error {
	if len(name) > 63 {
		return check.Invalidf("postgres: schema name %q is longer than 63 bytes", name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return check.Invalidf("postgres: schema name %q contains a control character", name)
		}
	}
	return nil
}

// sessionConfig is the configuration of a connection of its own (LISTEN,
// leader), named so that pg_stat_activity shows what it is.
func (s *Store) sessionConfig(name string) *pgx.ConnConfig {
	c := s.session.Copy()
	if c.RuntimeParams == nil {
		c.RuntimeParams = map[string]string{}
	}
	c.RuntimeParams["application_name"] = name
	return c
}

// channelName is the NOTIFY channel of a schema: one per schema, so that
// stores in different schemas of one database do not hear each other.
func channelName(schema string) string {
	c := "rota:" + schema
	if len(c) > 63 { // NAMEDATALEN − 1
		c = fmt.Sprintf("rota:%016x", hash64("channel", schema))
	}
	return c
}

func hash64(parts ...string) int64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return int64(h.Sum64())
}

//go:embed sql/*.sql
var sqlFiles embed.FS

// loadStatements reads the named statements of sql/*.sql and fills in
// the schema (a quoted identifier) and the NOTIFY channel, once, when the
// store opens.
func loadStatements(schema, channel string) (sqlfile.Statements, error) {
	st, err := sqlfile.Load(sqlFiles, "sql", template.FuncMap{
		"schema":       func() string { return schema },
		"channel":      func() string { return pgx.Identifier{channel}.Sanitize() },
		"jobColumns":   func() string { return jobColumns },
		"endedColumns": func() string { return endedColumns },
		"rowColumns":   func() string { return rowColumns },
		"batchColumns": func() string { return batchColumns },
		"keptFor":      backend.KeptForSQL,
		"copyColumns":  func(table string) string { return strings.Join(copyColumns[table], ", ") },
		"exportJobColumns": func() string {
			return strings.Replace(strings.Join(jobCopyColumns, ", "), "errors", "errors::text", 1)
		},
		"migrationLockTimeout": func() string {
			return fmt.Sprintf("%dms", migrationLockTimeout.Milliseconds())
		},
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return st, nil
}

// stmt returns the named statement of sql/*.sql. A name that is none is
// a bug, which TestNamedStatements catches.
func (s *Store) stmt(name string) string {
	q, ok := s.stmts[name]
	if !ok {
		panic("postgres: no statement named " + name)
	}
	return q
}

// q returns one of accept.go's inline statements with the schema filled
// in. They name their tables rota.jobs, rota.groups…: until they move to
// sql/accept.sql, "rota." is their placeholder for the schema. Only
// accept.go's statements pass through here (TestNamedStatements).
func (s *Store) q(query string) string {
	s.qMu.RLock()
	out, ok := s.qs[query]
	s.qMu.RUnlock()
	if ok {
		return out
	}
	out = s.inline.Replace(query)
	s.qMu.Lock()
	s.qs[query] = out
	s.qMu.Unlock()
	return out
}

// ---- migrations ----

// migrations are the schema's migrations (internal/migrate).
var migrations = func() []migrate.Migration {
	all, err := migrate.Load(migrationFiles, "migrations")
	if err != nil {
		panic("postgres: " + err.Error()) // a build with a misnamed file
	}
	return all
}()

// LatestSchemaVersion is the schema version this package migrates to.
func LatestSchemaVersion() int { return migrate.Latest(migrations) }

// migrationLockTimeout bounds how long a migration's statement waits for
// a lock on rota's tables. While it waits, every query that needs the
// table queues behind it; past the bound it gives up, lets them through,
// and tries again (migrationTries times, pausing between tries).
const (
	migrationLockTimeout = 500 * time.Millisecond
	migrationTries       = 60
)

// Migrate brings the schema up to date. It is safe to run from many nodes
// at once: a session-level advisory lock queues them, and each applies
// only the migrations missing when it gets the lock. Each migration
// applies in a transaction of its own (or, marked no-transaction, one
// statement at a time, each safe to run again), so that a failure leaves
// the schema at the last migration that succeeded and no lock is held
// longer than one migration needs; a statement waits at most
// migrationLockTimeout for its lock before trying again later. A schema
// newer than this rota is refused, unless each newer migration was
// recorded compatible: then this node runs beside the newer ones.
func (s *Store) Migrate(ctx context.Context) error {
	return s.migrateTo(ctx, migrate.Latest(migrations))
}

func (s *Store) migrateTo(ctx context.Context, target int) error {
	if s.closed.Load() {
		return fmt.Errorf("postgres: migrate: %w", store.ErrClosed)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.wrap("migrate schema "+s.cfg.Schema, err)
	}
	defer conn.Release()
	key := hash64("migrate", s.cfg.Schema)
	if _, err := conn.Exec(ctx, s.stmt("migrate_lock"), key); err != nil {
		return s.wrap("migrate schema "+s.cfg.Schema, err)
	}
	defer func() {
		if _, err := conn.Exec(context.Background(), s.stmt("migrate_unlock"), key); err != nil {
			conn.Conn().Close(context.Background()) // the lock ends with the session
		}
	}()
	if err := s.migrateLocked(ctx, conn.Conn(), target); err != nil {
		return s.wrap("migrate schema "+s.cfg.Schema, err)
	}
	return nil
}

func (s *Store) migrateLocked(ctx context.Context, conn *pgx.Conn, target int) error {
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.stmt("create_schema")); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.stmt("migrations_table")); err != nil {
			return err
		}
		// Whether older nodes may run beside the migration; false for
		// those recorded before the column. Added only when missing, so
		// that a role that may not alter the table opens an up-to-date
		// schema as before.
		var has bool
		if err := tx.QueryRow(ctx, s.stmt("migrations_have_compatible"), s.cfg.Schema).Scan(&has); err != nil || has {
			return err
		}
		_, err := tx.Exec(ctx, s.stmt("migrations_add_compatible"))
		return err
	})
	if err != nil {
		return err
	}
	compatible := map[int]bool{}
	have := 0
	rows, err := conn.Query(ctx, s.stmt("migrations_applied"))
	if err != nil {
		return err
	}
	for rows.Next() {
		var v int
		var c bool
		if err := rows.Scan(&v, &c); err != nil {
			rows.Close()
			return err
		}
		compatible[v], have = c, max(have, v)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if have > migrate.Latest(migrations) {
		if err := migrate.Runnable(migrations, have, func(v int) bool { return compatible[v] }); err != nil {
			return err
		}
		s.log.Warn("rota: the schema is newer than this node knows; its newer migrations let older nodes run beside them: upgrade this node",
			"schema", s.cfg.Schema, "version", have, "known", migrate.Latest(migrations))
		return nil
	}
	if have == 0 && target > 0 {
		return s.createSchema(ctx, conn, migrations[:target])
	}
	for _, m := range migrations[have:target] {
		if m.Offline {
			served, err := s.Served(ctx)
			if err != nil {
				return err
			}
			if served {
				return fmt.Errorf("migration %s: nodes older than it must not run beside it, and rota nodes serve schema %s (one holds its sweep leadership): stop every node, then migrate", m.Name, s.cfg.Schema)
			}
		}
		if err := s.applyMigration(ctx, conn, m); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
	}
	return nil
}

// createSchema applies the migrations of a fresh schema in one
// transaction: its tables are empty and no node uses them, so the indexes
// of no-transaction migrations are built there plainly (CONCURRENTLY
// would wait for every older transaction of the database, for nothing).
func (s *Store) createSchema(ctx context.Context, conn *pgx.Conn, all []migrate.Migration) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.stmt("use_schema")); err != nil {
			return err
		}
		for _, m := range all {
			stmts := []string{m.SQL}
			if m.NoTransaction {
				stmts = migrate.Statements(m.SQL)
				for i, q := range stmts {
					stmts[i] = strings.Replace(q, " CONCURRENTLY", "", 1)
				}
			}
			for _, q := range stmts {
				if _, err := tx.Exec(ctx, q); err != nil {
					return fmt.Errorf("migration %s: %w", m.Name, err)
				}
			}
			if _, err := tx.Exec(ctx, s.stmt("migration_record"), m.Version, m.Name, m.Compatible); err != nil {
				return fmt.Errorf("migration %s: record: %w", m.Name, err)
			}
		}
		return nil
	})
}

// applyMigration applies m and records it, trying again while it cannot
// take its locks within migrationLockTimeout.
func (s *Store) applyMigration(ctx context.Context, conn *pgx.Conn, m migrate.Migration) error {
	var run func() error
	if !m.NoTransaction {
		run = func() error {
			return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, s.stmt("use_schema")); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, s.stmt("migration_lock_timeout")); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, m.SQL); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, s.stmt("migration_record"), m.Version, m.Name, m.Compatible)
				return err
			})
		}
		return retryLocked(ctx, run)
	}
	// One statement at a time, each its own transaction, in the schema.
	if _, err := conn.Exec(ctx, s.stmt("use_schema_session")); err != nil {
		return err
	}
	defer conn.Exec(context.Background(), s.stmt("reset_session"))
	if _, err := conn.Exec(ctx, s.stmt("migration_lock_timeout_session")); err != nil {
		return err
	}
	// An index that a CREATE INDEX CONCURRENTLY left invalid when it
	// failed (this migration's, tried before) is dropped, so that IF NOT
	// EXISTS builds it again.
	var invalid []string
	rows, err := conn.Query(ctx, s.stmt("invalid_indexes"), s.cfg.Schema)
	if err != nil {
		return err
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		invalid = append(invalid, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, name := range invalid {
		// Assembled: the index's name, quoted by format('%I.%I'), is an
		// identifier, which no parameter can stand for.
		if err := retryLocked(ctx, func() error { _, err := conn.Exec(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+name); return err }); err != nil {
			return fmt.Errorf("drop the invalid index %s: %w", name, err)
		}
	}
	for _, stmt := range migrate.Statements(m.SQL) {
		if err := retryLocked(ctx, func() error { _, err := conn.Exec(ctx, stmt); return err }); err != nil {
			return err
		}
	}
	_, err = conn.Exec(ctx, s.stmt("migration_record"), m.Version, m.Name, m.Compatible)
	return err
}

// retryLocked runs fn until it does not fail for want of a lock (SQLSTATE
// 55P03, lock_timeout), at most migrationTries times.
func retryLocked(ctx context.Context, fn func() error) error {
	for try := 1; ; try++ {
		err := fn()
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
			return err
		}
		if try == migrationTries {
			return fmt.Errorf("could not take the locks it needs in %d tries of %v (a long transaction on rota's tables? see pg_stat_activity): %w", try, migrationLockTimeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(time.Duration(try)*100*time.Millisecond, time.Second)):
		}
	}
}

// PendingMigrations returns the migrations Migrate would apply now.
func (s *Store) PendingMigrations(ctx context.Context) ([]migrate.Migration, error) {
	have, err := s.SchemaVersion(ctx)
	if err != nil {
		return nil, err
	}
	return migrate.Pending(migrations, have)
}

// SchemaVersion returns the highest migration applied, 0 when the schema
// has none.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	if s.closed.Load() {
		return 0, fmt.Errorf("postgres: schema version: %w", store.ErrClosed)
	}
	var exists bool
	if err := s.pool.QueryRow(ctx, s.stmt("schema_exists"), s.schema+".schema_migrations").Scan(&exists); err != nil {
		return 0, s.wrap("schema version", err)
	}
	if !exists {
		return 0, nil
	}
	var v int
	if err := s.pool.QueryRow(ctx, s.stmt("schema_version")).Scan(&v); err != nil {
		return 0, s.wrap("schema version", err)
	}
	return v, nil
}

// Schema returns the name of the schema that holds the store's tables.
func (s *Store) Schema() string { return s.cfg.Schema }

// Pool returns the store's connection pool, for the caller's own queries
// and for AddPgxTx and FinishPgxTx.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// DB returns a database/sql handle on the store's pool (pgx's stdlib
// driver), for callers who use database/sql: its transactions can be
// passed to AddTx and FinishTx.
func (s *Store) DB() *sql.DB {
	s.userMu.Lock()
	defer s.userMu.Unlock()
	if s.userDB == nil {
		s.userDB = stdlib.OpenDBFromPool(s.pool)
	}
	return s.userDB
}

// Close stops the store's goroutines, sends changes still waiting for
// other nodes, and closes its connections. Calls after Close fail with
// store.ErrClosed; calls in progress finish first.
func (s *Store) Close() error {
	s.closeMu.Do(func() {
		s.closed.Store(true)
		if !s.cfg.NoListen {
			s.sayBye()
		}
		s.out.close()
		s.cancel()
		s.wg.Wait()
		s.leader.resign()
		s.userMu.Lock()
		if s.userDB != nil {
			s.userDB.Close()
		}
		s.userMu.Unlock()
		s.pool.Close()
	})
	return nil
}

// ---- errors ----

// wrap turns a database error into the store's: ErrClosed after Close,
// context errors as they are, and ErrUnavailable for lost connections.
func (s *Store) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if s.closed.Load() {
		return fmt.Errorf("postgres: %s: %w", op, store.ErrClosed)
	}
	if errors.Is(err, store.ErrInvalid) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	if isConnErr(err) {
		return fmt.Errorf("postgres: %s: %w: %w", op, ErrUnavailable, err)
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// isConnErr reports whether err is PostgreSQL saying "not now" rather
// than an error of the statement: a lost, refused or closing connection,
// or a server that cannot take the call for a while. The call may succeed
// later, on another connection (wrap makes such errors ErrUnavailable,
// which the HTTP API answers with 503 and Retry-After).
func isConnErr(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03", // admin shutdown, crash shutdown, cannot connect now (starting up, shutting down, in recovery)
			pgErr.Code == "53300", // too many connections (for the server, the database or the role)
			pgErr.Code == "25006": // read-only transaction: a standby, or a primary demoted by a failover
			return true
		case pgErr.Code == "55000":
			// At connect, the database is not accepting connections
			// (ALLOW_CONNECTIONS false, as during maintenance); in a
			// statement, an object is in the wrong state, which is the
			// statement's error.
			var connErr *pgconn.ConnectError
			return errors.As(err, &connErr)
		}
		return false
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connErr), errors.As(err, &netErr),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		pgconn.SafeToRetry(err):
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "conn busy") ||
		strings.Contains(msg, "connection reset") || strings.Contains(msg, "broken pipe")
}

// retryable reports whether a failed transaction changed nothing and may
// simply run again: a serialisation failure or deadlock, or a connection
// lost before the commit was sent.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "40001" || pgErr.Code == "40P01"
	}
	return isConnErr(err)
}

// ---- running statements ----

// db is what transitions run statements on: the pool, one of the store's
// transactions, or a caller's transaction (pgx or database/sql).
type db interface {
	exec(ctx context.Context, query string, args ...any) (int64, error)
	query(ctx context.Context, query string, args ...any) (rows, error)
}

type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// pgxQuerier is satisfied by *pgxpool.Pool, *pgx.Conn and pgx.Tx.
type pgxQuerier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

type pgxDB struct{ q pgxQuerier }

func (d pgxDB) exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := d.q.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (d pgxDB) query(ctx context.Context, query string, args ...any) (rows, error) {
	return d.q.Query(ctx, query, args...)
}

// sqlDB runs statements in a caller's database/sql transaction; pgx's
// stdlib driver passes arguments such as slices through to pgx unchanged.
type sqlDB struct{ tx *sql.Tx }

func (d sqlDB) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := d.tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (d sqlDB) query(ctx context.Context, query string, args ...any) (rows, error) {
	r, err := d.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{r}, nil
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }

// txn is one unit of work: where statements run, and the changes to
// publish once it commits.
type txn struct {
	s       *Store
	ctx     context.Context
	db      db
	user    bool // a caller's transaction: its commit is not ours to see
	changes []store.Event
	after   []func() // run once the transaction committed, before its changes are published
	// deferCounts: the transaction runs several statements, so that
	// changes to the groups' pending counts are collected in counts and appended by
	// one statement before the commit (see flushCounts). Otherwise each
	// statement appends its own.
	deferCounts bool
	counts      map[groupKey]int64 // pending jobs by group
	at          time.Time          // the transaction's now(), once read (see now)
}

// run runs the named statement (sql/*.sql) and returns the rows it changed.
func (t *txn) run(name string, args ...any) (int64, error) {
	return t.db.exec(t.ctx, t.s.stmt(name), args...)
}

// rows runs the named statement and returns its rows.
func (t *txn) rows(name string, args ...any) (rows, error) {
	return t.db.query(t.ctx, t.s.stmt(name), args...)
}

// row runs the named statement, expected to return at most one row;
// found is false when it returns none.
func (t *txn) row(name string, args []any, dest ...any) (found bool, err error) {
	r, err := t.rows(name, args...)
	return readOne(r, err, dest...)
}

// exec, query and queryRow run accept.go's inline statements (q).
func (t *txn) exec(query string, args ...any) (int64, error) {
	return t.db.exec(t.ctx, t.s.q(query), args...)
}

func (t *txn) query(query string, args ...any) (rows, error) {
	return t.db.query(t.ctx, t.s.q(query), args...)
}

func (t *txn) queryRow(query string, args []any, dest ...any) (found bool, err error) {
	r, err := t.query(query, args...)
	return readOne(r, err, dest...)
}

// readOne reads the one row r holds into dest; found is false when it
// holds none.
func readOne(r rows, err error, dest ...any) (found bool, _ error) {
	if err != nil {
		return false, err
	}
	defer r.Close()
	if !r.Next() {
		return false, r.Err()
	}
	if err := r.Scan(dest...); err != nil {
		return false, err
	}
	r.Close()
	return true, r.Err()
}

func (t *txn) changed(c store.Event) { t.changes = append(t.changes, c) }

// committed runs the after-commit hooks and publishes the changes.
func (t *txn) committed() {
	for _, f := range t.after {
		f()
	}
	t.s.committed(t.changes)
}

// begin checks that the store is open and returns a unit of work on the
// pool, outside any transaction.
func (s *Store) begin(ctx context.Context) (*txn, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	return &txn{s: s, ctx: ctx, db: pgxDB{s.pool}}, nil
}

// autocommit runs fn, whose statements each commit by themselves, and
// publishes its changes if it succeeds. A failure before anything was
// sent is retried once, on another connection.
//
// fn's changes come from one statement, and fn succeeds only once that
// statement's round trip has ended (rows read to the end, a batch
// closed): its rows arrive before its commit, which can still fail, or
// never be known (a crash, a lost connection), and a change published,
// or a success answered, for a commit that failed is a job completed or
// added that is not.
func (s *Store) autocommit(ctx context.Context, op string, fn func(t *txn) error) error {
	for attempt := 0; ; attempt++ {
		t, err := s.begin(ctx)
		if err != nil {
			return s.wrap(op, err)
		}
		err = fn(t)
		if err == nil && len(t.counts) > 0 {
			// Each statement outside a transaction applies its own counts.
			err = fmt.Errorf("internal error: group counts left unapplied outside a transaction")
		}
		if err == nil {
			t.committed()
			return nil
		}
		if attempt == 0 && pgconn.SafeToRetry(err) && ctx.Err() == nil && !s.closed.Load() {
			continue
		}
		return s.wrap(op, err)
	}
}

// inTx runs fn in a transaction of its own and publishes its changes after
// the commit. A transaction that failed before its commit changed nothing,
// so after a deadlock, a serialisation failure or a lost connection it runs
// again, a few times; a failed commit is reported, since its outcome is
// unknown.
func (s *Store) inTx(ctx context.Context, op string, fn func(t *txn) error) error {
	return s.inTxOn(ctx, op, jobTxs{s.pool}, fn)
}

type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// jobTxs begins the transactions of job operations, which find jobs by id
// or from the front of an index, with the settings of hotPlanSQL in
// BEGIN's round trip. (The sweep leader's transactions, which read whole
// tables of ended jobs, begin without them.)
type jobTxs struct{ pool *pgxpool.Pool }

func (p jobTxs) Begin(ctx context.Context) (pgx.Tx, error) {
	return p.pool.BeginTx(ctx, pgx.TxOptions{BeginQuery: "BEGIN; " + hotPlanSQL})
}

func (s *Store) inTxOn(ctx context.Context, op string, on beginner, fn func(t *txn) error) error {
	for attempt := 0; ; attempt++ {
		if s.closed.Load() {
			return s.wrap(op, store.ErrClosed)
		}
		t := &txn{s: s, ctx: ctx}
		err, committing := s.runTx(ctx, on, t, fn)
		if err == nil {
			t.committed()
			return nil
		}
		if committing {
			return s.wrap(op, fmt.Errorf("commit (outcome unknown): %w", err))
		}
		if attempt < 3 && retryable(err) && ctx.Err() == nil && !s.closed.Load() {
			time.Sleep(time.Duration(attempt*attempt) * 10 * time.Millisecond)
			continue
		}
		return s.wrap(op, err)
	}
}

func (s *Store) runTx(ctx context.Context, on beginner, t *txn, fn func(t *txn) error) (err error, committing bool) {
	tx, err := on.Begin(ctx)
	if err != nil {
		return err, false
	}
	t.db = pgxDB{tx}
	t.deferCounts = true
	err = fn(t)
	if err == nil {
		err = t.flushCounts()
	}
	if err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return err, false
	}
	if err := tx.Commit(ctx); err != nil {
		return err, true
	}
	return nil, false
}

// read runs a read-only fn, retrying once on a lost connection (reads are
// safe to repeat).
func (s *Store) read(ctx context.Context, op string, fn func(t *txn) error) error {
	for attempt := 0; ; attempt++ {
		t, err := s.begin(ctx)
		if err != nil {
			return s.wrap(op, err)
		}
		err = fn(t)
		if err == nil {
			return nil
		}
		if attempt == 0 && isConnErr(err) && ctx.Err() == nil && !s.closed.Load() {
			continue
		}
		return s.wrap(op, err)
	}
}
