package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/rotajobs/rota/store"
)

// adder merges concurrent adds of jobs without keys into shared INSERT
// statements (group commit): a caller that finds fewer than maxAddFlights
// inserts running runs one itself, taking everything queued; the others
// wait for theirs. Nothing waits on a timer, so a lone add goes out at
// once. Adds with keys need their own transaction and do not come here.
type adder struct {
	mu      sync.Mutex
	queue   []*addReq
	flights int
}

const (
	maxAddFlights = 2    // concurrent merged inserts per node
	maxAddBatch   = 5000 // jobs per merged insert
)

type addReq struct {
	jobs     []store.AddParams
	datas    [][]byte
	newTypes []string
	out      []store.AddResult
	err      error
	taken    bool
	done     chan struct{}
}

func (s *Store) addBatched(ctx context.Context, jobs []store.AddParams, datas [][]byte, newTypes []string) ([]store.AddResult, error) {
	r := &addReq{jobs: jobs, datas: datas, newTypes: newTypes, done: make(chan struct{})}
	a := &s.adder
	a.mu.Lock()
	a.queue = append(a.queue, r)
	if a.flights < maxAddFlights {
		a.flights++
		a.mu.Unlock()
		s.flushAdds()
	} else {
		a.mu.Unlock()
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		a.mu.Lock()
		if !r.taken { // not sent: it can be dropped
			for i, q := range a.queue {
				if q == r {
					a.queue = append(a.queue[:i], a.queue[i+1:]...)
					break
				}
			}
			a.mu.Unlock()
			return nil, ctx.Err()
		}
		a.mu.Unlock()
		<-r.done // sent: its outcome is the answer, so that acknowledged means committed
	}
	return r.out, r.err
}

// flushAdds inserts queued adds until the queue is empty; the caller holds
// one of the flights, which it gives back at the end.
func (s *Store) flushAdds() {
	a := &s.adder
	for {
		a.mu.Lock()
		var batch []*addReq
		n := 0
		for len(a.queue) > 0 && (n == 0 || n+len(a.queue[0].jobs) <= maxAddBatch) {
			r := a.queue[0]
			a.queue = a.queue[1:]
			r.taken = true
			batch = append(batch, r)
			n += len(r.jobs)
		}
		if len(batch) == 0 {
			a.flights--
			a.mu.Unlock()
			return
		}
		a.mu.Unlock()
		s.insertMerged(batch, n)
	}
}

func (s *Store) insertMerged(batch []*addReq, n int) {
	jobs := make([]store.AddParams, 0, n)
	datas := make([][]byte, 0, n)
	var types []string
	for _, r := range batch {
		jobs = append(jobs, r.jobs...)
		datas = append(datas, r.datas...)
		types = append(types, r.newTypes...)
	}
	var out []store.AddResult
	// The statement is not tied to any one caller's context: callers that
	// gave up wait for it anyway. A minute bounds that wait if the
	// connection hangs.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := s.autocommit(ctx, "add", func(t *txn) error {
		var err error
		out, err = t.add(jobs, datas, types)
		return err
	})
	for _, r := range batch {
		if err != nil {
			r.err = err
		} else {
			r.out, out = out[:len(r.jobs):len(r.jobs)], out[len(r.jobs):]
		}
		close(r.done)
	}
}
