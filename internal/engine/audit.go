package engine

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/rotajobs/rota/internal/rules/lifecycle"
	"github.com/rotajobs/rota/store"
)

// This file is the audit trail (store.Auditor): every producer operation
// records, in its own transaction and through Tx.Audit, who changed which
// job, when (the transaction's time) and how; a change of a type's or a
// group's settings records the same of the setting. The records are
// written here once, for both stores, so that a change and its record
// commit together or not at all.

// Caller is who asks for an operation: what they reach (nil: everything)
// and who they are (store.WithActor), which the audit trail records.
type Caller struct {
	Reach *store.Reach
	Actor string
}

// CallerOf is the caller a context carries (store.ReachOf, store.ActorOf).
func CallerOf(ctx context.Context) Caller {
	return Caller{Reach: store.ReachOf(ctx), Actor: store.ActorOf(ctx)}
}

// Setting says what an audit record is about.
type Setting uint8

const (
	// OfJob is a change of job Record.Job.
	OfJob Setting = iota
	// OfType is a change of type Record.Type's settings.
	OfType
	// OfGroup is a change of group Record.Group's settings for type
	// Record.Type ("" for every type).
	OfGroup
)

// Record is one audit record as a store writes it.
type Record struct {
	At     time.Time
	Actor  string
	Action string
	Of     Setting
	// Job is the job changed (OfJob), 0 otherwise.
	Job int64
	// Type and Group are the job's (OfJob, kept so that a removed job's
	// records stay in its reach), or the setting's (OfType: Group is
	// empty).
	Type, Group string
	Detail      string
}

// trail collects an operation's records and writes them with one call of
// Tx.Audit when the operation ends.
type trail struct {
	by   Caller
	recs []Record
}

func (t *trail) job(now time.Time, r *lifecycle.Row, action, detail string) {
	t.recs = append(t.recs, Record{At: now, Actor: t.by.Actor, Action: action, Of: OfJob, Job: r.ID, Type: r.Type, Group: r.Group, Detail: detail})
}

func (t *trail) write(tx Tx) error {
	if len(t.recs) == 0 {
		return nil
	}
	if err := tx.Audit(t.recs); err != nil {
		return fmt.Errorf("record the audit trail: %w", err)
	}
	return nil
}

// cancelDetail and removeDetail say what a cancel or a removal did to r.
func cancelDetail(r *lifecycle.Row, p *lifecycle.Plan) string {
	if p.CancelRequested {
		return fmt.Sprintf("%s: its worker is told to stop", r.State)
	}
	return fmt.Sprintf("%s → %s", r.State, p.State)
}

func removeDetail(r *lifecycle.Row, _ *lifecycle.Plan) string {
	return fmt.Sprintf("removed while %s", r.State)
}

// resubmitAction names a resubmit of a job found as r by what it asks.
func resubmitAction(r *lifecycle.Row, p *store.ResubmitParams) string {
	switch {
	case p.HandBack:
		return "hand back"
	case r.State.Terminal(): // the dashboard's "Retry now" too
		return "retry"
	case p.RunNow:
		return "run now"
	}
	return "resubmit"
}

// beforeOf is what a change's record compares the job with afterwards:
// its row as locked, and its priority when the change may set it (read
// then, as the row does not hold it), so that a change that sets no
// priority costs no read.
func beforeOf(tx Tx, r *lifecycle.Row, priority bool) (store.Job, error) {
	if priority {
		return tx.Job(r.ID)
	}
	return store.Job{ID: r.ID, Type: r.Type, State: r.State, RunAt: r.RunAt, Schedule: r.Schedule, Missed: r.Missed, Resubmit: r.Resubmit}, nil
}

// jobChanges says what a producer's change did to a job, as it was
// before (beforeOf, with its priority when priority) and after: the
// fields that differ, "old → new", and "data replaced" when the change
// carried data.
func jobChanges(before, after *store.Job, priority, data bool, now time.Time) string {
	var d []string
	if before.State != after.State {
		d = append(d, fmt.Sprintf("%s → %s", before.State, after.State))
	} else if after.Resubmit && !before.Resubmit {
		d = append(d, "runs again after its run")
	}
	if before.Type != after.Type {
		d = append(d, fmt.Sprintf("type %s → %s", before.Type, after.Type))
	}
	if priority && before.Priority != after.Priority {
		d = append(d, fmt.Sprintf("priority %d → %d", before.Priority, after.Priority))
	}
	// A run time is news when it moved a waiting job, or when a job made
	// to wait again does not run at once.
	waits := after.State == store.Pending || after.State == store.Paused
	if waits && !before.RunAt.Equal(after.RunAt) && (before.State == after.State || after.RunAt.After(now)) {
		d = append(d, fmt.Sprintf("run_at %s → %s", stamp(before.RunAt), stamp(after.RunAt)))
	}
	if before.Schedule != after.Schedule {
		d = append(d, fmt.Sprintf("schedule %q → %q", before.Schedule, after.Schedule))
	}
	if before.Missed != after.Missed {
		d = append(d, fmt.Sprintf("missed %s → %s", before.Missed, after.Missed))
	}
	if data {
		d = append(d, "data replaced")
	}
	if len(d) == 0 {
		return "no change"
	}
	return strings.Join(d, ", ")
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.999Z07:00") }

// TypeConfigChanged records a change of a type's settings from old (nil:
// the type had none) to c, by caller by; nothing when nothing changed.
func TypeConfigChanged(tx Tx, old *store.TypeConfig, c store.TypeConfig, by Caller) error {
	var prev store.TypeConfig
	if old != nil {
		prev = *old
	}
	prev.Type = c.Type
	// Zero means the default, as stores show it (TypeConfigs).
	for _, tc := range []*store.TypeConfig{&prev, &c} {
		if tc.LeaseTimeout == 0 {
			tc.LeaseTimeout = store.DefaultLeaseTimeout
		}
		if tc.Retention == 0 {
			tc.Retention = store.DefaultRetention
		}
	}
	action, detail := settingChange(prev, c, prev.Paused, c.Paused, "type")
	if action == "" {
		return nil
	}
	now, err := tx.Now()
	if err != nil {
		return err
	}
	t := trail{by: by, recs: []Record{{At: now, Actor: by.Actor, Action: action, Of: OfType, Type: c.Type, Detail: detail}}}
	return t.write(tx)
}

// GroupConfigChanged records a change of a group's settings (for c.Type,
// or every type) from old (nil: none) to c, by caller by.
func GroupConfigChanged(tx Tx, old *store.GroupConfig, c store.GroupConfig, by Caller) error {
	var prev store.GroupConfig
	if old != nil {
		prev = *old
	}
	prev.Group, prev.Type = c.Group, c.Type
	action, detail := settingChange(prev, c, prev.Paused, c.Paused, "group")
	if action == "" {
		return nil
	}
	now, err := tx.Now()
	if err != nil {
		return err
	}
	t := trail{by: by, recs: []Record{{At: now, Actor: by.Actor, Action: action, Of: OfGroup, Type: c.Type, Group: c.Group, Detail: detail}}}
	return t.write(tx)
}

// settingChange names a change of settings from old to c (structs of the
// same type) and lists the fields that changed, by their names in
// snake_case: a pause or resume when the pause changed, "set" otherwise;
// "" when nothing changed. Fields are read by reflection, so that a
// setting added later is recorded without a word here.
func settingChange(old, c any, wasPaused, paused bool, of string) (action, detail string) {
	ov, nv := reflect.ValueOf(old), reflect.ValueOf(c)
	var d []string
	for i := range nv.NumField() {
		f := nv.Type().Field(i)
		if f.Name == "Paused" || !f.IsExported() {
			continue
		}
		a, b := ov.Field(i).Interface(), nv.Field(i).Interface()
		if reflect.DeepEqual(a, b) {
			continue
		}
		d = append(d, fmt.Sprintf("%s %s → %s", snake(f.Name), setting(a), setting(b)))
	}
	switch {
	case paused && !wasPaused:
		action = "pause " + of
	case wasPaused && !paused:
		action = "resume " + of
	case len(d) > 0:
		action = "set " + of
	}
	return action, strings.Join(d, ", ")
}

// setting is a setting's value as a record shows it: "none" for one
// that prints as nothing (an unset rate).
func setting(v any) string {
	if s := fmt.Sprint(v); s != "" {
		return s
	}
	return "none"
}

func snake(name string) string {
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
