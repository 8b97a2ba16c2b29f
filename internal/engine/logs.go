package engine

import (
	"time"

	"github.com/rotajobs/rota/internal/rules/lifecycle"
	"github.com/rotajobs/rota/store"
)

// LogTx is what AppendLogs needs of a store's transaction beyond Tx.
type LogTx interface {
	Tx
	// LogAttempt reads the summary of job id's log of attempt, with the
	// tag of the lease that wrote it; ok is false when it has none.
	LogAttempt(id int64, attempt int) (sum store.LogAttempt, tag string, ok bool, err error)
	// StartLog deletes job id's logs of attempt and later ones.
	StartLog(id int64, attempt int) error
	// WriteLog inserts recs (their Attempt and Seq set) into job id's log
	// and writes the attempt's summary sum under the lease tagged tag.
	WriteLog(id int64, tag string, sum store.LogAttempt, recs []store.LogRecord) error
}

// AppendLogs appends each item's records to the log of the attempt its
// lease holds (store.Logs), fencing each item as a heartbeat is and
// keeping what lifecycle.KeepLogs allows.
func AppendLogs(t LogTx, ps []store.AppendLogsParams, out []store.AppendLogsResult) error {
	ids := make([]int64, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	rows, err := t.Lock(ids)
	if err != nil {
		return err
	}
	var now time.Time
	for i := range ps {
		p := &ps[i]
		r := rows[p.ID]
		if err := lifecycle.Fence(p.ID, r, p.Token); err != nil {
			out[i].Err = err
			continue
		}
		tag := store.LeaseTag(p.Token)
		sum, kept, ok, err := t.LogAttempt(p.ID, r.Attempt)
		if err != nil {
			return err
		}
		if !ok || lifecycle.LogStartsAfresh(kept, tag) {
			if err := t.StartLog(p.ID, r.Attempt); err != nil {
				return err
			}
			sum = store.LogAttempt{Attempt: r.Attempt}
		}
		keep, size := lifecycle.KeepLogs(sum, p.Records)
		recs := p.Records[:keep]
		for k := range recs {
			if recs[k].Time.IsZero() {
				if now.IsZero() {
					if now, err = t.Now(); err != nil {
						return err
					}
				}
				recs[k].Time = now
			}
			recs[k].Attempt, recs[k].Seq = r.Attempt, sum.Records+k+1
		}
		dropped := len(p.Records) - keep
		sum.Records += keep
		sum.Bytes += size
		sum.Dropped = min(sum.Dropped+dropped+p.Dropped, 1<<31-1)
		if err := t.WriteLog(p.ID, tag, sum, recs); err != nil {
			return err
		}
		out[i] = store.AppendLogsResult{Kept: keep, Dropped: dropped}
	}
	return nil
}
