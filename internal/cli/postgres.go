package cli

import (
	"context"
	"errors"

	"github.com/rotajobs/rota/store"
)

// openPostgres opens a PostgreSQL store.
func openPostgres(ctx context.Context, dsn string) (store.Store, string, error) {
	return nil, "", errors.New("--store postgres://: the PostgreSQL store is not part of this build yet")
}
