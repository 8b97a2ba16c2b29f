package remote_test

import (
	"errors"
	"testing"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/remote"
)

// TestAddAfter: a workflow added through a remote client (after by id
// and by key, a policy) waits, runs in order with its dependencies'
// outcomes, and Client.Deps reads its graph over the wire.
func TestAddAfter(t *testing.T) {
	_, url := serve(t)
	c, err := remote.NewClient(url, remote.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	first, err := c.Add(ctx, rota.AddParams{Type: "w"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.AddMany(ctx, []rota.AddParams{
		{Type: "w", Key: "mid", After: []int64{first.Job.ID}},
		{Type: "w", Key: "last", AfterKeys: []string{"mid"}, OnDepFailure: rota.DepRun}})
	if err != nil {
		t.Fatal(err)
	}
	if res[1].Job.State != rota.Waiting || res[1].Job.DepPolicy != rota.DepRun {
		t.Errorf("last: %s, policy %s; want waiting, run", res[1].Job.State, res[1].Job.DepPolicy)
	}
	if err := c.Cancel(ctx, first.Job.ID); err != nil {
		t.Fatal(err)
	}
	mid, err := c.Get(ctx, res[0].Job.ID)
	if err != nil || mid.State != rota.Cancelled {
		t.Fatalf("mid after its dependency's cancel: %s %v, want cancelled", mid.State, err)
	}
	jobs, err := c.Accept(ctx, rota.AcceptParams{Types: []string{"w"}, Limit: 5})
	if err != nil || len(jobs) != 1 || jobs[0].ID != res[1].Job.ID || len(jobs[0].Deps) != 1 || jobs[0].Deps[0].State != rota.Cancelled {
		t.Fatalf("accept: %+v %v, want last with mid's cancel", jobs, err)
	}
	deps, after, err := c.Deps(ctx, res[0].Job.ID, 10)
	if err != nil || len(deps) != 1 || deps[0].ID != first.Job.ID || len(after) != 1 || after[0] != res[1].Job.ID {
		t.Errorf("Deps(mid) = %+v %v %v", deps, after, err)
	}
	if _, err := c.AddMany(ctx, []rota.AddParams{{Type: "w", After: []int64{9999}}}); !errors.Is(err, rota.ErrNotFound) {
		t.Errorf("add after an unknown job: %v, want ErrNotFound", err)
	}
}
