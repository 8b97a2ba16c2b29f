package storetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/rotajobs/rota/store"
)

// reachOf returns the reach of these group and type patterns.
func reachOf(t *testing.T, groups, types []string) *store.Reach {
	t.Helper()
	r, err := store.NewReach(groups, types)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

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

	// A parent out of the caller's reach is a missing parent: the same
	// error, and nothing changes; the check is the add's own, inside its
	// transaction.
	t.Run("ParentOutOfReach", func(t *testing.T) {
		s := open(t)
		theirs := start(t, s, store.AddParams{Type: "report", Group: "globex-hr"})
		theirs = get(t, s, theirs.ID)
		acme := store.WithReach(t.Context(), reachOf(t, []string{"acme-*"}, nil))
		_, errOut := s.Add(acme, []store.AddParams{{Type: "report.part", Group: "acme-1", Parent: theirs.ID}})
		const missing = 987654321
		_, errMissing := s.Add(acme, []store.AddParams{{Type: "report.part", Group: "acme-1", Parent: missing}})
		if !errors.Is(errOut, store.ErrNotFound) || !errors.Is(errMissing, store.ErrNotFound) {
			t.Fatalf("a child of a parent out of reach: %v; of a missing parent: %v; want both ErrNotFound", errOut, errMissing)
		}
		if a, b := strings.ReplaceAll(errOut.Error(), strconv.FormatInt(theirs.ID, 10), "N"),
			strings.ReplaceAll(errMissing.Error(), strconv.Itoa(missing), "N"); a != b {
			t.Errorf("a parent out of reach is answered %q, a missing one %q: they must read the same", a, b)
		}
		unchanged(t, "a refused child of a parent out of reach", theirs, get(t, s, theirs.ID))
		if jobs := listAll(t, s, store.ListParams{Types: []string{"report.part"}}); len(jobs) != 0 {
			t.Errorf("a refused child was added: %v", ids(jobs))
		}
		// A type out of reach is out of reach too; in reach, the child is added.
		mine := start(t, s, store.AddParams{Type: "report.acme", Group: "acme-1"})
		mailOnly := store.WithReach(t.Context(), reachOf(t, nil, []string{"mail.*"}))
		_, err := s.Add(mailOnly, []store.AddParams{{Type: "mail.part", Group: "acme-1", Parent: mine.ID}})
		wantErr(t, "a child of a parent of a type out of reach", err, store.ErrNotFound)
		res, err := s.Add(acme, []store.AddParams{{Type: "report.part", Group: "acme-1", Parent: mine.ID}})
		if err != nil || res[0].Job.Parent != mine.ID || res[0].Job.State != store.Paused {
			t.Errorf("a child of a parent in reach: %+v, %v; want a paused child", res, err)
		}
	})

	// A job out of the caller's reach is a missing job to every operation
	// by id, inside its transaction: reads, cancel, remove, update and
	// resubmit answer it word for word as a missing one and change
	// nothing, so that a job added between a front end's check and the
	// operation is as safe as one added before.
	t.Run("ByIDOutOfReach", func(t *testing.T) {
		s := open(t)
		pending := addOne(t, s, store.AddParams{Type: "invoice", Key: "inv-1", Group: "globex-hr", Data: raw(`{"who":"globex"}`)})
		running := start(t, s, store.AddParams{Type: "report", Group: "globex-hr"})
		mail := addOne(t, s, store.AddParams{Type: "mail.send", Group: "acme-1"})
		const missing = 987654321
		acme := store.WithReach(t.Context(), reachOf(t, []string{"acme-*"}, nil))
		typed := store.WithReach(t.Context(), reachOf(t, nil, []string{"report.*"}))
		same := func(what string, id int64, errOut, errMissing error) {
			t.Helper()
			if !errors.Is(errOut, store.ErrNotFound) || !errors.Is(errMissing, store.ErrNotFound) {
				t.Errorf("%s of job %d out of reach: %v; of a missing job: %v; want both ErrNotFound", what, id, errOut, errMissing)
				return
			}
			if a, b := strings.ReplaceAll(errOut.Error(), strconv.FormatInt(id, 10), "N"),
				strings.ReplaceAll(errMissing.Error(), strconv.Itoa(missing), "N"); a != b {
				t.Errorf("%s: out of reach %q, missing %q: they must read the same", what, a, b)
			}
		}
		for _, c := range []struct {
			name string
			ctx  context.Context
			job  store.Job
		}{{"acme-*", acme, pending}, {"acme-* (running)", acme, running}, {"report.*", typed, mail}} {
			ctx, j := c.ctx, c.job
			before := get(t, s, j.ID)
			jobs, err := s.Get(ctx, []int64{j.ID})
			if err != nil || len(jobs) != 1 || jobs[0].ID != 0 {
				t.Errorf("%s: Get of job %d out of reach: %+v, %v; want a missing job", c.name, j.ID, jobs, err)
			}
			if j.Key != "" {
				_, err := s.GetByKey(ctx, j.Type, j.Group, j.Key)
				wantErr(t, c.name+": GetByKey out of reach", err, store.ErrNotFound)
			}
			e1, err := s.Cancel(ctx, []int64{j.ID})
			e2, err2 := s.Cancel(ctx, []int64{missing})
			if err != nil || err2 != nil {
				t.Fatal(err, err2)
			}
			same(c.name+": cancel", j.ID, e1[0], e2[0])
			prio := 9
			_, e1, err = s.Update(ctx, []store.UpdateParams{{ID: j.ID, Data: raw(`{"who":"acme"}`), Priority: &prio}})
			_, e2, err2 = s.Update(ctx, []store.UpdateParams{{ID: missing, Data: raw(`{"who":"acme"}`), Priority: &prio}})
			if err != nil || err2 != nil {
				t.Fatal(err, err2)
			}
			same(c.name+": update", j.ID, e1[0], e2[0])
			_, e1, err = s.Resubmit(ctx, []store.ResubmitParams{{ID: j.ID, Data: raw(`{"who":"acme"}`)}})
			_, e2, err2 = s.Resubmit(ctx, []store.ResubmitParams{{ID: missing, Data: raw(`{"who":"acme"}`)}})
			if err != nil || err2 != nil {
				t.Fatal(err, err2)
			}
			same(c.name+": resubmit", j.ID, e1[0], e2[0])
			e1, err = s.Remove(ctx, []int64{j.ID})
			e2, err2 = s.Remove(ctx, []int64{missing})
			if err != nil || err2 != nil {
				t.Fatal(err, err2)
			}
			same(c.name+": remove", j.ID, e1[0], e2[0])
			unchanged(t, c.name+": operations out of reach", before, get(t, s, j.ID))
		}
		// In reach, the same operations act.
		mine := addOne(t, s, store.AddParams{Type: "report", Group: "acme-1"})
		if errs, err := s.Cancel(acme, []int64{mine.ID}); err != nil || errs[0] != nil {
			t.Errorf("acme cancelling its own job: %v, %v", errs, err)
		}
		if jobs, err := s.Get(acme, []int64{mine.ID}); err != nil || jobs[0].ID != mine.ID {
			t.Errorf("acme reading its own job: %+v, %v", jobs, err)
		}
	})

	// A listing and the counts in a reach hold only its jobs, and a page
	// has a cursor only when a job in reach follows.
	t.Run("ListAndStatsInReach", func(t *testing.T) {
		s := open(t)
		var acmeIDs []int64
		for i := range 30 {
			g := "globex-hr"
			if i%10 == 3 {
				g = fmt.Sprintf("acme-%d", i%2)
			}
			j := addOne(t, s, store.AddParams{Type: "t", Group: g})
			if g != "globex-hr" {
				acmeIDs = append(acmeIDs, j.ID)
			}
		}
		addOne(t, s, store.AddParams{Type: "mail.send", Group: "globex-hr"})
		acme := store.WithReach(t.Context(), reachOf(t, []string{"acme-*"}, nil))
		var got []int64
		p := store.ListParams{Limit: 1}
		for range 10 {
			res, err := s.List(acme, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range res.Jobs {
				got = append(got, j.ID)
			}
			if res.Next == 0 {
				break
			}
			p.After = res.Next
		}
		if fmt.Sprint(got) != fmt.Sprint(acmeIDs) {
			t.Errorf("acme's pages list %v, want %v (and no cursor after the last)", got, acmeIDs)
		}
		for _, desc := range []bool{false, true} {
			res, err := s.List(acme, store.ListParams{Groups: []string{"globex-hr"}, Limit: 1, Descending: desc})
			if err != nil || len(res.Jobs) != 0 || res.Next != 0 {
				t.Errorf("acme listing group globex-hr: %v next %d, %v; want nothing and no cursor", ids(res.Jobs), res.Next, err)
			}
		}
		res, err := s.List(acme, store.ListParams{Limit: 2, Descending: true})
		if err != nil || len(res.Jobs) != 2 || res.Jobs[0].ID != acmeIDs[2] || res.Next != acmeIDs[1] {
			t.Errorf("acme's newest two: %v next %d, %v; want %v", ids(res.Jobs), res.Next, err, []int64{acmeIDs[2], acmeIDs[1]})
		}
		mail := store.WithReach(t.Context(), reachOf(t, nil, []string{"mail.*"}))
		res, err = s.List(mail, store.ListParams{Types: []string{"t"}, Limit: 5})
		if err != nil || len(res.Jobs) != 0 || res.Next != 0 {
			t.Errorf("mail.* listing type t: %v next %d, %v; want nothing", ids(res.Jobs), res.Next, err)
		}
		counts, err := s.Stats(acme)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, c := range counts {
			if !strings.HasPrefix(c.Group, "acme-") {
				t.Errorf("acme's counts hold type %q group %q", c.Type, c.Group)
			}
			n += c.Jobs
		}
		if n != int64(len(acmeIDs)) {
			t.Errorf("acme's counts add up to %d, want %d", n, len(acmeIDs))
		}
		if all, err := s.Stats(t.Context()); err != nil || len(all) != 3 {
			t.Errorf("counts without a reach: %v, %v; want 3 rows", all, err)
		}
	})

	// The one change that moves a keyed job to another (type, group): a
	// snooze that renames it. Into a type whose group already has the key,
	// it is refused, as a per-item error that says so, and changes nothing;
	// the rest of the batch goes on.
	t.Run("RenameIntoATakenKey", func(t *testing.T) {
		s := open(t)
		taken := addOne(t, s, store.AddParams{Type: "b", Key: "k", Group: "g", Data: raw(`{"b":1}`)})
		elsewhere := addOne(t, s, store.AddParams{Type: "b", Key: "k", Group: "h"})
		j := start(t, s, store.AddParams{Type: "a", Key: "k", Group: "g"})
		other := start(t, s, store.AddParams{Type: "a2", Key: "k", Group: "h2"})
		before := get(t, s, j.ID)
		errs, err := s.Finish(t.Context(), []store.FinishParams{
			{Lease: lease(j), As: store.Snooze, Rename: "b"},
			{Lease: lease(other), As: store.Snooze, Rename: "b"}, // group h2 has no b/k: fine
		})
		if err != nil {
			t.Fatalf("Finish: %v", err)
		}
		if !errors.Is(errs[0], store.ErrInvalid) || !strings.Contains(fmt.Sprint(errs[0]), `key "k"`) {
			t.Errorf("a rename into a type whose group has the key: %v; want ErrInvalid naming the key", errs[0])
		}
		if errs[1] != nil {
			t.Errorf("a rename into a type whose group lacks the key: %v", errs[1])
		}
		unchanged(t, "a refused rename", before, get(t, s, j.ID))
		unchanged(t, "a refused rename, to the job holding the key", taken, get(t, s, taken.ID))
		unchanged(t, "a refused rename, to the key's job in another group", elsewhere, get(t, s, elsewhere.ID))
		if got := get(t, s, other.ID); got.Type != "b" || got.State != store.Pending {
			t.Errorf("the renamed job: type %q state %v, want b, pending", got.Type, got.State)
		}
	})
}
