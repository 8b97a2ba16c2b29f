package store

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gobwas/glob"
)

// MaxNameLen bounds type names, keys, groups and worker names.
const MaxNameLen = 255

const globMeta = "*?[]{}\\"

// CheckType reports whether name can be a job type: 1..255 bytes of
// UTF-8, no control characters, and none of the GLOB metacharacters
// * ? [ ] { } \ (so that a type is never mistaken for a pattern).
func CheckType(name string) error {
	if err := checkName("type", name, true); err != nil {
		return err
	}
	if strings.ContainsAny(name, globMeta) {
		return Invalidf("type %q contains a GLOB metacharacter (one of %s)", name, globMeta)
	}
	return nil
}

func checkName(what, s string, required bool) error {
	if s == "" {
		if required {
			return Invalidf("%s is required", what)
		}
		return nil
	}
	if len(s) > MaxNameLen {
		return Invalidf("%s is %d bytes long, more than %d", what, len(s), MaxNameLen)
	}
	if !utf8.ValidString(s) {
		return Invalidf("%s is not valid UTF-8", what)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return Invalidf("%s %q contains a control character", what, s)
		}
	}
	return nil
}

// Pattern matches type names with GLOB syntax: * any run, ? one
// character, [abc] and [a-z] classes, [!abc] negation, {a,b} alternatives.
type Pattern struct {
	src     string
	literal bool
	g       *glob.Pattern
}

// CompilePattern parses a type name or GLOB pattern.
func CompilePattern(p string) (Pattern, error) {
	if err := checkName("type pattern", p, true); err != nil {
		return Pattern{}, err
	}
	if !strings.ContainsAny(p, globMeta) {
		return Pattern{src: p, literal: true}, nil
	}
	g, err := glob.Compile(p)
	if err != nil {
		return Pattern{}, Invalidf("bad type pattern %q: %v", p, err)
	}
	return Pattern{src: p, g: g}, nil
}

// Literal reports whether the pattern is a plain type name.
func (p Pattern) Literal() bool { return p.literal }

// Match reports whether the type name matches.
func (p Pattern) Match(name string) bool {
	if p.literal {
		return p.src == name
	}
	return p.g.Match(name)
}

func (p Pattern) String() string { return p.src }

// NormalizeData checks that data is a JSON object no larger than
// MaxDataSize and returns it compacted; nil or empty means {}.
func NormalizeData(what string, data json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return []byte("{}"), nil
	}
	if len(data) > MaxDataSize {
		return nil, Invalidf("%s is %d bytes, more than %d", what, len(data), MaxDataSize)
	}
	if !json.Valid(data) {
		return nil, Invalidf("%s is not valid JSON", what)
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

// NormalizeResult checks a result: any JSON value up to MaxDataSize; nil
// means none.
func NormalizeResult(data json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	if len(data) > MaxDataSize {
		return nil, Invalidf("result is %d bytes, more than %d", len(data), MaxDataSize)
	}
	if !json.Valid(data) {
		return nil, Invalidf("result is not valid JSON")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return nil, Invalidf("result: %v", err)
	}
	return buf.Bytes(), nil
}

// CheckAdd validates one AddParams and fills in defaults. The returned
// data is compacted JSON.
func CheckAdd(p *AddParams) ([]byte, error) {
	if err := CheckType(p.Type); err != nil {
		return nil, err
	}
	if err := checkName("key", p.Key, false); err != nil {
		return nil, err
	}
	if err := checkName("group", p.Group, false); err != nil {
		return nil, err
	}
	if p.MaxAttempts < 0 {
		return nil, Invalidf("max_attempts is %d, must not be negative", p.MaxAttempts)
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.BackoffBase < 0 || p.BackoffMax < 0 {
		return nil, Invalidf("back-off durations must not be negative")
	}
	if p.BackoffBase == 0 {
		p.BackoffBase = DefaultBackoffBase
	}
	if p.BackoffMax == 0 {
		p.BackoffMax = DefaultBackoffMax
	}
	if p.BackoffMax < p.BackoffBase {
		return nil, Invalidf("backoff_max %v is less than backoff_base %v", p.BackoffMax, p.BackoffBase)
	}
	if err := CheckTime("run_at", p.RunAt); err != nil {
		return nil, err
	}
	return NormalizeData("data", p.Data)
}

var (
	minTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

// CheckTime rejects times a store cannot hold (before 1970 or after 9999).
// The zero time is allowed and means "unset".
func CheckTime(what string, t time.Time) error {
	if t.IsZero() {
		return nil
	}
	if t.Before(minTime) || t.After(maxTime) {
		return Invalidf("%s %s is out of range (1970..9999)", what, t.Format(time.RFC3339))
	}
	return nil
}

// CheckFinish validates one FinishParams.
func CheckFinish(p *FinishParams) error {
	if p.ID <= 0 {
		return Invalidf("job id %d is not valid", p.ID)
	}
	if p.Token == "" {
		return Invalidf("job %d: token is required", p.ID)
	}
	switch p.As {
	case Complete, Fail, Snooze, Release, Cancel:
	default:
		return Invalidf("job %d: unknown ending %d", p.ID, p.As)
	}
	if len(p.Error) > MaxDataSize {
		return Invalidf("job %d: error text is %d bytes, more than %d", p.ID, len(p.Error), MaxDataSize)
	}
	return CheckTime("run_at", p.RunAt)
}

// Backoff returns the delay before retry number attempt (1-based):
// base·2^(attempt−1), capped at max, with ±10% jitter.
func Backoff(base, max time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	if d > max || d <= 0 {
		d = max
	}
	jitter := time.Duration(float64(d) * 0.1 * (2*rand.Float64() - 1))
	return d + jitter
}

// NewToken returns a random 128-bit fencing token as 32 hex characters.
func NewToken() string {
	const hex = "0123456789abcdef"
	var b [32]byte
	a, c := rand.Uint64(), rand.Uint64()
	for i := 0; i < 16; i++ {
		b[i] = hex[a>>(4*i)&0xf]
		b[16+i] = hex[c>>(4*i)&0xf]
	}
	return string(b[:])
}
