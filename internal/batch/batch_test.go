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

// answer is a Waiter that sends what it is answered on a channel.
type answer chan struct {
	res int
	err error
}

func (a answer) Answer(res int, err error) {
	a <- struct {
		res int
		err error
	}{res, err}
}

// TestGo: items sent with Go share calls with those of Do, each Waiter
// gets its own item's answer (or the call's error) without its caller
// waiting, and after Close a Waiter is answered ErrClosed at once.
func TestGo(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	boom := errors.New("boom")
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
			if x < 0 {
				return nil, boom
			}
			out[i] = x * 10
		}
		return out, nil
	})
	first := make(answer, 1)
	b.Go(1, first) // returns at once, though its call is held
	for {          // wait until the first call is in flight
		mu.Lock()
		n := len(sizes)
		mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	waiters := make([]answer, 5)
	for i := range waiters {
		waiters[i] = make(answer, 1)
		b.Go(i+2, waiters[i])
	}
	did := make(chan []int, 1)
	go func() {
		res, _ := b.Do(t.Context(), 100, 101)
		did <- res
	}()
	time.Sleep(20 * time.Millisecond) // let Do's items queue
	close(release)
	if a := <-first; a.res != 10 || a.err != nil {
		t.Errorf("first Go answered %d, %v; want 10", a.res, a.err)
	}
	for i, w := range waiters {
		if a := <-w; a.res != (i+2)*10 || a.err != nil {
			t.Errorf("Go of %d answered %d, %v; want %d", i+2, a.res, a.err, (i+2)*10)
		}
	}
	if res := <-did; len(res) != 2 || res[0] != 1000 || res[1] != 1010 {
		t.Errorf("Do beside Go answered %v, want [1000 1010]", res)
	}
	if len(sizes) != 2 || sizes[1] != 7 {
		t.Errorf("call sizes %v, want [1 7]: the items queued meanwhile share one call", sizes)
	}
	failed := make(answer, 1)
	b.Go(-1, failed)
	if a := <-failed; !errors.Is(a.err, boom) {
		t.Errorf("Go of an item whose call failed answered %v, want the call's error", a.err)
	}
	b.Close()
	closed := make(answer, 1)
	b.Go(1, closed)
	select {
	case a := <-closed:
		if !errors.Is(a.err, batch.ErrClosed) {
			t.Errorf("Go after Close answered %v, want ErrClosed", a.err)
		}
	default:
		t.Error("Go after Close did not answer at once")
	}
}
