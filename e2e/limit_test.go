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

// TestLimitRate sets a type's and a group's rate with rota limit and checks
// that the server holds them: a type at 2/m (burst 1) starts one of its
// three due jobs; removing the rate starts the rest; a bad rate is a usage
// error naming the flag.
func TestLimitRate(t *testing.T) {
	srv := startServer(t)
	if r := srv.run(t, "", "limit", "--type", "e2e.rate", "--rate", "2/m"); r.code != 0 ||
		!strings.Contains(r.stdout, "type e2e.rate: max running no bound, per group no bound, run timeout none, rate 2/m (burst 1)") {
		t.Fatalf("rota limit --rate: %v", r)
	}
	if r := srv.run(t, "", "limit", "--group", "acme", "--rate", "10/h", "--burst", "3"); r.code != 0 ||
		!strings.Contains(r.stdout, `group "acme": max running no bound, rate 10/h (burst 3)`) {
		t.Fatalf("rota limit --group --rate: %v", r)
	}
	r := srv.run(t, "", "limit", "--group", "acme", "--json")
	var got struct {
		Rate  string `json:"rate"`
		Burst int    `json:"burst"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); r.code != 0 || err != nil || got.Rate != "10/h" || got.Burst != 3 {
		t.Fatalf("rota limit --group --json: %v (%v)", r, err)
	}
	if r := srv.run(t, "", "limit", "--type", "e2e.rate", "--rate", "5/d"); r.code != 2 || !strings.Contains(r.stderr, `--rate: want N/s, N/m or N/h with N from 1 to 1000000, or none; got "5/d"`) {
		t.Errorf("rota limit --rate 5/d: %v, want a usage error naming --rate", r)
	}
	rs, err := remote.New(srv.URL, remote.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	for range 3 {
		if r := srv.run(t, "", "add", "e2e.rate"); r.code != 0 {
			t.Fatalf("rota add: %v", r)
		}
	}
	res, err := rs.Accept(t.Context(), store.AcceptParams{Types: []string{"e2e.rate"}, Limit: 5, Worker: "e2e"})
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("accept at 2/m, burst 1: %d jobs, %v; want 1", len(res.Jobs), err)
	}
	if r := srv.run(t, "", "limit", "--type", "e2e.rate", "--rate", "none"); r.code != 0 || !strings.Contains(r.stdout, "rate none") {
		t.Fatalf("rota limit --rate none: %v", r)
	}
	if res, err := rs.Accept(t.Context(), store.AcceptParams{Types: []string{"e2e.rate"}, Limit: 5, Worker: "e2e"}); err != nil || len(res.Jobs) != 2 {
		t.Fatalf("accept without a rate: %d jobs, %v; want the other 2", len(res.Jobs), err)
	}
}
