package storetest

import (
	"slices"
	"testing"

	"github.com/rotajobs/rota/store"
)

// ---- pause and resume ----

func testPause(t *testing.T, open func(t *testing.T) store.Store) {
	groupsOf := func(jobs []store.Job) []string {
		var out []string
		for _, j := range jobs {
			if !slices.Contains(out, j.Group) {
				out = append(out, j.Group)
			}
		}
		slices.Sort(out)
		return out
	}
	setType := func(t *testing.T, s store.Store, c store.TypeConfig) {
		t.Helper()
		if err := s.SetTypeConfig(t.Context(), c); err != nil {
			t.Fatalf("SetTypeConfig(%+v): %v", c, err)
		}
	}
	setGroup := func(t *testing.T, s store.Store, c store.GroupConfig) {
		t.Helper()
		if err := s.SetGroupConfig(t.Context(), c); err != nil {
			t.Fatalf("SetGroupConfig(%+v): %v", c, err)
		}
	}

	t.Run("Type", func(t *testing.T) {
		s := open(t)
		setType(t, s, store.TypeConfig{Type: "t", Paused: true})
		add(t, s, store.AddParams{Type: "t"}, store.AddParams{Type: "t", Group: "a"}, store.AddParams{Type: "u"})
		if res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 10}); len(res.Jobs) != 0 {
			t.Errorf("Accept of a paused type took %d jobs", len(res.Jobs))
		}
		if res := accept(t, s, store.AcceptParams{Types: []string{"*"}, Limit: 10}); len(res.Jobs) != 1 || res.Jobs[0].Type != "u" {
			t.Errorf("Accept of every type with t paused took %v, want the u job only", ids(res.Jobs))
		}
		cfgs, err := s.TypeConfigs(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(cfgs, func(c store.TypeConfig) bool { return c.Type == "t" })
		if i < 0 || !cfgs[i].Paused {
			t.Errorf("TypeConfigs: %+v, want t paused", cfgs)
		}
		setType(t, s, store.TypeConfig{Type: "t"})
		if res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 10}); len(res.Jobs) != 2 {
			t.Errorf("Accept after resuming took %d jobs, want 2", len(res.Jobs))
		}
	})

	t.Run("GroupOfEveryType", func(t *testing.T) {
		s := open(t)
		for _, g := range []string{"a", "b"} {
			add(t, s, store.AddParams{Type: "t", Group: g}, store.AddParams{Type: "t", Group: g}, store.AddParams{Type: "u", Group: g})
		}
		setGroup(t, s, store.GroupConfig{Group: "a", Paused: true})
		res := accept(t, s, store.AcceptParams{Types: []string{"t", "u"}, Limit: 10})
		if got := groupsOf(res.Jobs); len(res.Jobs) != 3 || !slices.Equal(got, []string{"b"}) {
			t.Errorf("Accept with group a paused took %d jobs of groups %v, want 3 of b", len(res.Jobs), got)
		}
		cfgs, err := s.GroupConfigs(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(cfgs) != 1 || !cfgs[0].Paused || cfgs[0].Group != "a" {
			t.Errorf("GroupConfigs: %+v, want a paused", cfgs)
		}
		// Resuming with no other setting removes the setting.
		setGroup(t, s, store.GroupConfig{Group: "a"})
		if cfgs, _ := s.GroupConfigs(t.Context()); len(cfgs) != 0 {
			t.Errorf("GroupConfigs after resuming: %+v, want none", cfgs)
		}
		res = accept(t, s, store.AcceptParams{Types: []string{"t", "u"}, Limit: 10})
		if got := groupsOf(res.Jobs); len(res.Jobs) != 3 || !slices.Equal(got, []string{"a"}) {
			t.Errorf("Accept after resuming took %d jobs of groups %v, want 3 of a", len(res.Jobs), got)
		}
	})

	t.Run("GroupOfOneType", func(t *testing.T) {
		s := open(t)
		add(t, s, store.AddParams{Type: "t", Group: "a"}, store.AddParams{Type: "u", Group: "a"}, store.AddParams{Type: "t", Group: "b"})
		setGroup(t, s, store.GroupConfig{Group: "a", Type: "t", Paused: true, Weight: 2})
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 10})
		if got := groupsOf(res.Jobs); !slices.Equal(got, []string{"b"}) {
			t.Errorf("Accept of t with a paused for t took groups %v, want b", got)
		}
		if res := accept(t, s, store.AcceptParams{Types: []string{"u"}, Limit: 10}); len(res.Jobs) != 1 {
			t.Errorf("Accept of u took %d jobs: a is paused for t only", len(res.Jobs))
		}
		// Jobs keep being added while paused, and running jobs finish.
		add(t, s, store.AddParams{Type: "t", Group: "a"})
		setGroup(t, s, store.GroupConfig{Group: "a", Type: "t", Weight: 2})
		if res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 10}); len(res.Jobs) != 2 {
			t.Errorf("Accept after resuming took %d jobs, want 2", len(res.Jobs))
		}
	})
}
