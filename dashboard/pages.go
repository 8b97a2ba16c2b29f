package dashboard

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/internal/rules/glob"
	"github.com/rotajobs/rota/internal/rules/schedule"
	"github.com/rotajobs/rota/store"
)

// ---- overview ----

// statsCache shares one count of the jobs among every open overview for a
// couple of seconds: a count reads every job (0.6 s for a million jobs on
// SQLite), and live pages ask again at each change.
// A count is reused while no job has changed since, or for statsTTL; the
// pages ask once more after the changes stop, so that what they show ends
// up current.
type statsCache struct {
	mu      sync.Mutex
	at      time.Time
	version uint64 // the activity's, when counted
	counts  []rota.Count
}

const statsTTL = 2 * time.Second

func (c *statsCache) get(ctx context.Context, rc *rota.Client, version uint64) ([]rota.Count, error) {
	c.mu.Lock() // one count at a time; the others wait for it
	defer c.mu.Unlock()
	if !c.at.IsZero() && (c.version == version || time.Since(c.at) < statsTTL) {
		return c.counts, nil
	}
	// Every job's counts, whoever asks first: they are shared, and each
	// page keeps those its token reaches.
	counts, err := rc.Stats(store.WithReach(ctx, nil))
	if err != nil {
		return nil, err
	}
	c.counts, c.at, c.version = counts, time.Now(), version
	return counts, nil
}

// countRow is one type and group's jobs by state.
type countRow struct {
	Type, Group string
	ByState     [7]int64
	Total       int64
}

// typeLatency is how long the due job of a type that has waited longest
// has waited since it became due: a job not yet due (a daily job due
// tomorrow) is not waiting.
type typeLatency struct {
	Type string
	Due  time.Time
	Wait time.Duration
	ID   int64
}

// workerRow is a worker holding leases.
type workerRow struct {
	Worker        string
	Jobs          int
	LeaseUntil    time.Time
	LastHeartbeat time.Time
}

// latencyScan is how many of a type's oldest pending jobs the overview
// reads to find the one due longest ago.
const latencyScan = 200

type overviewData struct {
	Rows    []countRow
	Totals  [7]int64
	Total   int64 // every job in reach
	States  []string
	Latency []typeLatency
	Workers []workerRow
	Chart   chart
	Empty   bool
}

func (s *Server) overviewData(r *http.Request) (overviewData, error) {
	u := userOf(r)
	ctx := r.Context()
	counts, err := s.counts.get(ctx, s.c, s.act.changes())
	if err != nil {
		return overviewData{}, err
	}
	d := overviewData{States: stateNames()}
	index := map[[2]string]int{}
	var types []string
	for _, c := range counts {
		if !u.Access.Reaches(c.Type, c.Group) {
			continue
		}
		k := [2]string{c.Type, c.Group}
		i, ok := index[k]
		if !ok {
			i = len(d.Rows)
			index[k] = i
			d.Rows = append(d.Rows, countRow{Type: c.Type, Group: c.Group})
			if !slices.Contains(types, c.Type) {
				types = append(types, c.Type)
			}
		}
		d.Rows[i].ByState[c.State] += c.Jobs
		d.Rows[i].Total += c.Jobs
		d.Totals[c.State] += c.Jobs
	}
	d.Empty = len(d.Rows) == 0
	// The due job of each type that became due first, among its oldest
	// pending jobs (the lowest ids: ids grow with time), one indexed read
	// per type.
	now := time.Now()
	for _, t := range types {
		if len(d.Latency) >= 50 {
			break
		}
		res, err := s.c.List(ctx, rota.ListParams{Types: []string{t}, States: []rota.State{rota.Pending}, Limit: latencyScan})
		if err != nil {
			return d, err
		}
		var l typeLatency
		for _, j := range res.Jobs {
			if u.Access.Reaches(j.Type, j.Group) && !j.RunAt.After(now) && (l.ID == 0 || j.RunAt.Before(l.Due)) {
				l = typeLatency{Type: t, Due: j.RunAt, Wait: now.Sub(j.RunAt).Truncate(time.Second), ID: j.ID}
			}
		}
		if l.ID != 0 {
			d.Latency = append(d.Latency, l)
		}
	}
	slices.SortFunc(d.Latency, func(a, b typeLatency) int { return a.Due.Compare(b.Due) })
	// Workers: who holds leases now, from the running jobs.
	res, err := s.c.List(ctx, rota.ListParams{States: []rota.State{rota.Running}, Limit: store.MaxListLimit})
	if err != nil {
		return d, err
	}
	byWorker := map[string]*workerRow{}
	for _, j := range res.Jobs {
		if !u.Access.Reaches(j.Type, j.Group) {
			continue
		}
		name := cmp.Or(j.Worker, "(unnamed)")
		w := byWorker[name]
		if w == nil {
			w = &workerRow{Worker: name}
			byWorker[name] = w
		}
		w.Jobs++
		if w.LeaseUntil.IsZero() || j.LeaseUntil.Before(w.LeaseUntil) {
			w.LeaseUntil = j.LeaseUntil
		}
		if j.UpdatedAt.After(w.LastHeartbeat) {
			w.LastHeartbeat = j.UpdatedAt
		}
	}
	for _, w := range byWorker {
		d.Workers = append(d.Workers, *w)
	}
	slices.SortFunc(d.Workers, func(a, b workerRow) int { return cmp.Compare(a.Worker, b.Worker) })
	d.Chart = newChart(s.act.lastHour(u.Access.Reaches))
	d.Total = d.Totals[0] + d.Totals[1] + d.Totals[2] + d.Totals[3] + d.Totals[4] + d.Totals[5] + d.Totals[6]
	return d, nil
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	d, err := s.overviewData(r)
	if err != nil {
		s.fail(w, r, "Overview", err)
		return
	}
	s.render(w, r, http.StatusOK, "overview", view{Title: "Overview", Nav: "overview", Data: d})
}

// overviewFragment is the live part of the overview, which the page
// fetches again when the stream says something changed.
func (s *Server) overviewFragment(w http.ResponseWriter, r *http.Request) {
	d, err := s.overviewData(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	s.render(w, r, http.StatusOK, "overview-live", view{Data: d})
}

// stream tells a page that jobs changed, at most twice a second: the page
// then fetches what it shows again. Server-Sent Events from the change
// feed; no page polls.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported", http.StatusInternalServerError)
		return
	}
	wake, release := s.act.wake(userOf(r).Access.Reaches)
	defer release()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": rota dashboard\n\n")
	flusher.Flush()
	tick := time.NewTicker(20 * time.Second)
	defer tick.Stop()
	// The session is checked again as often as the token cache forgets:
	// a stream ends with its session (signed out, or its token revoked).
	check := time.NewTicker(httpapi.TokenCacheTTL)
	defer check.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-check.C:
			if u, err := s.signIn(r); u == nil && (err == nil || errors.Is(err, errSessionEnded)) {
				fmt.Fprint(w, "event: signed-out\ndata: {}\n\n")
				flusher.Flush()
				return
			}
			continue
		case <-tick.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		case <-wake:
			fmt.Fprint(w, "event: changed\ndata: {}\n\n")
			flusher.Flush()
			select {
			case <-time.After(500 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
		flusher.Flush()
	}
}

// chart is an SVG drawing of the last hour, per minute.
type chart struct {
	Width, Height int
	Series        []series
	Max           int64
	Total         [4]int64
	// From is when the counts start: an hour ago, or when the server
	// started if that is later (Partial), so that the legend says what
	// the chart covers.
	From    time.Time
	Partial bool
	End     time.Time
}

type series struct {
	Name, Class string
	Points      string // SVG polyline points
	Total       int64
}

func newChart(pts []point, from time.Time) chart {
	c := chart{Width: 600, Height: 120, From: from, Partial: from.After(pts[0].At), End: pts[len(pts)-1].At.Add(time.Minute)}
	for _, p := range pts {
		c.Max = max(c.Max, p.Queued, p.Started, p.Completed, p.Failed)
		c.Total[0] += p.Queued
		c.Total[1] += p.Started
		c.Total[2] += p.Completed
		c.Total[3] += p.Failed
	}
	scale := float64(c.Height-10) / float64(max(c.Max, 1))
	// The chart spans the minutes counted: none before the counts start.
	drawn := pts
	for len(drawn) > 1 && drawn[0].At.Before(from.Truncate(time.Minute)) {
		drawn = drawn[1:]
	}
	get := []func(point) int64{
		func(p point) int64 { return p.Queued }, func(p point) int64 { return p.Started },
		func(p point) int64 { return p.Completed }, func(p point) int64 { return p.Failed },
	}
	for i, name := range []string{"queued", "started", "completed", "failed"} {
		var b strings.Builder
		for k, p := range drawn {
			y := float64(c.Height) - 5 - float64(get[i](p))*scale
			if len(drawn) == 1 { // one minute counted: it spans the chart
				fmt.Fprintf(&b, "0,%.1f %d,%.1f", y, c.Width, y)
				break
			}
			x := float64(k) * float64(c.Width) / float64(len(drawn)-1)
			fmt.Fprintf(&b, "%.1f,%.1f ", x, y)
		}
		c.Series = append(c.Series, series{Name: name, Class: "s-" + name, Points: strings.TrimSpace(b.String()), Total: c.Total[i]})
	}
	return c
}

func stateNames() []string {
	var out []string
	for st := rota.Pending; st.Valid(); st++ {
		out = append(out, st.String())
	}
	return out
}

// ---- job list ----

// filter is the job list's query string: what to show and where from.
type filter struct {
	Type, Group, Q string
	Since, TZ      string // changed since (datetime-local), in the browser's zone
	States         []string
	Priority       string
	Order          string // "" (newest first) or "asc"
	Cursor         int64
	Limit          int
}

func parseFilter(q url.Values) filter {
	f := filter{Type: strings.TrimSpace(q.Get("type")), Group: q.Get("group"), Q: strings.TrimSpace(q.Get("q")),
		Since: q.Get("since"), TZ: q.Get("tz"),
		States: q["state"], Priority: q.Get("priority"), Order: q.Get("order"), Limit: 50}
	f.Cursor, _ = strconv.ParseInt(q.Get("cursor"), 10, 64)
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 && n <= store.MaxListLimit {
		f.Limit = n
	}
	return f
}

// query is the filter as a query string, with the cursor given.
func (f filter) query(cursor int64) string {
	q := url.Values{}
	for k, v := range map[string]string{"type": f.Type, "group": f.Group, "q": f.Q, "priority": f.Priority, "order": f.Order,
		"since": f.Since, "tz": f.TZ} {
		if v != "" {
			q.Set(k, v)
		}
	}
	for _, st := range f.States {
		q.Add("state", st)
	}
	if f.Limit != 50 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if cursor != 0 {
		q.Set("cursor", strconv.FormatInt(cursor, 10))
	}
	return q.Encode()
}

// Has reports whether the state is selected.
func (f filter) Has(state string) bool { return slices.Contains(f.States, state) }

// Filtered reports whether any filter is set.
func (f filter) Filtered() bool {
	return f.Type != "" || f.Group != "" || f.Q != "" || len(f.States) > 0 || f.Priority != "" || f.Since != ""
}

// listQuery is what a filter selects: the store's list parameters, and
// what the store's listing cannot check (the priority). The jobs page and
// a bulk action by filter both build it here, so that a bulk action acts
// on exactly the jobs the page shows.
type listQuery struct {
	rota.ListParams
	priority *int
}

// keeps reports whether the query selects a job the store listed, and the
// token reaches it.
func (q listQuery) keeps(j rota.Job, a httpapi.Access) bool {
	return a.Reaches(j.Type, j.Group) && (q.priority == nil || j.Priority == *q.priority)
}

// query turns the filter into a listQuery: a type pattern becomes the
// known types it matches.
func (s *Server) query(r *http.Request, f filter) (listQuery, error) {
	q := listQuery{ListParams: rota.ListParams{Limit: f.Limit, After: f.Cursor, Descending: f.Order != "asc"}}
	p := &q.ListParams
	if f.Type != "" {
		pat, err := check.CompilePattern(f.Type)
		if err != nil {
			return q, err
		}
		if pat.Literal() {
			p.Types = []string{f.Type}
		} else {
			tcs, err := s.c.TypeConfigs(r.Context())
			if err != nil {
				return q, err
			}
			for _, tc := range tcs {
				if pat.Match(tc.Type) {
					p.Types = append(p.Types, tc.Type)
				}
			}
			if len(p.Types) == 0 {
				p.Types = []string{"\x00none"} // matches no type
			}
		}
	}
	if f.Group != "" {
		p.Groups = []string{f.Group}
	}
	if f.Since != "" {
		t, err := parseLocalTime(f.Since, f.TZ)
		if err != nil {
			return q, err
		}
		p.UpdatedSince = t
	}
	for _, name := range f.States {
		st, err := rota.ParseState(name)
		if err != nil {
			return q, err
		}
		p.States = append(p.States, st)
	}
	if f.Priority != "" {
		v, err := strconv.Atoi(strings.TrimSpace(f.Priority))
		if err != nil {
			return q, fmt.Errorf("%w: priority %q is not a whole number", rota.ErrInvalid, f.Priority)
		}
		q.priority = &v
	}
	return q, nil
}

type jobsData struct {
	Filter    filter
	Counts    map[string]int64 // jobs by state, of the type and group filtered, in reach
	Jobs      []rota.Job
	Next      string
	First     string
	States    []string
	Note      string
	Tasks     []*bulkTask
	CanAct    bool
	AllFilter string
	// Failed is the Failed page: the failed jobs, a dead-letter list to
	// retry or remove (Path is /failed rather than /jobs).
	Failed bool
	Path   string
}

func (s *Server) jobs(w http.ResponseWriter, r *http.Request) { s.jobList(w, r, false) }

// failed lists the failed jobs, which are kept until removed (unless their
// type sets a failed retention): people triage them, retrying or removing
// them in bulk.
func (s *Server) failed(w http.ResponseWriter, r *http.Request) { s.jobList(w, r, true) }

func (s *Server) jobList(w http.ResponseWriter, r *http.Request, failed bool) {
	u := userOf(r)
	f := parseFilter(r.URL.Query())
	path, title, nav := "/jobs", "Jobs", "jobs"
	if failed {
		f.States = []string{rota.Failed.String()}
		path, title, nav = "/failed", "Failed jobs", "failed"
	}
	d := jobsData{Filter: f, States: stateNames(), First: path + "?" + f.query(0), CanAct: !u.Access.ReadOnly(), AllFilter: f.query(0),
		Failed: failed, Path: path}
	// A search: an id opens the job; type:key finds a job by key.
	if f.Q != "" {
		if id, err := strconv.ParseInt(strings.TrimPrefix(f.Q, "#"), 10, 64); err == nil && id > 0 {
			http.Redirect(w, r, fmt.Sprintf("/jobs/%d", id), http.StatusSeeOther)
			return
		}
		if typ, key, ok := strings.Cut(f.Q, ":"); ok {
			// A key is unique within a type and a group: the filter's
			// group (the default group when none).
			j, err := s.c.GetByKey(r.Context(), typ, f.Group, key)
			if err == nil && u.Access.Reaches(j.Type, j.Group) {
				http.Redirect(w, r, fmt.Sprintf("/jobs/%d", j.ID), http.StatusSeeOther)
				return
			}
			d.Note = fmt.Sprintf("No job of type %q in group %q has the key %q.", typ, f.Group, key)
		} else {
			d.Note = fmt.Sprintf("Search takes a job id (1234) or a type and key (email.send:welcome-42); %q is neither. To search job data, filter by type and open the jobs.", f.Q)
		}
		s.render(w, r, http.StatusOK, "jobs", view{Title: title, Nav: nav, Data: d})
		return
	}
	q, err := s.query(r, f)
	if err != nil {
		s.render(w, r, http.StatusBadRequest, "jobs", view{Title: title, Nav: nav, Error: err.Error(), Data: d})
		return
	}
	// The store lists only the jobs the token reaches (the request carries
	// its reach), so the next page is offered only when one of them
	// follows; a priority filter may leave a page short.
	res, err := s.c.List(r.Context(), q.ListParams)
	if err != nil {
		s.fail(w, r, title, err)
		return
	}
	for _, j := range res.Jobs {
		if q.keeps(j, u.Access) {
			d.Jobs = append(d.Jobs, j)
		}
	}
	if res.Next != 0 {
		d.Next = path + "?" + f.query(res.Next)
	}
	if d.Counts, err = s.stateCounts(r, f); err != nil {
		s.fail(w, r, "Jobs", err)
		return
	}
	d.Tasks = s.bulk.recent(u.Token)
	s.render(w, r, http.StatusOK, "jobs", view{Title: title, Nav: nav, Data: d, Notice: notice(r)})
}

// stateCounts counts the jobs of each state that the filter's type (a name
// or pattern) and group select, among those the token reaches: the counts
// beside the state filters. They come from the overview's shared count,
// so a page costs no count of its own while jobs do not change.
func (s *Server) stateCounts(r *http.Request, f filter) (map[string]int64, error) {
	u := userOf(r)
	counts, err := s.counts.get(r.Context(), s.c, s.act.changes())
	if err != nil {
		return nil, err
	}
	var pat glob.Pattern
	if f.Type != "" {
		if pat, err = check.CompilePattern(f.Type); err != nil {
			return nil, err
		}
	}
	out := map[string]int64{}
	for _, c := range counts {
		if !u.Access.Reaches(c.Type, c.Group) || (f.Type != "" && !pat.Match(c.Type)) || (f.Group != "" && c.Group != f.Group) {
			continue
		}
		out[c.State.String()] += c.Jobs
	}
	return out, nil
}

// ---- one job ----

type jobData struct {
	Job      rota.Job
	Data     string
	Result   string
	Children []rota.Job
	Workflow *workflow
	Next     []time.Time
	LeaseTag string
	CanAct   bool
	Ended    bool
	Opened   time.Time // when the page was drawn: its history starts then
	// Logs is the first page of the log of the attempt the page shows
	// (?attempt=N, the latest that logged by default), LogDropped what
	// that attempt dropped, and LogError why it could not be read.
	Logs       rota.LogsResult
	LogDropped int
	LogError   string
	// History is the job's history and audit trail (Client.History);
	// HistoryErr says why it could not be read.
	History    []rota.HistoryEntry
	HistoryErr string
	// Removed: the job has no row, and the page shows its history only.
	Removed bool
}

func (s *Server) job(w http.ResponseWriter, r *http.Request) {
	u := userOf(r)
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.render(w, r, http.StatusBadRequest, "error", view{Title: "Job", Error: fmt.Sprintf("%q is not a job id: ids are positive integers.", r.PathValue("id"))})
		return
	}
	j, err := s.c.Get(r.Context(), id)
	if err == nil && !u.Access.Reaches(j.Type, j.Group) {
		err = check.NotFound(id) // as a missing job, word for word
	}
	if errors.Is(err, rota.ErrNotFound) {
		// A removed job's page is its history while the audit trail
		// keeps it (the store answers one out of reach as missing).
		if h, herr := s.c.History(r.Context(), id); herr == nil {
			d := jobData{Job: rota.Job{ID: id}, Removed: true, History: h}
			s.render(w, r, http.StatusOK, "job", view{Title: fmt.Sprintf("Job %d (removed)", id), Nav: "jobs", Data: d})
			return
		}
	}
	if err != nil {
		s.fail(w, r, fmt.Sprintf("Job %d", id), err)
		return
	}
	d := jobData{Job: j, Data: pretty(j.Data), Result: pretty(j.Result), LeaseTag: store.LeaseTag(j.Token),
		CanAct: !u.Access.ReadOnly(), Ended: j.State.Terminal(), Opened: time.Now()}
	d.Logs, d.LogDropped, d.LogError = s.jobLogs(r, j.ID)
	if d.History, err = s.c.History(r.Context(), j.ID); err != nil {
		d.HistoryErr = err.Error()
	}
	if j.HasChildren {
		res, err := s.c.List(r.Context(), rota.ListParams{Parent: j.ID, Limit: 100})
		if err == nil {
			d.Children = res.Jobs
		}
	}
	d.Workflow = workflowOf(r.Context(), s.c, j.ID)
	if j.Schedule != "" {
		if sch, err := schedule.Parse(j.Schedule); err == nil {
			t := cmp.Or(j.Slot, j.RunAt)
			if j.State == rota.Pending {
				d.Next = append(d.Next, j.RunAt)
				t = j.RunAt
			}
			for len(d.Next) < 5 {
				n := sch.After(t, t)
				if !n.After(t) {
					break
				}
				d.Next, t = append(d.Next, n), n
			}
		}
	}
	s.render(w, r, http.StatusOK, "job", view{Title: fmt.Sprintf("Job %d", id), Nav: "jobs", Data: d, Notice: notice(r)})
}

// jobLogs reads the first page of the log of the attempt the job page
// asks for (?attempt=N; the latest that logged by default), with the
// records that attempt dropped, or says why it cannot.
func (s *Server) jobLogs(r *http.Request, id int64) (rota.LogsResult, int, string) {
	p := rota.LogsParams{ID: id}
	if v := r.URL.Query().Get("attempt"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return rota.LogsResult{}, 0, fmt.Sprintf("%q is not an attempt: attempts are positive integers.", v)
		}
		p.Attempt = n
	}
	res, err := s.c.Logs(r.Context(), p)
	if errors.Is(err, rota.ErrNoLogs) {
		return res, 0, "This store keeps no per-job logs."
	}
	if err != nil {
		return res, 0, "The log could not be read: " + err.Error()
	}
	for _, a := range res.Attempts {
		if a.Attempt == res.Attempt {
			return res, a.Dropped, ""
		}
	}
	return res, 0, ""
}

func pretty(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	var out strings.Builder
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	enc := json.NewEncoder(&out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimSpace(out.String())
}

// jobAction applies an action of the job page: the engine's operation,
// under its own rules (a finished job cannot be cancelled, …), whose
// error, if any, the page shows.
func (s *Server) jobAction(w http.ResponseWriter, r *http.Request) {
	u := userOf(r)
	ctx := r.Context()
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.render(w, r, http.StatusBadRequest, "error", view{Title: "Job", Error: fmt.Sprintf("%q is not a job id", r.PathValue("id"))})
		return
	}
	j, err := s.c.Get(ctx, id)
	if err == nil && !u.Access.Reaches(j.Type, j.Group) {
		err = check.NotFound(id) // as a missing job, word for word
	}
	if err != nil {
		s.fail(w, r, fmt.Sprintf("Job %d", id), err)
		return
	}
	action := r.PathValue("action")
	switch action {
	case "cancel":
		err = s.c.Cancel(ctx, id)
	case "retry":
		// Run again now: a pending job moves to now, a running one runs
		// again after its run, an ended one is pending again.
		_, err = s.c.Resubmit(ctx, rota.ResubmitParams{ID: id, RunNow: true})
	case "reschedule":
		var at time.Time
		if at, err = parseLocalTime(r.PostFormValue("run_at"), r.PostFormValue("tz")); err == nil {
			_, err = s.c.Update(ctx, rota.UpdateParams{ID: id, RunAt: at})
		}
	case "edit":
		data := json.RawMessage(strings.TrimSpace(r.PostFormValue("data")))
		if !json.Valid(data) {
			err = fmt.Errorf("%w: the data is not valid JSON", rota.ErrInvalid)
		} else {
			_, err = s.c.Update(ctx, rota.UpdateParams{ID: id, Data: data})
		}
	case "remove":
		if err = s.c.Remove(ctx, id); err == nil {
			http.Redirect(w, r, "/jobs?done=remove", http.StatusSeeOther)
			return
		}
	default:
		s.render(w, r, http.StatusNotFound, "error", view{Title: "Job", Error: fmt.Sprintf("%q is not an action on a job (cancel, retry, reschedule, edit, remove)", action)})
		return
	}
	if err != nil {
		s.fail(w, r, fmt.Sprintf("Job %d: %s", id, action), err)
		return
	}
	http.Redirect(w, r, fmt.Sprintf("/jobs/%d?done=%s", id, action), http.StatusSeeOther)
}

// parseLocalTime reads a datetime-local form value in the browser's time
// zone (tz, an IANA name the page sends along; UTC when absent).
func parseLocalTime(v, tz string) (time.Time, error) {
	loc := time.UTC
	if tz != "" {
		if l, err := time.LoadLocation(tz); err == nil {
			loc = l
		}
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339} {
		if t, err := time.ParseInLocation(layout, v, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: %q is not a date and time", rota.ErrInvalid, v)
}

// ---- types and groups ----

type typesData struct {
	Types   []typeRow
	CanEdit bool
}

// typeRow is a type's settings and, when it has a rate, its due jobs
// waiting for a token.
type typeRow struct {
	rota.TypeConfig
	Waiting waiting
}

// waiting counts due pending jobs held back by a rate, up to
// store.MaxListLimit (More: there are more).
type waiting struct {
	N    int
	More bool
}

// dueWaiting counts the due pending jobs a listing finds, for a setting
// with a rate: one read of at most store.MaxListLimit jobs, made only
// where a rate is set.
func (s *Server) dueWaiting(ctx context.Context, p rota.ListParams) (waiting, error) {
	p.States, p.Limit = []rota.State{rota.Pending}, store.MaxListLimit
	res, err := s.c.List(ctx, p)
	if err != nil {
		return waiting{}, err
	}
	now := time.Now()
	var w waiting
	for _, j := range res.Jobs {
		if !j.RunAt.After(now) {
			w.N++
		}
	}
	w.More = res.Next != 0
	return w, nil
}

func (s *Server) types(w http.ResponseWriter, r *http.Request) {
	u := userOf(r)
	tcs, err := s.c.TypeConfigs(r.Context())
	if err != nil {
		s.fail(w, r, "Types", err)
		return
	}
	d := typesData{CanEdit: u.Access.Admin()}
	// A token scoped to some groups sees the types it has jobs of: the
	// others' names are other tenants' business.
	var mine map[string]bool
	if u.Access.Groups() != nil {
		counts, err := s.counts.get(r.Context(), s.c, s.act.changes())
		if err != nil {
			s.fail(w, r, "Types", err)
			return
		}
		mine = map[string]bool{}
		for _, c := range counts {
			if c.Jobs > 0 && u.Access.Reaches(c.Type, c.Group) {
				mine[c.Type] = true
			}
		}
	}
	for _, tc := range tcs {
		if u.Access.ReachesType(tc.Type) && (mine == nil || mine[tc.Type]) {
			row := typeRow{TypeConfig: tc}
			if !tc.Rate.IsZero() && mine == nil {
				if row.Waiting, err = s.dueWaiting(r.Context(), rota.ListParams{Types: []string{tc.Type}}); err != nil {
					s.fail(w, r, "Types", err)
					return
				}
			}
			d.Types = append(d.Types, row)
		}
	}
	s.render(w, r, http.StatusOK, "types", view{Title: "Types", Nav: "types", Data: d, Notice: notice(r)})
}

func (s *Server) setType(w http.ResponseWriter, r *http.Request) {
	u := userOf(r)
	if !u.Access.Admin() {
		s.render(w, r, http.StatusForbidden, "error", view{Title: "Refused", Error: "A type's settings apply to every tenant: changing them needs the admin token."})
		return
	}
	typ := r.PathValue("type")
	tcs, err := s.c.TypeConfigs(r.Context())
	if err != nil {
		s.fail(w, r, "Types", err)
		return
	}
	tc := rota.TypeConfig{Type: typ}
	for _, x := range tcs {
		if x.Type == typ {
			tc = x
		}
	}
	f := r.PostForm
	switch f.Get("op") {
	case "pause":
		tc.Paused = true
	case "resume":
		tc.Paused = false
	default:
		if tc.LeaseTimeout, err = formDuration(f, "lease_timeout"); err == nil {
			if tc.Retention, err = formDuration(f, "retention"); err == nil {
				if tc.FailedRetention, err = formDuration(f, "failed_retention"); err == nil {
					tc.Timeout, err = formDuration(f, "timeout")
				}
			}
			if err == nil {
				if tc.Bands, err = store.ParseBands(strings.TrimSpace(f.Get("bands"))); err == nil {
					if tc.GroupMaxRunning, err = formInt(f, "group_max_running"); err == nil {
						tc.MaxRunning, err = formInt(f, "max_running")
					}
					if err == nil {
						tc.Rate, tc.Burst, err = formRate(f)
					}
				}
			}
		}
	}
	if err == nil {
		err = s.c.SetTypeConfig(r.Context(), tc)
	}
	if err != nil {
		s.fail(w, r, "Type "+typ, err)
		return
	}
	http.Redirect(w, r, "/types?done=type", http.StatusSeeOther)
}

type groupsData struct {
	InUse   []groupRow     // the groups that have jobs
	Groups  []groupSetting // the settings
	States  []string
	CanEdit bool
}

// groupSetting is a group's setting and, when it has a rate, its due jobs
// waiting for a token.
type groupSetting struct {
	rota.GroupConfig
	Waiting waiting
}

// groupRow is a group that has jobs: its jobs by state, over every type,
// and its settings.
type groupRow struct {
	Group    string
	ByState  [7]int64
	Total    int64
	Settings []rota.GroupConfig
}

func (s *Server) groups(w http.ResponseWriter, r *http.Request) {
	u := userOf(r)
	gcs, err := s.c.GroupConfigs(r.Context())
	if err != nil {
		s.fail(w, r, "Groups", err)
		return
	}
	counts, err := s.counts.get(r.Context(), s.c, s.act.changes())
	if err != nil {
		s.fail(w, r, "Groups", err)
		return
	}
	d := groupsData{CanEdit: !u.Access.ReadOnly(), States: stateNames()}
	for _, g := range gcs {
		if u.Access.ReachesGroupConfig(g) {
			row := groupSetting{GroupConfig: g}
			if !g.Rate.IsZero() {
				p := rota.ListParams{Groups: []string{g.Group}}
				if g.Type != "" {
					p.Types = []string{g.Type}
				}
				if row.Waiting, err = s.dueWaiting(r.Context(), p); err != nil {
					s.fail(w, r, "Groups", err)
					return
				}
			}
			d.Groups = append(d.Groups, row)
		}
	}
	// The groups in use, from the jobs the token reaches; a group with
	// settings but no job is in the settings table only.
	index := map[string]int{}
	for _, c := range counts {
		if c.Jobs == 0 || !u.Access.Reaches(c.Type, c.Group) {
			continue
		}
		i, ok := index[c.Group]
		if !ok {
			i = len(d.InUse)
			index[c.Group] = i
			d.InUse = append(d.InUse, groupRow{Group: c.Group})
		}
		d.InUse[i].ByState[c.State] += c.Jobs
		d.InUse[i].Total += c.Jobs
	}
	for _, g := range d.Groups {
		if i, ok := index[g.Group]; ok {
			d.InUse[i].Settings = append(d.InUse[i].Settings, g.GroupConfig)
		}
	}
	slices.SortFunc(d.InUse, func(a, b groupRow) int { return cmp.Compare(a.Group, b.Group) })
	s.render(w, r, http.StatusOK, "groups", view{Title: "Groups", Nav: "groups", Data: d, Notice: notice(r)})
}

func (s *Server) setGroup(w http.ResponseWriter, r *http.Request) {
	u := userOf(r)
	f := r.PostForm
	gc := rota.GroupConfig{Group: f.Get("group"), Type: f.Get("type")}
	if !u.Access.ReachesGroupConfig(gc) {
		s.render(w, r, http.StatusForbidden, "error", view{Title: "Refused", Error: fmt.Sprintf("Your token may not set group %q of %s.", gc.Group, cmp.Or(gc.Type, "every type"))})
		return
	}
	// Start from the group's settings, so that a pause keeps its weight.
	gcs, err := s.c.GroupConfigs(r.Context())
	if err != nil {
		s.fail(w, r, "Groups", err)
		return
	}
	for _, x := range gcs {
		if x.Group == gc.Group && x.Type == gc.Type {
			gc = x
		}
	}
	switch f.Get("op") {
	case "pause":
		gc.Paused = true
	case "resume":
		gc.Paused = false
	default:
		if gc.Weight, err = formFloat(f, "weight"); err == nil {
			gc.MaxRunning, err = formInt(f, "max_running")
		}
		if err == nil {
			gc.Rate, gc.Burst, err = formRate(f)
		}
	}
	if err == nil {
		err = s.c.SetGroupConfig(r.Context(), gc)
	}
	if err != nil {
		s.fail(w, r, "Group "+gc.Group, err)
		return
	}
	http.Redirect(w, r, "/groups?done=group", http.StatusSeeOther)
}

// formRate reads a form's rate ("N/s", "N/m" or "N/h"; empty for none)
// and burst (empty for the default).
func formRate(f url.Values) (rota.Rate, int, error) {
	rate, err := rota.ParseRate(strings.TrimSpace(f.Get("rate")))
	if err != nil {
		return rota.Rate{}, 0, err
	}
	burst, err := formInt(f, "burst")
	if rate.IsZero() && burst > 0 && strings.TrimSpace(f.Get("rate")) == "" {
		burst = 0 // the rate was cleared: its burst goes with it
	}
	return rate, burst, err
}

func formInt(f url.Values, name string) (int, error) {
	v := strings.TrimSpace(f.Get(name))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %s %q is not a whole number of 0 or more", rota.ErrInvalid, name, v)
	}
	return n, nil
}

func formFloat(f url.Values, name string) (float64, error) {
	v := strings.TrimSpace(f.Get(name))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %s %q is not a number of 0 or more", rota.ErrInvalid, name, v)
	}
	return n, nil
}

func formDuration(f url.Values, name string) (time.Duration, error) {
	v := strings.TrimSpace(f.Get(name))
	if v == "" || v == "0" {
		return 0, nil
	}
	d, err := parseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}

// ---- recurring jobs ----

type recurringData struct {
	Jobs []rota.Job
	Next string
}

// recurring lists the recurring jobs: their schedule, next run and last
// outcome.
func (s *Server) recurring(w http.ResponseWriter, r *http.Request) {
	u := userOf(r)
	after, _ := strconv.ParseInt(r.URL.Query().Get("cursor"), 10, 64)
	res, err := s.c.List(r.Context(), rota.ListParams{Recurring: true, After: after, Limit: 100})
	if err != nil {
		s.fail(w, r, "Recurring jobs", err)
		return
	}
	var d recurringData
	for _, j := range res.Jobs {
		if u.Access.Reaches(j.Type, j.Group) {
			d.Jobs = append(d.Jobs, j)
		}
	}
	if res.Next != 0 {
		d.Next = fmt.Sprintf("/recurring?cursor=%d", res.Next)
	}
	s.render(w, r, http.StatusOK, "recurring", view{Title: "Recurring jobs", Nav: "recurring", Data: d})
}
