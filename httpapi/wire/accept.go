package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/rotajobs/rota/store"
)

// An accept's answer carries every job a remote worker runs, so, like the
// event stream, it is on the hot path: with encoding/json, decoding the
// answer takes a remote worker about 6 µs per job and encoding it the
// server 2.5 µs, a quarter of what running a job over HTTP costs beyond
// running it in process. AppendAccept and ParseAccept write and read the
// JSON that encoding/json gives for an AcceptWire, byte for byte and value
// for value, without reflection; what they do not know (an unknown or
// repeated key, null, a string with escapes, a number or time out of the
// ordinary) goes to encoding/json, whole, so that the result is always
// what encoding/json gives.

// AppendAccept appends the JSON of an accept's answer, as json.Marshal
// writes AcceptWire{Jobs: NewJobWire(jobs[i])…}, to buf.
func AppendAccept(buf []byte, jobs []store.Job) []byte {
	buf = append(buf, `{"jobs":[`...)
	for i := range jobs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendJob(buf, &jobs[i])
	}
	return append(buf, "]}"...)
}

// appendJob appends j's JobWire JSON, falling back to encoding/json for
// the whole job when a field is out of the ordinary.
func appendJob(buf []byte, j *store.Job) []byte {
	start := len(buf)
	o := &jsonOut{buf: buf, ok: true}
	o.lit(`{"id":`)
	o.int(j.ID)
	o.lit(`,"type":`)
	o.str(j.Type)
	if j.Key != "" {
		o.lit(`,"key":`)
		o.str(j.Key)
	}
	o.lit(`,"group":`)
	o.str(j.Group)
	o.lit(`,"priority":`)
	o.int(int64(j.Priority))
	o.lit(`,"state":`)
	o.text(j.State)
	o.lit(`,"run_at":`)
	o.time(j.RunAt)
	o.lit(`,"data":`)
	o.raw(j.Data)
	o.lit(`,"attempt":`)
	o.int(int64(j.Attempt))
	o.lit(`,"max_attempts":`)
	o.int(int64(j.MaxAttempts))
	if j.Token != "" {
		o.lit(`,"token":`)
		o.str(j.Token)
	}
	if j.Worker != "" {
		o.lit(`,"worker":`)
		o.str(j.Worker)
	}
	if !j.LeaseUntil.IsZero() {
		o.lit(`,"lease_until":`)
		o.time(j.LeaseUntil)
	}
	if j.CancelRequested {
		o.lit(`,"cancel_requested":true`)
	}
	if j.Resubmit {
		o.lit(`,"resubmit":true`)
	}
	o.lit(`,"progress":`)
	o.float(j.Progress)
	if j.LastError != "" {
		o.lit(`,"last_error":`)
		o.str(j.LastError)
	}
	if len(j.Errors) > 0 {
		o.lit(`,"errors":`)
		o.sub(j.Errors)
	}
	if len(j.Result) > 0 {
		o.lit(`,"result":`)
		o.raw(j.Result)
	}
	if len(j.Meta) > 0 {
		o.lit(`,"meta":`)
		o.sub(j.Meta)
	}
	if j.Schedule != "" {
		o.lit(`,"schedule":`)
		o.str(j.Schedule)
	}
	if j.Missed != 0 {
		o.lit(`,"missed":`)
		o.text(j.Missed)
	}
	if !j.Slot.IsZero() {
		o.lit(`,"slot":`)
		o.time(j.Slot)
	}
	if j.Parent != 0 {
		o.lit(`,"parent":`)
		o.int(j.Parent)
	}
	if !j.ExpiresAt.IsZero() {
		o.lit(`,"expires_at":`)
		o.time(j.ExpiresAt)
	}
	if j.Expired {
		o.lit(`,"expired":true`)
	}
	if j.HasChildren {
		o.lit(`,"has_children":true`)
	}
	if j.BedrockID != 0 {
		o.lit(`,"bedrock_id":`)
		o.int(j.BedrockID)
	}
	if len(j.ParentData) > 0 {
		o.lit(`,"parent_data":`)
		o.raw(j.ParentData)
	}
	if len(j.Children) > 0 {
		o.lit(`,"children":`)
		o.sub(j.Children)
	}
	if j.HasDeps {
		o.lit(`,"has_deps":true`)
	}
	if j.DepPolicy != 0 {
		o.lit(`,"on_dep_failure":`)
		o.text(j.DepPolicy)
	}
	if len(j.Deps) > 0 {
		o.lit(`,"deps":`)
		o.sub(j.Deps)
	}
	o.lit(`,"created_at":`)
	o.time(j.CreatedAt)
	if !j.StartedAt.IsZero() {
		o.lit(`,"started_at":`)
		o.time(j.StartedAt)
	}
	if !j.PrevStartedAt.IsZero() {
		o.lit(`,"prev_started_at":`)
		o.time(j.PrevStartedAt)
	}
	if !j.FinishedAt.IsZero() {
		o.lit(`,"finished_at":`)
		o.time(j.FinishedAt)
	}
	o.lit(`,"updated_at":`)
	o.time(j.UpdatedAt)
	o.lit(`,"backoff_base":"`)
	o.lit(j.BackoffBase.String())
	o.lit(`","backoff_max":"`)
	o.lit(j.BackoffMax.String())
	o.lit(`"`)
	if j.RetryAfter > 0 {
		o.lit(`,"retry_after":"`)
		o.lit(j.RetryAfter.String())
		o.lit(`"`)
	}
	if j.Timeout > 0 {
		o.lit(`,"timeout":"`)
		o.lit(j.Timeout.String())
		o.lit(`"`)
	}
	if j.UniqueFor > 0 {
		o.lit(`,"unique_for":"`)
		o.lit(j.UniqueFor.String())
		o.lit(`"`)
	}
	if j.Debounce > 0 {
		o.lit(`,"debounce":"`)
		o.lit(j.Debounce.String())
		o.lit(`"`)
	}
	o.lit(`}`)
	if !o.ok {
		b, err := json.Marshal(NewJobWire(*j))
		if err != nil {
			// What json.Marshal cannot encode (invalid data) it cannot
			// encode in the whole answer either; say so in JSON.
			b = []byte(`null`)
		}
		return append(o.buf[:start], b...)
	}
	return o.buf
}

// raw appends a RawMessage field. encoding/json compacts a RawMessage and
// escapes <, >, & and U+2028/9 in it; what needs none of that is copied
// as it is.
func (o *jsonOut) raw(m json.RawMessage) {
	if len(m) == 0 {
		o.lit("null")
		return
	}
	if o.ok = o.ok && plainRaw(m); o.ok {
		o.buf = append(o.buf, m...)
	}
}

// sub appends a rare field with encoding/json's own encoding.
func (o *jsonOut) sub(v any) {
	b, err := json.Marshal(v)
	o.ok = o.ok && err == nil
	o.buf = append(o.buf, b...)
}

// plainRaw reports whether encoding/json writes the JSON text m as it is:
// valid, with no whitespace between tokens and nothing it escapes.
func plainRaw(m []byte) bool {
	for i := 0; i < len(m); i++ {
		switch c := m[i]; c {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xE2: // 0xE2 starts U+2028/9
			return false
		}
	}
	return json.Valid(m)
}

// ParseAccept reads an accept's answer as json.Unmarshal into AcceptWire
// and JobWire.Job would.
func ParseAccept(data []byte) ([]store.Job, error) {
	if jobs, err := parseAcceptFast(data); err == nil {
		return jobs, nil
	}
	var w AcceptWire
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, err
	}
	jobs := make([]store.Job, len(w.Jobs))
	for i, jw := range w.Jobs {
		var err error
		if jobs[i], err = jw.Job(); err != nil {
			return nil, err
		}
	}
	return jobs, nil
}

// parseAcceptFast reads {"jobs":[job,…]} (whitespace as encoding/json
// writes it: none), each job an object whose keys are JobWire's, each at
// most once, in any order; anything else is errShape.
func parseAcceptFast(d []byte) ([]store.Job, error) {
	p := &jsonScan{d: bytes.TrimRight(d, "\n")}
	// Room for every job up front: a job is a large struct, and an answer
	// of hundreds grown by append was copied about twice over. Each job
	// begins {"id": as the server writes it (a hint only, bounded by the
	// most an accept takes).
	jobs := make([]store.Job, 0, min(bytes.Count(d, []byte(`{"id":`)), maxAcceptHint))
	ok := p.lit(`{"jobs":`) && p.array(func() bool {
		jobs = append(jobs, store.Job{})
		return p.job(&jobs[len(jobs)-1])
	}) && p.lit("}") && len(p.d) == 0
	if !ok {
		return nil, errShape
	}
	return jobs, nil
}

// maxAcceptHint bounds parseAcceptFast's room for jobs made up front.
const maxAcceptHint = 10000

// jsonScan reads JSON as encoding/json writes it, a token at a time.
type jsonScan struct {
	d    []byte
	seen map[string]string // common's values
}

func (p *jsonScan) lit(s string) bool {
	if bytes.HasPrefix(p.d, []byte(s)) {
		p.d = p.d[len(s):]
		return true
	}
	return false
}

// array reads [elem,…], elem reading one element.
func (p *jsonScan) array(elem func() bool) bool {
	if !p.lit("[") {
		return false
	}
	if p.lit("]") {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if !p.lit(",") {
			return p.lit("]")
		}
	}
}

// object reads {"key":value,…}, value(key) reading each value; a null
// value is refused (encoding/json leaves the field as it was, which the
// fast readers do not copy).
func (p *jsonScan) object(value func(key []byte) bool) bool {
	if !p.lit("{") {
		return false
	}
	if p.lit("}") {
		return true
	}
	for {
		key, ok := p.strBytes()
		if !ok || !p.lit(":") || bytes.HasPrefix(p.d, []byte("null")) || !value(key) {
			return false
		}
		if !p.lit(",") {
			return p.lit("}")
		}
	}
}

func (p *jsonScan) bool() (v, ok bool) {
	switch {
	case p.lit("true"):
		return true, true
	case p.lit("false"):
		return false, true
	}
	return false, false
}

// str reads a string of valid UTF-8 without escapes or control
// characters (encoding/json would replace invalid UTF-8).
func (p *jsonScan) str() (string, bool) {
	b, ok := p.strBytes()
	return string(b), ok
}

// strBytes reads a string as str does and returns its bytes, in place.
func (p *jsonScan) strBytes() ([]byte, bool) {
	if len(p.d) == 0 || p.d[0] != '"' {
		return nil, false
	}
	for i := 1; i < len(p.d); i++ {
		switch c := p.d[i]; {
		case c == '"':
			b := p.d[1:i]
			if !utf8.Valid(b) {
				return nil, false
			}
			p.d = p.d[i+1:]
			return b, true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// common reads a string as str does, for fields whose values repeat from
// job to job (type, group, state, worker): it allocates each value once
// per answer.
func (p *jsonScan) common() (string, bool) {
	b, ok := p.strBytes()
	if !ok {
		return "", false
	}
	if s, ok := p.seen[string(b)]; ok {
		return s, true
	}
	s := string(b)
	if len(p.seen) < 64 {
		if p.seen == nil {
			p.seen = make(map[string]string)
		}
		p.seen[s] = s
	}
	return s, true
}

// number reads a number as JSON's grammar has it:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?; integer says whether it
// has neither fraction nor exponent.
func (p *jsonScan) number() (n []byte, integer, ok bool) {
	d := p.d
	i := 0
	digits := func() int {
		k := 0
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
			k++
		}
		return k
	}
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case digits() == 0:
		return nil, false, false
	}
	integer = true
	if i < len(d) && d[i] == '.' {
		i++
		if digits() == 0 {
			return nil, false, false
		}
		integer = false
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if digits() == 0 {
			return nil, false, false
		}
		integer = false
	}
	p.d = d[i:]
	return d[:i], integer, true
}

func (p *jsonScan) int() (int64, bool) {
	n, integer, ok := p.number()
	if !ok || !integer {
		return 0, false
	}
	v, err := strconv.ParseInt(string(n), 10, 64)
	return v, err == nil
}

func (p *jsonScan) float() (float64, bool) {
	n, _, ok := p.number()
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(n), 64)
	return v, err == nil
}

func (p *jsonScan) time() (time.Time, bool) {
	quoted := p.d
	b, ok := p.strBytes()
	if !ok {
		return time.Time{}, false
	}
	var t time.Time
	// encoding/json's Time.UnmarshalJSON: strict RFC 3339.
	err := t.UnmarshalJSON(quoted[:len(b)+2])
	return t, err == nil
}

// value reads one JSON value of any kind and returns its bytes: objects
// and arrays by matching brackets outside strings, then checked whole.
func (p *jsonScan) value() ([]byte, bool) {
	if len(p.d) == 0 {
		return nil, false
	}
	depth, i, inStr := 0, 0, false
	for ; i < len(p.d); i++ {
		c := p.d[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
				if depth == 0 {
					i++
					goto end
				}
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				goto end
			}
			depth--
			if depth == 0 {
				i++
				goto end
			}
		case ',':
			if depth == 0 {
				goto end
			}
		}
	}
end:
	v := p.d[:i]
	// Whitespace around the value is not part of what encoding/json
	// gives a RawMessage.
	if len(v) == 0 || isSpace(v[0]) || isSpace(v[len(v)-1]) || !json.Valid(v) {
		return nil, false
	}
	p.d = p.d[i:]
	return v, true
}

// job reads one JobWire object into j. encoding/json matches keys
// without case, and a repeated key overwrites: both are refused here.
func (p *jsonScan) job(j *store.Job) bool {
	var seen uint64
	return p.object(func(name []byte) bool {
		key, known := jobKeys[string(name)]
		if !known || seen&key.bit != 0 {
			return false
		}
		seen |= key.bit
		return p.field(j, key.name)
	})
}

// jobKeys are JobWire's JSON keys, each with a bit of its own.
var jobKeys = func() map[string]jobKey {
	keys := []string{"id", "type", "key", "group", "priority", "state", "run_at", "data", "attempt", "max_attempts",
		"token", "worker", "lease_until", "cancel_requested", "resubmit", "progress", "last_error", "errors", "result",
		"meta", "schedule", "missed", "slot", "retry_after", "parent", "has_children", "bedrock_id", "parent_data",
		"children", "created_at", "started_at", "prev_started_at", "finished_at", "updated_at", "backoff_base", "backoff_max", "timeout", "expires_at", "expired", "unique_for", "debounce",
		"has_deps", "on_dep_failure", "deps"}
	m := make(map[string]jobKey, len(keys))
	for i, k := range keys {
		m[k] = jobKey{name: k, bit: 1 << i}
	}
	return m
}()

type jobKey struct {
	name string
	bit  uint64
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// field reads the value of key into j.
func (p *jsonScan) field(j *store.Job, key string) bool {
	var ok bool
	str := func(dst *string) { *dst, ok = p.str() }
	integer := func(dst *int) {
		var v int64
		v, ok = p.int()
		if ok && int64(int(v)) != v {
			ok = false
		}
		*dst = int(v)
	}
	tm := func(dst *time.Time) { *dst, ok = p.time() }
	boolean := func(dst *bool) { *dst, ok = p.bool() }
	raw := func(dst *json.RawMessage) {
		var v []byte
		if v, ok = p.value(); ok {
			*dst = append(json.RawMessage(nil), v...)
		}
	}
	sub := func(dst any) { // rare fields: encoding/json's own decoding
		var v []byte
		if v, ok = p.value(); ok {
			ok = json.Unmarshal(v, dst) == nil
		}
	}
	dur := func(dst *time.Duration) {
		var s string
		if s, ok = p.common(); ok && s != "" {
			var err error
			*dst, err = time.ParseDuration(s)
			ok = err == nil
		}
	}
	switch key {
	case "id":
		j.ID, ok = p.int()
	case "type":
		j.Type, ok = p.common()
	case "key":
		str(&j.Key)
	case "group":
		j.Group, ok = p.common()
	case "priority":
		integer(&j.Priority)
	case "state":
		var s []byte
		if s, ok = p.strBytes(); ok {
			ok = j.State.UnmarshalText(s) == nil
		}
	case "run_at":
		tm(&j.RunAt)
	case "data":
		raw(&j.Data)
	case "attempt":
		integer(&j.Attempt)
	case "max_attempts":
		integer(&j.MaxAttempts)
	case "token":
		str(&j.Token)
	case "worker":
		j.Worker, ok = p.common()
	case "lease_until":
		tm(&j.LeaseUntil)
	case "cancel_requested":
		boolean(&j.CancelRequested)
	case "resubmit":
		boolean(&j.Resubmit)
	case "progress":
		j.Progress, ok = p.float()
	case "last_error":
		str(&j.LastError)
	case "errors":
		sub(&j.Errors)
	case "result":
		raw(&j.Result)
	case "meta":
		sub(&j.Meta)
	case "schedule":
		str(&j.Schedule)
	case "missed":
		var s string
		if s, ok = p.str(); ok {
			ok = j.Missed.UnmarshalText([]byte(s)) == nil
		}
	case "slot":
		tm(&j.Slot)
	case "retry_after":
		var v string
		if v, ok = p.str(); ok {
			d, err := time.ParseDuration(v)
			j.RetryAfter, ok = d, err == nil
		}
	case "timeout":
		var v string
		if v, ok = p.str(); ok {
			d, err := time.ParseDuration(v)
			j.Timeout, ok = d, err == nil
		}
	case "unique_for":
		var v string
		if v, ok = p.str(); ok {
			d, err := time.ParseDuration(v)
			j.UniqueFor, ok = d, err == nil
		}
	case "debounce":
		var v string
		if v, ok = p.str(); ok {
			d, err := time.ParseDuration(v)
			j.Debounce, ok = d, err == nil
		}
	case "parent":
		j.Parent, ok = p.int()
	case "has_children":
		boolean(&j.HasChildren)
	case "expires_at":
		tm(&j.ExpiresAt)
	case "expired":
		boolean(&j.Expired)
	case "bedrock_id":
		j.BedrockID, ok = p.int()
	case "parent_data":
		raw(&j.ParentData)
	case "children":
		sub(&j.Children)
	case "has_deps":
		boolean(&j.HasDeps)
	case "on_dep_failure":
		var s string
		if s, ok = p.str(); ok {
			ok = j.DepPolicy.UnmarshalText([]byte(s)) == nil
		}
	case "deps":
		sub(&j.Deps)
	case "created_at":
		tm(&j.CreatedAt)
	case "started_at":
		tm(&j.StartedAt)
	case "prev_started_at":
		tm(&j.PrevStartedAt)
	case "finished_at":
		tm(&j.FinishedAt)
	case "updated_at":
		tm(&j.UpdatedAt)
	case "backoff_base":
		dur(&j.BackoffBase)
	case "backoff_max":
		dur(&j.BackoffMax)
	}
	return ok
}
