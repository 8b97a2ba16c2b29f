package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// testRates checks rates of job starts (TypeConfig.Rate, GroupConfig.Rate):
// a token bucket per type, per group and type, and per group for all
// types, kept by the store and spent by accepts.
func testRates(t *testing.T, open func(t *testing.T) store.Store) {
	perHour := func(n int) store.Rate { return store.Rate{N: n, Per: time.Hour} }
	setType := func(t *testing.T, s store.Store, c store.TypeConfig) {
		t.Helper()
		if err := s.SetTypeConfig(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	setGroup := func(t *testing.T, s store.Store, c store.GroupConfig) {
		t.Helper()
		if err := s.SetGroupConfig(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	count := func(groups string) map[string]int {
		out := map[string]int{}
		for _, g := range strings.Fields(groups) {
			out[g]++
		}
		return out
	}
	t.Run("CapsStartsAtTheBurst", func(t *testing.T) {
		s := open(t)
		setType(t, s, store.TypeConfig{Type: "t", Rate: perHour(5), Burst: 3})
		addGroups(t, s, "t", map[string]int{"a": 10})
		before := time.Now()
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 10})
		if len(res.Jobs) != 3 {
			t.Fatalf("5/h with a burst of 3: %d jobs started, want 3", len(res.Jobs))
		}
		if res.NextTokenAt.IsZero() {
			t.Errorf("an accept the rate cut short said no token is awaited")
		}
		res = accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 10})
		if len(res.Jobs) != 0 {
			t.Fatalf("after the burst: %d jobs started, want none", len(res.Jobs))
		}
		// One token every 12 minutes at 5/h.
		if lo, hi := before.Add(12*time.Minute-slack), time.Now().Add(12*time.Minute+slack); res.NextTokenAt.Before(lo) || res.NextTokenAt.After(hi) {
			t.Errorf("held back by the rate: next token at %v, want 12 minutes from now (%v..%v)", res.NextTokenAt, lo, hi)
		}
		// The jobs wait; they are not failed.
		if left := listAll(t, s, store.ListParams{Types: []string{"t"}, States: []store.State{store.Pending}}); len(left) != 7 {
			t.Errorf("%d jobs pending, want the 7 over the rate", len(left))
		}
		// Another type is not held back.
		addGroups(t, s, "u", map[string]int{"a": 2})
		if res := accept(t, s, store.AcceptParams{Types: []string{"t", "u"}, Limit: 10}); len(res.Jobs) != 2 || res.Jobs[0].Type != "u" || res.NextTokenAt.IsZero() {
			t.Errorf("accept of t and u with t's bucket empty: %d jobs, next token %v; want u's 2 and t's next token", len(res.Jobs), res.NextTokenAt)
		}
		// Removing the rate lets the rest start.
		setType(t, s, store.TypeConfig{Type: "t"})
		if res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 10}); len(res.Jobs) != 7 || !res.NextTokenAt.IsZero() {
			t.Errorf("without a rate: %d jobs (next token %v), want the 7 left", len(res.Jobs), res.NextTokenAt)
		}
	})
	t.Run("DefaultBurst", func(t *testing.T) {
		s := open(t)
		setType(t, s, store.TypeConfig{Type: "s", Rate: store.Rate{N: 4, Per: time.Second}})
		setType(t, s, store.TypeConfig{Type: "m", Rate: store.Rate{N: 4, Per: time.Minute}})
		addGroups(t, s, "s", map[string]int{"a": 10})
		addGroups(t, s, "m", map[string]int{"a": 10})
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"s"}, Limit: 10}).Jobs); n != 4 {
			t.Errorf("4/s without a burst: %d jobs at once, want 4", n)
		}
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"m"}, Limit: 10}).Jobs); n != 1 {
			t.Errorf("4/m without a burst: %d jobs at once, want 1", n)
		}
	})
	t.Run("RefillsWithTheStoresClock", func(t *testing.T) {
		s := open(t)
		const rate = 20
		setType(t, s, store.TypeConfig{Type: "t", Rate: store.Rate{N: rate, Per: time.Second}, Burst: 2})
		addGroups(t, s, "t", map[string]int{"a": 100})
		start := time.Now()
		started := len(accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 100}).Jobs)
		if started != 2 {
			t.Fatalf("burst 2: %d jobs, want 2", started)
		}
		// Accepts until one finds the bucket empty (on a loaded machine a
		// token may come between two of them).
		var res store.AcceptResult
		for range 50 {
			res = accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 100})
			if started += len(res.Jobs); len(res.Jobs) == 0 {
				break
			}
		}
		if len(res.Jobs) != 0 || res.NextTokenAt.IsZero() || res.NextTokenAt.After(time.Now().Add(50*time.Millisecond+slack)) {
			t.Fatalf("empty bucket: %d jobs, next token %v; want none, within 50ms", len(res.Jobs), res.NextTokenAt)
		}
		time.Sleep(time.Until(res.NextTokenAt) + time.Millisecond)
		n := len(accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 100}).Jobs)
		if n < 1 {
			t.Fatalf("at the next token: %d jobs, want 1 or more", n)
		}
		started += n
		// Accepting as fast as it can for 400ms starts about rate × time.
		for time.Since(start) < 400*time.Millisecond {
			started += len(accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 100}).Jobs)
			time.Sleep(2 * time.Millisecond)
		}
		elapsed := time.Since(start).Seconds()
		// Never more than the burst and the tokens since; at least half of
		// that (an accept that comes late on a loaded machine finds the
		// bucket full, and what overflowed is lost, as it should be).
		if most := 2 + rate*elapsed + 1; float64(started) > most || float64(started) < most/2 {
			t.Errorf("%d jobs started in %.3fs at %d/s with a burst of 2, want about %.0f and never more", started, elapsed, rate, most)
		}
	})
	t.Run("TighterOfPairAndType", func(t *testing.T) {
		s := open(t)
		setType(t, s, store.TypeConfig{Type: "t", Rate: perHour(100), Burst: 5})
		setGroup(t, s, store.GroupConfig{Group: "a", Type: "t", Rate: perHour(1), Burst: 2})
		addGroups(t, s, "t", map[string]int{"a": 5, "b": 5})
		got := count(acceptGroups(t, s, "t", 10, 1))
		if got["a"] != 2 || got["b"] != 3 {
			t.Errorf("type 5 at once, a 2 of them: %v, want a 2 and b 3", got)
		}
		// The pair's rate holds when the type's is looser, and the type's
		// when the pair's is.
		s = open(t)
		setType(t, s, store.TypeConfig{Type: "t", Rate: perHour(100), Burst: 2})
		setGroup(t, s, store.GroupConfig{Group: "a", Type: "t", Rate: perHour(100), Burst: 50})
		addGroups(t, s, "t", map[string]int{"a": 5})
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 10}).Jobs); n != 2 {
			t.Errorf("type burst 2, pair 50: %d jobs, want 2", n)
		}
	})
	t.Run("GroupRateAcrossTypes", func(t *testing.T) {
		s := open(t)
		setGroup(t, s, store.GroupConfig{Group: "a", Rate: perHour(1), Burst: 3})
		addGroups(t, s, "t", map[string]int{"a": 5, "b": 2})
		addGroups(t, s, "u", map[string]int{"a": 5})
		res := accept(t, s, store.AcceptParams{Types: []string{"t", "u"}, Limit: 20})
		got := map[string]int{}
		for _, j := range res.Jobs {
			got[j.Group]++
		}
		if got["a"] != 3 || got["b"] != 2 {
			t.Errorf("a at 3 at once over both types: %v, want a 3 and b 2", got)
		}
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"u"}, Limit: 20}).Jobs); n != 0 {
			t.Errorf("a's bucket is empty: %d of u's jobs started", n)
		}
	})
	t.Run("WeightedSplit", func(t *testing.T) {
		s := open(t)
		setType(t, s, store.TypeConfig{Type: "t", Rate: perHour(100), Burst: 40})
		setGroup(t, s, store.GroupConfig{Group: "a", Weight: 3})
		addGroups(t, s, "t", map[string]int{"a": 100, "b": 100})
		got := count(acceptGroups(t, s, "t", 200, 1))
		if got["a"] != 30 || got["b"] != 10 {
			t.Errorf("40 tokens, weights 3:1: %v, want a 30 and b 10", got)
		}
	})
	t.Run("IdleShareReused", func(t *testing.T) {
		s := open(t)
		setType(t, s, store.TypeConfig{Type: "t", Rate: perHour(100), Burst: 40})
		setGroup(t, s, store.GroupConfig{Group: "a", Weight: 3})
		addGroups(t, s, "t", map[string]int{"a": 100, "b": 4})
		got := count(acceptGroups(t, s, "t", 200, 1))
		if got["a"] != 36 || got["b"] != 4 {
			t.Errorf("40 tokens, b wants 4: %v, want a 36 and b 4", got)
		}
	})
	t.Run("Settings", func(t *testing.T) {
		s := open(t)
		tc := store.TypeConfig{Type: "t", Rate: store.Rate{N: 50, Per: time.Second}, Burst: 60}
		setType(t, s, tc)
		gc := store.GroupConfig{Group: "a", Type: "t", Rate: store.Rate{N: 3, Per: time.Minute}}
		setGroup(t, s, gc)
		tcs, err := s.TypeConfigs(t.Context())
		if err != nil || len(tcs) != 1 || tcs[0].Rate != tc.Rate || tcs[0].Burst != 60 {
			t.Errorf("TypeConfigs: %+v, %v; want rate 50/s burst 60", tcs, err)
		}
		gcs, err := s.GroupConfigs(t.Context())
		if err != nil || len(gcs) != 1 || gcs[0] != gc {
			t.Errorf("GroupConfigs: %+v, %v; want %+v (a rate alone keeps the setting)", gcs, err, gc)
		}
		wantErr(t, "a burst without a rate", s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "t", Burst: 3}), store.ErrInvalid)
		wantErr(t, "a rate per day", s.SetGroupConfig(t.Context(), store.GroupConfig{Group: "a", Rate: store.Rate{N: 1, Per: 24 * time.Hour}}), store.ErrInvalid)
		wantErr(t, "a negative rate", s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "t", Rate: store.Rate{N: -1, Per: time.Second}}), store.ErrInvalid)
		if tcs, _ := s.TypeConfigs(t.Context()); len(tcs) != 1 || tcs[0].Rate != tc.Rate {
			t.Errorf("bad input changed the settings: %+v", tcs)
		}
		gc.Rate = store.Rate{}
		setGroup(t, s, gc)
		if gcs, _ := s.GroupConfigs(t.Context()); len(gcs) != 0 {
			t.Errorf("a group setting with nothing left: %+v, want it removed", gcs)
		}
	})
}
