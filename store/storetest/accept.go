package storetest

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- accept ----

func testAccept(t *testing.T, open func(t *testing.T) store.Store) {
	// orderJobs returns jobs added so that id order differs from accept
	// order, and the ids in accept order.
	orderJobs := func(t *testing.T, s store.Store) []int64 {
		now := time.Now()
		hourAgo := now.Add(-time.Hour)
		res := add(t, s,
			store.AddParams{Type: "t", Priority: 0, RunAt: hourAgo},                  // 0
			store.AddParams{Type: "t", Priority: 5, RunAt: now.Add(-time.Minute)},    // 1
			store.AddParams{Type: "t", Priority: 5, RunAt: now.Add(-2 * time.Hour)},  // 2
			store.AddParams{Type: "t", Priority: 0, RunAt: hourAgo},                  // 3: ties with 0, higher id
			store.AddParams{Type: "t", Priority: -3, RunAt: now.Add(-3 * time.Hour)}, // 4
			store.AddParams{Type: "t", Priority: 10, RunAt: now.Add(time.Hour)},      // 5: not due
		)
		id := resultIDs(res)
		return []int64{id[2], id[1], id[0], id[3], id[4]}
	}

	t.Run("OrderOneByOne", func(t *testing.T) {
		s := open(t)
		want := orderJobs(t, s)
		var got []int64
		for range len(want) + 1 {
			res := accept(t, s, store.AcceptParams{Types: []string{"t"}})
			if len(res.Jobs) > 1 {
				t.Fatalf("Accept with limit 0 returned %d jobs, want at most 1", len(res.Jobs))
			}
			got = append(got, ids(res.Jobs)...)
		}
		if !slices.Equal(got, want) {
			t.Errorf("accepted ids %v, want %v (priority desc, then run_at, then id; the job not due never)", got, want)
		}
	})

	t.Run("OrderInBatch", func(t *testing.T) {
		s := open(t)
		want := orderJobs(t, s)
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 100})
		if got := ids(res.Jobs); !slices.Equal(got, want) {
			t.Errorf("accepted ids %v, want %v (in accept order)", got, want)
		}
	})

	t.Run("NotDue", func(t *testing.T) {
		s := open(t)
		runAt := time.Now().Add(time.Hour)
		j := addOne(t, s, store.AddParams{Type: "t", RunAt: runAt})
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 10})
		if len(res.Jobs) != 0 {
			t.Errorf("Accept took %v, a job due in an hour; want none", ids(res.Jobs))
		}
		sameTime(t, "NextRunAt", res.NextRunAt, runAt)
		unchanged(t, "Accept with nothing due", j, get(t, s, j.ID))
	})

	t.Run("DueBy", func(t *testing.T) {
		s := open(t)
		now := time.Now()
		soon := addOne(t, s, store.AddParams{Type: "t", RunAt: now.Add(time.Hour)})
		later := addOne(t, s, store.AddParams{Type: "t", RunAt: now.Add(3 * time.Hour)})
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 10, DueBy: now.Add(2 * time.Hour)})
		if got := ids(res.Jobs); !slices.Equal(got, []int64{soon.ID}) {
			t.Errorf("Accept due by +2h = %v, want just the job due at +1h (%d)", got, soon.ID)
		}
		sameTime(t, "NextRunAt", res.NextRunAt, later.RunAt)
	})

	t.Run("NextRunAt", func(t *testing.T) {
		s := open(t)
		now := time.Now()
		add(t, s,
			store.AddParams{Type: "t", RunAt: now.Add(time.Hour)},
			store.AddParams{Type: "t", RunAt: now.Add(30 * time.Minute)},
			store.AddParams{Type: "u", RunAt: now.Add(10 * time.Minute)},
			store.AddParams{Type: "t"},
		)
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 10})
		if len(res.Jobs) != 1 {
			t.Errorf("Accept took %d jobs, want the 1 due job", len(res.Jobs))
		}
		sameTime(t, "NextRunAt (earliest not-due run_at of the requested types only)", res.NextRunAt, now.Add(30*time.Minute))
		res = accept(t, s, store.AcceptParams{Types: []string{"none"}})
		if !res.NextRunAt.IsZero() {
			t.Errorf("NextRunAt with no pending jobs = %v, want zero", res.NextRunAt)
		}
	})

	t.Run("Patterns", func(t *testing.T) {
		s := open(t)
		byType := map[string]int64{}
		for _, typ := range []string{"email.send", "email.receive", "sms.send", "a.x", "b.x", "c.x", "email"} {
			byType[typ] = addOne(t, s, store.AddParams{Type: typ}).ID
		}
		steps := []struct {
			patterns []string
			want     []string
		}{
			{[]string{"email.*"}, []string{"email.send", "email.receive"}},
			{[]string{"[ab].x"}, []string{"a.x", "b.x"}},
			{[]string{"*.send"}, []string{"sms.send"}},
			{[]string{"?.x", "{email,sms}"}, []string{"c.x", "email"}},
		}
		for _, st := range steps {
			res := accept(t, s, store.AcceptParams{Types: st.patterns, Limit: 100})
			var want []int64
			for _, typ := range st.want {
				want = append(want, byType[typ])
			}
			got := ids(res.Jobs)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				var types []string
				for _, j := range res.Jobs {
					types = append(types, j.Type)
				}
				t.Errorf("Accept(%q) took types %q, want %q", st.patterns, types, st.want)
			}
		}
	})

	t.Run("PatternMatchesTypeAddedLater", func(t *testing.T) {
		s := open(t)
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"late.*"}}).Jobs); n != 0 {
			t.Fatalf("Accept on an empty store took %d jobs", n)
		}
		j := addOne(t, s, store.AddParams{Type: "late.one"})
		res := accept(t, s, store.AcceptParams{Types: []string{"late.*"}})
		if got := ids(res.Jobs); !slices.Equal(got, []int64{j.ID}) {
			t.Errorf("Accept(late.*) = %v, want the job of the new type late.one (%d)", got, j.ID)
		}
	})

	t.Run("MultipleTypes", func(t *testing.T) {
		s := open(t)
		now := time.Now()
		res := add(t, s,
			store.AddParams{Type: "a", Priority: 1, RunAt: now.Add(-time.Hour)},     // a1
			store.AddParams{Type: "b", Priority: 3, RunAt: now.Add(-time.Hour)},     // b1
			store.AddParams{Type: "a", Priority: 3, RunAt: now.Add(-2 * time.Hour)}, // a2
			store.AddParams{Type: "b", Priority: 0, RunAt: now.Add(-3 * time.Hour)}, // b2
			store.AddParams{Type: "c", Priority: 9},                                 // not requested
		)
		id := resultIDs(res)
		got := ids(accept(t, s, store.AcceptParams{Types: []string{"a", "b"}, Limit: 3}).Jobs)
		if want := []int64{id[2], id[1], id[0]}; !slices.Equal(got, want) {
			t.Errorf("Accept(a, b, limit 3) = %v, want %v (one order across the types)", got, want)
		}
		// Overlapping patterns must not hand out a job twice.
		got = ids(accept(t, s, store.AcceptParams{Types: []string{"[ab]", "b", "*"}, Limit: 10}).Jobs)
		if want := []int64{id[4], id[3]}; !slices.Equal(got, want) {
			t.Errorf("Accept([ab], b, *) = %v, want %v, each job once", got, want)
		}
	})

	t.Run("Limit", func(t *testing.T) {
		s := open(t)
		ps := make([]store.AddParams, 5)
		for i := range ps {
			ps[i] = store.AddParams{Type: "t"}
		}
		add(t, s, ps...)
		for _, c := range []struct{ limit, want int }{{3, 3}, {0, 1}, {10, 1}, {10, 0}} {
			if n := len(accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: c.limit}).Jobs); n != c.want {
				t.Errorf("Accept with limit %d took %d jobs, want %d", c.limit, n, c.want)
			}
		}
	})

	t.Run("AcceptedJob", func(t *testing.T) {
		s := open(t)
		add(t, s, store.AddParams{Type: "t", Data: raw(`{"x":1}`)}, store.AddParams{Type: "t"})
		before := time.Now()
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 2, Worker: "worker-7"})
		after := time.Now()
		if len(res.Jobs) != 2 {
			t.Fatalf("Accept took %d jobs, want 2", len(res.Jobs))
		}
		for _, j := range res.Jobs {
			wantState(t, j, store.Running)
			wantAttempt(t, j, 1)
			if j.Token == "" {
				t.Errorf("accepted job %d has no token", j.ID)
			}
			if j.Worker != "worker-7" {
				t.Errorf("accepted job %d: worker %q, want worker-7", j.ID, j.Worker)
			}
			if !j.LeaseUntil.After(after) {
				t.Errorf("accepted job %d: lease_until %v, want in the future", j.ID, j.LeaseUntil)
			}
			within(t, "lease_until with the default lease timeout", j.LeaseUntil,
				before.Add(store.DefaultLeaseTimeout-slack), after.Add(store.DefaultLeaseTimeout+slack))
			aboutNow(t, "started_at", j.StartedAt, before, after)
			unchanged(t, "reading back the accepted job (Accept's result vs Get)", j, get(t, s, j.ID))
		}
		wantJSON(t, "data of the accepted job", res.Jobs[0].Data, `{"x":1}`)
		if res.Jobs[0].Token == res.Jobs[1].Token {
			t.Errorf("two accepted jobs share the token %q, want each its own", res.Jobs[0].Token)
		}
	})

	t.Run("RunningNotAcceptedAgain", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t"})
		res := accept(t, s, store.AcceptParams{Types: []string{"t", "*"}, Limit: 10})
		if len(res.Jobs) != 0 {
			t.Errorf("Accept took %v again while job %d runs, want nothing", ids(res.Jobs), j.ID)
		}
		if !res.NextRunAt.IsZero() {
			t.Errorf("NextRunAt = %v with no pending jobs, want zero", res.NextRunAt)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "t"})
		cases := []struct {
			name string
			p    store.AcceptParams
		}{
			{"no types", store.AcceptParams{}},
			{"empty type", store.AcceptParams{Types: []string{""}}},
			{"bad pattern with a control character", store.AcceptParams{Types: []string{"t", "[\x01"}}},
			{"negative limit", store.AcceptParams{Types: []string{"t"}, Limit: -1}},
			{"limit above max", store.AcceptParams{Types: []string{"t"}, Limit: store.MaxAcceptLimit + 1}},
			{"negative lease timeout", store.AcceptParams{Types: []string{"t"}, LeaseTimeout: -time.Second}},
		}
		for _, c := range cases {
			_, err := s.Accept(t.Context(), c.p)
			wantErr(t, "Accept with "+c.name, err, store.ErrInvalid)
		}
		unchanged(t, "rejected accepts", j, get(t, s, j.ID))
	})
}

// ---- concurrency ----

func testConcurrency(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("AcceptExactlyOnce", func(t *testing.T) {
		s := open(t)
		const jobs, workers = 500, 16
		ps := make([]store.AddParams, jobs)
		for i := range ps {
			ps[i] = store.AddParams{Type: "conc", Data: raw(fmt.Sprintf(`{"i":%d}`, i))}
		}
		added := resultIDs(add(t, s, ps...))
		var mu sync.Mutex
		count := map[int64]int{}
		tokens := map[string]bool{}
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for iter := 0; ; iter++ {
					limit := 1 + (w+iter)%10
					res, err := s.Accept(t.Context(), store.AcceptParams{Types: []string{"conc"}, Limit: limit,
						Worker: fmt.Sprintf("w%d", w)})
					if err != nil {
						t.Errorf("worker %d: Accept: %v", w, err)
						return
					}
					if len(res.Jobs) > limit {
						t.Errorf("worker %d: Accept with limit %d took %d jobs", w, limit, len(res.Jobs))
					}
					if len(res.Jobs) == 0 {
						return
					}
					mu.Lock()
					for _, j := range res.Jobs {
						count[j.ID]++
						if tokens[j.Token] {
							t.Errorf("token %q handed out twice", j.Token)
						}
						tokens[j.Token] = true
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		for _, id := range added {
			if count[id] != 1 {
				t.Errorf("job %d was accepted %d times, want exactly once", id, count[id])
			}
		}
		if len(count) != jobs {
			t.Errorf("%d distinct jobs accepted, want %d", len(count), jobs)
		}
		running := listAll(t, s, store.ListParams{States: []store.State{store.Running}, Limit: store.MaxListLimit})
		if len(running) != jobs {
			t.Errorf("%d jobs are running after accepting all, want %d", len(running), jobs)
		}
	})

	t.Run("AddAcceptFinish", func(t *testing.T) {
		s := open(t)
		const producers, batches, batchSize, workers = 4, 25, 4, 8
		const total = producers * batches * batchSize
		var completed atomic.Int64
		var stop atomic.Bool
		deadline := time.Now().Add(60 * time.Second)
		var mu sync.Mutex
		accepted := map[int64]int{}
		var wg sync.WaitGroup
		for p := range producers {
			wg.Go(func() {
				for b := range batches {
					ps := make([]store.AddParams, batchSize)
					for i := range ps {
						ps[i] = store.AddParams{Type: fmt.Sprintf("mix.%d", p%2),
							Data: raw(fmt.Sprintf(`{"p":%d,"n":%d}`, p, b*batchSize+i))}
					}
					res, err := s.Add(t.Context(), ps)
					if err != nil || len(res) != batchSize {
						t.Errorf("producer %d: Add = %d results, %v", p, len(res), err)
						stop.Store(true)
						return
					}
				}
			})
		}
		for w := range workers {
			wg.Go(func() {
				progress := 50.0
				for !stop.Load() && completed.Load() < total {
					if time.Now().After(deadline) {
						t.Errorf("worker %d: only %d of %d jobs completed after 60s", w, completed.Load(), total)
						stop.Store(true)
						return
					}
					res, err := s.Accept(t.Context(), store.AcceptParams{Types: []string{"mix.*"}, Limit: 1 + w%4,
						Worker: fmt.Sprintf("w%d", w)})
					if err != nil {
						t.Errorf("worker %d: Accept: %v", w, err)
						stop.Store(true)
						return
					}
					if len(res.Jobs) == 0 {
						time.Sleep(time.Millisecond)
						continue
					}
					hbs := make([]store.HeartbeatParams, len(res.Jobs))
					fps := make([]store.FinishParams, len(res.Jobs))
					mu.Lock()
					for i, j := range res.Jobs {
						accepted[j.ID]++
						hbs[i] = store.HeartbeatParams{Lease: lease(j), Progress: &progress}
						fps[i] = store.FinishParams{Lease: lease(j), As: store.Complete, Result: j.Data}
					}
					mu.Unlock()
					hres, err := s.Heartbeat(t.Context(), hbs)
					if err != nil {
						t.Errorf("worker %d: Heartbeat: %v", w, err)
						stop.Store(true)
						return
					}
					for i, r := range hres {
						if r.Err != nil {
							t.Errorf("worker %d: Heartbeat of job %d: %v", w, hbs[i].ID, r.Err)
						}
					}
					errs, err := s.Finish(t.Context(), fps)
					if err != nil {
						t.Errorf("worker %d: Finish: %v", w, err)
						stop.Store(true)
						return
					}
					for i, e := range errs {
						if e != nil {
							t.Errorf("worker %d: Finish of job %d: %v", w, fps[i].ID, e)
						}
					}
					completed.Add(int64(len(fps)))
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		all := listAll(t, s, store.ListParams{Limit: store.MaxListLimit})
		if len(all) != total {
			t.Errorf("the store holds %d jobs, want %d", len(all), total)
		}
		for _, j := range all {
			if j.State != store.Completed || j.Attempt != 1 || j.Progress != 50 || !jsonEqual(j.Result, j.Data) {
				t.Errorf("job %d: state %v attempt %d progress %v result %s data %s; want completed on attempt 1 with progress 50 and result = data",
					j.ID, j.State, j.Attempt, j.Progress, j.Result, j.Data)
			}
			if accepted[j.ID] != 1 {
				t.Errorf("job %d was accepted %d times, want once", j.ID, accepted[j.ID])
			}
		}
	})
}
