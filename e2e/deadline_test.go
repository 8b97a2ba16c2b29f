package e2e_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store"
)

// deadlined is the part of a job's JSON about its deadline.
type deadlined struct {
	ID        int64     `json:"id"`
	State     string    `json:"state"`
	ExpiresAt time.Time `json:"expires_at"`
	Expired   bool      `json:"expired"`
	LastError string    `json:"last_error"`
	Attempt   int       `json:"attempt"`
}

func (s *server) deadlined(t *testing.T, id int64) deadlined {
	t.Helper()
	var resp struct{ Job deadlined }
	s.rotaJSON(t, &resp, "get", strconv.FormatInt(id, 10))
	return resp.Job
}

// TestDeadlinePassesBehindBound: jobs added with rota add --expires wait
// behind a type's bound on running jobs (max_running 1, held by a running
// job); their deadline passes, the server's lease sweep ends them expired
// without their ever starting, and when the bound frees only the job whose
// deadline has not passed starts. rota get and rota ls show the expiry.
func TestDeadlinePassesBehindBound(t *testing.T) {
	srv := startServer(t)
	srv.rota(t, "limit", "--type", "e2e.dl", "--max-running", "1")
	rs, err := remote.New(srv.URL, remote.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	first := srv.add(t, "e2e.dl")
	held, err := rs.Accept(t.Context(), store.AcceptParams{Types: []string{"e2e.dl"}, Worker: "e2e", LeaseTimeout: time.Minute})
	if err != nil || len(held.Jobs) != 1 || held.Jobs[0].ID != first {
		t.Fatalf("accept the first job: %v, %v", held.Jobs, err)
	}
	added := time.Now()
	short1 := srv.add(t, "e2e.dl", "--expires", "1s", "--priority", "5")
	short2 := srv.add(t, "e2e.dl", "--expires", "1s", "--group", "other")
	long := srv.add(t, "e2e.dl", "--expires", "1h")
	if j := srv.deadlined(t, short1); j.State != "pending" || j.ExpiresAt.Before(added) || j.ExpiresAt.After(added.Add(time.Second+5*time.Second)) {
		t.Fatalf("job with --expires 1s: %+v, want pending with a deadline about a second from the add", j)
	}
	for _, id := range []int64{short1, short2} {
		eventually(t, "the job past its deadline is ended by the server", func() bool { return srv.deadlined(t, id).State != "pending" })
		j := srv.deadlined(t, id)
		if j.State != "cancelled" || !j.Expired || j.Attempt != 0 ||
			j.LastError != "expired at "+j.ExpiresAt.UTC().Format(time.RFC3339Nano)+", not started" {
			t.Errorf("job %d after its deadline: %+v, want cancelled, expired, never started", id, j)
		}
		if since := time.Since(j.ExpiresAt); since > 3*time.Second {
			t.Errorf("job %d ended %v after its deadline, want promptly (the sweep sleeps until the next deadline)", id, since)
		}
	}
	if out := srv.rota(t, "get", strconv.FormatInt(short1, 10)); !strings.Contains(out, "cancelled (expired: its deadline passed before it started)") ||
		!strings.Contains(out, "expires:") {
		t.Errorf("rota get of an expired job does not say so:\n%s", out)
	}
	if out := srv.rota(t, "ls", "--state", "cancelled"); !strings.Contains(out, "cancelled (expired)") || !strings.Contains(out, "expired at ") {
		t.Errorf("rota ls --state cancelled does not mark the expired jobs:\n%s", out)
	}
	// The bound frees: the job whose deadline has not passed starts, the
	// expired ones never do.
	if _, err := rs.Finish(t.Context(), []store.FinishParams{{Lease: store.Lease{ID: first, Token: held.Jobs[0].Token}, As: store.Complete}}); err != nil {
		t.Fatal(err)
	}
	res, err := rs.Accept(t.Context(), store.AcceptParams{Types: []string{"e2e.dl"}, Limit: 10, Worker: "e2e"})
	if err != nil || len(res.Jobs) != 1 || res.Jobs[0].ID != long {
		t.Fatalf("accept after the bound freed: %v, %v; want only job %d", res.Jobs, err, long)
	}
}

// TestAddExpiresFlag checks rota add --expires: a duration from now or an
// RFC 3339 time; bad values are usage errors that add nothing.
func TestAddExpiresFlag(t *testing.T) {
	srv := startServer(t)
	at := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	j := srv.deadlined(t, srv.add(t, "e2e.exp", "--expires", at.Format(time.RFC3339)))
	if !j.ExpiresAt.Equal(at) {
		t.Errorf("--expires %s: expires_at %v", at.Format(time.RFC3339), j.ExpiresAt)
	}
	before := time.Now()
	j = srv.deadlined(t, srv.add(t, "e2e.exp", "--expires", "10m"))
	if j.ExpiresAt.Before(before.Add(10*time.Minute)) || j.ExpiresAt.After(time.Now().Add(10*time.Minute)) {
		t.Errorf("--expires 10m: expires_at %v, want ten minutes from the add", j.ExpiresAt)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--expires", "soon"}, "--expires \"soon\" is neither a duration"},
		{[]string{"--expires", "-5m"}, "--expires -5m must be after now"},
		{[]string{"--expires", "10m", "--in", "1h"}, "is not after the run time"},
	} {
		r := srv.run(t, "", append([]string{"add", "e2e.bad"}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("rota add %v: %v; want exit status 2 and %q", c.args, r, c.want)
		}
	}
	if out := srv.run(t, "", "ls", "--type", "e2e.bad"); strings.Contains(out.stdout, "e2e.bad") {
		t.Errorf("a refused add added a job:\n%s", out.stdout)
	}
}
