package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Opening a store by name, in the style of database/sql drivers: a store
// package registers itself in its init function, and a program that
// imports it (often with a blank import) opens stores by data source name
// without naming the package again:
//
//	import _ "github.com/rotajobs/rota/store/sqlite"
//	st, err := store.Open(ctx, "jobs.db")
//
// so that a program that imports neither (a client of a remote server)
// links no store driver, no cgo and no database client.

// Opener opens a store from a data source name.
type Opener func(ctx context.Context, dsn string) (Store, error)

var (
	openersMu sync.RWMutex
	openers   = map[string]Opener{}
)

// Register makes a store available to Open under a scheme: a data source
// name "scheme:…" or "scheme://…" opens with it. The scheme "sqlite" also
// opens data source names without a scheme, which are paths. Register
// panics if the scheme is registered twice or open is nil.
func Register(scheme string, open Opener) {
	openersMu.Lock()
	defer openersMu.Unlock()
	if open == nil {
		panic("store: Register " + scheme + ": opener is nil")
	}
	if _, dup := openers[scheme]; dup {
		panic("store: Register called twice for " + scheme)
	}
	openers[scheme] = open
}

// Schemes lists the registered schemes, sorted.
func Schemes() []string {
	openersMu.RLock()
	defer openersMu.RUnlock()
	var out []string
	for s := range openers {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// SchemeOf returns the scheme of a data source name: what comes before
// "://" or ":", or "sqlite" for a plain path.
func SchemeOf(dsn string) string {
	if i := strings.Index(dsn, "://"); i > 0 {
		return dsn[:i]
	}
	if i := strings.Index(dsn, ":"); i > 0 && !strings.ContainsAny(dsn[:i], `/\.`) {
		return dsn[:i]
	}
	return "sqlite"
}

// Open opens the store a data source name names, with the store package
// registered for its scheme: "jobs.db" or "sqlite:jobs.db" (package
// store/sqlite), "postgres://…" (store/postgres).
func Open(ctx context.Context, dsn string) (Store, error) {
	if dsn == "" {
		return nil, invalidf("no store named: want a SQLite path, sqlite:PATH or postgres://…")
	}
	scheme := SchemeOf(dsn)
	openersMu.RLock()
	open := openers[scheme]
	openersMu.RUnlock()
	if open == nil {
		pkg := scheme
		if scheme == "postgresql" {
			pkg = "postgres"
		}
		return nil, fmt.Errorf("%w: no store is registered for %q (registered: %s): import _ \"github.com/rotajobs/rota/store/%s\"",
			ErrInvalid, scheme+":", strings.Join(Schemes(), ", "), pkg)
	}
	return open(ctx, dsn)
}
