package storetest

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- get, list ----

func testGet(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("OrderAndMissing", func(t *testing.T) {
		s := open(t)
		res := add(t, s, store.AddParams{Type: "a"}, store.AddParams{Type: "b"}, store.AddParams{Type: "c"})
		a, b, c := res[0].Job.ID, res[1].Job.ID, res[2].Job.ID
		missing := c + 1000
		jobs, err := s.Get(t.Context(), []int64{c, missing, a, b, a})
		if err != nil {
			t.Fatal(err)
		}
		want := []int64{c, 0, a, b, a}
		if got := ids(jobs); !slices.Equal(got, want) {
			t.Errorf("Get(c, missing, a, b, a) returned ids %v, want %v (same order, 0 for missing)", got, want)
		}
		if jobs[0].Type != "c" || jobs[2].Type != "a" {
			t.Errorf("Get returned types %q and %q at positions 0 and 2, want c and a", jobs[0].Type, jobs[2].Type)
		}
		jobs, err = s.Get(t.Context(), nil)
		if err != nil || len(jobs) != 0 {
			t.Errorf("Get(no ids) = %v, %v; want no jobs and no error", jobs, err)
		}
	})

	t.Run("Many", func(t *testing.T) {
		// More ids than one statement's list once held: all of them, in
		// the order asked, in one snapshot.
		s := open(t)
		ps := make([]store.AddParams, 1200)
		for i := range ps {
			ps[i] = store.AddParams{Type: "many", Priority: i}
		}
		res := add(t, s, ps...)
		var want []int64
		for i := len(res) - 1; i >= 0; i-- {
			want = append(want, res[i].Job.ID)
		}
		want = append(want, 0, res[0].Job.ID)
		asked := slices.Clone(want)
		asked[len(res)] = res[len(res)-1].Job.ID + 1000
		jobs, err := s.Get(t.Context(), asked)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(jobs); !slices.Equal(got, want) {
			t.Errorf("Get of %d ids returned %d ids, %d of them wrong", len(asked), len(got), countDiff(got, want))
		}
		if len(jobs) == len(want) && jobs[0].Priority != len(ps)-1 {
			t.Errorf("Get's first job has priority %d, want %d", jobs[0].Priority, len(ps)-1)
		}
	})

	t.Run("ByKey", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "t", Key: "k"})
		got, err := s.GetByKey(t.Context(), "t", "", "k")
		if err != nil {
			t.Fatalf("GetByKey(t, k): %v", err)
		}
		unchanged(t, "GetByKey vs Add's result", j, got)
		_, err = s.GetByKey(t.Context(), "t", "", "other")
		wantErr(t, "GetByKey of a missing key", err, store.ErrNotFound)
		_, err = s.GetByKey(t.Context(), "u", "", "k")
		wantErr(t, "GetByKey of the key in another type", err, store.ErrNotFound)
		_, err = s.GetByKey(t.Context(), "t", "g", "k")
		wantErr(t, "GetByKey of the key in another group", err, store.ErrNotFound)
	})
}

func testList(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Filters", func(t *testing.T) {
		s := open(t)
		j1 := addOne(t, s, store.AddParams{Type: "a", Group: "g1", RunAt: time.Now().Add(time.Hour)}) // not due
		j2 := start(t, s, store.AddParams{Type: "a", Group: "g2", Priority: 1})                       // running
		j3 := ended(t, s, store.AddParams{Type: "b", Group: "g1", Priority: 1}, store.Completed)
		j4 := addOne(t, s, store.AddParams{Type: "b", Group: "g2"})
		cases := []struct {
			name string
			p    store.ListParams
			want []int64
		}{
			{"all", store.ListParams{}, []int64{j1.ID, j2.ID, j3.ID, j4.ID}},
			{"type a", store.ListParams{Types: []string{"a"}}, []int64{j1.ID, j2.ID}},
			{"type c", store.ListParams{Types: []string{"c"}}, nil},
			{"running", store.ListParams{States: []store.State{store.Running}}, []int64{j2.ID}},
			{"pending or completed", store.ListParams{States: []store.State{store.Pending, store.Completed}}, []int64{j1.ID, j3.ID, j4.ID}},
			{"group g1", store.ListParams{Groups: []string{"g1"}}, []int64{j1.ID, j3.ID}},
			{"type b and group g2", store.ListParams{Types: []string{"b"}, Groups: []string{"g2"}}, []int64{j4.ID}},
			{"all three filters", store.ListParams{Types: []string{"a", "b"}, States: []store.State{store.Pending},
				Groups: []string{"g1", "g2"}}, []int64{j1.ID, j4.ID}},
			{"descending", store.ListParams{Descending: true}, []int64{j4.ID, j3.ID, j2.ID, j1.ID}},
			// Running and other states together, a page at a time, both
			// ways (a store may keep running jobs in an index of their own).
			{"running or pending, pages of 1", store.ListParams{States: []store.State{store.Pending, store.Running}, Limit: 1},
				[]int64{j1.ID, j2.ID, j4.ID}},
			{"running or completed, descending, pages of 1", store.ListParams{States: []store.State{store.Running, store.Completed},
				Descending: true, Limit: 1}, []int64{j3.ID, j2.ID}},
			{"running of type a, in group g2", store.ListParams{Types: []string{"a"}, Groups: []string{"g2"},
				States: []store.State{store.Running, store.Failed}}, []int64{j2.ID}},
		}
		for _, c := range cases {
			jobs := listAll(t, s, c.p)
			if got := ids(jobs); !slices.Equal(got, c.want) {
				t.Errorf("List %s = %v, want %v", c.name, got, c.want)
			}
		}
		for _, j := range listAll(t, s, store.ListParams{}) {
			unchanged(t, fmt.Sprintf("List vs Get of job %d", j.ID), get(t, s, j.ID), j)
		}
	})

	t.Run("Pagination", func(t *testing.T) {
		s := open(t)
		var ps []store.AddParams
		for i := range 23 {
			ps = append(ps, store.AddParams{Type: []string{"even", "odd"}[i%2]})
		}
		all := resultIDs(add(t, s, ps...))
		var odd []int64
		for i, id := range all {
			if i%2 == 1 {
				odd = append(odd, id)
			}
		}
		reversed := slices.Clone(all)
		slices.Reverse(reversed)
		cases := []struct {
			name string
			p    store.ListParams
			want []int64
		}{
			{"ascending, pages of 5", store.ListParams{Limit: 5}, all},
			{"descending, pages of 5", store.ListParams{Limit: 5, Descending: true}, reversed},
			{"pages of 1", store.ListParams{Limit: 1}, all},
			{"odd type, pages of 3", store.ListParams{Limit: 3, Types: []string{"odd"}}, odd},
			{"one page exactly", store.ListParams{Limit: 23}, all},
		}
		for _, c := range cases {
			got := ids(listAll(t, s, c.p))
			if !slices.Equal(got, c.want) {
				t.Errorf("List %s gave ids %v, want %v (each job once, in order)", c.name, got, c.want)
			}
		}

		// The cursor of one page starts the next.
		first, err := s.List(t.Context(), store.ListParams{Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if first.Next != all[4] {
			t.Errorf("first page of 5: next cursor %d, want the last id on the page %d", first.Next, all[4])
		}
		second, err := s.List(t.Context(), store.ListParams{Limit: 5, After: first.Next})
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(second.Jobs); !slices.Equal(got, all[5:10]) {
			t.Errorf("second page = %v, want %v", got, all[5:10])
		}
	})

	t.Run("DefaultLimit", func(t *testing.T) {
		s := open(t)
		ps := make([]store.AddParams, 105)
		for i := range ps {
			ps[i] = store.AddParams{Type: "t"}
		}
		add(t, s, ps...)
		res, err := s.List(t.Context(), store.ListParams{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Jobs) != 100 || res.Next == 0 {
			t.Errorf("List with limit 0 returned %d jobs and next %d, want 100 jobs and a next cursor", len(res.Jobs), res.Next)
		}
	})

	t.Run("InvalidLimit", func(t *testing.T) {
		s := open(t)
		for _, limit := range []int{-1, store.MaxListLimit + 1} {
			_, err := s.List(t.Context(), store.ListParams{Limit: limit})
			wantErr(t, fmt.Sprintf("List with limit %d", limit), err, store.ErrInvalid)
		}
		if _, err := s.List(t.Context(), store.ListParams{Limit: store.MaxListLimit}); err != nil {
			t.Errorf("List with limit %d: %v, want success", store.MaxListLimit, err)
		}
	})
}

func testStats(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	if got, err := s.Stats(t.Context()); err != nil || len(got) != 0 {
		t.Fatalf("Stats on an empty store: %v %v, want nothing", got, err)
	}
	add(t, s, store.AddParams{Type: "a", Group: "g1"}, store.AddParams{Type: "a", Group: "g1"},
		store.AddParams{Type: "a", Group: "g2"}, store.AddParams{Type: "b"})
	j := start(t, s, store.AddParams{Type: "d"})
	mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete})
	start(t, s, store.AddParams{Type: "c", Group: "g1"})
	got, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Count{
		{Type: "a", Group: "g1", State: store.Pending, Jobs: 2},
		{Type: "a", Group: "g2", State: store.Pending, Jobs: 1},
		{Type: "b", Group: "", State: store.Pending, Jobs: 1},
		{Type: "c", Group: "g1", State: store.Running, Jobs: 1},
		{Type: "d", Group: "", State: store.Completed, Jobs: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Stats = %+v\nwant    %+v", got, want)
	}
}

// countDiff counts the positions at which got and want differ.
func countDiff(got, want []int64) int {
	n := max(len(got), len(want)) - min(len(got), len(want))
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			n++
		}
	}
	return n
}
