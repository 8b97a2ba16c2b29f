// Package check is the validation of every request, written once for
// every store and protocol so that bad input gets the same words
// everywhere: a batch with bad input is refused as a whole, with an error
// that matches store.ErrInvalid and says which item and what is wrong.
// The batch checks (Adds, Finishes, Heartbeats, …) also fill in defaults
// and return each item's data compacted. The errors stores return for bad
// input and missing jobs are built here too (Invalidf, TooLarge,
// JobErrorf, NotFound).
package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rotajobs/rota/internal/rules/glob"
	"github.com/rotajobs/rota/internal/rules/names"
	"github.com/rotajobs/rota/internal/rules/schedule"
	"github.com/rotajobs/rota/store"
)

// Type reports whether name can be a job type: 1..255 bytes of
// UTF-8 without control characters, and without "." or ".." between
// slashes. Any other character is allowed, as Bedrock allows it in a
// job's name (paths, query strings: "www/Job?id=8"); a type with pattern
// characters (* ? [ {) is selected exactly by glob.Quote's pattern, and
// matched by itself as a pattern too when it has no class ("a?b" matches
// "a?b", and "axb"). A name may contain slashes (Bedrock's users name jobs
// www-prod/UserActivityEvaluator), but none of its slash-separated parts
// may be "." or "..": a browser resolves those in a URL even when the
// slashes around them are escaped, so such a name would turn a link to
// the type into a link somewhere else.
func Type(name string) error {
	if err := checkName("type", name, true); err != nil {
		return err
	}
	for part := range strings.SplitSeq(name, "/") {
		if part == "." || part == ".." {
			return Invalidf("type %q has a %q path segment (a part between slashes may not be . or ..)", name, part)
		}
	}
	return nil
}

func checkName(what, s string, required bool) error {
	if err := names.Check(what, s, required); err != nil {
		return asInvalid(err)
	}
	return nil
}

// CompilePattern parses a type name or GLOB pattern (glob.Compile); its
// errors match ErrInvalid.
func CompilePattern(p string) (glob.Pattern, error) {
	pat, err := glob.Compile(p)
	if err != nil {
		return glob.Pattern{}, asInvalid(err)
	}
	return pat, nil
}

// Data checks that data is a JSON object no larger than
// MaxDataSize and returns it compacted; nil or empty means {}.
func Data(what string, data json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return []byte("{}"), nil
	}
	if len(data) > store.MaxDataSize {
		return nil, Invalidf("%s is %d bytes, more than %d", what, len(data), store.MaxDataSize)
	}
	if !json.Valid(data) {
		return nil, Invalidf("%s is not valid JSON", what)
	}
	if !utf8.Valid(data) {
		// encoding/json lets bytes that are not UTF-8 through inside
		// strings; stored raw, they would come back as something else.
		return nil, Invalidf("%s is not valid UTF-8 (JSON text must be)", what)
	}
	if d := JSONDepth(data); d > store.MaxDataDepth {
		return nil, Invalidf("%s nests %d levels deep, more than %d", what, d, store.MaxDataDepth)
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if trimmed[0] != '{' {
		return nil, Invalidf("%s must be a JSON object", what)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return nil, Invalidf("%s: %v", what, err)
	}
	return buf.Bytes(), nil
}

// Result checks a result: any JSON value up to MaxDataSize; nil
// means none.
func Result(data json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	if len(data) > store.MaxDataSize {
		return nil, Invalidf("result is %d bytes, more than %d", len(data), store.MaxDataSize)
	}
	if !json.Valid(data) {
		return nil, Invalidf("result is not valid JSON")
	}
	if !utf8.Valid(data) {
		return nil, Invalidf("result is not valid UTF-8 (JSON text must be)")
	}
	if d := JSONDepth(data); d > store.MaxDataDepth {
		return nil, Invalidf("result nests %d levels deep, more than %d", d, store.MaxDataDepth)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return nil, Invalidf("result: %v", err)
	}
	return buf.Bytes(), nil
}

// Add validates one AddParams and fills in defaults. The returned
// data is compacted JSON.
func Add(p *store.AddParams) ([]byte, error) {
	if err := Type(p.Type); err != nil {
		return nil, err
	}
	if err := checkName("key", p.Key, false); err != nil {
		return nil, err
	}
	if err := checkName("group", p.Group, false); err != nil {
		return nil, err
	}
	if p.Batch < 0 {
		return nil, Invalidf("batch %d is not valid", p.Batch)
	}
	if p.MaxAttempts < 0 {
		return nil, Invalidf("max_attempts is %d, must not be negative", p.MaxAttempts)
	}
	if p.RetryAfter < 0 || (p.RetryAfter > 0 && p.RetryAfter < store.MinLeaseTimeout) {
		return nil, Invalidf("retry_after %v must be at least %v, or zero for none", p.RetryAfter, store.MinLeaseTimeout)
	}
	p.RetryAfter = p.RetryAfter.Truncate(time.Microsecond)
	if p.Timeout < 0 || (p.Timeout > 0 && p.Timeout < store.MinLeaseTimeout) {
		return nil, Invalidf("timeout %v must be at least %v, or zero for none", p.Timeout, store.MinLeaseTimeout)
	}
	p.Timeout = p.Timeout.Truncate(time.Microsecond)
	if !p.ExpiresAt.IsZero() {
		// Stores keep times to the microsecond, in UTC.
		p.ExpiresAt = p.ExpiresAt.UTC().Truncate(time.Microsecond)
		if !p.RunAt.IsZero() && !p.ExpiresAt.After(p.RunAt) {
			return nil, Invalidf("expires_at %s must be after run_at %s: the job could never start",
				p.ExpiresAt.Format(time.RFC3339Nano), p.RunAt.UTC().Format(time.RFC3339Nano))
		}
	}
	switch {
	case p.MaxAttempts == 0 && p.RetryAfter > 0:
		p.MaxAttempts = store.DefaultRetryAfterRuns
	case p.MaxAttempts == 0:
		p.MaxAttempts = store.DefaultMaxAttempts
	}
	if p.BackoffBase < 0 || p.BackoffMax < 0 {
		return nil, Invalidf("back-off durations must not be negative")
	}
	if p.BackoffBase == 0 {
		p.BackoffBase = store.DefaultBackoffBase
	}
	if p.BackoffMax == 0 {
		p.BackoffMax = store.DefaultBackoffMax
	}
	if p.BackoffMax < p.BackoffBase {
		return nil, Invalidf("backoff_max %v is less than backoff_base %v", p.BackoffMax, p.BackoffBase)
	}
	if err := Time("run_at", p.RunAt); err != nil {
		return nil, err
	}
	if err := Meta(p.Meta); err != nil {
		return nil, err
	}
	if err := Schedule(&p.Schedule, p.Missed); err != nil {
		return nil, err
	}
	if p.Unique && p.Key != "" {
		return nil, Invalidf("unique and key are two ways to find an existing job: give one")
	}
	if err := UniqueFor(p); err != nil {
		return nil, err
	}
	if err := Debounce(p); err != nil {
		return nil, err
	}
	if p.Overwrite && !p.Unique {
		return nil, Invalidf("overwrite applies to unique adds only")
	}
	if err := After(p); err != nil {
		return nil, err
	}
	return Data("data", p.Data)
}

// After checks a job's dependencies (store.AddParams.After, AfterKeys,
// OnDepFailure) on their own; Adds checks that each key names an earlier
// item of the batch.
func After(p *store.AddParams) error {
	if !p.OnDepFailure.Valid() {
		return Invalidf("unknown dependency failure policy %d (want cancel or run)", p.OnDepFailure)
	}
	if len(p.After) == 0 && len(p.AfterKeys) == 0 {
		return nil
	}
	if n := len(p.After) + len(p.AfterKeys); n > store.MaxAfter {
		return TooLarge("after names %d jobs, more than %d", n, store.MaxAfter)
	}
	switch {
	case p.Parent != 0:
		return Invalidf("after and parent do not go together: a child waits for its parent's run, not for other jobs")
	case p.Schedule != "":
		return Invalidf("after and schedule do not go together: a recurring job cannot wait for other jobs")
	case p.Debounce > 0:
		return Invalidf("after and debounce do not go together")
	}
	seen := make(map[int64]bool, len(p.After))
	for _, id := range p.After {
		if id <= 0 {
			return Invalidf("after: job id %d is not valid", id)
		}
		if seen[id] {
			return Invalidf("after names job %d twice", id)
		}
		seen[id] = true
	}
	keys := make(map[string]bool, len(p.AfterKeys))
	for _, k := range p.AfterKeys {
		if k == "" {
			return Invalidf("after_keys: an empty key names no job")
		}
		if keys[k] {
			return Invalidf("after_keys names key %q twice", k)
		}
		keys[k] = true
	}
	return nil
}

// afterKeys checks that every key in jobs[i].AfterKeys is the key of an
// earlier item of the batch: dependencies exist before the job that
// names them, so that the graph is acyclic by construction.
func afterKeys(jobs []store.AddParams, i int) error {
	for _, k := range jobs[i].AfterKeys {
		found := false
		for j := i - 1; j >= 0 && !found; j-- {
			found = jobs[j].Key == k
		}
		if !found {
			return Invalidf("after_keys: no earlier job of this add has key %q (a job can only wait for jobs added before it)", k)
		}
	}
	return nil
}

// Updates checks updates and returns each one's normalized data (nil
// to keep the job's).
func Updates(ps []store.UpdateParams) ([][]byte, error) {
	if len(ps) > store.MaxAddBatch {
		return nil, TooLarge("an update of %d jobs is more than %d", len(ps), store.MaxAddBatch)
	}
	datas := make([][]byte, len(ps))
	for i := range ps {
		p := &ps[i]
		if p.ID <= 0 {
			return nil, Invalidf("job id %d is not valid", p.ID)
		}
		if p.Data != nil {
			d, err := Data("data", p.Data)
			if err != nil {
				return nil, err
			}
			datas[i] = d
		}
		if err := Time("run_at", p.RunAt); err != nil {
			return nil, err
		}
		switch {
		case p.RunIn < 0:
			return nil, Invalidf("job %d: run_in %v is negative", p.ID, p.RunIn)
		case p.RunIn > MaxRunIn:
			return nil, Invalidf("job %d: run_in %v is more than %v", p.ID, p.RunIn, MaxRunIn)
		case p.RunIn != 0 && !p.RunAt.IsZero():
			return nil, Invalidf("job %d: run_at and run_in are exclusive", p.ID)
		}
		if p.Schedule != nil {
			missed := store.MissedOnce
			if p.Missed != nil {
				missed = *p.Missed
			}
			text := *p.Schedule
			if err := Schedule(&text, missed); err != nil {
				return nil, err
			}
			p.Schedule = &text
		} else if p.Missed != nil && !p.Missed.Valid() {
			return nil, Invalidf("unknown missed-slot policy %d", *p.Missed)
		}
	}
	return datas, nil
}

// Schedule checks a schedule and its missed-slot policy, and puts the
// schedule in its stored form (a repeat upper-cased).
func Schedule(text *string, m store.Missed) error {
	if !m.Valid() {
		return Invalidf("unknown missed-slot policy %d", m)
	}
	s, err := schedule.Parse(*text)
	if err != nil {
		return Invalidf("schedule: %v", err)
	}
	*text = s.String()
	return nil
}

// Meta checks a job's metadata: at most MaxMetaKeys keys of 1..255
// bytes without control characters, values of valid UTF-8, MaxMetaSize
// bytes in all.
func Meta(m map[string]string) error {
	if len(m) > store.MaxMetaKeys {
		return Invalidf("meta has %d keys, more than %d", len(m), store.MaxMetaKeys)
	}
	size := 0
	for k, v := range m {
		if err := checkName("meta key", k, true); err != nil {
			return err
		}
		if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
			return Invalidf("meta %q: the value is not valid UTF-8 text", k)
		}
		size += len(k) + len(v)
	}
	if size > store.MaxMetaSize {
		return Invalidf("meta is %d bytes, more than %d", size, store.MaxMetaSize)
	}
	return nil
}

var (
	minTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

// scanJSON calls fn with each byte of the JSON text b that is structure
// (outside strings), with the nesting depth after it.
func scanJSON(b []byte, fn func(c byte, depth int)) {
	depth := 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
		fn(c, depth)
	}
}

// JSONDepth is how deeply the JSON text b nests objects and arrays (0 for
// a scalar), for text json.Valid accepts.
func JSONDepth(b []byte) int {
	deepest := 0
	scanJSON(b, func(_ byte, depth int) { deepest = max(deepest, depth) })
	return deepest
}

// JSONArrayLen counts the elements of the JSON array b (0 when b is not
// an array), without decoding them: the commas at its top level, plus
// one unless it is empty.
func JSONArrayLen(b []byte) int {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '[' {
		return 0
	}
	inner := bytes.TrimSpace(b[1 : len(b)-1])
	if len(inner) == 0 {
		return 0
	}
	n := 1
	scanJSON(inner, func(c byte, depth int) {
		if c == ',' && depth == 0 {
			n++
		}
	})
	return n
}

// TooLarge returns an error that matches ErrTooLarge and ErrInvalid and
// says what is over which limit.
func TooLarge(format string, args ...any) error {
	return fmt.Errorf("%w (%w): %s", store.ErrInvalid, store.ErrTooLarge, fmt.Sprintf(format, args...))
}

// Time rejects times a store cannot hold (before 1970 or after 9999).
// The zero time is allowed and means "unset".
func Time(what string, t time.Time) error {
	if t.IsZero() {
		return nil
	}
	if t.Before(minTime) || t.After(maxTime) {
		return Invalidf("%s %s is out of range (1970..9999)", what, t.Format(time.RFC3339))
	}
	return nil
}

// Finish validates one FinishParams.
func Finish(p *store.FinishParams) error {
	if p.ID <= 0 {
		return Invalidf("job id %d is not valid", p.ID)
	}
	if p.Token == "" {
		return Invalidf("job %d: token is required", p.ID)
	}
	switch p.As {
	case store.Complete, store.Fail, store.Snooze, store.Release, store.Cancel:
	default:
		return Invalidf("job %d: unknown ending %d", p.ID, p.As)
	}
	if len(p.Error) > store.MaxDataSize {
		return Invalidf("job %d: error text is %d bytes, more than %d", p.ID, len(p.Error), store.MaxDataSize)
	}
	if p.Rename != "" {
		if p.As != store.Snooze {
			return Invalidf("job %d: a rename goes with snooze only", p.ID)
		}
		if err := Type(p.Rename); err != nil {
			return fmt.Errorf("job %d: rename: %w", p.ID, err)
		}
	}
	if p.Data != nil {
		d, err := Data("data", p.Data)
		if err != nil {
			return fmt.Errorf("job %d: %w", p.ID, err)
		}
		p.Data = d
	}
	switch {
	case p.EndSchedule && p.As != store.Complete:
		return Invalidf("job %d: ending the schedule goes with complete only", p.ID)
	case p.Priority != nil && p.As != store.Snooze:
		return Invalidf("job %d: a new priority goes with snooze only", p.ID)
	case (p.RunIn != 0 || p.AtNextSlot) && p.As != store.Snooze:
		return Invalidf("job %d: a run time goes with snooze only", p.ID)
	case p.DropEndedChildren && p.As != store.Snooze:
		return Invalidf("job %d: dropping ended children goes with snooze only (a completion drops them)", p.ID)
	case p.RunIn < 0:
		return Invalidf("job %d: run_in %v is negative", p.ID, p.RunIn)
	case p.RunIn != 0 && !p.RunAt.IsZero():
		return Invalidf("job %d: run_at and run_in are exclusive", p.ID)
	case p.RunIn > MaxRunIn:
		return Invalidf("job %d: run_in %v is more than %v", p.ID, p.RunIn, MaxRunIn)
	}
	return Time("run_at", p.RunAt)
}

// MaxRunIn bounds a relative run time (FinishParams.RunIn,
// UpdateParams.RunIn): about a hundred years, which keeps the time it
// makes within what every store holds.
const MaxRunIn = 100 * 365 * 24 * time.Hour

// The batch checks below are what every store runs before it touches its
// database, so that a batch with bad input is rejected whole, with the same
// errors on every backend.

// Adds validates a batch of adds and fills in defaults, on a copy
// (callers may share their slice between goroutines). It returns the
// completed params and each job's compacted data.
func Adds(in []store.AddParams) ([]store.AddParams, [][]byte, error) {
	if len(in) > store.MaxAddBatch {
		return nil, nil, TooLarge("an add of %d jobs is more than %d", len(in), store.MaxAddBatch)
	}
	jobs := make([]store.AddParams, len(in))
	copy(jobs, in)
	datas := make([][]byte, len(jobs))
	for i := range jobs {
		d, err := Add(&jobs[i])
		if err == nil {
			err = afterKeys(jobs, i)
		}
		if err != nil {
			if len(jobs) > 1 {
				return nil, nil, fmt.Errorf("job %d of %d: %w", i+1, len(jobs), err)
			}
			return nil, nil, err
		}
		datas[i] = d
	}
	return jobs, datas, nil
}

// IDs rejects ids that cannot name a job.
func IDs(ids []int64) error {
	for _, id := range ids {
		if id <= 0 {
			return Invalidf("job id %d is not valid", id)
		}
	}
	return nil
}

// Resubmits validates a batch of resubmits and returns each item's
// compacted data, nil where the item keeps the job's data.
func Resubmits(ps []store.ResubmitParams) ([][]byte, error) {
	datas := make([][]byte, len(ps))
	for i, p := range ps {
		if p.ID <= 0 {
			return nil, Invalidf("job id %d is not valid", p.ID)
		}
		if err := Time("run_at", p.RunAt); err != nil {
			return nil, err
		}
		if p.Rename != "" {
			if err := Type(p.Rename); err != nil {
				return nil, fmt.Errorf("job %d: rename: %w", p.ID, err)
			}
		}
		if p.RunNow && !p.RunAt.IsZero() {
			return nil, Invalidf("job %d: run_at and run now are exclusive", p.ID)
		}
		if p.KeepAttempt && !p.HandBack {
			return nil, Invalidf("job %d: keeping the attempt goes with handing the run back only", p.ID)
		}
		if p.Data != nil {
			d, err := Data("data", p.Data)
			if err != nil {
				return nil, err
			}
			datas[i] = d
		}
	}
	return datas, nil
}

// TypeConfig validates a TypeConfig.
func TypeConfig(c store.TypeConfig) error {
	if err := Type(c.Type); err != nil {
		return err
	}
	if c.LeaseTimeout < 0 {
		return Invalidf("lease timeout %v must not be negative", c.LeaseTimeout)
	}
	if c.LeaseTimeout > 0 && c.LeaseTimeout < store.MinLeaseTimeout {
		return Invalidf("lease timeout %v is shorter than %v", c.LeaseTimeout, store.MinLeaseTimeout)
	}
	if c.GroupMaxRunning < 0 {
		return Invalidf("group max running %d must not be negative", c.GroupMaxRunning)
	}
	if c.MaxRunning < 0 {
		return Invalidf("max running %d must not be negative", c.MaxRunning)
	}
	if c.Timeout < 0 || (c.Timeout > 0 && c.Timeout < store.MinLeaseTimeout) {
		return Invalidf("timeout %v must be at least %v, or zero for none", c.Timeout, store.MinLeaseTimeout)
	}
	if err := RateBurst(c.Rate, c.Burst); err != nil {
		return err
	}
	if c.Retention != 0 && (c.Retention < store.MinRetention || c.Retention > store.MaxRetention) {
		return Invalidf("retention %v must be within %v..%v, or zero for the default (%v)", c.Retention, store.MinRetention, store.MaxRetention, store.DefaultRetention)
	}
	if c.FailedRetention != 0 && (c.FailedRetention < store.MinRetention || c.FailedRetention > store.MaxRetention) {
		return Invalidf("failed retention %v must be within %v..%v, or zero to keep failed jobs until removed", c.FailedRetention, store.MinRetention, store.MaxRetention)
	}
	return c.Bands.Validate()
}

// GroupConfig validates a GroupConfig.
func GroupConfig(c store.GroupConfig) error {
	if err := checkName("group", c.Group, false); err != nil {
		return err
	}
	if c.Type != "" {
		if err := Type(c.Type); err != nil {
			return err
		}
	}
	if c.MaxRunning < 0 {
		return Invalidf("max running %d must not be negative", c.MaxRunning)
	}
	if c.Weight < 0 || c.Weight > store.MaxWeight || c.Weight != c.Weight {
		return Invalidf("weight %v is outside 0..%d", c.Weight, store.MaxWeight)
	}
	if c.Weight > 0 && c.Weight < 0.001 {
		return Invalidf("weight %v is below 0.001", c.Weight)
	}
	return RateBurst(c.Rate, c.Burst)
}

// ParseRate reads a rate of job starts: "N/s", "N/m" or "N/h" (N from 1
// to store.MaxRate); "" is no rate.
func ParseRate(s string) (store.Rate, error) {
	if s == "" {
		return store.Rate{}, nil
	}
	n, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	per := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[unit]
	v, err := strconv.Atoi(n)
	if !ok || per == 0 || err != nil {
		return store.Rate{}, Invalidf("rate: want N/s, N/m or N/h, got %q", s)
	}
	if v < 1 || v > store.MaxRate {
		return store.Rate{}, Invalidf("rate: %q starts %d jobs per period, outside 1..%d", s, v, store.MaxRate)
	}
	return store.Rate{N: v, Per: per}, nil
}

// RateBurst validates a rate and its burst.
func RateBurst(r store.Rate, burst int) error {
	if r.N < 0 || r.N > store.MaxRate {
		return Invalidf("rate: %d jobs per period is outside 1..%d", r.N, store.MaxRate)
	}
	if r.N > 0 && r.Per != time.Second && r.Per != time.Minute && r.Per != time.Hour {
		return Invalidf("rate: want N/s, N/m or N/h, got a period of %v", r.Per)
	}
	if burst < 0 || burst > store.MaxRate {
		return Invalidf("burst %d is outside 0..%d", burst, store.MaxRate)
	}
	if burst > 0 && r.IsZero() {
		return Invalidf("burst %d needs a rate", burst)
	}
	return nil
}

// Accept validates an accept, sets a zero Limit to 1, and returns the
// compiled type patterns.
func Accept(p *store.AcceptParams) ([]glob.Pattern, error) {
	if len(p.Types) == 0 {
		return nil, Invalidf("accept needs at least one type or pattern")
	}
	pats := make([]glob.Pattern, len(p.Types))
	for i, t := range p.Types {
		var err error
		if pats[i], err = CompilePattern(t); err != nil {
			return nil, err
		}
	}
	if p.Limit < 0 || p.Limit > store.MaxAcceptLimit {
		return nil, Invalidf("accept limit %d is out of range 1..%d", p.Limit, store.MaxAcceptLimit)
	}
	if p.Limit == 0 {
		p.Limit = 1
	}
	if p.LeaseTimeout < 0 {
		return nil, Invalidf("lease timeout %v must not be negative", p.LeaseTimeout)
	}
	if p.LeaseTimeout > 0 && p.LeaseTimeout < store.MinLeaseTimeout {
		return nil, Invalidf("lease timeout %v is shorter than %v", p.LeaseTimeout, store.MinLeaseTimeout)
	}
	if len(p.Worker) > store.MaxNameLen {
		return nil, Invalidf("worker name is longer than %d bytes", store.MaxNameLen)
	}
	if err := Time("due_by", p.DueBy); err != nil {
		return nil, err
	}
	if _, err := groupScope(p.Groups); err != nil {
		return nil, err
	}
	return pats, nil
}

// AcceptScope compiles an accept's Groups and SkipGroups into a test of a
// group's name, nil when the accept takes every group.
func AcceptScope(p *store.AcceptParams) (func(group string) bool, error) {
	if len(p.Groups) == 0 && len(p.SkipGroups) == 0 {
		return nil, nil
	}
	in, err := groupScope(p.Groups)
	if err != nil || len(p.SkipGroups) == 0 {
		return in, err
	}
	skip := slices.Clone(p.SkipGroups)
	return func(group string) bool { return in(group) && !slices.Contains(skip, group) }, nil
}

// groupScope compiles AcceptParams.Groups into a test of a group's name
// (glob.GroupScope); its errors match ErrInvalid.
func groupScope(patterns []string) (func(group string) bool, error) {
	in, err := glob.GroupScope(patterns)
	if err != nil {
		return nil, asInvalid(err)
	}
	return in, nil
}

// Heartbeats validates a batch of heartbeats and returns each item's
// compacted data, nil where the item keeps the job's data.
func Heartbeats(ps []store.HeartbeatParams) ([][]byte, error) {
	datas := make([][]byte, len(ps))
	for i, p := range ps {
		if p.ID <= 0 || p.Token == "" {
			return nil, Invalidf("heartbeat needs a job id and a token")
		}
		if p.Progress != nil && (*p.Progress < 0 || *p.Progress > 100 || *p.Progress != *p.Progress) {
			return nil, Invalidf("job %d: progress %v is outside 0..100", p.ID, *p.Progress)
		}
		if p.Data != nil {
			d, err := Data("data", p.Data)
			if err != nil {
				return nil, fmt.Errorf("job %d: %w", p.ID, err)
			}
			datas[i] = d
		}
	}
	return datas, nil
}

// Finishes validates a batch of finishes and returns each item's
// compacted result (nil when it has none).
func Finishes(ps []store.FinishParams) ([][]byte, error) {
	results := make([][]byte, len(ps))
	for i := range ps {
		if err := Finish(&ps[i]); err != nil {
			return nil, err
		}
		r, err := Result(ps[i].Result)
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", ps[i].ID, err)
		}
		results[i] = r
	}
	return results, nil
}

// List validates a listing and sets a zero Limit to 100.
func List(p *store.ListParams) error {
	if p.Limit < 0 || p.Limit > store.MaxListLimit {
		return Invalidf("limit %d is out of range 1..%d", p.Limit, store.MaxListLimit)
	}
	if p.Limit == 0 {
		p.Limit = 100
	}
	if p.After < 0 {
		return Invalidf("cursor %d is not valid", p.After)
	}
	if err := Time("updated_since", p.UpdatedSince); err != nil {
		return err
	}
	for _, st := range p.States {
		if !st.Valid() {
			return Invalidf("unknown state %d", st)
		}
	}
	return nil
}

// Imports validates a batch of imports as Import does, and returns
// their add parameters checked (Adds) and their data.
func Imports(jobs []store.ImportJob) ([]store.AddParams, [][]byte, error) {
	ps := make([]store.AddParams, len(jobs))
	for i, j := range jobs {
		switch {
		case j.State == store.Running || !j.State.Valid():
			return nil, nil, Invalidf("import %d: state %s cannot be imported (a running job is imported pending)", i, j.State)
		case j.Parent != 0 || j.Key != "" || j.Unique:
			return nil, nil, Invalidf("import %d: a parent is given by ParentIndex, and imports have no key and are not unique", i)
		case j.ParentIndex >= i || j.ParentIndex < -1:
			return nil, nil, Invalidf("import %d: its parent (%d) must come before it in the batch", i, j.ParentIndex)
		case j.ParentIndex >= 0 && jobs[j.ParentIndex].ParentIndex >= 0:
			return nil, nil, Invalidf("import %d: its parent is itself a child: children cannot have children", i)
		case j.BedrockID < 0:
			return nil, nil, Invalidf("import %d: Bedrock id %d is negative", i, j.BedrockID)
		}
		if err := Time("created_at", j.CreatedAt); err != nil {
			return nil, nil, err
		}
		ps[i] = j.AddParams
	}
	return Adds(ps)
}

// UniqueFor checks an add's unique window: a window of at least a
// millisecond and at most MaxUniqueFor, states only with a window, and
// not with Unique (which finds a job of any age).
func UniqueFor(p *store.AddParams) error {
	p.UniqueFor = p.UniqueFor.Truncate(time.Microsecond)
	if len(p.UniqueStates) == 0 {
		// No states named is the default, as it is over HTTP, which
		// drops an empty list.
		p.UniqueStates = nil
	}
	switch {
	case p.UniqueFor < 0:
		return Invalidf("unique_for %v must not be negative", p.UniqueFor)
	case p.UniqueFor > 0 && p.UniqueFor < time.Millisecond:
		return Invalidf("unique_for %v is less than 1ms", p.UniqueFor)
	case p.UniqueFor > MaxUniqueFor:
		return Invalidf("unique_for %v is more than %v", p.UniqueFor, MaxUniqueFor)
	case p.UniqueFor == 0 && p.UniqueStates != nil:
		return Invalidf("unique_states apply with unique_for only")
	case p.UniqueFor > 0 && p.Unique:
		return Invalidf("unique and unique_for are two ways to find an existing job: give one")
	}
	for _, st := range p.UniqueStates {
		if !st.Valid() {
			return Invalidf("unique_states: %d is not a job state", st)
		}
	}
	return nil
}

// MaxUniqueFor bounds a unique window: a year.
const MaxUniqueFor = 366 * 24 * time.Hour

// Debounce checks an add's debounce: at least a millisecond and at most
// MaxUniqueFor, with a key (which names the job the adds replace), and
// without a run time or another way of finding the job.
func Debounce(p *store.AddParams) error {
	p.Debounce = p.Debounce.Truncate(time.Microsecond)
	switch {
	case p.Debounce == 0:
		return nil
	case p.Debounce < 0:
		return Invalidf("debounce %v must not be negative", p.Debounce)
	case p.Debounce < time.Millisecond:
		return Invalidf("debounce %v is less than 1ms", p.Debounce)
	case p.Debounce > MaxUniqueFor:
		return Invalidf("debounce %v is more than %v", p.Debounce, MaxUniqueFor)
	case p.Key == "":
		return Invalidf("debounce needs a key: it names the job that later adds replace")
	case !p.RunAt.IsZero():
		return Invalidf("debounce sets the run time: give run_at or debounce, not both")
	case p.Unique || p.UniqueFor > 0:
		return Invalidf("debounce replaces the job a unique add or unique window keeps: give one")
	}
	return nil
}
