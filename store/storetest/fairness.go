package storetest

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// testFairness checks the group rules of Accept: weighted round robin
// between groups, due retries first inside a group, the counting scheme of
// priority bands, bounds on running jobs, and weights.
func testFairness(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("RoundRobinOneByOne", func(t *testing.T) {
		s := open(t)
		addGroups(t, s, "t", map[string]int{"a": 5, "b": 2, "c": 1})
		if got, want := acceptGroups(t, s, "t", 1, 8), "a b c a b a a a"; got != want {
			t.Errorf("accept order by group = %q, want %q", got, want)
		}
	})
	t.Run("RoundRobinInBatch", func(t *testing.T) {
		s := open(t)
		addGroups(t, s, "t", map[string]int{"a": 5, "b": 2, "c": 1})
		if got, want := acceptGroups(t, s, "t", 8, 1), "a b c a b a a a"; got != want {
			t.Errorf("batch of 8 by group = %q, want %q", got, want)
		}
	})
	t.Run("TurnsCarryOverBetweenAccepts", func(t *testing.T) {
		s := open(t)
		addGroups(t, s, "t", map[string]int{"a": 3, "b": 3})
		first := acceptGroups(t, s, "t", 3, 1)
		second := acceptGroups(t, s, "t", 3, 1)
		if first+" "+second != "a b a b a b" {
			t.Errorf("two batches of 3 = %q then %q, want a b a, then b a b", first, second)
		}
	})
	t.Run("BandsWhenAnotherGroupHasNothingDue", func(t *testing.T) {
		// Group b's only job is not due, so its turn gives nothing and
		// group a gives the batch: with the scheme 2,1, two jobs of its
		// high band and then one of its low band, though the low band
		// has fewer jobs than the batch asks for.
		s := open(t)
		if err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "t", Bands: store.Bands{High: 2, Low: 1}}); err != nil {
			t.Fatal(err)
		}
		past := time.Now().Add(-time.Hour)
		add(t, s, store.AddParams{Type: "t", Group: "a", Priority: 2, RunAt: past},
			store.AddParams{Type: "t", Group: "a", Priority: 1, RunAt: past},
			store.AddParams{Type: "t", Group: "a", Priority: 1, RunAt: past.Add(time.Second)},
			store.AddParams{Type: "t", Group: "a", Priority: -2, RunAt: past},
			store.AddParams{Type: "t", Group: "b", RunAt: time.Now().Add(time.Hour)})
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 3})
		var got []int
		for _, j := range res.Jobs {
			got = append(got, j.Priority)
		}
		if want := []int{2, 1, -2}; !slices.Equal(got, want) {
			t.Errorf("priorities handed out = %v, want %v", got, want)
		}
	})
	t.Run("ReturningGroupStartsAtTheFront", func(t *testing.T) {
		// The default group has been served three times and still waits;
		// g1 gets its first job, of a lower priority. g1 starts at the
		// smallest turn of the groups that wait (the default group's),
		// and the tie goes to the smaller name: the default group first,
		// then g1, whatever the priorities (docs/fairness.md).
		s := open(t)
		add(t, s, store.AddParams{Type: "t", Priority: 1}, store.AddParams{Type: "t", Priority: 1},
			store.AddParams{Type: "t", Priority: 1}, store.AddParams{Type: "t", Priority: 1})
		acceptGroups(t, s, "t", 1, 3)
		add(t, s, store.AddParams{Type: "t", Group: "g1"})
		if got, want := acceptGroups(t, s, "t", 1, 2), " g1"; got != want {
			t.Errorf("after g1 joins: groups %q, want %q", got, want)
		}
		// With no group waiting, a returning group starts at the turn at
		// which the last group to run out was served last: here both
		// start there, and the smaller name goes first.
		add(t, s, store.AddParams{Type: "t", Group: "g2"}, store.AddParams{Type: "t", Group: "g0"})
		if got, want := acceptGroups(t, s, "t", 1, 2), "g0 g2"; got != want {
			t.Errorf("after the queue ran dry: groups %q, want %q", got, want)
		}
	})
	t.Run("IdleGroupBanksNoTurns", func(t *testing.T) {
		s := open(t)
		addGroups(t, s, "t", map[string]int{"a": 30})
		acceptGroups(t, s, "t", 20, 1) // a alone for 20 turns
		addGroups(t, s, "t", map[string]int{"b": 10})
		// b starts at a's turn, and the tie goes to the smaller name.
		if got, want := acceptGroups(t, s, "t", 6, 1), "a b a b a b"; got != want {
			t.Errorf("after b joins: %q, want %q (b must not take 20 turns in a row)", got, want)
		}
	})
	t.Run("DueRetriesFirst", func(t *testing.T) {
		s := open(t)
		retry := start(t, s, store.AddParams{Type: "t", Group: "g", BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
		mustFinish(t, s, store.FinishParams{Lease: lease(retry), As: store.Fail, Error: "boom"})
		fresh := addOne(t, s, store.AddParams{Type: "t", Group: "g", Priority: 10})
		time.Sleep(5 * time.Millisecond) // the retry's back-off
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 2})
		if got := ids(res.Jobs); len(got) != 2 || got[0] != retry.ID || got[1] != fresh.ID {
			t.Errorf("accept = %v, want the due retry %d before the higher-priority new job %d", got, retry.ID, fresh.ID)
		}
	})
	t.Run("SkipsGroupsWithOnlyLaterJobs", func(t *testing.T) {
		s := open(t)
		addOne(t, s, store.AddParams{Type: "t", Group: "a", RunAt: time.Now().Add(time.Hour)})
		b := addOne(t, s, store.AddParams{Type: "t", Group: "b"})
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 5})
		if got := ids(res.Jobs); len(got) != 1 || got[0] != b.ID {
			t.Errorf("accept = %v, want only the due job %d", got, b.ID)
		}
	})
	t.Run("CountingScheme", func(t *testing.T) {
		s := open(t)
		if err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "t", Bands: store.Bands{High: 2, Low: 1}}); err != nil {
			t.Fatal(err)
		}
		var ps []store.AddParams
		for range 6 {
			ps = append(ps, store.AddParams{Type: "t", Group: "g", Priority: 5}, store.AddParams{Type: "t", Group: "g", Priority: 0})
		}
		add(t, s, ps...)
		if got, want := acceptBands(t, s, "t", 9), "H H L H H L H H L"; got != want {
			t.Errorf("bands 2,1 gave %q, want %q", got, want)
		}
		// 6 high and 6 low: after 9 picks 0 high and 3 low remain, so the
		// scheme falls back to the low band.
		if got, want := acceptBands(t, s, "t", 3), "L L L"; got != want {
			t.Errorf("with the high band empty: %q, want %q", got, want)
		}
	})
	t.Run("CountingSchemeInvalid", func(t *testing.T) {
		s := open(t)
		for _, b := range []store.Bands{{High: -1, Low: 1}, {High: 1, Low: 1001}} {
			err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "t", Bands: b})
			wantErr(t, fmt.Sprintf("bands %v", b), err, store.ErrInvalid)
		}
		if _, err := store.ParseBands("2;1"); err == nil {
			t.Error(`ParseBands("2;1") succeeded`)
		}
		if b, err := store.ParseBands("4,1"); err != nil || b != (store.Bands{High: 4, Low: 1}) {
			t.Errorf(`ParseBands("4,1") = %v, %v`, b, err)
		}
	})
	t.Run("GroupBoundPerType", func(t *testing.T) {
		s := open(t)
		if err := s.SetGroupConfig(t.Context(), store.GroupConfig{Group: "a", Type: "t", MaxRunning: 2}); err != nil {
			t.Fatal(err)
		}
		addGroups(t, s, "t", map[string]int{"a": 5, "b": 5})
		if got, want := acceptGroups(t, s, "t", 10, 1), "a b a b b b b"; got != want {
			t.Errorf("with a bounded to 2 running: %q, want %q", got, want)
		}
		// Finishing one of a's jobs makes room for exactly one more.
		done := listAll(t, s, store.ListParams{Groups: []string{"a"}, States: []store.State{store.Running}})[0]
		mustFinish(t, s, store.FinishParams{Lease: lease(done), As: store.Complete})
		if got := acceptGroups(t, s, "t", 10, 1); got != "a" {
			t.Errorf("after a finish: %q, want one more job of a", got)
		}
	})
	t.Run("TypeDefaultGroupBound", func(t *testing.T) {
		s := open(t)
		if err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "t", GroupMaxRunning: 1}); err != nil {
			t.Fatal(err)
		}
		addGroups(t, s, "t", map[string]int{"a": 3, "b": 3})
		if got, want := acceptGroups(t, s, "t", 10, 1), "a b"; got != want {
			t.Errorf("with every group bounded to 1: %q, want %q", got, want)
		}
	})
	t.Run("TypeBound", func(t *testing.T) {
		s := open(t)
		if err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "t", MaxRunning: 3}); err != nil {
			t.Fatal(err)
		}
		addGroups(t, s, "t", map[string]int{"a": 5, "b": 5})
		addGroups(t, s, "u", map[string]int{"a": 2})
		if got, want := acceptGroups(t, s, "t", 10, 2), "a b a"; got != want {
			t.Errorf("with type t bounded to 3 running: %q, want %q", got, want)
		}
		// Another type is not held back by t's bound.
		if got := acceptGroups(t, s, "u", 10, 2); got != "a a" {
			t.Errorf("type u: %q, want both its jobs", got)
		}
		// One accept of both types holds t's bound too.
		addGroups(t, s, "u", map[string]int{"a": 1})
		if res := accept(t, s, store.AcceptParams{Types: []string{"t", "u"}, Limit: 10}); len(res.Jobs) != 1 || res.Jobs[0].Type != "u" {
			t.Errorf("accept of t and u at t's bound: %d jobs, want u's one", len(res.Jobs))
		}
		// Finishing one of t's jobs makes room for exactly one more, from
		// the group whose turn it is.
		done := listAll(t, s, store.ListParams{Types: []string{"t"}, States: []store.State{store.Running}})[0]
		mustFinish(t, s, store.FinishParams{Lease: lease(done), As: store.Complete})
		if got := acceptGroups(t, s, "t", 10, 1); got != "b" {
			t.Errorf("after a finish: %q, want one more job, b's", got)
		}
		// Raising the bound lets more start; zero removes it.
		if err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "t"}); err != nil {
			t.Fatal(err)
		}
		if got := acceptGroups(t, s, "t", 10, 3); len(strings.Fields(got)) != 6 {
			t.Errorf("without a bound: %q, want the 6 jobs left", got)
		}
	})
	t.Run("TypeBoundWithGroupBound", func(t *testing.T) {
		s := open(t)
		if err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "t", MaxRunning: 4, GroupMaxRunning: 1}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetGroupConfig(t.Context(), store.GroupConfig{Group: "c", MaxRunning: 2}); err != nil {
			t.Fatal(err)
		}
		addGroups(t, s, "t", map[string]int{"a": 3, "b": 3, "c": 3, "d": 3, "e": 3})
		if got, want := acceptGroups(t, s, "t", 10, 10), "a b c d"; got != want {
			t.Errorf("type bound 4, each group 1: %q, want %q", got, want)
		}
	})
	t.Run("TypeBoundUnderConcurrency", func(t *testing.T) {
		s := open(t)
		const bound = 4
		if err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "t", MaxRunning: bound}); err != nil {
			t.Fatal(err)
		}
		addGroups(t, s, "t", map[string]int{"a": 50, "b": 50, "c": 50})
		var mu sync.Mutex
		running, most := 0, 0
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for w := range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for idle := 0; idle < 200; {
					res, err := s.Accept(t.Context(), store.AcceptParams{Types: []string{"t"}, Limit: 1 + w%3})
					if err != nil {
						errs <- err
						return
					}
					if len(res.Jobs) == 0 {
						idle++
						time.Sleep(time.Millisecond)
						continue
					}
					mu.Lock()
					if running += len(res.Jobs); running > bound {
						errs <- fmt.Errorf("type t has %d jobs running, bound %d", running, bound)
					}
					most = max(most, running)
					mu.Unlock()
					time.Sleep(time.Millisecond) // a run, so that accepts overlap
					mu.Lock()
					running -= len(res.Jobs) // before the finish commits: never more than the store's count
					mu.Unlock()
					var ps []store.FinishParams
					for _, j := range res.Jobs {
						ps = append(ps, store.FinishParams{Lease: lease(j), As: store.Complete})
					}
					if _, err := s.Finish(t.Context(), ps); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if left := listAll(t, s, store.ListParams{States: []store.State{store.Pending, store.Running}}); len(left) != 0 {
			t.Errorf("%d jobs left unfinished", len(left))
		}
		if most < 2 {
			t.Errorf("at most %d jobs ran at once, bound %d: the bound is not what held them", most, bound)
		}
	})
	t.Run("GroupBoundAcrossTypes", func(t *testing.T) {
		s := open(t)
		if err := s.SetGroupConfig(t.Context(), store.GroupConfig{Group: "a", MaxRunning: 3}); err != nil {
			t.Fatal(err)
		}
		addGroups(t, s, "t", map[string]int{"a": 2})
		addGroups(t, s, "u", map[string]int{"a": 5})
		acceptGroups(t, s, "t", 5, 1)
		if got := acceptGroups(t, s, "u", 5, 1); got != "a" {
			t.Errorf("type u got %q, want one job: group a has 2 of its 3 running in type t", got)
		}
	})
	t.Run("GroupBoundAcrossTypesInOneAccept", func(t *testing.T) {
		s := open(t)
		if err := s.SetGroupConfig(t.Context(), store.GroupConfig{Group: "a", MaxRunning: 1}); err != nil {
			t.Fatal(err)
		}
		addGroups(t, s, "t", map[string]int{"a": 1})
		addGroups(t, s, "u", map[string]int{"a": 1})
		res := accept(t, s, store.AcceptParams{Types: []string{"t", "u"}, Limit: 2})
		if len(res.Jobs) != 1 {
			t.Errorf("one accept of types t and u started %d jobs of group a, bound 1 across types", len(res.Jobs))
		}
	})
	t.Run("GroupBoundUnderConcurrency", func(t *testing.T) {
		s := open(t)
		const bound = 3
		for _, g := range []string{"a", "b", "c"} {
			if err := s.SetGroupConfig(t.Context(), store.GroupConfig{Group: g, Type: "t", MaxRunning: bound}); err != nil {
				t.Fatal(err)
			}
		}
		addGroups(t, s, "t", map[string]int{"a": 60, "b": 60, "c": 60})
		var mu sync.Mutex
		running := map[string]int{}
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for w := range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for idle := 0; idle < 200; {
					res, err := s.Accept(t.Context(), store.AcceptParams{Types: []string{"t"}, Limit: 1 + w%4})
					if err != nil {
						errs <- err
						return
					}
					if len(res.Jobs) == 0 {
						idle++
						time.Sleep(time.Millisecond)
						continue
					}
					mu.Lock()
					for _, j := range res.Jobs {
						if running[j.Group]++; running[j.Group] > bound {
							errs <- fmt.Errorf("group %s has %d jobs running, bound %d", j.Group, running[j.Group], bound)
						}
					}
					mu.Unlock()
					var ps []store.FinishParams
					for _, j := range res.Jobs {
						mu.Lock()
						running[j.Group]-- // before the finish commits: never more than the store's count
						mu.Unlock()
						ps = append(ps, store.FinishParams{Lease: lease(j), As: store.Complete})
					}
					if _, err := s.Finish(t.Context(), ps); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		left := listAll(t, s, store.ListParams{States: []store.State{store.Pending, store.Running}})
		if len(left) != 0 {
			t.Errorf("%d jobs left unfinished", len(left))
		}
	})
	t.Run("Weights", func(t *testing.T) {
		s := open(t)
		if err := s.SetGroupConfig(t.Context(), store.GroupConfig{Group: "heavy", Weight: 2}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetGroupConfig(t.Context(), store.GroupConfig{Group: "light", Type: "t", Weight: 0.5}); err != nil {
			t.Fatal(err)
		}
		addGroups(t, s, "t", map[string]int{"heavy": 400, "plain": 400, "light": 400})
		counts := map[string]int{}
		for _, g := range strings.Fields(acceptGroups(t, s, "t", 50, 7)) {
			counts[g]++
		}
		// 350 jobs shared 2 : 1 : 0.5 gives 200 : 100 : 50.
		for g, want := range map[string]float64{"heavy": 200, "plain": 100, "light": 50} {
			if got := float64(counts[g]); math.Abs(got-want)/want > 0.05 {
				t.Errorf("group %s got %v of 350 jobs, want %v within 5%% (counts %v)", g, got, want, counts)
			}
		}
	})
	t.Run("GroupConfigs", func(t *testing.T) {
		s := open(t)
		for _, c := range []store.GroupConfig{{Group: "b", Weight: 2}, {Group: "a", Type: "t", MaxRunning: 4}, {Group: "a", MaxRunning: 9, Weight: 3}} {
			if err := s.SetGroupConfig(t.Context(), c); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.GroupConfigs(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		want := []store.GroupConfig{{Group: "a", MaxRunning: 9, Weight: 3}, {Group: "a", Type: "t", MaxRunning: 4}, {Group: "b", Weight: 2}}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("GroupConfigs = %v, want %v", got, want)
		}
		if err := s.SetGroupConfig(t.Context(), store.GroupConfig{Group: "b"}); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GroupConfigs(t.Context()); len(got) != 2 {
			t.Errorf("after clearing b: %v, want 2 settings left", got)
		}
		for _, bad := range []store.GroupConfig{{Group: "a", Weight: -1}, {Group: "a", MaxRunning: -1}, {Group: "a", Type: "x\x01"}, {Group: "a", Weight: 1e6}} {
			wantErr(t, fmt.Sprintf("SetGroupConfig(%+v)", bad), s.SetGroupConfig(t.Context(), bad), store.ErrInvalid)
		}
	})
	t.Run("ConfigSurvivesInTypeConfigs", func(t *testing.T) {
		s := open(t)
		c := store.TypeConfig{Type: "t", LeaseTimeout: time.Minute, Bands: store.Bands{High: 3, Low: 1}, GroupMaxRunning: 7, MaxRunning: 20}
		if err := s.SetTypeConfig(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		wantErr(t, "SetTypeConfig(MaxRunning: -1)", s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "t", MaxRunning: -1}), store.ErrInvalid)
		got, err := s.TypeConfigs(t.Context())
		c.Retention = store.DefaultRetention // listed with its default, as the lease timeout would be
		if err != nil || len(got) != 1 || got[0] != c {
			t.Errorf("TypeConfigs = %+v, %v; want [%+v]", got, err, c)
		}
	})
}

// addGroups adds n jobs of typ to each group, interleaving the groups'
// adds so that insertion order favours none.
func addGroups(t *testing.T, s store.Store, typ string, n map[string]int) {
	t.Helper()
	var ps []store.AddParams
	for i := 0; ; i++ {
		added := false
		for _, g := range slices.Sorted(maps.Keys(n)) {
			if i < n[g] {
				ps = append(ps, store.AddParams{Type: typ, Group: g})
				added = true
			}
		}
		if !added {
			break
		}
	}
	add(t, s, ps...)
}

// acceptGroups accepts rounds batches of limit jobs and returns their
// groups in order, space-separated.
func acceptGroups(t *testing.T, s store.Store, typ string, limit, rounds int) string {
	t.Helper()
	var out []string
	for range rounds {
		res := accept(t, s, store.AcceptParams{Types: []string{typ}, Limit: limit})
		for _, j := range res.Jobs {
			out = append(out, j.Group)
		}
	}
	return strings.Join(out, " ")
}

// acceptBands accepts n jobs one by one and returns H or L for each by its
// priority band.
func acceptBands(t *testing.T, s store.Store, typ string, n int) string {
	t.Helper()
	var out []string
	for range n {
		res := accept(t, s, store.AcceptParams{Types: []string{typ}})
		for _, j := range res.Jobs {
			if j.Priority > 0 {
				out = append(out, "H")
			} else {
				out = append(out, "L")
			}
		}
	}
	return strings.Join(out, " ")
}
