package remote

import (
	"context"
	"net/url"
	"strconv"
	"sync"

	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

// AppendLogs appends records to the logs of attempts this worker holds
// (store.Logs), one request per item (POST /v1/jobs/{id}/logs); the
// server fences each by its token and bounds the attempt's log.
func (s *Store) AppendLogs(ctx context.Context, ps []store.AppendLogsParams) ([]store.AppendLogsResult, error) {
	ps, err := check.AppendLogs(ps)
	if err != nil {
		return nil, err
	}
	out := make([]store.AppendLogsResult, len(ps))
	errs := make([]error, len(ps))
	// The items go at once, a few at a time: a worker sends the records
	// of all its running jobs together every second.
	sem := make(chan struct{}, maxLogRequests)
	var wg sync.WaitGroup
	for i, p := range ps {
		req := wire.AppendLogsRequest{Token: p.Token, Records: wire.WireLogRecords(p.Records), Dropped: p.Dropped}
		for k := range req.Records {
			req.Records[k].Attempt, req.Records[k].Seq = 0, 0 // the server's
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			var resp wire.AppendLogsResponse
			err := s.do(ctx, "POST", jobPath(p.ID, "logs"), nil, req, &resp)
			if err != nil && !isItemError(err) {
				errs[i] = err
				return
			}
			out[i] = store.AppendLogsResult{Kept: resp.Kept, Dropped: resp.Dropped, Err: err}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// maxLogRequests bounds the log appends of one AppendLogs in flight at
// once.
const maxLogRequests = 8

// Logs reads a page of a job's log (GET /v1/jobs/{id}/logs).
func (s *Store) Logs(ctx context.Context, p store.LogsParams) (store.LogsResult, error) {
	if err := check.Logs(&p); err != nil {
		return store.LogsResult{}, err
	}
	q := url.Values{"limit": {strconv.Itoa(p.Limit)}}
	if p.Attempt > 0 {
		q.Set("attempt", strconv.Itoa(p.Attempt))
	}
	if p.After > 0 {
		q.Set("after", strconv.Itoa(p.After))
	}
	var resp wire.LogsResponse
	if err := s.do(ctx, "GET", jobPath(p.ID, "logs"), q, nil, &resp); err != nil {
		return store.LogsResult{}, err
	}
	return wire.StoreLogs(resp)
}
