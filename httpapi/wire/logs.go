package wire

import (
	"fmt"
	"log/slog"

	"github.com/rotajobs/rota/store"
)

// LogRecords converts records from the wire to the store; a level that is
// none of slog's names is invalid input.
func LogRecords(rs []LogRecord) ([]store.LogRecord, error) {
	out := make([]store.LogRecord, len(rs))
	for i, r := range rs {
		var level slog.Level
		if err := level.UnmarshalText([]byte(r.Level)); err != nil {
			return nil, fmt.Errorf("%w: log record %d: level %q is not DEBUG, INFO, WARN or ERROR (with an optional offset, INFO+2)", store.ErrInvalid, i, r.Level)
		}
		out[i] = store.LogRecord{Attempt: r.Attempt, Seq: r.Seq, Time: r.Time, Level: level, Message: r.Message, Attrs: r.Attrs}
	}
	return out, nil
}

// WireLogRecords converts store records to the wire.
func WireLogRecords(rs []store.LogRecord) []LogRecord {
	out := make([]LogRecord, len(rs))
	for i, r := range rs {
		out[i] = LogRecord{Attempt: r.Attempt, Seq: r.Seq, Time: r.Time, Level: r.Level.String(), Message: r.Message, Attrs: r.Attrs}
	}
	return out
}

// Logs converts a page of a job's log to the wire.
func Logs(res store.LogsResult) LogsResponse {
	out := LogsResponse{Attempt: res.Attempt, Attempts: make([]LogAttempt, len(res.Attempts)), Records: WireLogRecords(res.Records), Next: res.Next}
	for i, a := range res.Attempts {
		out.Attempts[i] = LogAttempt(a)
	}
	return out
}

// StoreLogs converts a page of a job's log from the wire.
func StoreLogs(res LogsResponse) (store.LogsResult, error) {
	recs, err := LogRecords(res.Records)
	if err != nil {
		return store.LogsResult{}, err
	}
	out := store.LogsResult{Attempt: res.Attempt, Records: recs, Next: res.Next}
	for _, a := range res.Attempts {
		out.Attempts = append(out.Attempts, store.LogAttempt(a))
	}
	return out, nil
}
