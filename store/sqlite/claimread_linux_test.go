package sqlite

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/rotajobs/rota/store"
)

// BenchmarkReadClaimed measures readClaimed alone, the read of a claimed
// batch's jobs that runs off the writer for every job a drain runs: 256
// jobs a call, as a drain's accepts take; one op is one job. It reports
// the thread's CPU per job beside the wall clock's (the read runs on this
// goroutine's thread, in cgo), and the allocations, which the load does
// not move.
func BenchmarkReadClaimed(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "rota.db"), Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	const batch = 256
	ps := make([]store.AddParams, batch)
	for i := range ps {
		ps[i] = store.AddParams{Type: "bench", Data: []byte(`{"image":"img-000001.png","width":320,"height":240}`)}
	}
	if _, err := s.Add(ctx, ps); err != nil {
		b.Fatal(err)
	}
	res, err := s.Accept(ctx, store.AcceptParams{Types: []string{"bench"}, Limit: batch})
	if err != nil || len(res.Jobs) != batch {
		b.Fatalf("accept: %d jobs, %v", len(res.Jobs), err)
	}
	claimed := make([]store.Job, batch)
	for i, j := range res.Jobs {
		// What the claim knows of each job before the read.
		claimed[i] = store.Job{ID: j.ID, Type: j.Type, Group: j.Group, State: j.State, Token: j.Token, Attempt: j.Attempt,
			LeaseUntil: j.LeaseUntil, StartedAt: j.StartedAt, UpdatedAt: j.UpdatedAt}
	}
	jobs := make([]store.Job, batch)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	cpu0 := threadCPU(b)
	b.ResetTimer()
	for done := 0; done < b.N; done += batch {
		copy(jobs, claimed)
		got, err := s.readClaimed(ctx, jobs, func() {})
		if err != nil || len(got) != batch || string(got[batch-1].Data) != string(ps[0].Data) {
			b.Fatalf("read %d of %d jobs, %v", len(got), batch, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((threadCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
