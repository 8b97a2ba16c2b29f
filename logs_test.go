package rota_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rotajobs/rota"
)

// syncBuffer is a buffer that several goroutines write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestJobLogger: a handler's records are kept with its job's attempt, at
// the job log level and above, with their attributes and groups, sent
// while the job runs and before it finishes; they reach the worker's
// logger too, with the job's id.
func TestJobLogger(t *testing.T) {
	c := newClient(t)
	var out syncBuffer
	w := rota.NewWorker(c, rota.WorkerConfig{Logger: slog.New(slog.NewTextHandler(&out, nil))})
	logged := make(chan struct{})
	release := make(chan struct{})
	w.Handle("log", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		log := rota.Logger(ctx)
		log.Debug("not kept")
		log.Info("starting", "n", 1)
		log.Info("fetched", "url", "/a?x=1&y=<2>", "path", `C:\u0026`)
		log.WithGroup("req").With("id", "r-1").Warn("slow", "ms", 250)
		if job.Attempt == 1 {
			close(logged)
			<-release
			log.Error("failing")
			return errors.New("first attempt fails")
		}
		log.Info("second try")
		return nil
	}))
	runWorker(t, w)
	j := add(t, c, rota.AddParams{Type: "log", MaxAttempts: 2, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	<-logged
	// Records are sent while the job runs (every second).
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := c.Logs(t.Context(), rota.LogsParams{ID: j.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Records) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the running job's records were not sent: %+v", res)
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(release)
	if j = waitJob(t, c, j.ID); j.State != rota.Completed {
		t.Fatalf("job %v, want completed", j.State)
	}
	res, err := c.Logs(t.Context(), rota.LogsParams{ID: j.ID, Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Records {
		got = append(got, r.Level.String()+" "+r.Message+" "+string(r.Attrs))
	}
	want := []string{`INFO starting {"n":1}`, `INFO fetched {"url":"/a?x=1&y=<2>","path":"C:\\u0026"}`, `WARN slow {"req":{"id":"r-1","ms":250}}`, `ERROR failing `}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("attempt 1's records = %q, want %q", got, want)
	}
	res, err = c.Logs(t.Context(), rota.LogsParams{ID: j.ID})
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempt != 2 || len(res.Records) != 4 || res.Records[3].Message != "second try" || len(res.Attempts) != 2 {
		t.Errorf("latest log = attempt %d, %d records, attempts %+v; want attempt 2's three records", res.Attempt, len(res.Records), res.Attempts)
	}
	if s := out.String(); !strings.Contains(s, "msg=slow") || !strings.Contains(s, "req.ms=250") || !strings.Contains(s, "id="+strconv.FormatInt(j.ID, 10)) {
		t.Errorf("the worker's logger did not get the job's records with its id:\n%s", s)
	}
}

// TestJobLoggerBound: past MaxLogBytes a job's records are counted and
// dropped, by the worker as by the store.
func TestJobLoggerBound(t *testing.T) {
	c := newClient(t)
	w := rota.NewWorker(c, rota.WorkerConfig{Logger: slog.New(slog.DiscardHandler)})
	line := strings.Repeat("x", 1000)
	w.Handle("chatty", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		for range 1000 {
			rota.Logger(ctx).Info(line)
		}
		return nil
	}))
	runWorker(t, w)
	j := add(t, c, rota.AddParams{Type: "chatty"})
	waitJob(t, c, j.ID)
	res, err := c.Logs(t.Context(), rota.LogsParams{ID: j.ID})
	if err != nil {
		t.Fatal(err)
	}
	kept := rota.MaxLogBytes / (1000 + 32)
	if len(res.Attempts) != 1 || res.Attempts[0].Records != kept || res.Attempts[0].Dropped != 1000-kept {
		t.Errorf("attempts = %+v, want %d records kept and %d dropped", res.Attempts, kept, 1000-kept)
	}
}

// TestLoggerOutsideHandler: outside a handler Logger is the default logger.
func TestLoggerOutsideHandler(t *testing.T) {
	if rota.Logger(context.Background()) != slog.Default() {
		t.Error("Logger outside a handler is not slog.Default()")
	}
	if rota.JobLogHandler(context.Background()) != nil {
		t.Error("JobLogHandler outside a handler is not nil")
	}
}
