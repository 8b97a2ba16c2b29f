package postgres

import (
	"context"

	"github.com/rotajobs/rota/store"
)

// The PostgreSQL store opens "postgres://…" and "postgresql://…" through
// store.Open (and rota.Open) once this package is imported.
func init() {
	open := func(ctx context.Context, dsn string) (store.Store, error) { return Open(ctx, dsn, Config{}) }
	store.Register("postgres", open)
	store.Register("postgresql", open)
}
