package storetest

import (
	"fmt"
	"testing"

	"github.com/rotajobs/rota/store"
)

// ---- tenants: a key, and a unique add, are scoped to (type, group) ----

// testTenants checks that an add never finds a job of another group: two
// tenants (groups) using the same key, or adding unique jobs of the same
// type, have jobs of their own, and one's adds leave the other's jobs as
// they were.
func testTenants(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("SameKeyInTwoGroupsIsTwoJobs", func(t *testing.T) {
		s := open(t)
		res := add(t, s,
			store.AddParams{Type: "invoice", Key: "inv-1001", Group: "acme-1", Data: raw(`{"who":"acme"}`)},
			store.AddParams{Type: "invoice", Key: "inv-1001", Group: "globex-hr", Data: raw(`{"who":"globex"}`)},
		)
		if res[0].Outcome != store.Inserted || res[1].Outcome != store.Inserted || res[0].Job.ID == res[1].Job.ID {
			t.Fatalf("the same key in two groups in one batch: %v job %d, %v job %d; want two new jobs",
				res[0].Outcome, res[0].Job.ID, res[1].Outcome, res[1].Job.ID)
		}
		for i, g := range []string{"acme-1", "globex-hr"} {
			j, err := s.GetByKey(t.Context(), "invoice", g, "inv-1001")
			if err != nil || j.ID != res[i].Job.ID || j.Group != g {
				t.Errorf("GetByKey(invoice, %s, inv-1001) = job %d in %q, %v; want job %d", g, j.ID, j.Group, err, res[i].Job.ID)
			}
		}
		_, err := s.GetByKey(t.Context(), "invoice", "", "inv-1001")
		wantErr(t, "GetByKey in a group without the key", err, store.ErrNotFound)
		// A re-add in each group updates that group's job only.
		globex := get(t, s, res[1].Job.ID)
		r := add(t, s, store.AddParams{Type: "invoice", Key: "inv-1001", Group: "acme-1", Priority: 3, Data: raw(`{"who":"acme","v":2}`)})[0]
		if r.Outcome != store.Updated || r.Job.ID != res[0].Job.ID || r.Job.Group != "acme-1" {
			t.Errorf("re-add in acme-1: %v job %d in %q, want job %d updated in acme-1", r.Outcome, r.Job.ID, r.Job.Group, res[0].Job.ID)
		}
		unchanged(t, "a re-add in another group", globex, get(t, s, globex.ID))
		if n := len(listAll(t, s, store.ListParams{Types: []string{"invoice"}})); n != 2 {
			t.Errorf("%d jobs of the type, want 2", n)
		}
	})

	// A keyed add into another group is a new job there, whatever the
	// state of the job that holds the key in its own group: the job is not
	// moved, updated, resubmitted or revived.
	for _, st := range []store.State{store.Pending, store.Running, store.Completed, store.Failed, store.Cancelled} {
		t.Run("ReaddInAnotherGroupIsANewJob/"+st.String(), func(t *testing.T) {
			s := open(t)
			p := store.AddParams{Type: "invoice", Key: "inv-1001", Group: "globex-hr", Priority: 1, Data: raw(`{"secret":"globex"}`)}
			var theirs store.Job
			switch st {
			case store.Pending:
				theirs = addOne(t, s, p)
			case store.Running:
				theirs = start(t, s, p)
			default:
				theirs = ended(t, s, p, st)
			}
			theirs = get(t, s, theirs.ID)
			r := add(t, s, store.AddParams{Type: "invoice", Key: "inv-1001", Group: "acme-1", Priority: 9, Data: raw(`{"mine":true}`)})[0]
			if r.Outcome != store.Inserted || r.Job.ID == theirs.ID || r.Job.Group != "acme-1" {
				t.Errorf("keyed add in acme-1 over a %v job of globex-hr: %v job %d in %q; want a new job in acme-1",
					st, r.Outcome, r.Job.ID, r.Job.Group)
			}
			wantJSON(t, "the new job's data", r.Job.Data, `{"mine":true}`)
			after := get(t, s, theirs.ID)
			unchanged(t, "a keyed add in another group", theirs, after)
			if after.Resubmit {
				t.Errorf("the other group's running job was marked to run again")
			}
		})
	}

	t.Run("UniquePerGroup", func(t *testing.T) {
		s := open(t)
		theirs := addOne(t, s, store.AddParams{Type: "report", Group: "globex-hr", Priority: 2, Data: raw(`{"secret":"globex"}`)})
		r := add(t, s, store.AddParams{Type: "report", Group: "acme-1", Unique: true, Data: raw(`{"mine":1}`)})[0]
		if r.Outcome != store.Inserted || r.Job.ID == theirs.ID || r.Job.Group != "acme-1" {
			t.Fatalf("unique add in acme-1 with a job of the type in globex-hr: %v job %d in %q; want a new job in acme-1",
				r.Outcome, r.Job.ID, r.Job.Group)
		}
		wantJSON(t, "the unique add's answer", r.Job.Data, `{"mine":1}`)
		// Now acme-1 has one: a unique add with overwrite finds acme's,
		// and globex's job is untouched.
		o := add(t, s, store.AddParams{Type: "report", Group: "acme-1", Unique: true, Overwrite: true, Priority: 7, Data: raw(`{"mine":2}`)})[0]
		if o.Outcome != store.Updated || o.Job.ID != r.Job.ID {
			t.Errorf("unique overwrite in acme-1: %v job %d, want job %d updated", o.Outcome, o.Job.ID, r.Job.ID)
		}
		unchanged(t, "a unique add with overwrite in another group", theirs, get(t, s, theirs.ID))
		// The same in one batch: each group finds its own.
		res := add(t, s,
			store.AddParams{Type: "batch", Group: "a", Unique: true},
			store.AddParams{Type: "batch", Group: "b", Unique: true},
			store.AddParams{Type: "batch", Group: "a", Unique: true},
		)
		if res[0].Outcome != store.Inserted || res[1].Outcome != store.Inserted || res[2].Outcome != store.Unchanged ||
			res[2].Job.ID != res[0].Job.ID || res[1].Job.ID == res[0].Job.ID {
			t.Errorf("unique adds in groups a, b, a: %v %d, %v %d, %v %d", res[0].Outcome, res[0].Job.ID,
				res[1].Outcome, res[1].Job.ID, res[2].Outcome, res[2].Job.ID)
		}
	})

	t.Run("SameKeyManyGroups", func(t *testing.T) {
		s := open(t)
		var ps []store.AddParams
		for i := range 10 {
			ps = append(ps, store.AddParams{Type: "t", Key: "k", Group: fmt.Sprintf("g%d", i%5), Data: raw(fmt.Sprintf(`{"i":%d}`, i))})
		}
		res := add(t, s, ps...)
		for i := range 10 {
			want := store.Inserted
			if i >= 5 {
				want = store.Updated
			}
			if res[i].Outcome != want || res[i].Job.ID != res[i%5].Job.ID || res[i].Job.Group != ps[i].Group {
				t.Errorf("item %d (group %s): %v job %d in %q; want %v job %d", i, ps[i].Group, res[i].Outcome, res[i].Job.ID,
					res[i].Job.Group, want, res[i%5].Job.ID)
			}
		}
		for g := range 5 {
			j, err := s.GetByKey(t.Context(), "t", fmt.Sprintf("g%d", g), "k")
			if err != nil {
				t.Fatal(err)
			}
			wantJSON(t, "data of group "+j.Group, j.Data, fmt.Sprintf(`{"i":%d}`, g+5))
		}
	})
}
