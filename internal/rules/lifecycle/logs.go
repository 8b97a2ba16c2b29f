package lifecycle

import "github.com/rotajobs/rota/store"

// KeepLogs decides which of recs an attempt's log keeps, having kept sum
// so far: the longest prefix that stays within store.MaxLogBytes. Once a
// record is dropped every later one is (the attempt's Dropped is not
// zero), so that the log kept is the attempt's beginning, without gaps.
// It returns how many records it keeps and their size.
func KeepLogs(sum store.LogAttempt, recs []store.LogRecord) (keep, size int) {
	if sum.Dropped > 0 {
		return 0, 0
	}
	for i := range recs {
		s := recs[i].Size()
		if sum.Bytes+size+s > store.MaxLogBytes {
			return i, size
		}
		size += s
	}
	return len(recs), size
}

// LogStartsAfresh reports whether an append under the lease tagged tag
// starts its attempt's log afresh, the log having been written under
// the lease tagged kept ("" when the attempt has no log): an attempt's
// log is its latest run's, and a run that reuses an attempt number (a
// snoozed or released job, a recurring job's next run, a job re-added
// after it ended) has a lease of its own.
func LogStartsAfresh(kept, tag string) bool { return kept != tag }
