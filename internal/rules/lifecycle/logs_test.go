package lifecycle

import (
	"strings"
	"testing"

	"github.com/rotajobs/rota/store"
)

func TestKeepLogs(t *testing.T) {
	rec := func(n int) store.LogRecord {
		return store.LogRecord{Message: strings.Repeat("m", n-store.LogRecordOverhead)}
	}
	half := store.MaxLogBytes / 2
	for _, c := range []struct {
		name           string
		sum            store.LogAttempt
		recs           []store.LogRecord
		keep, wantSize int
	}{
		{"empty", store.LogAttempt{}, nil, 0, 0},
		{"all fit", store.LogAttempt{}, []store.LogRecord{rec(100), rec(200)}, 2, 300},
		{"exactly the bound", store.LogAttempt{Bytes: half}, []store.LogRecord{rec(half)}, 1, half},
		{"one byte over", store.LogAttempt{Bytes: half + 1}, []store.LogRecord{rec(half)}, 0, 0},
		// No gaps: a small record after one that does not fit is dropped too.
		{"prefix only", store.LogAttempt{Bytes: half}, []store.LogRecord{rec(100), rec(half), rec(40)}, 1, 100},
		{"after a drop nothing", store.LogAttempt{Bytes: 10, Dropped: 1}, []store.LogRecord{rec(40)}, 0, 0},
		{"one record over the bound", store.LogAttempt{}, []store.LogRecord{rec(store.MaxLogBytes + 1)}, 0, 0},
	} {
		keep, size := KeepLogs(c.sum, c.recs)
		if keep != c.keep || size != c.wantSize {
			t.Errorf("%s: KeepLogs = %d, %d; want %d, %d", c.name, keep, size, c.keep, c.wantSize)
		}
	}
	if LogStartsAfresh("a", "a") || !LogStartsAfresh("", "a") || !LogStartsAfresh("a", "b") {
		t.Error("LogStartsAfresh: an attempt's log starts afresh exactly when another lease writes it")
	}
}
