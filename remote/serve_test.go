package remote_test

import (
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/store/sqlite"
)

// serve starts a real server on a loopback port over a fresh SQLite file
// and returns its client in process and its URL; both stop when the test
// ends.
func serve(t *testing.T) (*rota.Client, string) {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	local, err := rota.NewClient(st, rota.Config{CloseStore: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { local.Close() })
	api := httpapi.New(local, httpapi.Config{})
	t.Cleanup(func() { api.Close() })
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return local, srv.URL
}
