package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/store"
)

// keepAlive is how often an idle event stream gets a comment line, so that
// proxies and clients see the connection is alive.
const keepAlive = 15 * time.Second

// events streams job changes as Server-Sent Events. With ?job=ID it follows
// one job: its current state first, then each change, and an "end" event
// after a terminal state or removal. With ?type=PATTERN (repeatable;
// default all types) it follows every job of matching types until the
// client disconnects.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for name := range q {
		if name != "job" && name != "type" {
			s.writeError(w, r, store.Invalidf("unknown query parameter %q (want job or type)", name))
			return
		}
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		s.writeError(w, r, fmt.Errorf("streaming is not supported by this connection"))
		return
	}
	types := r.URL.Query()["type"] // not split at commas: patterns such as {a,b} have them
	var sub *rota.Subscription
	var err error
	switch jobs := queryList(r, "job"); {
	case len(jobs) > 1 || (len(jobs) == 1 && len(types) > 0):
		err = store.Invalidf("give one job, or type patterns, not both")
	case len(jobs) == 1:
		var id int64
		if id, err = strconv.ParseInt(jobs[0], 10, 64); err != nil || id <= 0 {
			err = store.Invalidf("job %q is not a positive integer", jobs[0])
			break
		}
		sub, err = s.c.Subscribe(r.Context(), id)
	default:
		if len(types) == 0 {
			types = []string{"*"}
		}
		sub, err = s.c.SubscribeTypes(r.Context(), types...)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer sub.Close()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": rota event stream\n\n")
	flusher.Flush()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	var buf []byte
	for seq := 1; ; seq++ {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			flusher.Flush()
			seq--
		case ev, ok := <-sub.C:
			if !ok {
				if r.Context().Err() == nil {
					fmt.Fprintf(w, "id: %d\nevent: end\ndata: {}\n\n", seq)
					flusher.Flush()
				}
				return
			}
			// Write what else is ready too, then flush once: under load,
			// one write per batch of events instead of one per event.
			now := time.Now().UTC()
			for more := true; more; {
				buf = append(buf[:0], "id: "...)
				buf = strconv.AppendInt(buf, int64(seq), 10)
				buf = append(buf, "\nevent: job\ndata: "...)
				if ev.At.IsZero() {
					ev.At = now
				}
				buf = wire.AppendEvent(buf, ev)
				buf = append(buf, "\n\n"...)
				w.Write(buf)
				select {
				case ev, more = <-sub.C:
					if more {
						seq++
					} else {
						flusher.Flush()
						if r.Context().Err() == nil {
							fmt.Fprintf(w, "id: %d\nevent: end\ndata: {}\n\n", seq+1)
							flusher.Flush()
						}
						return
					}
				default:
					more = false
				}
			}
			flusher.Flush()
		}
	}
}
