package store

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"
)

// Per-job logs: the records a handler logs while it runs a job (rota.Logger
// in a handler, a program's stderr under rota work), kept with the job's
// attempt and removed with the job.

// Bounds of a job's logs.
const (
	// MaxLogBytes bounds what one attempt of a job keeps: the records it
	// logs past it are counted (LogAttempt.Dropped) and dropped, the
	// first of them and every later one, so that what is kept is the
	// beginning of the attempt's log without gaps. A record counts its
	// message and attributes plus LogRecordOverhead.
	MaxLogBytes = 64 << 10
	// LogRecordOverhead is what each record counts beyond its message and
	// attributes, so that a flood of empty records is bounded too.
	LogRecordOverhead = 32
	// MaxLogAppend bounds the records of one AppendLogs item.
	MaxLogAppend = 10_000
	// MaxLogPage bounds the records of one Logs page (also its default).
	MaxLogPage = 1000
)

// LogRecord is one record a job's run logged.
type LogRecord struct {
	// Attempt is the attempt that logged it, Seq its place in the
	// attempt's log (from 1); both are the store's, set when it is kept.
	Attempt int
	Seq     int
	Time    time.Time
	Level   slog.Level
	Message string
	// Attrs are the record's attributes as one JSON object (nil: none),
	// groups as nested objects.
	Attrs json.RawMessage
}

// Size is what the record counts toward MaxLogBytes.
func (r *LogRecord) Size() int { return len(r.Message) + len(r.Attrs) + LogRecordOverhead }

// AppendLogsParams appends records to the log of the attempt a worker
// holds, fenced by its lease as a heartbeat is.
type AppendLogsParams struct {
	Lease
	Records []LogRecord
	// Dropped counts records the worker dropped itself (it bounds its
	// buffer as the store does); the store adds them to the attempt's.
	Dropped int
}

// AppendLogsResult is the answer to one AppendLogs item.
type AppendLogsResult struct {
	// Kept and Dropped count this item's records the store kept and
	// dropped (past MaxLogBytes).
	Kept, Dropped int
	Err           error
}

// LogsParams asks for a page of a job's log.
type LogsParams struct {
	ID int64
	// Attempt is the attempt whose records to read; zero means the latest
	// that logged.
	Attempt int
	// After is the Seq after which the page starts (zero: the first).
	After int
	// Limit bounds the page; zero means MaxLogPage.
	Limit int
}

// LogAttempt sums up one attempt's log.
type LogAttempt struct {
	Attempt int
	// Records and Bytes are what the store keeps; Dropped the records it
	// dropped past MaxLogBytes (with those the worker dropped).
	Records, Bytes, Dropped int
}

// LogsResult is a page of a job's log.
type LogsResult struct {
	// Attempt is the attempt the page is of (zero when the job logged
	// nothing).
	Attempt int
	// Attempts are the attempts that logged, oldest first.
	Attempts []LogAttempt
	Records  []LogRecord
	// Next is the After of the next page; zero when this is the last.
	Next int
}

// Logs is a store that keeps per-job logs. Both stores are, and so is a
// remote server's client. A job's logs are those of its current cycle: an
// attempt's log starts afresh when a new lease logs under the same
// attempt number (a recurring job's next run, a job re-added after it
// ended), and the logs of that attempt and later ones of the earlier
// cycle are dropped then. They are removed with the job (Remove, a
// parent's drop of its ended children, retention).
type Logs interface {
	// AppendLogs appends records to the logs of attempts that workers
	// hold, in one transaction; an item whose lease is not current gets
	// the error a heartbeat would (ErrWorkerConflict, ErrCanceled), and
	// nothing of it is kept.
	AppendLogs(ctx context.Context, ps []AppendLogsParams) ([]AppendLogsResult, error)
	// Logs reads a page of a job's log. A job out of the caller's reach
	// (WithReach) is a missing one: ErrNotFound.
	Logs(ctx context.Context, p LogsParams) (LogsResult, error)
}
