package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// leader elects the one node that runs the sweeps that must run once. The
// leader holds a session-level advisory lock on a connection of its own and
// runs the sweeps on that connection, so it sweeps only while its session,
// and with it the lock, is alive. When the leader's process dies or its
// connection breaks, PostgreSQL ends the session and releases the lock;
// the other nodes try to take it at their next sweep (at most once per
// Config.LeaderRetry), so one of them takes over.
//
// A leader that stops sweeping (its client closed, the store stays open)
// resigns after a few idle retry periods, so that it does not hold the lock
// for nothing.
//
// Election is for efficiency, not for safety: every sweep locks the rows
// it changes, so two nodes that briefly both believe they lead (one's
// session ended without it noticing yet) still change each job once.
type leader struct {
	s         *Store
	mu        sync.Mutex // held while electing or sweeping
	conn      *pgx.Conn  // holds the lock while non-nil
	lastTry   time.Time
	lastSweep time.Time // when a sweep was last asked for or ended
	idle      *time.Timer
}

func (l *leader) key() int64 { return hash64("leader", l.s.cfg.Schema) }

// sweepTimeout bounds an election and a sweep, which take milliseconds:
// the leader's server may hang, or vanish without closing the connection
// (a machine that hangs, a network that drops packets), and a sweep that
// waited for it would hold the leadership, and this node's sweeps, on a
// server the other nodes have left. A sweep that times out drops the
// connection (lost), and the next one elects again, on whichever server
// the DSN now leads to.
func (l *leader) sweepTimeout() time.Duration { return max(10*time.Second, 10*l.s.cfg.LeaderRetry) }

// acquire returns the leader's connection, trying to become the leader if
// this node is not and has not tried within LeaderRetry. It returns nil
// when another node leads. The caller holds l.mu.
func (l *leader) acquire(ctx context.Context) (*pgx.Conn, error) {
	l.lastSweep = time.Now()
	if l.idle == nil {
		l.idle = time.AfterFunc(time.Hour, l.resignIfIdle)
	}
	l.idle.Reset(5 * l.s.cfg.LeaderRetry)
	if l.conn != nil {
		return l.conn, nil
	}
	if !l.lastTry.IsZero() && time.Since(l.lastTry) < l.s.cfg.LeaderRetry {
		return nil, nil
	}
	l.lastTry = time.Now()
	conn, err := pgx.ConnectConfig(ctx, l.s.sessionConfig("rota leader"))
	if err != nil {
		return nil, err
	}
	var got bool
	if err := conn.QueryRow(ctx, l.s.stmt("leader_lock"), l.key()).Scan(&got); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	if !got {
		conn.Close(context.Background())
		return nil, nil
	}
	l.conn = conn
	// Idleness counts from here: connecting may have taken a while (a
	// host of a multi-host DSN that does not answer costs its
	// connect_timeout), which is not a pause in the sweeps.
	l.lastSweep = time.Now()
	l.s.log.Info("rota postgres: this node now runs the sweeps", "schema", l.s.cfg.Schema)
	return conn, nil
}

// lost drops the leader's connection after an error on it: if the session
// is gone, so is the lock. The caller holds l.mu.
func (l *leader) lost() {
	if l.conn != nil {
		l.conn.Close(context.Background())
		l.conn = nil
		l.lastTry = time.Time{} // try again at the next sweep
	}
}

func (l *leader) resignIfIdle() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return
	}
	if idle := time.Since(l.lastSweep); idle < 5*l.s.cfg.LeaderRetry {
		// A sweep ended since the timer was set: look again when this
		// one has been idle as long.
		l.idle.Reset(5*l.s.cfg.LeaderRetry - idle)
		return
	}
	l.s.log.Info("rota postgres: no sweeps lately; resigning as leader", "schema", l.s.cfg.Schema)
	l.conn.Close(context.Background()) // ends the session, releasing the lock
	l.conn = nil
}

// resign gives up leadership, at Close.
func (l *leader) resign() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.idle != nil {
		l.idle.Stop()
	}
	if l.conn != nil {
		l.conn.Close(context.Background())
		l.conn = nil
	}
}

// IsLeader reports whether this store currently holds the sweep
// leadership.
func (s *Store) IsLeader() bool {
	s.leader.mu.Lock()
	defer s.leader.mu.Unlock()
	return s.leader.conn != nil
}
