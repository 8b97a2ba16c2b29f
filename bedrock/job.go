package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/internal/rules/schedule"
	"github.com/rotajobs/rota/store"
)

// This file is how a rota job looks in Bedrock's responses, and how
// Bedrock's header values are read.

// state is the job's state as Bedrock names it. A running job with a
// retryAfter is RUNQUEUED: it runs, and runs again when its fixed lease
// ends.
func state(j *rota.Job) string {
	switch j.State {
	case rota.Pending:
		return "QUEUED"
	case rota.Running:
		if j.RetryAfter > 0 {
			return "RUNQUEUED"
		}
		return "RUNNING"
	case rota.Paused:
		return "PAUSED"
	case rota.Completed:
		return "FINISHED"
	case rota.Failed:
		return "FAILED"
	}
	return "CANCELLED"
}

// render returns the jobs as Bedrock's JSON objects: as GetJob hands them
// out (dequeued: values from before the dequeue, the parent's data, the
// children that ended) or as QueryJob shows them (with state).
func (s *Server) render(ctx context.Context, jobs []rota.Job, dequeued bool) ([][]byte, error) {
	var ids []int64
	for _, j := range jobs {
		ids = append(ids, j.ID)
		if j.Parent != 0 {
			ids = append(ids, j.Parent)
		}
		for _, ch := range j.Children {
			ids = append(ids, ch.ID)
		}
	}
	bids, err := s.ids.BedrockIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(jobs))
	for i := range jobs {
		j := &jobs[i]
		o := object{}
		o.str("created", formatTime(j.CreatedAt, false))
		o.num("jobID", bids[j.ID])
		o.str("name", j.Type)
		o.num("priority", int64(j.Priority))
		o.str("repeat", j.Schedule)
		ra := j.Meta[MetaRetryAfter]
		if ra == "" && j.RetryAfter > 0 {
			ra = "+" + strconv.FormatInt(int64(j.RetryAfter/time.Second), 10) + " SECONDS"
		}
		o.str("retryAfter", ra)
		runs := j.Attempt // runs of the current cycle, this one included
		if dequeued {
			o.str("lastRun", formatTime(j.PrevStartedAt, false))
			o.str("nextRun", formatTime(j.RunAt, true))
			runs--
		} else {
			o.str("lastRun", formatTime(j.StartedAt, false))
			next := j.RunAt
			if j.State == rota.Running && j.RetryAfter > 0 {
				next = j.LeaseUntil.Truncate(time.Second)
			}
			o.str("nextRun", formatTime(next, true))
			o.str("state", state(j))
		}
		data := j.Data
		if j.RetryAfter > 0 && runs > 0 && !strings.HasPrefix(j.Type, "manual") {
			// Bedrock counts a retryAfter job's runs in its data.
			data = withMember(data, "retryAfterCount", strconv.AppendInt(nil, int64(runs), 10))
			if strings.Contains(j.Schedule, "SCHEDULED") && !j.Slot.IsZero() {
				data = withMember(data, "originalNextRun", quote(formatTime(j.Slot, true)))
			}
		}
		o.raw("data", data)
		if dequeued && j.Parent != 0 {
			o.num("parentJobID", bids[j.Parent])
			if len(j.ParentData) > 0 {
				o.raw("parentData", j.ParentData)
			} else {
				o.str("parentData", "")
			}
		}
		if dequeued && len(j.Children) > 0 {
			var finished, cancelled, failed []byte
			for _, ch := range j.Children {
				c := object{}
				c.raw("data", ch.Data)
				c.num("jobID", bids[ch.ID])
				switch ch.State {
				case rota.Completed:
					finished = appendElem(finished, c.encode())
				case rota.Cancelled:
					cancelled = appendElem(cancelled, c.encode())
				default:
					// Bedrock never resumes a parent for a failed child;
					// rota does, and says which failed.
					failed = appendElem(failed, c.encode())
				}
			}
			o.raw("finishedChildJobs", closeArray(finished))
			o.raw("cancelledChildJobs", closeArray(cancelled))
			if failed != nil {
				o.raw("failedChildJobs", closeArray(failed))
			}
		}
		out[i] = o.encode()
	}
	return out, nil
}

func appendElem(arr, elem []byte) []byte {
	if arr == nil {
		arr = []byte{'['}
	} else {
		arr = append(arr, ',')
	}
	return append(arr, elem...)
}

func closeArray(arr []byte) []byte {
	if arr == nil {
		return []byte("[]")
	}
	return append(arr, ']')
}

// Bedrock's time formats: YYYY-MM-DD HH:MM:SS in UTC, with milliseconds
// for a nextRun that has them (a job added without firstRun is due at
// the millisecond it was added; computed times are whole seconds).
const (
	secondLayout = "2006-01-02 15:04:05"
	milliLayout  = "2006-01-02 15:04:05.000"
)

func formatTime(t time.Time, millis bool) string {
	switch {
	case t.IsZero():
		return ""
	case millis && t.Nanosecond()/int(time.Millisecond) != 0:
		return t.UTC().Format(milliLayout)
	}
	return t.UTC().Format(secondLayout)
}

// parseTime reads a firstRun or nextRun. Bedrock stores these unchecked
// (a job due "tomorrow" never runs); rota refuses what is not a time.
func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{milliLayout, secondLayout, "2006-01-02 15:04", "2006-01-02", time.RFC3339Nano} {
		if t, err := time.ParseInLocation(layout, strings.TrimSpace(s), time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("not a time")
}

// retryAfter reads a retryAfter: one date modifier of those Bedrock
// accepts ("+5 MINUTES"), which rota keeps as the duration it adds to now.
// Bedrock takes a list of modifiers too, then gives it to SQLite as one
// modifier, which makes no time, and fails the job at its first run; rota
// refuses such a list. A modifier that does not move time forward ("+0
// SECONDS", "-5 MINUTES", "START OF DAY") makes the job due again at once,
// as in Bedrock: rota's shortest retry-after, a second. The duration is
// measured from a fixed instant (retryAfterFrom), not from the clock of the
// node that reads it, so that a text always makes the same duration: a
// month of 30 days, a year of 365.
func retryAfter(text string) (time.Duration, error) {
	if err := schedule.ValidModifiers(text); err != nil {
		return 0, err
	}
	if strings.Contains(strings.Trim(text, ", "), ",") {
		return 0, errors.New("more than one modifier")
	}
	t, err := schedule.Modify(retryAfterFrom, text)
	if err != nil {
		return 0, err
	}
	return max(t.Sub(retryAfterFrom), time.Second), nil
}

// retryAfterFrom is the instant retryAfter measures a modifier from: the
// start of a 30-day month in a 365-day year.
var retryAfterFrom = time.Date(2001, time.April, 1, 0, 0, 0, 0, time.UTC)

// validPriority is Bedrock's set of priorities.
func validPriority(p int64) bool {
	switch p {
	case 0, 250, 500, 750, 850, 1000:
		return true
	}
	return false
}

// atoi is C's strtoll in base 10, as Bedrock reads numbers: leading
// spaces, a sign, digits; what follows is ignored, no digits is 0, and
// overflow saturates.
func atoi(s string) int64 {
	i := 0
	for i < len(s) && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	var v uint64
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		v = v*10 + uint64(s[i]-'0')
		if v > math.MaxInt64 {
			if neg {
				return math.MinInt64
			}
			return math.MaxInt64
		}
	}
	if neg {
		return -int64(v)
	}
	return int64(v)
}

// calc64 and calc are Bedrock's header number readers; calc is clamped
// to a 32-bit int above.
func calc64(s string) int64 { return atoi(s) }
func calc(s string) int64   { return min(atoi(s), math.MaxInt32) }

// test is Bedrock's truth of a header: "true" in any case, or a number
// other than 0.
func test(s string) bool { return strings.EqualFold(s, "true") || calc(s) != 0 }

// verifyInt64 is Bedrock's verifyAttributeInt64: present, and written as
// the canonical decimal of its value.
func verifyInt64(r *Request, name string) (int64, *Response) {
	v := r.Get(name)
	if v == "" {
		return 0, reply("402 Missing " + name)
	}
	n := atoi(v)
	if strconv.FormatInt(n, 10) != v {
		return 0, reply("402 Malformed " + name)
	}
	return n, nil
}

// splitList is Bedrock's SParseList: split on commas, drop empty items,
// trim leading spaces.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimLeft(item, " "); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func presence(h map[string]string) map[string]bool {
	m := make(map[string]bool, len(h))
	for k := range h {
		m[k] = true
	}
	return m
}

// memberText is a member of a CreateJobs job as Bedrock's parser gives
// it: a string unquoted, anything else as its JSON text.
func memberText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(v))
}

// isObject reports whether data is a JSON object rota keeps as job data.
func isObject(data string) bool {
	_, err := check.Data("data", json.RawMessage(data))
	return err == nil && strings.HasPrefix(strings.TrimSpace(data), "{")
}

// isMocked reports whether job data carry Bedrock's mockRequest flag.
func isMocked(data json.RawMessage) bool {
	v, ok := member(data, "mockRequest")
	return ok && string(v) != "null"
}

// members reads a JSON object's members in order.
func members(data json.RawMessage) ([]string, []json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, false
	}
	var keys []string
	var vals []json.RawMessage
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, false
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, false
		}
		keys = append(keys, k)
		vals = append(vals, v)
	}
	return keys, vals, true
}

// member returns a member of a JSON object.
func member(data json.RawMessage, key string) (json.RawMessage, bool) {
	keys, vals, ok := members(data)
	if !ok {
		return nil, false
	}
	for i, k := range keys {
		if k == key {
			return vals[i], true
		}
	}
	return nil, false
}

// withMember sets a member of a JSON object, keeping the others in order
// and appending a new one, as SQLite's JSON_SET does.
func withMember(data json.RawMessage, key string, val []byte) json.RawMessage {
	keys, vals, ok := members(data)
	if !ok {
		return data
	}
	found := false
	for i, k := range keys {
		if k == key {
			vals[i], found = val, true
		}
	}
	if !found {
		keys, vals = append(keys, key), append(vals, val)
	}
	return encodeMembers(keys, vals)
}

// withoutMember removes a member of a JSON object.
func withoutMember(data json.RawMessage, key string) json.RawMessage {
	keys, vals, ok := members(data)
	if !ok {
		return data
	}
	var k2 []string
	var v2 []json.RawMessage
	for i, k := range keys {
		if k != key {
			k2, v2 = append(k2, k), append(v2, vals[i])
		}
	}
	if len(k2) == len(keys) {
		return data
	}
	return encodeMembers(k2, v2)
}

func encodeMembers(keys []string, vals []json.RawMessage) json.RawMessage {
	b := []byte{'{'}
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		kb, _ := json.Marshal(k)
		b = append(b, kb...)
		b = append(b, ':')
		var c bytes.Buffer
		if json.Compact(&c, vals[i]) == nil {
			b = append(b, c.Bytes()...)
		} else {
			b = append(b, vals[i]...)
		}
	}
	return append(b, '}')
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "rota"
	}
	return h
}

// ImportRow maps a row of a Bedrock database's jobs table (§2.1) to a job
// to import (its ParentIndex and BedrockID left to the caller), or says
// why it cannot be mapped.
func ImportRow(name, state, nextRun, created, repeat, data, retryAfterText string, priority int64) (store.ImportJob, string) {
	j := store.ImportJob{ParentIndex: -1}
	if err := check.Type(name); err != nil {
		return j, fmt.Sprintf("its name cannot be a rota type: %v", err)
	}
	if data == "" {
		data = "{}"
	}
	if !isObject(data) {
		return j, "its data is not a JSON object"
	}
	runAt, err := parseTime(nextRun)
	if err != nil {
		return j, fmt.Sprintf("its nextRun %q is not a time", nextRun)
	}
	j.Type, j.Data, j.Priority, j.RunAt = name, json.RawMessage(data), int(priority), runAt
	if isMocked(j.Data) {
		j.Group = MockGroup // for mock requests only, as every mocked job
	}
	if repeat != "" {
		sched, err := schedule.ParseRepeat(repeat)
		if err != nil {
			return j, fmt.Sprintf("its repeat %q is malformed", repeat)
		}
		j.Schedule, j.Missed = sched.String(), rota.MissedAll
	}
	if retryAfterText != "" {
		d, err := retryAfter(retryAfterText)
		if err != nil {
			return j, fmt.Sprintf("its retryAfter %q is not one rota takes", retryAfterText)
		}
		j.RetryAfter, j.Meta = d, map[string]string{MetaRetryAfter: retryAfterText}
		if strings.HasPrefix(name, "manual") {
			j.MaxAttempts = math.MaxInt32
		}
	}
	if t, err := parseTime(created); err == nil {
		j.CreatedAt = t
	}
	switch state {
	case "QUEUED":
		j.State = rota.Pending
	case "RUNNING", "RUNQUEUED":
		j.State, j.RunAt = rota.Pending, time.Time{} // due at once: its worker was Bedrock's
	case "PAUSED":
		j.State = rota.Paused
	case "FINISHED":
		j.State = rota.Completed
	case "FAILED":
		j.State = rota.Failed
	case "CANCELLED":
		j.State = rota.Cancelled
	default:
		return j, fmt.Sprintf("its state %q is not one of Bedrock's", state)
	}
	return j, ""
}
