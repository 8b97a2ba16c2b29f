package e2e_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store"
)

// TestLimit sets a type's bound on running jobs with rota limit and checks
// that the server holds it: of five due jobs, accepts start only the
// bound's number, and one more once one ends.
func TestLimit(t *testing.T) {
	srv := startServer(t)
	if r := srv.run(t, "", "limit", "--type", "e2e.lim", "--max-running", "2"); r.code != 0 ||
		!strings.Contains(r.stdout, "type e2e.lim: max running 2, per group no bound") {
		t.Fatalf("rota limit: %v", r)
	}
	r := srv.run(t, "", "limit", "--type", "e2e.lim", "--json")
	var got struct {
		MaxRunning int `json:"max_running"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); r.code != 0 || err != nil || got.MaxRunning != 2 {
		t.Fatalf("rota limit --json: %v (%v)", r, err)
	}
	rs, err := remote.New(srv.URL, remote.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	for i := range 5 {
		if r := srv.run(t, "", "add", "e2e.lim", "--group", "g"+strconv.Itoa(i%3)); r.code != 0 {
			t.Fatalf("rota add: %v", r)
		}
	}
	res, err := rs.Accept(t.Context(), store.AcceptParams{Types: []string{"e2e.lim"}, Limit: 5, Worker: "e2e"})
	if err != nil || len(res.Jobs) != 2 {
		t.Fatalf("accept at bound 2: %d jobs, %v", len(res.Jobs), err)
	}
	if _, err := rs.Finish(t.Context(), []store.FinishParams{{Lease: store.Lease{ID: res.Jobs[0].ID, Token: res.Jobs[0].Token}, As: store.Complete}}); err != nil {
		t.Fatal(err)
	}
	if res, err := rs.Accept(t.Context(), store.AcceptParams{Types: []string{"e2e.lim"}, Limit: 5, Worker: "e2e"}); err != nil || len(res.Jobs) != 1 {
		t.Fatalf("accept after a finish: %d jobs, %v; want 1", len(res.Jobs), err)
	}
	if r := srv.run(t, "", "limit", "--group", "acme", "--group-max-running", "1"); r.code != 2 {
		t.Errorf("--group with --group-max-running: %v, want a usage error", r)
	}
}
