package bench

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/sqlite"
)

// Options says where a workload runs: on which store, and whether the
// worker (and producer) reach it in process or over HTTP.
type Options struct {
	// Store is "sqlite" (default) or "postgres".
	Store string
	// Via is "inprocess" (default) or "http": a real httpapi server on a
	// loopback port, with the worker runtime on remote.NewClient.
	Via string
	// Dir holds the SQLite files; "" means a temporary directory.
	Dir string
	// DSN is the PostgreSQL database, for Store "postgres". Each run uses
	// job types of its own, so runs do not see each other's jobs; point it
	// at a throwaway database all the same, since jobs are left behind.
	DSN string
	// OpenPostgres opens a PostgreSQL store (the CLI passes its opener, so
	// that this package does not depend on the driver).
	OpenPostgres func(ctx context.Context, dsn string) (store.Store, error)
	// Progress is called now and then with work done and total; may be nil.
	Progress func(done, total int)
}

func (o Options) storeName() string {
	if o.Store == "" {
		return "sqlite"
	}
	return o.Store
}

func (o Options) via() string {
	if o.Via == "" {
		return "inprocess"
	}
	return o.Via
}

func (o Options) progress(done, total int) {
	if o.Progress != nil {
		o.Progress(done, total)
	}
}

// Check validates the options.
func (o Options) Check() error {
	switch o.storeName() {
	case "sqlite":
	case "postgres":
		if o.DSN == "" {
			return errors.New("--store postgres needs --dsn or ROTA_TEST_POSTGRES")
		}
		if o.OpenPostgres == nil {
			return errors.New("the PostgreSQL store is not part of this build")
		}
	default:
		return fmt.Errorf("store %q: want sqlite or postgres", o.Store)
	}
	switch o.via() {
	case "inprocess", "http":
	default:
		return fmt.Errorf("via %q: want inprocess or http", o.Via)
	}
	return nil
}

// StoreInfo describes the store a workload ran on.
type StoreInfo struct {
	Version string `json:"store_version"`
	Fsync   string `json:"fsync"`
}

// env is one workload run's setup: the store, a client on it in this
// process (the "server" side, which also runs the lease monitor), and the
// client that workers and producers use, which is the same one in process
// or a remote client over a loopback HTTP server.
type env struct {
	opts   Options
	st     store.Store
	server *rota.Client // in process, on st
	client *rota.Client // what workers and producers use
	path   string       // the SQLite file, if any
	suffix string       // makes job types unique to the run
	info   StoreInfo
	closes []func()
}

// newEnv opens a fresh store named name (a new SQLite file, or the
// PostgreSQL database with job types of the run's own).
func newEnv(ctx context.Context, o Options, name string) (*env, error) {
	e := &env{opts: o, suffix: randHex(4)}
	var err error
	switch o.storeName() {
	case "sqlite":
		dir := o.Dir
		if dir == "" {
			d, err := os.MkdirTemp("", "rota-bench-")
			if err != nil {
				return nil, err
			}
			e.closes = append(e.closes, func() { os.RemoveAll(d) })
			dir = d
		} else if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		e.path = filepath.Join(dir, name+".db")
		removeDB(e.path)
		e.closes = append(e.closes, func() { removeDB(e.path) })
		if e.st, err = sqlite.Open(e.path, sqlite.Config{}); err != nil {
			e.close()
			return nil, err
		}
	case "postgres":
		if e.st, err = o.OpenPostgres(ctx, o.DSN); err != nil {
			e.close()
			return nil, err
		}
	}
	st := e.st
	e.closes = append(e.closes, func() { st.Close() })
	e.info = describeStore(ctx, e.st)
	if e.server, err = rota.NewClient(e.st, rota.Config{Logger: quietLogger()}); err != nil {
		e.close()
		return nil, err
	}
	server := e.server
	e.closes = append(e.closes, func() { server.Close() })
	e.client = e.server
	if o.via() == "http" {
		url, stop, err := serveHTTP(e.server)
		if err != nil {
			e.close()
			return nil, err
		}
		e.closes = append(e.closes, stop)
		if e.client, err = remote.NewClient(url, remote.Config{}); err != nil {
			e.close()
			return nil, err
		}
		rc := e.client
		e.closes = append(e.closes, func() {
			rc.Close()
			rc.Store().Close()
		})
	}
	return e, nil
}

// nodes returns the clients of n nodes: e.client, and for each further
// node a store of its own on the same PostgreSQL database with a client on
// it (its own connections, lease monitor and notification listener), as a
// separate `rota serve` would have. They close with e.
func (e *env) nodes(ctx context.Context, n int) ([]*rota.Client, error) {
	if n > 1 && (e.opts.storeName() != "postgres" || e.opts.via() != "inprocess") {
		return nil, errors.New("more than one node needs --store postgres, in process")
	}
	clients := []*rota.Client{e.client}
	for range n - 1 {
		st, err := e.opts.OpenPostgres(ctx, e.opts.DSN)
		if err != nil {
			return nil, err
		}
		e.closes = append(e.closes, func() { st.Close() })
		c, err := rota.NewClient(st, rota.Config{Logger: quietLogger()})
		if err != nil {
			return nil, err
		}
		e.closes = append(e.closes, func() { c.Close() })
		clients = append(clients, c)
	}
	return clients, nil
}

// typ is a job type unique to this run.
func (e *env) typ(name string) string { return "bench." + name + "." + e.suffix }

// close releases everything, last opened first.
func (e *env) close() {
	for i := len(e.closes) - 1; i >= 0; i-- {
		e.closes[i]()
	}
	e.closes = nil
}

// serveHTTP serves the API for c on a loopback port.
func serveHTTP(c *rota.Client) (string, func(), error) {
	api := httpapi.New(c, httpapi.Config{Logger: quietLogger()})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		api.Close()
		return "", nil, err
	}
	base, cancel := context.WithCancel(context.Background())
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base }}
	go srv.Serve(ln)
	stop := func() {
		cancel()
		ctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		srv.Shutdown(ctx)
		api.Close()
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// describeStore reads the store's version and durability settings.
func describeStore(ctx context.Context, st store.Store) StoreInfo {
	switch s := st.(type) {
	case interface{ DB() (*sql.DB, error) }: // SQLite
		db, err := s.DB()
		if err != nil {
			return StoreInfo{}
		}
		var v string
		var mode int
		var jm string
		db.QueryRowContext(ctx, `SELECT sqlite_version()`).Scan(&v)
		db.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&mode)
		db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&jm)
		names := map[int]string{0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
		return StoreInfo{Version: "SQLite " + v, Fsync: fmt.Sprintf(
			"journal_mode=%s; the writer commits with synchronous=NORMAL and fdatasyncs the log before answering adds and finishes; "+
				"callers' own transactions: synchronous=%s", jm, names[mode])}
	case interface{ DB() *sql.DB }: // PostgreSQL
		db := s.DB()
		var v, fsync, sc, method string
		db.QueryRowContext(ctx, `SHOW server_version`).Scan(&v)
		db.QueryRowContext(ctx, `SHOW fsync`).Scan(&fsync)
		db.QueryRowContext(ctx, `SHOW synchronous_commit`).Scan(&sc)
		db.QueryRowContext(ctx, `SHOW wal_sync_method`).Scan(&method)
		return StoreInfo{Version: "PostgreSQL " + v, Fsync: fmt.Sprintf("fsync=%s, synchronous_commit=%s, wal_sync_method=%s", fsync, sc, method)}
	}
	return StoreInfo{}
}

func removeDB(path string) {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// fill adds n pending jobs of typ through the in-process client, in
// batches, with data from mk (nil: a small JSON object).
func (e *env) fill(ctx context.Context, typ string, n int, mk func(i int) []byte, progress func(done int)) error {
	const batch = 1000
	ps := make([]rota.AddParams, 0, batch)
	for done := 0; done < n; {
		ps = ps[:0]
		for i := done; i < min(done+batch, n); i++ {
			data := noopData
			if mk != nil {
				data = mk(i)
			}
			ps = append(ps, rota.AddParams{Type: typ, Data: data})
		}
		if _, err := e.server.AddMany(ctx, ps); err != nil {
			return fmt.Errorf("fill: %w", err)
		}
		done += len(ps)
		if progress != nil {
			progress(done)
		}
	}
	return nil
}

var noopData = []byte(`{"n":1}`)

// countCompleted watches st for committed completions of typ (a store
// reports a change after its commit, so after the fsync that makes it
// durable) and closes done when want have committed. each, when not nil,
// is called with every completion and when it was seen.
func countCompleted(st store.Store, typ string, want int, each func(id int64, at time.Time)) (done <-chan struct{}, count func() int, stop func()) {
	ch := make(chan struct{})
	var n int64
	closed := false
	var mu sync.Mutex
	unwatch := st.Watch(func(cs []store.Event) {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range cs {
			if c.State == store.Completed && !c.Removed && c.Type == typ {
				n++
				if each != nil {
					each(c.ID, now)
				}
			}
		}
		if !closed && n >= int64(want) {
			closed = true
			close(ch)
		}
	})
	count = func() int {
		mu.Lock()
		defer mu.Unlock()
		return int(n)
	}
	return ch, count, unwatch
}

// waitDone waits for done, reporting progress, until ctx ends or limit
// passes.
func waitDone(ctx context.Context, done <-chan struct{}, count func() int, total int, limit time.Duration, progress func(int, int)) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(limit)
	for {
		select {
		case <-done:
			progress(total, total)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("only %d of %d jobs completed within %v", count(), total, limit)
		case <-tick.C:
			progress(count(), total)
		}
	}
}

func statsCount(ctx context.Context, c *rota.Client, typ string, state store.State) (int, error) {
	counts, err := c.Stats(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range counts {
		if k.Type == typ && k.State == state {
			n += int(k.Jobs)
		}
	}
	return n, nil
}
