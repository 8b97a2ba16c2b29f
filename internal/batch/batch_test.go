package batch_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rotajobs/rota/internal/batch"
)

// TestCoalesces checks that callers arriving while a call is in flight
// share the next call, and each gets its own results.
func TestCoalesces(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	b := batch.New(100, time.Minute, func(ctx context.Context, items []int) ([]int, error) {
		mu.Lock()
		sizes = append(sizes, len(items))
		first := len(sizes) == 1
		mu.Unlock()
		if first {
			<-release // hold the first call while others queue
		}
		out := make([]int, len(items))
		for i, x := range items {
			out[i] = x * 10
		}
		return out, nil
	})
	var wg sync.WaitGroup
	results := make([][]int, 11)
	do := func(i int) {
		defer wg.Done()
		res, err := b.Do(t.Context(), i, i+100)
		if err != nil {
			t.Error(err)
		}
		results[i] = res
	}
	wg.Add(1)
	go do(0)
	for { // wait until the first call is in flight
		mu.Lock()
		n := len(sizes)
		mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	for i := 1; i <= 10; i++ {
		wg.Add(1)
		go do(i)
	}
	time.Sleep(20 * time.Millisecond) // let them queue
	close(release)
	wg.Wait()
	for i, res := range results {
		if len(res) != 2 || res[0] != i*10 || res[1] != (i+100)*10 {
			t.Errorf("caller %d got %v, want [%d %d]", i, res, i*10, (i+100)*10)
		}
	}
	if len(sizes) != 2 || sizes[1] != 20 {
		t.Errorf("call sizes %v, want [2 20]: the ten waiting callers share one call", sizes)
	}
}

func TestErrorsAndClose(t *testing.T) {
	boom := errors.New("boom")
	b := batch.New(10, time.Minute, func(ctx context.Context, items []string) ([]string, error) { return nil, boom })
	if _, err := b.Do(t.Context(), "a"); !errors.Is(err, boom) {
		t.Errorf("Do = %v, want the call's error", err)
	}
	short := batch.New(10, time.Minute, func(ctx context.Context, items []string) ([]string, error) { return nil, nil })
	if _, err := short.Do(t.Context(), "a"); err == nil {
		t.Error("a call that answered fewer items than it was given succeeded")
	}
	b.Close()
	if _, err := b.Do(t.Context(), "a"); !errors.Is(err, batch.ErrClosed) {
		t.Errorf("Do after Close = %v, want ErrClosed", err)
	}
}
