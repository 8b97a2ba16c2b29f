// Package sqlite is rota's embedded store: one SQLite database file in WAL
// mode. All writes go through a single writer goroutine that owns the only
// write connection and commits concurrent requests together (group
// commit): many callers share one transaction and one fsync. Reads use a
// separate pool of connections and never wait for the writer.
//
// Durability: an acknowledged add or finish is on disk when its call
// returns. The writer commits with synchronous=NORMAL and a syncer
// goroutine fdatasyncs the write-ahead log before it answers (commit.go),
// which gives the guarantee of synchronous=FULL without the writer
// waiting for the disk. Accepts and plain heartbeats are answered without
// a sync of their own, since losing them in a power failure only makes a
// job run again.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/rotajobs/rota/internal/backend"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/internal/rules/fair"
	"github.com/rotajobs/rota/internal/sqlfile"

	_ "github.com/mattn/go-sqlite3" // the database/sql driver "sqlite3"

	"github.com/rotajobs/rota/internal/migrate"
	"github.com/rotajobs/rota/store"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Config tunes a Store. The zero value is ready to use.
type Config struct {
	// MaxBatch bounds how many requests share one transaction; zero
	// means 256.
	MaxBatch int
	// ReadConns is the size of the read pool; zero means 4.
	ReadConns int
	// BusyTimeout is how long a connection waits for a lock held by
	// another connection (for example a caller's transaction); zero
	// means 5s.
	BusyTimeout time.Duration
	// Clock returns the current time; nil means time.Now. Tests use it.
	Clock func() time.Time

	// claimReadHook, set by this package's tests, runs in readClaimed once
	// its snapshot is taken.
	claimReadHook func()
}

// Store is the SQLite store. It implements store.Store.
type Store struct {
	path   string
	cfg    Config
	writer *sql.DB   // a pool of one connection
	conn   *sql.Conn // that connection, pinned by the writer goroutine
	reader *sql.DB   // read pool
	// claimReader has connections of its own for readClaimed, so that
	// listings on the read pool cannot hold up accepts (nor, through the
	// snapshots they wait for, the writer); readClaimedStmt is its
	// statement.
	claimReader     *sql.DB
	readClaimedStmt *sql.Stmt
	// reading counts the readClaimed goroutines under way (Close waits
	// for them); snapshots, the writer's own, are those of its last
	// commit that have yet to take their snapshot (see readAfter).
	reading   sync.WaitGroup
	snapshots []chan struct{}
	userDB    *sql.DB // for callers' own transactions; opened on demand
	userMu    sync.Mutex

	reqs    chan *request
	commits chan committed // from the writer to the syncer
	wal     *os.File       // the write-ahead log, for the syncer's fdatasync
	broken  atomic.Pointer[error]
	closing chan struct{}
	stopped chan struct{}
	closeMu sync.Once

	stmts map[string]*sql.Stmt // prepared on conn; writer goroutine only

	// deadlineAdds counts adds with a deadline; deadlinesNone is its value
	// when a committed lease sweep last found no pending job with one (-1:
	// not known). While they are equal, claims need not check deadlines,
	// which costs a row look-up per job offered (txn.deadlineSQL).
	deadlineAdds, deadlinesNone atomic.Int64

	typesMu sync.RWMutex
	types   map[string]typeConfig // known types and their settings
	groups  map[groupKey]store.GroupConfig

	feed backend.Watchers
}

var _ store.Store = (*Store)(nil)

const driverName = "sqlite3"

func dsn(path string, extra url.Values, busy time.Duration) string {
	v := url.Values{}
	v.Set("_journal_mode", "WAL")
	v.Set("_synchronous", "FULL")
	v.Set("_busy_timeout", strconv.FormatInt(busy.Milliseconds(), 10))
	v.Set("_foreign_keys", "1")
	v.Set("_txlock", "immediate")
	for k, vs := range extra {
		v[k] = vs
	}
	return "file:" + path + "?" + v.Encode()
}

// Open opens (creating if needed) the database file at path and brings
// its schema up to date.
func Open(path string, cfg Config) (*Store, error) {
	if errNeedsCgo != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, errNeedsCgo)
	}
	if path == "" {
		return nil, check.Invalidf("sqlite: database path is empty")
	}
	if !strings.HasPrefix(path, ":") {
		// A new database is its owner's alone (0600): it holds every job's
		// data and the tokens' hashes. SQLite gives the -wal and -shm files
		// the database's mode. An existing file keeps its mode; a path
		// that cannot be created is SQLite's to report.
		if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			f.Close()
		}
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 256
	}
	if cfg.ReadConns <= 0 {
		cfg.ReadConns = 4
	}
	if cfg.BusyTimeout <= 0 {
		cfg.BusyTimeout = 5 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	// The writer commits with synchronous=NORMAL: its syncer fsyncs the
	// log instead (commit.go). Other connections keep FULL. Only the
	// writer goroutine uses this connection, so SQLite's per-connection
	// mutex (_mutex=no) is not needed.
	w, err := sql.Open(driverName, dsn(path, url.Values{"_synchronous": {"NORMAL"}, "_mutex": {"no"}}, cfg.BusyTimeout))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := checkPragmas(w, path, 1); err != nil {
		w.Close()
		return nil, err
	}
	if err := migrateDB(w); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: migrate %s: %w", path, err)
	}
	r, err := sql.Open(driverName, dsn(path, url.Values{"_query_only": {"1"}}, cfg.BusyTimeout))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	r.SetMaxOpenConns(cfg.ReadConns)
	r.SetMaxIdleConns(cfg.ReadConns)
	s := &Store{
		path:    path,
		cfg:     cfg,
		writer:  w,
		reader:  r,
		reqs:    make(chan *request, cfg.MaxBatch),
		commits: make(chan committed, 64),
		closing: make(chan struct{}),
		stopped: make(chan struct{}),
		stmts:   map[string]*sql.Stmt{},
		types:   map[string]typeConfig{},
		groups:  map[groupKey]store.GroupConfig{},
	}
	s.deadlinesNone.Store(-1) // not known until the first sweep
	if err := s.loadConfig(); err != nil {
		w.Close()
		r.Close()
		return nil, err
	}
	if s.claimReader, err = sql.Open(driverName, dsn(path, url.Values{"_query_only": {"1"}}, cfg.BusyTimeout)); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	s.claimReader.SetMaxOpenConns(claimReadConns)
	s.claimReader.SetMaxIdleConns(2)
	if s.readClaimedStmt, err = s.claimReader.Prepare(readClaimedSQL); err != nil {
		w.Close()
		r.Close()
		s.claimReader.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if s.conn, err = w.Conn(bg); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if s.wal, err = openWAL(path); err != nil {
		s.conn.Close()
		w.Close()
		r.Close()
		return nil, err
	}
	go s.writeLoop()
	return s, nil
}

// checkPragmas verifies that the settings durability depends on took
// effect, since some builds change their defaults: WAL, and the
// synchronous level asked for (1 NORMAL, 2 FULL).
func checkPragmas(db *sql.DB, path string, want int) error {
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("sqlite: open %s: journal_mode is %q, want wal", path, mode)
	}
	var syncMode int
	if err := db.QueryRow("PRAGMA synchronous").Scan(&syncMode); err != nil {
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if syncMode != want {
		return fmt.Errorf("sqlite: open %s: synchronous is %d, want %d", path, syncMode, want)
	}
	return nil
}

// SchemaVersion returns the highest migration applied.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.reader.QueryRowContext(ctx, stmt("migrations_applied")).Scan(&v)
	return v, err
}

// migrations are the schema's migrations (internal/migrate).
var migrations = func() []migrate.Migration {
	all, err := migrate.Load(migrationFiles, "migrations")
	if err != nil {
		panic("sqlite: " + err.Error()) // a build with a misnamed file
	}
	return all
}()

// migrationTx is a migration's transaction (migrate.Tx): BEGIN IMMEDIATE,
// so that processes opening the file at once queue on the write lock.
type migrationTx struct{ tx *sql.Tx }

func (m migrationTx) Applied(ctx context.Context) (int, error) {
	if _, err := m.tx.ExecContext(ctx, stmt("migrations_table")); err != nil {
		return 0, err
	}
	var v int
	err := m.tx.QueryRowContext(ctx, stmt("migrations_applied")).Scan(&v)
	return v, err
}

func (m migrationTx) Exec(ctx context.Context, q string) error {
	_, err := m.tx.ExecContext(ctx, q)
	return err
}

func (m migrationTx) Record(ctx context.Context, mg migrate.Migration) error {
	_, err := m.tx.ExecContext(ctx, stmt("migration_record"),
		mg.Version, mg.Name, time.Now().UnixMicro())
	return err
}

func migrateDB(db *sql.DB) error {
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := migrate.Apply(ctx, migrationTx{tx}, migrations); err != nil {
		return err
	}
	return tx.Commit()
}

// PendingMigrations returns the migrations that opening the database file
// at path would apply (all of them for a file that does not exist), without
// creating or changing it.
func PendingMigrations(path string) ([]migrate.Migration, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return migrations, nil
	}
	db, err := sql.Open(driverName, dsn(path, url.Values{"mode": {"ro"}}, 5*time.Second))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	defer db.Close()
	var exists int
	if err := db.QueryRow(stmt("migrations_exist")).Scan(&exists); err != nil {
		return nil, fmt.Errorf("sqlite: read %s: %w", path, err)
	}
	have := 0
	if exists > 0 {
		if err := db.QueryRow(stmt("migrations_applied")).Scan(&have); err != nil {
			return nil, fmt.Errorf("sqlite: read %s: %w", path, err)
		}
	}
	return migrate.Pending(migrations, have)
}

// LatestSchemaVersion is the schema version this package migrates to.
func LatestSchemaVersion() int { return migrate.Latest(migrations) }

// DB returns a handle on the same database file for the caller's own
// tables and transactions, so that AddTx and FinishTx commit together with
// the caller's writes. Its transactions begin IMMEDIATE (they take the
// write lock at BEGIN), which avoids deadlocks between writers.
func (s *Store) DB() (*sql.DB, error) {
	s.userMu.Lock()
	defer s.userMu.Unlock()
	if s.userDB != nil {
		return s.userDB, nil
	}
	db, err := sql.Open(driverName, dsn(s.path, nil, s.cfg.BusyTimeout))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", s.path, err)
	}
	s.userDB = db
	return db, nil
}

// Path returns the database file path.
func (s *Store) Path() string { return s.path }

// Close stops the writer, failing requests not yet started with
// store.ErrClosed, and closes the database.
func (s *Store) Close() error {
	var err error
	s.closeMu.Do(func() {
		close(s.closing)
		<-s.stopped
		s.reading.Wait() // accepts that committed are answered with their jobs
		err = errors.Join(s.writer.Close(), s.readClaimedStmt.Close(), s.claimReader.Close(), s.reader.Close(), s.wal.Close())
		s.userMu.Lock()
		if s.userDB != nil {
			err = errors.Join(err, s.userDB.Close())
		}
		s.userMu.Unlock()
	})
	return err
}

// Watch registers fn to receive committed changes.
func (s *Store) Watch(fn func([]store.Event)) func() { return s.feed.Watch(fn) }

// execer is what transitions run statements on: the writer's pinned
// connection, or a caller's transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// txn is the writer's view of one transaction: where statements run,
// the time of the batch, and the changes to publish after commit.
type txn struct {
	s       *Store
	db      execer
	now     time.Time
	changes []store.Event
	// applied are the jobs Apply changed, events or not (a resubmit
	// marked on a running job has none), in order.
	applied []int64
	// leases are the jobs' own lease lengths, as Lock read them.
	leases map[int64]time.Duration
	// inserted counts the pending jobs inserted and not yet counted in
	// rota_groups, by group (add).
	inserted addCounts
	// reads run once the transaction has ended, each in a goroutine of
	// its own, while the writer goes on (see readAfter).
	reads []func(snapshot func())
	own   bool // db is the writer's connection, whose prepared statements apply
	// prioSQL restricts an accept's offers to one priority
	// (AcceptParams.Priority): " AND priority = N", or "".
	prioSQL string
	// deadlineSQL keeps an accept's offers to jobs whose deadline has not
	// passed: " AND (expires_at IS NULL OR expires_at > ?)", the
	// transaction's now its argument, or "" when
	// no pending job has a deadline (Store.deadlineAdds).
	deadlineSQL string
	// inScope restricts an accept to some groups (AcceptParams.Groups);
	// nil allows every group.
	inScope func(group string) bool
	// buckets are the rates' token buckets an accept read (openBucket).
	buckets map[bucketKey]*fair.Bucket
	// clocks are the virtual clocks of the types whose pending counts
	// the request changes, as it began (clock).
	clocks map[string]float64
}

var bg = context.Background()

// readAfter runs read once the writer's transaction has ended, in a
// goroutine of its own, before the request is answered (durable requests'
// answers wait for the fsync, and light ones for earlier fsyncs, so the
// read overlaps that wait). read runs whether or not the transaction (or
// the request's savepoint) committed: it must check what it reads, and a
// rolled-back request's writes are simply not there. read must call
// snapshot once its read transaction has begun (or it gives up): the
// writer's next commit waits for that, so the read sees the state of this
// commit and nothing later, not even a commit whose fsync could still
// fail. It reports whether read will run: false in a caller's own
// transaction (AddTx, FinishTx).
func (w *txn) readAfter(read func(snapshot func())) bool {
	if !w.own {
		return false
	}
	w.reads = append(w.reads, read)
	return true
}

// claimReadConns bounds claimReader's connections.
const claimReadConns = 8

//go:embed sql/*.sql
var sqlFiles embed.FS

// statements are the named statements of sql/*.sql. SQLite has no schema
// to fill in, so they are read once, when the package loads.
var statements = func() sqlfile.Statements {
	st, err := sqlfile.Load(sqlFiles, "sql", template.FuncMap{
		"jobColumns":   func() string { return jobColumns },
		"rowColumns":   func() string { return rowColumns },
		"batchColumns": func() string { return batchColumns },
		"keptFor":      backend.KeptForSQL,
		"copyColumns":  func(table string) string { return strings.Join(copyColumns[table], ", ") },
		"copyParams":   func(table string) string { return placeholders(len(copyColumns[table])) },
	})
	if err != nil {
		panic("sqlite: " + err.Error())
	}
	return st
}()

// stmt returns the named statement of sql/*.sql. A name that is none is
// a bug, which TestNamedStatements catches.
func stmt(name string) string {
	q, ok := statements[name]
	if !ok {
		panic("sqlite: no statement named " + name)
	}
	return q
}

// run runs the named statement (sql/*.sql), prepared once on the
// writer's connection.
func (w *txn) run(name string, args ...any) (sql.Result, error) {
	return w.exec(stmt(name), args...)
}

// rows runs the named statement and returns its rows.
func (w *txn) rows(name string, args ...any) (*sql.Rows, error) {
	return w.query(stmt(name), args...)
}

// row runs the named statement, which returns at most one row.
func (w *txn) row(name string, args ...any) *sql.Row {
	return w.queryRow(stmt(name), args...)
}

// prepared is query's statement prepared on the writer's connection, nil
// when it has none yet or w is a caller's transaction.
func (w *txn) prepared(query string) *sql.Stmt {
	if !w.own {
		return nil
	}
	return w.s.stmts[query]
}

// exec, query and queryRow run a statement's text: a named one's, or one
// of accept.go's inline statements.
func (w *txn) exec(query string, args ...any) (sql.Result, error) {
	if st := w.prepared(query); st != nil {
		return st.Exec(args...)
	}
	if w.own {
		if st, err := w.s.prepare(query); err == nil {
			return st.Exec(args...)
		}
	}
	return w.db.ExecContext(bg, query, args...)
}

func (w *txn) query(query string, args ...any) (*sql.Rows, error) {
	if st := w.prepared(query); st != nil {
		return st.Query(args...)
	}
	if w.own {
		if st, err := w.s.prepare(query); err == nil {
			return st.Query(args...)
		}
	}
	return w.db.QueryContext(bg, query, args...)
}

func (w *txn) queryRow(query string, args ...any) *sql.Row {
	if st := w.prepared(query); st != nil {
		return st.QueryRow(args...)
	}
	if w.own {
		if st, err := w.s.prepare(query); err == nil {
			return st.QueryRow(args...)
		}
	}
	return w.db.QueryRowContext(bg, query, args...)
}

// prepare prepares a statement on the writer's connection; only the
// writer goroutine calls it.
func (s *Store) prepare(query string) (*sql.Stmt, error) {
	if st, ok := s.stmts[query]; ok {
		return st, nil
	}
	st, err := s.conn.PrepareContext(bg, query)
	if err != nil {
		return nil, fmt.Errorf("sqlite: prepare: %w", err)
	}
	s.stmts[query] = st
	return st, nil
}
