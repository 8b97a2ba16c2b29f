package sqlite

import (
	"context"
	"strings"

	"github.com/rotajobs/rota/store"
)

// The embedded store opens "jobs.db" and "sqlite:jobs.db" through
// store.Open (and rota.Open) once this package is imported.
func init() {
	store.Register("sqlite", func(_ context.Context, dsn string) (store.Store, error) {
		return Open(strings.TrimPrefix(dsn, "sqlite:"), Config{})
	})
}
