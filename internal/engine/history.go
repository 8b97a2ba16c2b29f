package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/rotajobs/rota/store"
)

// AuditReader reads a store's audit records (Record), oldest
// first, each the newest limit of those asked for.
type AuditReader interface {
	// JobRecords are job id's records.
	JobRecords(id int64, limit int) ([]Record, error)
	// SettingRecords are the records of the settings of type typ and of
	// group grp (for typ or for every type) made within [from, to].
	SettingRecords(typ, grp string, from, to time.Time, limit int) ([]Record, error)
}

// History is job id's history (store.Auditor) for a caller with reach:
// job is its row (ID 0: it has none, it was removed), rd its records,
// now the store's time. A job out of reach, or with neither row nor
// record, is ErrNotFound; a removed job is in reach when the type and
// group its records name are.
func History(rd AuditReader, job store.Job, id int64, reach *store.Reach, now time.Time) ([]store.HistoryEntry, error) {
	recs, err := rd.JobRecords(id, store.MaxHistory)
	if err != nil {
		return nil, err
	}
	typ, grp := job.Type, job.Group
	from, to := job.CreatedAt, now
	switch {
	case job.ID != 0:
		if !job.FinishedAt.IsZero() && job.State.Terminal() {
			to = job.FinishedAt
		}
	case len(recs) == 0:
		return nil, fmt.Errorf("job %d: %w", id, store.ErrNotFound)
	default:
		last := recs[len(recs)-1]
		typ, grp = last.Type, last.Group
		from, to = recs[0].At, last.At
	}
	if !reach.Has(typ, grp) {
		return nil, fmt.Errorf("job %d: %w", id, store.ErrNotFound)
	}
	settings, err := rd.SettingRecords(typ, grp, from, to, store.MaxHistory)
	if err != nil {
		return nil, err
	}
	// A change comes before what it did at the same instant (a cancel
	// before the end it made), and after the add.
	life := lifeOf(job)
	var out []store.HistoryEntry
	if len(life) > 0 {
		out, life = []store.HistoryEntry{life[0]}, life[1:]
	}
	for _, r := range append(recs, settings...) {
		out = append(out, entryOf(r))
	}
	out = append(out, life...)
	// Times are compared to the microsecond, which stores keep.
	slices.SortStableFunc(out, func(a, b store.HistoryEntry) int {
		return a.At.Truncate(time.Microsecond).Compare(b.At.Truncate(time.Microsecond))
	})
	return out, nil
}

// lifeOf is what job's row tells of its life: its add, its attempts'
// starts and errors, its end.
func lifeOf(job store.Job) []store.HistoryEntry {
	if job.ID == 0 {
		return nil
	}
	out := []store.HistoryEntry{{At: job.CreatedAt, Action: "added", Detail: fmt.Sprintf("type %s, group %q", job.Type, job.Group)}}
	for _, e := range job.Errors {
		out = append(out, store.HistoryEntry{At: e.At, Action: "attempt failed", Detail: fmt.Sprintf("attempt %d: %s", e.Attempt, e.Error)})
	}
	if !job.PrevStartedAt.IsZero() {
		out = append(out, store.HistoryEntry{At: job.PrevStartedAt, Action: "started", Detail: "the run before the last"})
	}
	if !job.StartedAt.IsZero() {
		d := fmt.Sprintf("attempt %d", job.Attempt)
		if job.Worker != "" {
			d += " by " + job.Worker
		}
		out = append(out, store.HistoryEntry{At: job.StartedAt, Action: "started", Detail: d})
	}
	if job.State.Terminal() && !job.FinishedAt.IsZero() {
		d := job.State.String()
		if job.State != store.Completed && job.LastError != "" {
			d += ": " + job.LastError
		}
		out = append(out, store.HistoryEntry{At: job.FinishedAt, Action: "ended", Detail: d})
	}
	return out
}

// entryOf is an audit record as a line of a history: a setting's says
// which setting.
func entryOf(r Record) store.HistoryEntry {
	e := store.HistoryEntry{At: r.At, Action: r.Action, Actor: r.Actor, Audited: true, Detail: r.Detail}
	var of string
	switch r.Of {
	case OfType:
		of = fmt.Sprintf("type %s", r.Type)
	case OfGroup:
		of = fmt.Sprintf("group %q of type %s", r.Group, r.Type)
		if r.Type == "" {
			of = fmt.Sprintf("group %q of every type", r.Group)
		}
	default:
		return e
	}
	if e.Detail == "" {
		e.Detail = of
	} else {
		e.Detail = of + ": " + e.Detail
	}
	return e
}
