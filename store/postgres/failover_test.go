//go:build unix

package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota/internal/pgtest"
	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
)

// TestSilentPrimaryFailover: the primary hangs (every process stopped,
// as a machine that hangs or a network that drops every packet: no
// connection is closed or reset, so nothing tells the store it is gone)
// and the standby is promoted. A store on a multi-host connection string
// moves its LISTEN connection and its sweep leadership to the new
// primary by itself: changes another node makes there wake its watchers
// again, and its sweeps (called as the lease monitor calls them, with a
// context that never ends) go on there. The TestChaosPostgresFailover
// of e2e kills the primary instead, which resets its connections.
func TestSilentPrimaryFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a primary and a standby")
	}
	ctx := t.Context()
	primary := pgtest.Start(t)
	standby := primary.Standby(t, "rota_standby")
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := pgx.Connect(ctx, primary.DSN("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		var n int
		err = c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_replication WHERE application_name = 'rota_standby' AND state = 'streaming'`).Scan(&n)
		c.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the standby does not stream")
		}
		time.Sleep(50 * time.Millisecond)
	}
	dsn := fmt.Sprintf("postgres://rota@127.0.0.1:%s,127.0.0.1:%s/postgres?sslmode=disable&target_session_attrs=read-write&connect_timeout=2", primary.Port, standby.Port)
	st, err := postgres.Open(ctx, dsn, postgres.Config{LeaderRetry: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// Closed after the hung primary is killed (cleanups run last first):
	// before that, a store stuck on it would not close.
	t.Cleanup(func() { st.Close() })
	if _, _, err := st.ExpireLeases(ctx, time.Now()); err != nil || !st.IsLeader() {
		t.Fatalf("the only node does not lead the sweeps: %v", err)
	}
	var woken atomic.Int64 // job ids of type "after" this node's watchers saw
	defer st.Watch(func(evs []store.Event) {
		for _, ev := range evs {
			if ev.Type == "after" && ev.ID > 0 {
				woken.Store(ev.ID)
			}
		}
	})()

	// The lease monitor's loop: sweep, sleep, with a context that ends
	// only with the test.
	var sweeps atomic.Int64
	go func() {
		for ctx.Err() == nil {
			if _, _, err := st.ExpireLeases(ctx, time.Now()); err == nil && st.IsLeader() {
				sweeps.Add(1)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	primary.Freeze(t)
	standby.Promote(t)
	promoted := time.Now()

	newPrimary, err := pgx.Connect(ctx, standby.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer newPrimary.Close(context.Background())
	// Another node, on the new primary only.
	other, err := postgres.Open(ctx, standby.DSN("postgres"), postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	const limit = 45 * time.Second
	var listen, lead int
	var id int64
	before := sweeps.Load()
	for {
		if err := newPrimary.QueryRow(ctx, `SELECT count(*) FILTER (WHERE application_name = 'rota listen'), count(*) FILTER (WHERE application_name = 'rota leader') FROM pg_stat_activity`).Scan(&listen, &lead); err != nil {
			t.Fatal(err)
		}
		// other's own listener is one of them; it never leads while
		// st does, and it never sweeps here.
		if listen == 2 && lead == 1 && sweeps.Load() > before {
			res, err := other.Add(ctx, []store.AddParams{{Type: "after"}})
			if err != nil {
				t.Fatal(err)
			}
			id = res[0].Job.ID
			break
		}
		if time.Since(promoted) > limit {
			t.Fatalf("%v after the promotion, the new primary has %d LISTEN connections (want 2: the store's and the other node's) and %d sweep leaders (want 1), and the store swept %d times there: the store stayed on the hung primary", limit, listen, lead, sweeps.Load()-before)
		}
		time.Sleep(100 * time.Millisecond)
	}
	moved := time.Since(promoted)
	for woken.Load() != id {
		if time.Since(promoted) > limit+10*time.Second {
			t.Fatalf("job %d, added by another node on the new primary, never reached the store's watchers", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("LISTEN and leader on the new primary %v after the promotion; a change there reached the watchers %v after", moved.Round(time.Millisecond), time.Since(promoted).Round(time.Millisecond))
}

// TestListenerSurvivesSilence: after more than 10 s without another
// node's change (the LISTEN connection checks its server every 5 s), a
// live primary keeps its LISTEN session (the checks passed, nothing
// reconnected), and a change another node makes still reaches the
// watchers at once.
func TestListenerSurvivesSilence(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 12 s")
	}
	t.Parallel()
	schema := newSchema(t)
	var logs lockedBuffer
	a := openIn(t, schema, postgres.Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	b := openIn(t, schema, postgres.Config{})
	ctx := t.Context()
	var seen atomic.Int64
	defer a.Watch(func(evs []store.Event) {
		for _, ev := range evs {
			if ev.Type == "quiet" {
				seen.Store(ev.ID)
			}
		}
	})()
	time.Sleep(12 * time.Second)
	if strings.Contains(logs.String(), "LISTEN") {
		t.Errorf("the LISTEN connection reconnected though its server answered:\n%s", logs.String())
	}
	res, err := b.Add(ctx, []store.AddParams{{Type: "quiet"}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for seen.Load() != res[0].Job.ID {
		if time.Now().After(deadline) {
			t.Fatalf("job %d, added by another node after a silence, did not reach the watchers in 5 s", res[0].Job.ID)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lockedBuffer is a bytes.Buffer for a logger's writes from several
// goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
