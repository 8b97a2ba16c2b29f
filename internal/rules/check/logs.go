package check

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/rotajobs/rota/store"
)

// AppendLogs validates a batch of log appends and returns a copy of it
// whose records' attributes are compacted, for the store to number.
func AppendLogs(in []store.AppendLogsParams) ([]store.AppendLogsParams, error) {
	ps := slices.Clone(in)
	for i := range ps {
		p := &ps[i]
		p.Records = slices.Clone(p.Records)
		if p.ID <= 0 || p.Token == "" {
			return nil, Invalidf("a log append needs a job id and a token")
		}
		if len(p.Records) > store.MaxLogAppend {
			return nil, TooLarge("job %d: %d log records in one append (at most %d)", p.ID, len(p.Records), store.MaxLogAppend)
		}
		if p.Dropped < 0 || p.Dropped > 1<<31-1 {
			return nil, Invalidf("job %d: dropped %d is outside 0..%d", p.ID, p.Dropped, 1<<31-1)
		}
		for k := range p.Records {
			if err := LogRecord(&p.Records[k]); err != nil {
				return nil, Invalidf("job %d: log record %d: %s", p.ID, k, strings.TrimPrefix(err.Error(), store.ErrInvalid.Error()+": "))
			}
		}
	}
	return ps, nil
}

// LogRecord validates one record: a message of UTF-8 without NUL bytes,
// attributes that are one JSON object (compacted in place), a time in
// range (zero: the store's).
func LogRecord(r *store.LogRecord) error {
	if !utf8.ValidString(r.Message) || strings.ContainsRune(r.Message, 0) {
		return Invalidf("the message is not UTF-8 text without NUL bytes")
	}
	if !r.Time.IsZero() {
		if err := Time("time", r.Time); err != nil {
			return err
		}
	}
	if len(r.Attrs) == 0 || string(r.Attrs) == "null" {
		r.Attrs = nil
		return nil
	}
	if !utf8.Valid(r.Attrs) {
		return Invalidf("attrs are not UTF-8")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(r.Attrs, &obj); err != nil {
		return Invalidf("attrs are not a JSON object: %v", err)
	}
	if JSONDepth(r.Attrs) > store.MaxDataDepth {
		return Invalidf("attrs nest deeper than %d levels", store.MaxDataDepth)
	}
	if len(obj) == 0 {
		r.Attrs = nil
		return nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, r.Attrs); err != nil {
		return Invalidf("attrs: %v", err)
	}
	r.Attrs = buf.Bytes()
	return nil
}

// Logs validates a read of a job's log and fills in its page's default.
func Logs(p *store.LogsParams) error {
	switch {
	case p.ID <= 0:
		return Invalidf("job id %d is not valid", p.ID)
	case p.Attempt < 0:
		return Invalidf("attempt %d is negative", p.Attempt)
	case p.After < 0:
		return Invalidf("after %d is negative", p.After)
	case p.Limit < 0 || p.Limit > store.MaxLogPage:
		return Invalidf("limit %d is outside 0..%d", p.Limit, store.MaxLogPage)
	}
	if p.Limit == 0 {
		p.Limit = store.MaxLogPage
	}
	return nil
}
