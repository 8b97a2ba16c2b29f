package postgres

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota/store"
)

// Watch registers fn to receive committed changes: this store's own after
// each commit, and other nodes' as their notifications arrive.
func (s *Store) Watch(fn func([]store.Event)) func() { return s.feed.Watch(fn) }

func (s *Store) deliver(changes []store.Event) { s.feed.Deliver(changes) }

// committed publishes the changes of a committed transaction of this store:
// to its watchers now, to other nodes through the outbox.
func (s *Store) committed(changes []store.Event) {
	if len(changes) == 0 {
		return
	}
	s.deliver(changes)
	if !s.cfg.NoNotify {
		s.out.add(changes)
	}
}

// ---- payloads ----

// A notification payload is text: a header line "rota1 <node>", then one
// line per record with tab-separated fields (types and groups cannot hold
// control characters, so tabs and newlines never occur inside a field):
//
//	c <id> <state> <removed 0|1> <run_at µs or -> <progress> <type> <group> <lease>
//	h <type>
//
//	p <hello|here|bye>
//
// "c" is a change, "h" a hint that jobs of the type changed, "p" a node's
// presence (see peers), which nodes before it skip. <lease> is the
// change's store.Event.Lease (hex, possibly empty); lines from nodes
// before it was added have no such field. The node "-"
// marks notifications sent inside a caller's transaction, which every node
// (the sender's too) delivers, since the sender could not see the commit.
const (
	payloadHeader = "rota1 "
	maxPayload    = 7900 // PostgreSQL's limit is 8000 bytes
	anyNode       = "-"
)

func encodeChange(b []byte, c store.Event) []byte {
	b = append(b, 'c', '\t')
	b = strconv.AppendInt(b, c.ID, 10)
	b = append(b, '\t')
	b = strconv.AppendInt(b, int64(c.State), 10)
	switch {
	case c.Removed:
		b = append(b, "\t1\t"...)
	case c.Failed: // a run that failed; older nodes read it as not removed
		b = append(b, "\tf\t"...)
	default:
		b = append(b, "\t0\t"...)
	}
	if c.RunAt.IsZero() {
		b = append(b, '-')
	} else {
		b = strconv.AppendInt(b, c.RunAt.UnixMicro(), 10)
	}
	b = append(b, '\t')
	b = strconv.AppendFloat(b, c.Progress, 'g', -1, 64)
	b = append(b, '\t')
	b = append(b, c.Type...)
	b = append(b, '\t')
	b = append(b, c.Group...)
	b = append(b, '\t')
	b = append(b, c.Lease...)
	return append(b, '\n')
}

// encode packs changes into payloads of under maxPayload bytes, at most
// maxPayloads of them; the changes that do not fit become one hint per
// type.
func encode(node string, changes []store.Event, maxPayloads int) []string {
	var out []string
	header := payloadHeader + node + "\n"
	buf := []byte(header)
	var line []byte
	i := 0
	for ; i < len(changes); i++ {
		line = encodeChange(line[:0], changes[i])
		if len(buf)+len(line) > maxPayload {
			if len(out) == maxPayloads-1 {
				break // keep the last payload for hints
			}
			out = append(out, string(buf))
			buf = append(buf[:0], header...)
		}
		buf = append(buf, line...)
	}
	if i < len(changes) {
		var types []string
		for _, c := range changes[i:] {
			types = append(types, c.Type)
		}
		slices.Sort(types)
		for _, typ := range slices.Compact(types) {
			line = append(append(append(line[:0], 'h', '\t'), typ...), '\n')
			if len(buf)+len(line) > maxPayload {
				out = append(out, string(buf))
				buf = append(buf[:0], header...)
			}
			buf = append(buf, line...)
		}
	}
	if len(buf) > len(header) {
		out = append(out, string(buf))
	}
	return out
}

// presenceOf returns the kind of a payload's presence line ("hello",
// "here", "bye"), or "" for a payload of changes.
func presenceOf(payload string) string {
	_, rest, _ := strings.Cut(payload, "\n")
	kind, ok := strings.CutPrefix(rest, "p\t")
	if !ok {
		return ""
	}
	kind, _, _ = strings.Cut(kind, "\n")
	return kind
}

// decode parses a payload; malformed lines are skipped. Hints come back as
// changes with ID 0 and State Pending.
func decode(payload string) (node string, changes []store.Event, ok bool) {
	head, rest, _ := strings.Cut(payload, "\n")
	node, ok = strings.CutPrefix(head, payloadHeader)
	if !ok {
		return "", nil, false
	}
	for line := range strings.SplitSeq(rest, "\n") {
		f := strings.Split(line, "\t")
		switch {
		case len(f) == 2 && f[0] == "h" && f[1] != "":
			changes = append(changes, store.Event{Type: f[1], State: store.Pending})
		case (len(f) == 8 || len(f) == 9) && f[0] == "c":
			id, err1 := strconv.ParseInt(f[1], 10, 64)
			st, err2 := strconv.Atoi(f[2])
			prog, err3 := strconv.ParseFloat(f[5], 64)
			if err1 != nil || err2 != nil || err3 != nil || !store.State(st).Valid() || id <= 0 {
				continue
			}
			c := store.Event{ID: id, State: store.State(st), Removed: f[3] == "1", Failed: f[3] == "f", Progress: prog, Type: f[6], Group: f[7]}
			if len(f) == 9 {
				c.Lease = f[8]
			}
			if f[4] != "-" {
				us, err := strconv.ParseInt(f[4], 10, 64)
				if err != nil {
					continue
				}
				c.RunAt = time.UnixMicro(us).UTC()
			}
			changes = append(changes, c)
		}
	}
	return node, changes, true
}

// notifyInTx sends changes with NOTIFY inside a caller's transaction, so
// that every node (this one too) learns of them when, and only if, the
// transaction commits.
func (t *txn) notifyInTx() error {
	if len(t.changes) == 0 || t.s.cfg.NoNotify {
		return nil
	}
	payloads := encode(anyNode, t.changes, t.s.cfg.NotifyMaxPayloads)
	_, err := t.db.exec(t.ctx, t.s.stmt("notify_in_tx"), t.s.channel, payloads)
	return err
}

// ---- sending ----

// outbox holds changes committed by this store until a sender goroutine
// publishes them. One NOTIFY transaction is in flight at a time: changes
// committed meanwhile wait and go out together with the next one, which
// debounces notifications under load without delaying them when idle.
type outbox struct {
	s       *Store
	mu      sync.Mutex
	pending []store.Event
	kept    []keptChanges // flushed while no other node listened (keep)
	wake    chan struct{}
	closing chan struct{}
	done    chan struct{}
	once    sync.Once
}

func newOutbox(s *Store) *outbox {
	return &outbox{s: s, wake: make(chan struct{}, 1), closing: make(chan struct{}), done: make(chan struct{})}
}

// maxPending bounds the queue: past it only the types matter (the flush
// turns the surplus into hints anyway).
const maxPending = 100_000

func (o *outbox) add(changes []store.Event) {
	o.mu.Lock()
	if len(o.pending) < maxPending {
		o.pending = append(o.pending, changes...)
	}
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

func (o *outbox) run() {
	defer o.s.wg.Done()
	defer close(o.done)
	for {
		select {
		case <-o.wake:
		case <-o.closing:
			o.flush() // committed changes still go out before Close returns
			return
		}
		o.flush()
	}
}

func (o *outbox) flush() {
	now := time.Now()
	batch := o.take(o.s.peers.present(now), now)
	if len(batch) == 0 {
		return
	}
	payloads := encode(o.s.node, batch, o.s.cfg.NotifyMaxPayloads)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Its own statement, after the writes committed: the NOTIFY lock is
	// never held across a writing transaction. It need not wait for the
	// WAL flush: a notification lost in a crash only delays a wake-up.
	if _, err := o.s.pool.Exec(ctx, o.s.stmt("notify"), o.s.channel, payloads); err != nil {
		// Other nodes' acceptors re-poll; a lost notification only
		// delays them.
		o.s.log.Warn("rota postgres: could not notify other nodes", "changes", len(batch), "err", err)
	}
}

// take returns the changes to send now, oldest first: with another node
// present (present), those kept in the last replayWindow, then those
// queued since. Alone, it keeps the queued ones (NOTIFY would only come
// back to this node's own listener: 31% of rota's CPU at 500 jobs/s, and a
// transaction per flush in PostgreSQL) for a node that starts meanwhile.
//
// Kept changes go out in the first send after them, whatever started it
// (a node's hello, the next commit), so that a job's changes reach the
// other nodes in the order they committed here: a commit flushed between
// the moment a node's presence counts and the replay its listener asks for
// would otherwise go out first, and a subscriber there would see the job
// completed, then pending or running again (TestKeptChangesGoOutFirst).
func (o *outbox) take(present bool, now time.Time) []store.Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	batch := o.pending
	o.pending = nil
	if !present {
		if len(batch) > 0 {
			o.keep(batch, now)
		}
		return nil
	}
	var again []store.Event
	for _, k := range o.kept {
		if now.Sub(k.at) <= replayWindow {
			again = append(again, k.changes...)
		}
	}
	o.kept = nil
	if len(again) == 0 {
		return batch
	}
	return append(again, batch...)
}

// replayWindow is how long changes no node was told of are kept for a node
// that announces itself: its hello may reach this node a little after
// changes it should hear of committed here.
const replayWindow = 2 * time.Second

type keptChanges struct {
	at      time.Time
	changes []store.Event
}

// keep holds changes flushed while no other node listened, for the next
// send; the caller holds o.mu.
func (o *outbox) keep(batch []store.Event, now time.Time) {
	i, n := 0, 0
	for i < len(o.kept) && now.Sub(o.kept[i].at) > replayWindow {
		i++
	}
	o.kept = append(o.kept[:0], o.kept[i:]...)
	for _, k := range o.kept {
		n += len(k.changes)
	}
	if n < maxPending {
		o.kept = append(o.kept, keptChanges{now, batch})
	}
}

// replay wakes the sender: a node just announced itself, and may have
// listened when the kept changes committed; the next send carries them
// (take).
func (o *outbox) replay() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

func (o *outbox) close() {
	o.once.Do(func() { close(o.closing) })
}

// ---- listening ----

func (s *Store) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.sessionConfig("rota listen"))
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, s.stmt("listen")); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	// Listening, it says so: other nodes that had no one to notify start
	// to (and send what they kept from the last moments).
	if err := s.announce(ctx, conn, "hello"); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	s.peers.listening(true)
	return conn, nil
}

// ---- presence ----

// peers are the other nodes this node knows to listen on its channel, from
// their presence lines: a node says "hello" when its LISTEN begins (which
// the others answer with "here"), "here" every peerBeat while it listens,
// and "bye" when it closes. Changes go out with NOTIFY only while another
// node is known to listen: a node alone does not notify itself. A node
// that sends changes but no presence (one older than presence) counts for
// olderNodeTTL after its last notification. While this node's own LISTEN
// connection is down it cannot hear the others, and notifies.
type peers struct {
	mu     sync.Mutex
	nodes  map[string]peer
	heard  bool // the LISTEN connection is up: what it hears is all there is
	always bool // NoListen: nothing is heard, so every change is sent
}

type peer struct {
	at       time.Time // last heard
	presence bool      // it sends presence lines
}

const (
	// peerBeat is how often a listening node says "here" (and its LISTEN
	// connection checks its server).
	peerBeat = 5 * time.Second
	// peerTTL is how long a node that says "here" counts without a word.
	peerTTL = 3*peerBeat + time.Second
	// olderNodeTTL is how long a node without presence lines counts after
	// its last notification.
	olderNodeTTL = 10 * time.Minute
)

// listening notes whether this node's LISTEN connection is up.
func (p *peers) listening(up bool) {
	p.mu.Lock()
	p.heard = up
	p.mu.Unlock()
}

// present reports whether another node may listen: changes must go out.
func (p *peers) present(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.always || !p.heard {
		return true
	}
	for node, q := range p.nodes {
		ttl := peerTTL
		if !q.presence {
			ttl = olderNodeTTL
		}
		if now.Sub(q.at) < ttl {
			return true
		}
		delete(p.nodes, node)
	}
	return false
}

// hear notes a notification from node (kind is its presence line, "" for
// changes) and reports whether no other node was known before it.
func (p *peers) hear(node, kind string, now time.Time) (first bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nodes == nil {
		p.nodes = map[string]peer{}
	}
	first = true
	for n, q := range p.nodes {
		ttl := peerTTL
		if !q.presence {
			ttl = olderNodeTTL
		}
		if now.Sub(q.at) < ttl {
			first = false
		} else {
			delete(p.nodes, n)
		}
	}
	q := p.nodes[node]
	switch kind {
	case "bye":
		delete(p.nodes, node)
		return false
	case "":
	default:
		q.presence = true
	}
	q.at = now
	p.nodes[node] = q
	return first
}

// announce sends this node's presence line on conn (the LISTEN
// connection).
func (s *Store) announce(ctx context.Context, conn *pgx.Conn, kind string) error {
	_, err := conn.Exec(ctx, s.stmt("notify"), s.channel, []string{payloadHeader + s.node + "\np\t" + kind + "\n"})
	return err
}

// sayBye tells the other nodes this one stops listening, so that a node
// left alone stops notifying at once.
func (s *Store) sayBye() {
	s.peers.mu.Lock()
	up := s.peers.heard
	s.peers.mu.Unlock()
	if !up {
		return // the database is likely away: the others forget it after peerTTL
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = s.pool.Exec(ctx, s.stmt("notify"), s.channel, []string{payloadHeader + s.node + "\np\tbye\n"})
}

// listenLoop delivers other nodes' notifications until Close, reconnecting
// with back-off when the connection is lost. After a reconnect, whatever
// was sent meanwhile is lost: it reloads the types and wakes every acceptor
// with a hint per known type, so that they look again.
//
// The back-off stops growing at listenRetryMax, so that after a failover
// the listener is on the new primary within about a second of its
// promotion: while the database is away an attempt costs a refused or
// rejected connection a second.
func (s *Store) listenLoop(conn *pgx.Conn) {
	defer s.wg.Done()
	backoff := 50 * time.Millisecond
	failures := 0
	beat := time.Now().Add(peerBeat) // the next check of the server and "here"
	for {
		if conn == nil {
			var err error
			if conn, err = s.listen(s.ctx); err != nil {
				if s.ctx.Err() != nil {
					return
				}
				failures++
				lvl := slog.LevelDebug // the loss was logged; retries are routine
				if failures%8 == 0 {
					lvl = slog.LevelWarn // every few seconds while it lasts
				}
				s.log.Log(s.ctx, lvl, "rota postgres: LISTEN connection failed; retrying", "in", backoff, "failures", failures, "err", err)
				select {
				case <-time.After(backoff):
				case <-s.ctx.Done():
					return
				}
				backoff = min(backoff*2, listenRetryMax)
				continue
			}
			backoff, failures = 50*time.Millisecond, 0
			beat = time.Now().Add(peerBeat)
			s.log.Info("rota postgres: LISTEN connection restored")
			s.afterReconnect()
		}
		if time.Until(beat) <= 0 {
			// Every peerBeat: the server may be gone without closing
			// the connection (a machine that hangs, a network that
			// drops packets), or the session may be on a server that is
			// no longer the primary, where no node notifies. Ask it,
			// then say "here" to the other nodes.
			err := s.checkListener(conn)
			if err == nil {
				err = s.announce(s.ctx, conn, "here")
			}
			if err != nil && s.ctx.Err() == nil {
				// The pool's connections are likely on that server too:
				// drop them all now rather than find each out by a
				// timeout.
				s.pool.Reset()
				s.lost(conn, err)
				conn = nil
				continue
			}
			beat = time.Now().Add(peerBeat)
		}
		wctx, cancel := context.WithDeadline(s.ctx, beat)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil && s.ctx.Err() == nil && wctx.Err() != nil && !conn.IsClosed() {
			continue // time to beat
		}
		if err != nil {
			if s.ctx.Err() != nil {
				conn.Close(context.Background())
				return
			}
			s.lost(conn, err)
			conn = nil
			continue
		}
		s.received(conn, n.Payload)
	}
}

// lost closes the LISTEN connection after err: until another is up, this
// node cannot hear whether others listen, and notifies.
func (s *Store) lost(conn *pgx.Conn, err error) {
	s.peers.listening(false)
	conn.Close(context.Background())
	s.log.Warn("rota postgres: LISTEN connection lost; reconnecting", "err", err)
}

// listenRetryMax is the longest wait between two attempts to reconnect
// the LISTEN connection.
const listenRetryMax = time.Second

// errListenOnStandby is the LISTEN connection's check failing on a
// server in recovery: nodes notify on the primary, so a listener on a
// standby hears nothing.
var errListenOnStandby = errors.New("the LISTEN connection's server is a standby (in recovery); notifications are sent on the primary")

// checkListener checks that the LISTEN connection's server answers, within
// pingTimeout, and is a primary.
func (s *Store) checkListener(conn *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(s.ctx, pingTimeout)
	defer cancel()
	var standby bool
	if err := conn.QueryRow(ctx, s.stmt("in_recovery")).Scan(&standby); err != nil {
		return err
	}
	if standby {
		return errListenOnStandby
	}
	return nil
}

func (s *Store) received(conn *pgx.Conn, payload string) {
	if strings.HasPrefix(payload, payloadHeader+s.node+"\n") {
		return // this store's own, delivered at its commit
	}
	node, changes, ok := decode(payload)
	if !ok {
		return
	}
	if node != anyNode {
		kind := presenceOf(payload)
		if s.peers.hear(node, kind, time.Now()) && !s.cfg.NoNotify {
			s.out.replay() // it may have listened when they committed
		}
		if kind == "hello" {
			ctx, cancel := context.WithTimeout(s.ctx, pingTimeout)
			err := s.announce(ctx, conn, "here")
			cancel()
			if err != nil {
				s.log.Debug("rota postgres: could not answer a node's hello", "err", err)
			}
		}
	}
	if len(changes) == 0 {
		return
	}
	s.learnTypes(changes)
	s.deliver(changes)
}

func (s *Store) afterReconnect() {
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	if err := s.reloadTypes(ctx); err != nil {
		s.log.Warn("rota postgres: could not reload types", "err", err)
	}
	s.typesMu.RLock()
	hints := make([]store.Event, 0, len(s.types))
	for name := range s.types {
		hints = append(hints, store.Event{Type: name, State: store.Pending})
	}
	s.typesMu.RUnlock()
	s.deliver(hints)
}

// learnTypes adds the types of other nodes' changes to the known types, so
// that patterns match them.
func (s *Store) learnTypes(changes []store.Event) {
	s.typesMu.RLock()
	missing := false
	for _, c := range changes {
		if _, ok := s.types[c.Type]; !ok && c.Type != "" {
			missing = true
			break
		}
	}
	s.typesMu.RUnlock()
	if !missing {
		return
	}
	s.typesMu.Lock()
	for _, c := range changes {
		if c.Type != "" {
			s.types[c.Type] = struct{}{}
		}
	}
	s.typesMu.Unlock()
}
