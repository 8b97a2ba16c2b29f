package cli

import (
	"context"
	"net/url"

	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
)

// openPostgres opens the PostgreSQL store a DSN names, migrating its
// schema if needed; the description hides the password.
func openPostgres(ctx context.Context, dsn string) (store.Store, string, error) {
	st, err := postgres.Open(ctx, dsn, postgres.Config{})
	if err != nil {
		return nil, "", err
	}
	desc := "postgres"
	if u, err := url.Parse(dsn); err == nil {
		u.User = nil
		u.RawQuery = ""
		desc = "postgres " + u.String()
	}
	return st, desc, nil
}
