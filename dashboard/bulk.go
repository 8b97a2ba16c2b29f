package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/store"
)

// A bulk action (cancel, retry or remove) runs on the jobs selected on a
// page, or on every job matching the list's filter, in the background:
// the store is read a page at a time and changed a batch at a time, so
// that a million jobs take memory for one batch, and the task's page
// shows its progress.

// bulkTask is one bulk action.
type bulkTask struct {
	ID      int
	Action  string
	What    string // the selection or filter, for people
	owner   string // the token that started it: only it sees the task
	Started time.Time

	mu sync.Mutex
	p  progress
}

// progress is how far a bulk action has come.
type progress struct {
	Done     int // jobs changed
	Skipped  int // jobs the action did not apply to (cancelling an ended job, …)
	Finished bool
	Err      string
}

// Progress returns how far the task has come.
func (t *bulkTask) Progress() progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.p
}

type bulkTasks struct {
	mu    sync.Mutex
	next  int
	tasks []*bulkTask // the most recent, at most maxBulkTasks
	wg    sync.WaitGroup
	ctx   context.Context
	stop  context.CancelFunc
}

const maxBulkTasks = 50

func newBulkTasks() *bulkTasks {
	ctx, stop := context.WithCancel(context.Background())
	return &bulkTasks{ctx: ctx, stop: stop}
}

func (b *bulkTasks) wait() { b.stop(); b.wg.Wait() }

func (b *bulkTasks) start(t *bulkTask, run func(ctx context.Context, t *bulkTask) error) {
	b.mu.Lock()
	b.next++
	t.ID = b.next
	b.tasks = append(b.tasks, t)
	if len(b.tasks) > maxBulkTasks {
		b.tasks = b.tasks[len(b.tasks)-maxBulkTasks:]
	}
	b.mu.Unlock()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		err := run(b.ctx, t)
		t.mu.Lock()
		t.p.Finished = true
		if err != nil {
			t.p.Err = err.Error()
		}
		t.mu.Unlock()
	}()
}

func (b *bulkTasks) get(id int, owner string) *bulkTask {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.tasks {
		if t.ID == id && t.owner == owner {
			return t
		}
	}
	return nil
}

// recent returns the owner's tasks, newest first.
func (b *bulkTasks) recent(owner string) []*bulkTask {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*bulkTask
	for i := len(b.tasks) - 1; i >= 0 && len(out) < 5; i-- {
		if b.tasks[i].owner == owner {
			out = append(out, b.tasks[i])
		}
	}
	return out
}

// bulkAction starts a bulk action on the selected jobs (id fields) or on
// every job the filter (the "filter" field, a list query string) matches.
func (s *Server) bulkAction(w http.ResponseWriter, r *http.Request) {
	u := userOf(r)
	action := r.PostFormValue("action")
	if action != "cancel" && action != "retry" && action != "remove" {
		s.render(w, r, http.StatusBadRequest, "error", view{Title: "Bulk action", Error: fmt.Sprintf("%q is not a bulk action (cancel, retry or remove)", action)})
		return
	}
	t := &bulkTask{Action: action, owner: u.Token, Started: time.Now()}
	var ids []int64
	all := r.PostFormValue("scope") == "all"
	if !all {
		for _, v := range r.PostForm["id"] {
			id, err := strconv.ParseInt(v, 10, 64)
			if err != nil || id <= 0 {
				s.render(w, r, http.StatusBadRequest, "error", view{Title: "Bulk action", Error: fmt.Sprintf("%q is not a job id", v)})
				return
			}
			ids = append(ids, id)
		}
		if len(ids) == 0 {
			s.render(w, r, http.StatusBadRequest, "error", view{Title: "Bulk action", Error: "No job is selected: tick the jobs to act on, or choose every job matching the filter."})
			return
		}
		t.What = fmt.Sprintf("%d selected jobs", len(ids))
	}
	q, err := url.ParseQuery(r.PostFormValue("filter"))
	if err != nil {
		s.render(w, r, http.StatusBadRequest, "error", view{Title: "Bulk action", Error: "The filter could not be read: " + err.Error()})
		return
	}
	f := parseFilter(q)
	f.Cursor, f.Limit, f.Order = 0, s.cfg.BulkBatch, "asc"
	lq, err := s.query(r, f)
	if err != nil {
		s.fail(w, r, "Bulk action", err)
		return
	}
	if all {
		t.What = "every job matching " + describe(f)
	}
	access := u.Access
	s.bulk.start(t, func(ctx context.Context, t *bulkTask) error {
		// The task outlives the request: it carries the token's reach
		// itself, so that the store lists, and the task counts, only the
		// jobs the token reaches.
		ctx = store.WithActor(store.WithReach(ctx, access.Reach()), access.Actor())
		if !all {
			for start := 0; start < len(ids); start += s.cfg.BulkBatch {
				if err := s.applyBulk(ctx, t, access, ids[start:min(start+s.cfg.BulkBatch, len(ids))]); err != nil {
					return err
				}
			}
			return nil
		}
		// A page at a time, by id: what the action changes (a cancelled
		// job is still listed) does not move the cursor back.
		for {
			res, err := s.c.List(ctx, lq.ListParams)
			if err != nil {
				return err
			}
			page := make([]int64, 0, len(res.Jobs))
			for _, j := range res.Jobs {
				if lq.keeps(j, access) {
					page = append(page, j.ID)
				}
			}
			if err := s.applyBulk(ctx, t, access, page); err != nil {
				return err
			}
			if res.Next == 0 {
				return nil
			}
			lq.After = res.Next
		}
	})
	http.Redirect(w, r, fmt.Sprintf("/bulk/%d", t.ID), http.StatusSeeOther)
}

// applyBulk applies the task's action to one batch of jobs, each under
// the engine's rules; a job the action does not apply to is skipped.
func (s *Server) applyBulk(ctx context.Context, t *bulkTask, access interface {
	Reaches(typ, group string) bool
}, ids []int64) error {
	jobs, err := s.c.GetMany(ctx, ids)
	if err != nil {
		return err
	}
	var reach []int64
	for _, j := range jobs {
		if j.ID != 0 && access.Reaches(j.Type, j.Group) {
			reach = append(reach, j.ID)
		}
	}
	done, skipped := 0, len(ids)-len(reach)
	count := func(err error) error {
		switch {
		case err == nil:
			done++
		case errors.Is(err, rota.ErrFinished), errors.Is(err, rota.ErrNotFound), errors.Is(err, rota.ErrInvalid):
			skipped++
		default:
			return err
		}
		return nil
	}
	action := t.Action
	if len(reach) == 0 {
		action = "" // nothing of this batch to act on
	}
	switch action {
	case "cancel":
		errs, err := s.c.CancelMany(ctx, reach)
		if err != nil {
			return err
		}
		for _, e := range errs {
			if err := count(e); err != nil {
				return err
			}
		}
	case "retry":
		ps := make([]rota.ResubmitParams, len(reach))
		for i, id := range reach {
			ps[i] = rota.ResubmitParams{ID: id, RunNow: true}
		}
		_, errs, err := s.c.ResubmitMany(ctx, ps)
		if err != nil {
			return err
		}
		for _, e := range errs {
			if err := count(e); err != nil {
				return err
			}
		}
	case "remove":
		errs, err := s.c.RemoveMany(ctx, reach)
		if err != nil {
			return err
		}
		for _, e := range errs {
			if err := count(e); err != nil {
				return err
			}
		}
	}
	t.mu.Lock()
	t.p.Done += done
	t.p.Skipped += skipped
	t.mu.Unlock()
	return nil
}

func describe(f filter) string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+" "+strconv.Quote(v))
		}
	}
	add("type", f.Type)
	add("group", f.Group)
	add("priority", f.Priority)
	add("changed since", f.Since)
	for _, st := range f.States {
		add("state", st)
	}
	if len(parts) == 0 {
		return "no filter (all jobs)"
	}
	return strings.Join(parts, ", ")
}

func (s *Server) bulkPage(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.Atoi(r.PathValue("n"))
	t := s.bulk.get(id, userOf(r).Token)
	if t == nil {
		s.render(w, r, http.StatusNotFound, "error", view{Title: "Bulk action", Error: "No bulk action of yours has this number (the server keeps the last 50 since it started)."})
		return
	}
	s.render(w, r, http.StatusOK, "bulk", view{Title: fmt.Sprintf("Bulk action %d", id), Nav: "jobs", Data: t})
}
