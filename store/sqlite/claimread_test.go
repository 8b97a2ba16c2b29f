package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/store"
)

// TestClaimReadSeesItsCommit: an accept's jobs are read after the claim
// commits (readClaimed), but as of that commit: not with a later update,
// and not with one whose fsync then fails and whose caller is told so.
func TestClaimReadSeesItsCommit(t *testing.T) {
	for _, broken := range []bool{false, true} {
		name := "later update"
		if broken {
			name = "later update whose fsync fails"
		}
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			held, release := make(chan struct{}), make(chan struct{})
			s, _ := openTemp(t, Config{claimReadHook: func() {
				close(held)
				<-release
			}})
			added, err := s.Add(ctx, []store.AddParams{{Type: "t", Data: []byte(`{"v":"old"}`)}})
			if err != nil {
				t.Fatal(err)
			}
			id := added[0].Job.ID
			got := acceptAsync(s, "t")
			<-held // the read has its snapshot and waits
			if broken {
				BreakWAL(s)
			}
			prio := 9
			_, errs, err := s.Update(ctx, []store.UpdateParams{{ID: id, Data: []byte(`{"v":"new"}`), Priority: &prio}})
			if broken != (err != nil) || err == nil && errs[0] != nil {
				t.Fatalf("Update: %v %v", err, errs)
			}
			close(release)
			a := <-got
			if a.err != nil || len(a.res.Jobs) != 1 {
				t.Fatalf("Accept: %d jobs, %v", len(a.res.Jobs), a.err)
			}
			if j := a.res.Jobs[0]; string(j.Data) != `{"v":"old"}` || j.Priority != 0 {
				t.Errorf("accepted job: data %s, priority %d; want it as claimed: {\"v\":\"old\"}, 0", j.Data, j.Priority)
			}
		})
	}
}

// acceptAnswer is what acceptAsync's accept answered.
type acceptAnswer struct {
	res store.AcceptResult
	err error
}

// acceptAsync accepts one job of typ in a goroutine of its own.
func acceptAsync(s *Store, typ string) <-chan acceptAnswer {
	got := make(chan acceptAnswer, 1)
	go func() {
		res, err := s.Accept(context.Background(), store.AcceptParams{Types: []string{typ}, Limit: 1, Worker: "w"})
		got <- acceptAnswer{res, err}
	}()
	return got
}

// TestAcceptErrorComesWithWholeJobs: an accept whose claim committed but
// which is answered with an error (the fsync of a durable batch committed
// before it fails) returns its jobs whole with the error, for the client
// to hand back, and not while they are being read.
func TestAcceptErrorComesWithWholeJobs(t *testing.T) {
	a := acceptAfterFailedSync(t, func(s *Store) acceptAnswer {
		return <-acceptAsync(s, "t")
	})
	if a.err == nil {
		t.Fatalf("Accept: no error after a failed fsync ahead of it")
	}
	for _, j := range a.res.Jobs {
		if j.Key != "k" || string(j.Data) != `{"v":1}` || j.CreatedAt.IsZero() {
			t.Errorf("Accept answered %v with a job not read whole: key %q, data %s, created %v", a.err, j.Key, j.Data, j.CreatedAt)
		}
	}
	// Nothing writes the jobs after the answer (the race detector).
	time.Sleep(50 * time.Millisecond)
	for _, j := range a.res.Jobs {
		_ = j.Key
	}
}

// TestClientAcceptErrorComesAlone: through rota.Client, the same accept
// answers its error and no jobs: a job whose add was not durable was
// handed out (Bedrock's GetJobs answered it beside the error).
func TestClientAcceptErrorComesAlone(t *testing.T) {
	a := acceptAfterFailedSync(t, func(s *Store) acceptAnswer {
		c, err := rota.NewClient(s, rota.Config{NoMaintenance: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		got := make(chan acceptAnswer, 1)
		go func() {
			jobs, err := c.Accept(context.Background(), rota.AcceptParams{Types: []string{"t"}, Limit: 1})
			got <- acceptAnswer{store.AcceptResult{Jobs: jobs}, err}
		}()
		return <-got
	})
	if a.err == nil || len(a.res.Jobs) > 0 {
		t.Fatalf("Client.Accept after a failed fsync ahead of it: %v, %d jobs (want the error alone)", a.err, len(a.res.Jobs))
	}
}

// acceptAfterFailedSync runs accept (of a job of type "t", key "k")
// while a durable batch ahead of it waits for an fsync that will fail,
// and returns what it answered: the claim commits, and the answer is
// that fsync's error.
func acceptAfterFailedSync(t *testing.T, accept func(s *Store) acceptAnswer) acceptAnswer {
	t.Helper()
	ctx := context.Background()
	s, path := openTemp(t, Config{})
	if _, err := s.Add(ctx, []store.AddParams{{Type: "t", Key: "k", Data: []byte(`{"v":1}`)}}); err != nil {
		t.Fatal(err)
	}
	// A watcher that stalls the syncer while it delivers the marker's add.
	stall, stalled := make(chan struct{}), make(chan struct{})
	s.Watch(func(evs []store.Event) {
		for _, e := range evs {
			if e.Type == "marker" {
				close(stalled)
				<-stall
			}
		}
	})
	go s.Add(ctx, []store.AddParams{{Type: "marker", Data: []byte(`{}`)}})
	<-stalled
	spy, err := sql.Open(driverName, "file:"+path+"?_query_only=1")
	if err != nil {
		t.Fatal(err)
	}
	defer spy.Close()
	waitFor := func(q string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			var n int
			if err := spy.QueryRow(q).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", q)
			}
		}
	}
	// A durable batch whose sync will fail, then the accept after it.
	BreakWAL(s)
	go s.Add(ctx, []store.AddParams{{Type: "other", Data: []byte(`{}`)}})
	waitFor(`SELECT count(*) FROM rota_jobs WHERE type = 'other'`)
	got := make(chan acceptAnswer, 1)
	go func() { got <- accept(s) }()
	waitFor(`SELECT count(*) FROM rota_jobs WHERE type = 't' AND state = 1`)
	close(stall) // the sync fails; both are answered with its error
	return <-got
}

// TestAcceptRolledBackLeasesNothing: an accept that fails after its claim
// (here saving the groups' turns) rolls the claim back, and answers its
// error with no jobs: it answered with the jobs it had claimed, leases
// that never existed, which a server could hand out while the jobs were
// pending again.
func TestAcceptRolledBackLeasesNothing(t *testing.T) {
	ctx := t.Context()
	s, path := openTemp(t, Config{})
	added, err := s.Add(ctx, []store.AddParams{{Type: "t", Group: "a"}, {Type: "t", Group: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open(driverName, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	trigger := func(stmt string) {
		t.Helper()
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	trigger(`CREATE TRIGGER refuse BEFORE UPDATE OF turn ON rota_groups BEGIN SELECT RAISE(ABORT, 'turns refused by the test'); END`)
	res, err := s.Accept(ctx, store.AcceptParams{Types: []string{"t"}, Limit: 2})
	if err == nil {
		t.Fatal("Accept succeeded though saving the turns failed")
	}
	if len(res.Jobs) > 0 {
		t.Errorf("Accept failed (%v) and answered %d jobs whose claim rolled back", err, len(res.Jobs))
	}
	trigger(`DROP TRIGGER refuse`)
	js, err := s.Get(ctx, []int64{added[0].Job.ID, added[1].Job.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range js {
		if j.State != store.Pending || j.Token != "" {
			t.Errorf("job %d after the failed accept: state %v, token %q (want pending)", j.ID, j.State, j.Token)
		}
	}
	if res, err := s.Accept(ctx, store.AcceptParams{Types: []string{"t"}, Limit: 2}); err != nil || len(res.Jobs) != 2 {
		t.Errorf("Accept after: %v, %d jobs (want 2)", err, len(res.Jobs))
	}
}

// TestClaimReadWaitsForItsBatchesWrites: an accept and a durable update
// of the job it claims can run in one group-commit transaction (the
// accept first); the claim's read, after the commit, then sees the
// update, so the accept is answered once the update is durable, not
// before: a worker given the new data of an update whose fsync failed
// (and whose caller was told so) ran on a write that never happened.
func TestClaimReadWaitsForItsBatchesWrites(t *testing.T) {
	writes := []struct {
		name  string
		write func(s *Store, id int64) error
		// seen says whether a job as accepted shows the write.
		seen func(j store.Job) bool
	}{
		{"update", func(s *Store, id int64) error {
			_, errs, err := s.Update(context.Background(), []store.UpdateParams{{ID: id, Data: []byte(`{"v":"new"}`)}})
			return errors.Join(err, errors.Join(errs...))
		}, func(j store.Job) bool { return string(j.Data) != `{"v":"old"}` }},
		// A resubmit of a running job is marked on it, with no event.
		{"resubmit", func(s *Store, id int64) error {
			_, errs, err := s.Resubmit(context.Background(), []store.ResubmitParams{{ID: id}})
			return errors.Join(err, errors.Join(errs...))
		}, func(j store.Job) bool { return j.Resubmit }},
	}
	for _, tc := range writes {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			s, path := openTemp(t, Config{BusyTimeout: 30 * time.Second})
			added, err := s.Add(ctx, []store.AddParams{{Type: "t", Data: []byte(`{"v":"old"}`)}})
			if err != nil {
				t.Fatal(err)
			}
			release := holdWriter(t, s, path)
			got := acceptAsync(s, "t")
			queued(s, 1)
			written := make(chan error, 1)
			go func() { written <- tc.write(s, added[0].Job.ID) }()
			queued(s, 2)
			BreakWAL(s) // the write's fsync will fail
			release()
			if err := <-written; err == nil {
				t.Fatalf("the %s succeeded though its fsync failed", tc.name)
			}
			a := <-got
			for _, j := range a.res.Jobs {
				if a.err == nil && tc.seen(j) {
					t.Errorf("Accept answered job %d with the %s whose fsync failed: %+v", j.ID, tc.name, j)
				}
			}
		})
	}
}

// TestReadClaimedMatchesRowsToJobs: readClaimed fills in each job from its
// own row and leaves out those no longer running under their claim's
// token, whatever the rows' order: here a job without a row (its row
// missing puts the next row out of the jobs' order) and one whose token
// is not the claim's, between jobs read whole. Each job's data is its own,
// and appending to one does not change the next.
func TestReadClaimedMatchesRowsToJobs(t *testing.T) {
	s, _ := openTemp(t, Config{})
	ctx := t.Context()
	ps := make([]store.AddParams, 4)
	for i := range ps {
		ps[i] = store.AddParams{Type: "t", Key: fmt.Sprintf("k%d", i), Data: []byte(fmt.Sprintf(`{"n":%d}`, i))}
	}
	if _, err := s.Add(ctx, ps); err != nil {
		t.Fatal(err)
	}
	res, err := s.Accept(ctx, store.AcceptParams{Types: []string{"t"}, Limit: 4, Worker: "w"})
	if err != nil || len(res.Jobs) != 4 {
		t.Fatalf("Accept: %d jobs, %v", len(res.Jobs), err)
	}
	claimed := func(j store.Job) store.Job {
		return store.Job{ID: j.ID, Type: j.Type, State: j.State, Token: j.Token}
	}
	a, b, c, d := res.Jobs[0], res.Jobs[1], res.Jobs[2], res.Jobs[3]
	missing := store.Job{ID: d.ID + 1000, Type: "t", State: store.Running, Token: a.Token}
	wrong := claimed(c)
	wrong.Token = b.Token
	jobs := []store.Job{claimed(a), missing, claimed(d), wrong, claimed(b)}
	got, err := s.readClaimed(ctx, jobs, func() {})
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Job{a, d, b}
	if len(got) != len(want) {
		t.Fatalf("read %d jobs, want %d (%v)", len(got), len(want), got)
	}
	for i, j := range got {
		if j.ID != want[i].ID || j.Key != want[i].Key || string(j.Data) != string(want[i].Data) || j.CreatedAt.IsZero() {
			t.Errorf("job %d: id %d key %q data %s, want id %d key %q data %s", i, j.ID, j.Key, j.Data, want[i].ID, want[i].Key, want[i].Data)
		}
	}
	_ = append(got[0].Data, `garbage`...)
	if string(got[1].Data) != string(d.Data) {
		t.Errorf("appending to one job's data changed the next one's: %s", got[1].Data)
	}
}
