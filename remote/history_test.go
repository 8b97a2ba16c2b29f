package remote_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store/sqlite"
)

// TestHistory reads a job's history through the remote client: the
// changes two clients made with their own tokens are recorded with the
// tokens' names (the server's record, whatever actor a client's context
// names), and a client whose token reaches another tenant finds no such
// job.
func TestHistory(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	local, err := rota.NewClient(st, rota.Config{CloseStore: true})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	h := httpapi.New(local, httpapi.Config{AuthToken: "admin-secret"})
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx := context.Background()
	admin, err := remote.New(srv.URL, remote.Config{Token: "admin-secret"})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	client := func(tk wire.CreateTokenRequest) *rota.Client {
		res, err := admin.CreateToken(ctx, tk)
		if err != nil {
			t.Fatal(err)
		}
		c, err := remote.NewClient(srv.URL, remote.Config{Token: res.Secret})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	billing := client(wire.CreateTokenRequest{Name: "billing", Groups: []string{"acme"}})
	support := client(wire.CreateTokenRequest{Name: "support"})
	other := client(wire.CreateTokenRequest{Name: "globex", Groups: []string{"globex"}})

	res, err := billing.Add(ctx, rota.AddParams{Type: "invoice", Group: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if err := support.Cancel(rota.WithActor(ctx, "someone-else"), res.Job.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := billing.Resubmit(ctx, rota.ResubmitParams{ID: res.Job.ID}); err != nil {
		t.Fatal(err)
	}
	history, err := billing.History(ctx, res.Job.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range history {
		if e.Audited {
			got = append(got, e.Action+" by "+e.Actor)
		}
	}
	if want := "cancel by support, retry by billing"; strings.Join(got, ", ") != want {
		t.Errorf("history through the remote client: %q, want %q", strings.Join(got, ", "), want)
	}
	if _, err := other.History(ctx, res.Job.ID); !errors.Is(err, rota.ErrNotFound) {
		t.Errorf("another tenant's History: %v, want ErrNotFound", err)
	}
}
