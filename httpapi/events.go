package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/internal/rules/glob"
	"github.com/rotajobs/rota/store"
)

// keepAlive is how often an idle event stream gets a comment line, so that
// proxies and clients see the connection is alive.
const keepAlive = 15 * time.Second

// MaxReplay bounds how many jobs a resumed event stream replays; a
// client further behind is told to reload ("reset").
const MaxReplay = 10000

// events streams job changes as Server-Sent Events. With ?job=ID it follows
// one job: its current state first, then each change, and an "end" event
// after a terminal state or removal. With ?type=PATTERN (repeatable;
// default all types) it follows every job of matching types until the
// client disconnects, or, for a named token, until the token is revoked
// (a "revoked" event, within TokenCacheTTL). With ?running=false (types
// only) it leaves out jobs starting to run or reporting progress (state
// running, not removed), and with ?completed=false jobs completing (state
// completed, not removed): a remote worker acts only on the other changes,
// and starts and completions are nearly all of a busy stream, sent to
// every worker. Such
// a stream still sends, with each batch of events it flushes, the id of
// the last change it left out, alone (an SSE message with only an id), so
// that a reconnection resumes from there.
//
// Each event's id is the time of the change, in Unix microseconds. A
// client that reconnects with Last-Event-ID gets, before the live changes,
// the current state of every job of its types that changed since then
// (replayed from the store: it may see a change twice, never miss one,
// except removals), or a "reset" event when more than MaxReplay did. A
// client that reads more slowly than changes come is not queued for
// without bound: past the client's SubscriberQueue, its stream ends with a
// "resume" event, and it reconnects with its Last-Event-ID.
func (s *Server) events(r *http.Request, _ int64, _ *none) (answer, error) {
	q := r.URL.Query()
	for name := range q {
		if name != "job" && name != "type" && name != "running" && name != "completed" {
			return answer{}, check.Invalidf("unknown query parameter %q (want job, type, running or completed)", name)
		}
	}
	// leave[state] says the stream leaves out changes to that state
	// (not removals).
	var leave [store.Waiting + 1]bool
	for _, f := range []struct {
		name  string
		state store.State
	}{{"running", store.Running}, {"completed", store.Completed}} {
		v := q[f.name]
		if len(v) == 0 {
			continue
		}
		b, err := strconv.ParseBool(v[0])
		if err != nil || len(v) > 1 {
			return answer{}, check.Invalidf("%s %q is not one boolean (true or false)", f.name, strings.Join(v, ","))
		}
		if !b && q.Has("job") {
			return answer{}, check.Invalidf("%s=false is for streams of types, not of one job (whose first event is its state, whatever it is)", f.name)
		}
		leave[f.state] = !b
	}
	var since time.Time
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		us, err := strconv.ParseInt(v, 10, 64)
		if err != nil || us <= 0 {
			return answer{}, check.Invalidf("Last-Event-ID %q is not an event id this server gave out", v)
		}
		since = time.UnixMicro(us)
	}
	types := r.URL.Query()["type"] // not split at commas: patterns such as {a,b} have them
	var sub *rota.Subscription
	var err error
	switch jobs := queryList(r, "job"); {
	case len(jobs) > 1 || (len(jobs) == 1 && len(types) > 0):
		err = check.Invalidf("give one job, or type patterns, not both")
	case len(jobs) == 1:
		var id int64
		if id, err = strconv.ParseInt(jobs[0], 10, 64); err != nil || id <= 0 {
			err = check.Invalidf("job %q is not a positive integer", jobs[0])
			break
		}
		if err = s.reach(r, id); err == nil {
			sub, err = s.c.Subscribe(r.Context(), id)
		}
		since = time.Time{} // its first event is its current state
	default:
		if len(types) == 0 {
			types = []string{"*"}
		}
		sub, err = s.c.SubscribeTypes(r.Context(), types...)
	}
	if err != nil {
		return answer{}, err
	}
	return answer{write: func(w http.ResponseWriter) {
		defer sub.Close()
		s.stream(w, r, sub, eventFilter{types: types, leave: leave, since: since})
	}}, nil
}

// eventFilter is what an event stream leaves out, and where it starts.
type eventFilter struct {
	types []string                // the patterns asked for (none for one job's stream)
	leave [store.Waiting + 1]bool // changes to these states are left out (not removals)
	since time.Time               // replay the changes since then first (zero: none)
}

// stream sends sub's changes as Server-Sent Events until the client goes,
// the subscription ends or the token is revoked.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, sub *rota.Subscription, f eventFilter) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		s.writeError(w, r, fmt.Errorf("streaming is not supported by this connection"))
		return
	}
	types, leave, since := f.types, f.leave, f.since
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": rota event stream\n\n")
	var buf []byte
	a := accessOf(r)
	// mark is the id of a change left out since the last id sent (0: none).
	// Before each flush the client is sent it alone, so that a
	// reconnection (or a client's switch to a stream without filters)
	// resumes from here, not from its last event, which may be long ago on
	// a stream that leaves out nearly everything: the replay between would
	// be too much to send.
	var mark int64
	write := func(ev store.Event) {
		if !a.reaches(ev.Type, ev.Group) {
			return // another tenant's change
		}
		if !ev.Removed && int(ev.State) < len(leave) && leave[ev.State] {
			mark = ev.At.UnixMicro()
			return
		}
		mark = 0
		buf = append(buf[:0], "id: "...)
		buf = strconv.AppendInt(buf, ev.At.UnixMicro(), 10)
		buf = append(buf, "\nevent: job\ndata: "...)
		buf = wire.AppendEvent(buf, ev)
		buf = append(buf, "\n\n"...)
		w.Write(buf)
	}
	flush := func() {
		if mark != 0 {
			buf = append(buf[:0], "id: "...)
			buf = strconv.AppendInt(buf, mark, 10)
			buf = append(buf, "\n\n"...)
			w.Write(buf)
			mark = 0
		}
		flusher.Flush()
	}
	if !since.IsZero() {
		// The subscription is registered already, so that nothing changes
		// unseen between this read and the live events.
		if err := s.replay(r, types, since, write); err != nil {
			if errors.Is(err, errTooMuchToReplay) {
				fmt.Fprint(w, "event: reset\ndata: {\"reason\":\"more changes than can be replayed: read the jobs again\"}\n\n")
			} else {
				s.log.Warn("event stream: replay failed", "err", err)
				fmt.Fprint(w, "event: reset\ndata: {\"reason\":\"the changes could not be replayed: read the jobs again\"}\n\n")
			}
		}
	}
	flush()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	valid, stop := s.whileValid(r)
	defer stop()
	end := func() {
		if r.Context().Err() != nil {
			return
		}
		if errors.Is(sub.Err(), rota.ErrFellBehind) {
			// No id: the client's Last-Event-ID stays its last change.
			fmt.Fprint(w, "event: resume\ndata: {\"reason\":\"the client fell behind; reconnect with Last-Event-ID to resume\"}\n\n")
		} else {
			fmt.Fprint(w, "event: end\ndata: {}\n\n")
		}
		flusher.Flush()
	}
	for {
		select {
		case <-valid.Done():
			if revoked(valid) && r.Context().Err() == nil {
				// The token was revoked: no more of its changes. The client
				// that reconnects is refused (403).
				fmt.Fprint(w, "event: revoked\ndata: {\"reason\":\"the token was revoked (or is no longer valid)\"}\n\n")
				flusher.Flush()
			}
			return
		case <-tick.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			flusher.Flush()
		case ev, ok := <-sub.C:
			if !ok {
				end()
				return
			}
			// Write what else is ready too, then flush once: under load,
			// one write per batch of events instead of one per event.
			now := time.Now().UTC()
			for more := true; more; {
				if ev.At.IsZero() {
					ev.At = now
				}
				write(ev)
				select {
				case ev, more = <-sub.C:
					if !more {
						flush()
						end()
						return
					}
				default:
					more = false
				}
			}
			flush()
		}
	}
}

var errTooMuchToReplay = errors.New("too many changes to replay")

// replay writes the current state of the jobs of the types matching
// patterns that changed since then, oldest id first.
func (s *Server) replay(r *http.Request, patterns []string, since time.Time, write func(store.Event)) error {
	var pats []glob.Pattern
	for _, p := range patterns {
		c, err := check.CompilePattern(p)
		if err != nil {
			return err
		}
		pats = append(pats, c)
	}
	tcs, err := s.c.TypeConfigs(r.Context())
	if err != nil {
		return err
	}
	names := glob.MatchTypes(pats, func(yield func(string) bool) {
		for _, tc := range tcs {
			if !yield(tc.Type) {
				return
			}
		}
	})
	if len(names) == 0 {
		return nil
	}
	var jobs []store.Job
	p := store.ListParams{Types: names, UpdatedSince: since, Limit: store.MaxListLimit}
	for {
		res, err := s.c.List(r.Context(), p)
		if err != nil {
			return err
		}
		jobs = append(jobs, res.Jobs...)
		if len(jobs) > MaxReplay {
			return errTooMuchToReplay
		}
		if res.Next == 0 {
			break
		}
		p.After = res.Next
	}
	slices.SortStableFunc(jobs, func(a, b store.Job) int { return a.UpdatedAt.Compare(b.UpdatedAt) })
	for _, j := range jobs {
		write(store.Event{ID: j.ID, Type: j.Type, Group: j.Group, State: j.State, Progress: j.Progress,
			RunAt: j.RunAt, Lease: store.LeaseTag(j.Token), At: j.UpdatedAt})
	}
	return nil
}
