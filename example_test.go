package rota_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/store/sqlite" // the embedded store; registers "sqlite"
)

// dbPath returns a fresh database file for an example, and a function that
// removes it.
func dbPath() (string, func()) {
	dir, err := os.MkdirTemp("", "rota-example-")
	if err != nil {
		log.Fatal(err)
	}
	return filepath.Join(dir, "jobs.db"), func() { os.RemoveAll(dir) }
}

// Email is the data of an "email.send" job.
type Email struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

// Open a client on the embedded SQLite store, add a job, run it with a
// typed handler, and wait for its result.
func Example() {
	path, cleanup := dbPath()
	defer cleanup()
	client, err := rota.Open(path) // or "postgres://…" with store/postgres imported
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()

	data, _ := json.Marshal(Email{To: "ada@example.com", Subject: "hello"})
	added, err := client.Add(ctx, rota.AddParams{Type: "email.send", Data: data})
	if err != nil {
		log.Fatal(err)
	}

	w := rota.NewWorker(client, rota.WorkerConfig{Concurrency: 4})
	rota.Handle(w, "email.send", func(ctx context.Context, job *rota.Job, e Email) error {
		return rota.SetResult(ctx, map[string]string{"sent_to": e.To})
	})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(runCtx) }()

	job, err := client.Wait(ctx, added.Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	stop()
	<-done
	fmt.Println(job.State, string(job.Result))
	// Output: completed {"sent_to":"ada@example.com"}
}

// Add jobs with a key: adding a job whose type and key exist updates the
// pending job instead of adding another.
func ExampleClient_Add() {
	path, cleanup := dbPath()
	defer cleanup()
	client, err := rota.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()

	for _, to := range []string{"ada@example.com", "bob@example.com"} {
		res, err := client.Add(ctx, rota.AddParams{
			Type:     "report.build",
			Key:      "daily", // unique within the type
			Group:    "acme",  // the tenant, for fairness
			Priority: 5,
			RunAt:    time.Now().Add(time.Hour),
			Data:     json.RawMessage(fmt.Sprintf(`{"mail_to":%q}`, to)),
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Outcome, res.Job.State, string(res.Job.Data))
	}
	// Output:
	// inserted pending {"mail_to":"ada@example.com"}
	// updated pending {"mail_to":"bob@example.com"}
}

// Run jobs by hand: accept leases a job with a fencing token, and every
// later call for it carries that token.
func ExampleClient_Accept() {
	path, cleanup := dbPath()
	defer cleanup()
	client, err := rota.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()

	if _, err := client.Add(ctx, rota.AddParams{Type: "image.resize", Data: json.RawMessage(`{"w":64}`)}); err != nil {
		log.Fatal(err)
	}
	jobs, err := client.Accept(ctx, rota.AcceptParams{Types: []string{"image.*"}, Limit: 10, Wait: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	for _, j := range jobs {
		fmt.Println("running", j.Type, "attempt", j.Attempt)
		if err := client.Complete(ctx, j.Lease(), json.RawMessage(`{"ok":true}`)); err != nil {
			log.Fatal(err)
		}
		// The lease ended: its token no longer changes the job.
		err := client.Fail(ctx, j.Lease(), fmt.Errorf("too late"), false)
		fmt.Println(err != nil)
	}
	// Output:
	// running image.resize attempt 1
	// true
}

// Add a job inside your own transaction on the same SQLite database: it
// exists only if the transaction commits, together with your writes.
func ExampleClient_AddTx() {
	path, cleanup := dbPath()
	defer cleanup()
	client, err := rota.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()

	db, err := client.Store().(*sqlite.Store).DB()
	if err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)`); err != nil {
		log.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO orders (item) VALUES ('book')`); err != nil {
		log.Fatal(err)
	}
	res, err := client.AddTx(ctx, tx, rota.AddParams{Type: "order.ship", Data: json.RawMessage(`{"order":1}`)})
	if err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}
	job, err := client.Get(ctx, res.Job.ID)
	fmt.Println(job.Type, job.State, err)
	// Output: order.ship pending <nil>
}

// Wait for a job to end; Subscribe follows every change on the way.
func ExampleClient_Wait() {
	path, cleanup := dbPath()
	defer cleanup()
	client, err := rota.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()

	res, err := client.Add(ctx, rota.AddParams{Type: "cleanup"})
	if err != nil {
		log.Fatal(err)
	}
	go client.Cancel(ctx, res.Job.ID)
	job, err := client.Wait(ctx, res.Job.ID)
	fmt.Println(job.State, err)
	// Output: cancelled <nil>
}

// Middleware wraps every handler of a worker: here it logs each run and
// bounds it with a timeout.
func ExampleMiddleware() {
	path, cleanup := dbPath()
	defer cleanup()
	client, err := rota.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()

	logRuns := func(next rota.Handler) rota.Handler {
		return rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
			fmt.Println("start", job.Type, "attempt", job.Attempt)
			err := next.Work(ctx, job)
			fmt.Println("end", job.Type, err)
			return err
		})
	}
	w := rota.NewWorker(client, rota.WorkerConfig{
		Middleware: []rota.Middleware{logRuns, rota.Timeout(time.Minute)},
	})
	w.Handle("index.rebuild", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error { return nil }))
	res, _ := client.Add(ctx, rota.AddParams{Type: "index.rebuild"})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(runCtx) }()
	client.Wait(ctx, res.Job.ID)
	stop()
	<-done
	// Output:
	// start index.rebuild attempt 1
	// end index.rebuild <nil>
}

// stampTenant is an AddHook: it puts jobs without a group in the tenant of
// the request's context.
type stampTenant struct{ rota.HookDefaults }

type tenantKey struct{}

func (stampTenant) BeforeAdd(ctx context.Context, p *rota.AddParams) error {
	if p.Group == "" {
		tenant, ok := ctx.Value(tenantKey{}).(string)
		if !ok {
			return fmt.Errorf("no tenant in the context")
		}
		p.Group = tenant
	}
	return nil
}

// Hooks run at points of a job's life; an AddHook may change or refuse
// what is added.
func ExampleAddHook() {
	path, cleanup := dbPath()
	defer cleanup()
	st, err := sqlite.Open(path, sqlite.Config{})
	if err != nil {
		log.Fatal(err)
	}
	client, err := rota.NewClient(st, rota.Config{Hooks: []rota.Hook{stampTenant{}}, CloseStore: true})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	ctx := context.WithValue(context.Background(), tenantKey{}, "acme")
	res, err := client.Add(ctx, rota.AddParams{Type: "invoice.send"})
	fmt.Println(res.Job.Group, err)
	_, err = client.Add(context.Background(), rota.AddParams{Type: "invoice.send"})
	fmt.Println(err)
	// Output:
	// acme <nil>
	// rota: add hook rota_test.stampTenant: no tenant in the context
}

// A hook can be a function: AddHookFunc and FinishHookFunc make one. This
// one stamps every job with the program that added it, in its metadata.
func ExampleAddHookFunc() {
	path, cleanup := dbPath()
	defer cleanup()
	st, err := sqlite.Open(path, sqlite.Config{})
	if err != nil {
		log.Fatal(err)
	}
	stamp := rota.AddHookFunc(func(ctx context.Context, p *rota.AddParams) error {
		// A copy: the caller's map is the caller's.
		meta := maps.Clone(p.Meta)
		if meta == nil {
			meta = map[string]string{}
		}
		meta["added_by"] = "billing"
		p.Meta = meta
		return nil
	})
	client, err := rota.NewClient(st, rota.Config{Hooks: []rota.Hook{stamp}, CloseStore: true})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	res, err := client.Add(context.Background(), rota.AddParams{Type: "invoice.send"})
	fmt.Println(res.Job.Meta["added_by"], err)
	// Output:
	// billing <nil>
}

// A recurring job: each time a run completes, the job is pending again at
// its next slot. Re-adding it by key with the same schedule, as a program
// that declares its recurring jobs at every start does, keeps its slot.
func ExampleAddParams_schedule() {
	path, cleanup := dbPath()
	defer cleanup()
	client, err := rota.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()

	first := time.Date(2026, 1, 31, 9, 0, 0, 0, time.UTC)
	for range 2 {
		res, err := client.Add(ctx, rota.AddParams{
			Type:     "invoice.send",
			Key:      "monthly",
			Schedule: "SCHEDULED, +1 MONTH", // Bedrock's repeat grammar; or cron: "0 9 1 * *"
			Missed:   rota.MissedOnce,       // slots missed while down run once
			RunAt:    first,
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Outcome, res.Job.Schedule, res.Job.RunAt.Format(time.DateTime))
	}
	jobs, err := client.Accept(ctx, rota.AcceptParams{Types: []string{"invoice.send"}})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Complete(ctx, jobs[0].Lease(), nil); err != nil {
		log.Fatal(err)
	}
	job, err := client.Get(ctx, jobs[0].ID)
	if err != nil {
		log.Fatal(err)
	}
	// The next slot after 2026-01-31 plus a month is March 3rd, as SQLite
	// (and so Bedrock) computes it; it has passed, so the job moves on to
	// the first slot to come on its phase.
	fmt.Println(job.State, job.RunAt.After(time.Now()))
	// Output:
	// inserted SCHEDULED, +1 MONTH 2026-01-31 09:00:00
	// updated SCHEDULED, +1 MONTH 2026-01-31 09:00:00
	// pending true
}

// A parent job adds children while it runs; it waits for them, then runs
// again and sees what they did.
func ExampleAddParams_parent() {
	path, cleanup := dbPath()
	defer cleanup()
	client, err := rota.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()

	if _, err := client.Add(ctx, rota.AddParams{Type: "batch", Data: json.RawMessage(`{"files":2}`)}); err != nil {
		log.Fatal(err)
	}
	parent, _ := client.Accept(ctx, rota.AcceptParams{Types: []string{"batch"}})
	for i := range 2 {
		child := rota.AddParams{Type: "file", Parent: parent[0].ID, Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
		if _, err := client.Add(ctx, child); err != nil {
			log.Fatal(err)
		}
	}
	// The parent's run completes; it waits for its children.
	if err := client.Complete(ctx, parent[0].Lease(), nil); err != nil {
		log.Fatal(err)
	}
	children, _ := client.Accept(ctx, rota.AcceptParams{Types: []string{"file"}, Limit: 10})
	for _, c := range children {
		fmt.Println("child sees", string(c.ParentData))
		if err := client.Complete(ctx, c.Lease(), json.RawMessage(`"done"`)); err != nil {
			log.Fatal(err)
		}
	}
	again, _ := client.Accept(ctx, rota.AcceptParams{Types: []string{"batch"}})
	for _, c := range again[0].Children {
		fmt.Println("parent sees", string(c.Data), c.State, string(c.Result))
	}
	// Output:
	// child sees {"files":2}
	// child sees {"files":2}
	// parent sees {"n":0} completed "done"
	// parent sees {"n":1} completed "done"
}

// A unique window: a burst of adds of the same data within ten minutes
// makes one job; the later adds answer with it, outcome unchanged.
func ExampleAddParams_uniqueFor() {
	path, cleanup := dbPath()
	defer cleanup()
	client, err := rota.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()

	for _, to := range []string{"ann", "ann", "bob"} {
		res, err := client.Add(ctx, rota.AddParams{
			Type:      "mail.welcome",
			Data:      json.RawMessage(`{"to":"` + to + `"}`),
			UniqueFor: 10 * time.Minute,
			// Jobs that were cancelled never count; narrow further with
			// UniqueStates: []rota.State{rota.Pending, rota.Running}.
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(to, res.Outcome, res.Job.ID)
	}
	// Output:
	// ann inserted 1
	// ann unchanged 1
	// bob inserted 2
}

// Debounce: a burst of adds of one key makes one job, which runs once the
// adds stop for the debounce, with the last add's data.
func ExampleAddParams_debounce() {
	path, cleanup := dbPath()
	defer cleanup()
	client, err := rota.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()

	for _, rev := range []string{"1", "2", "3"} {
		res, err := client.Add(ctx, rota.AddParams{
			Type:     "search.reindex",
			Key:      "doc-42",
			Data:     json.RawMessage(`{"rev":` + rev + `}`),
			Debounce: 30 * time.Second, // each add pushes the run 30 s further
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Outcome, res.Job.ID, string(res.Job.Data), time.Until(res.Job.RunAt) > 29*time.Second)
	}
	// Output:
	// inserted 1 {"rev":1} true
	// updated 1 {"rev":2} true
	// updated 1 {"rev":3} true
}

// Bound how many jobs of a type run at once, across every worker and node:
// jobs over the bound stay pending until a running one ends.
func ExampleClient_SetTypeConfig() {
	path, cleanup := dbPath()
	defer cleanup()
	client, err := rota.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()

	if err := client.SetTypeConfig(ctx, rota.TypeConfig{Type: "sms.send", MaxRunning: 2}); err != nil {
		log.Fatal(err)
	}
	for _, tenant := range []string{"acme", "globex", "acme"} {
		if _, err := client.Add(ctx, rota.AddParams{Type: "sms.send", Group: tenant}); err != nil {
			log.Fatal(err)
		}
	}
	jobs, err := client.Accept(ctx, rota.AcceptParams{Types: []string{"sms.send"}, Limit: 10})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("started", len(jobs))
	if err := client.Complete(ctx, jobs[0].Lease(), nil); err != nil {
		log.Fatal(err)
	}
	more, err := client.Accept(ctx, rota.AcceptParams{Types: []string{"sms.send"}, Limit: 10})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("after one ended, started", len(more))
	// Output:
	// started 2
	// after one ended, started 1
}

// A type's Rate limits how many of its jobs start per period, across
// every node, with Burst of them at once; it is shared between the type's
// groups by their weights. Jobs over it wait: a waiting Accept (and
// Worker.Run) sleeps until the next token comes.
func ExampleClient_SetTypeConfig_rate() {
	path, cleanup := dbPath()
	defer cleanup()
	client, err := rota.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()

	rate, err := rota.ParseRate("2/s")
	if err != nil {
		log.Fatal(err)
	}
	if err := client.SetTypeConfig(ctx, rota.TypeConfig{Type: "sms.send", Rate: rate, Burst: 3}); err != nil {
		log.Fatal(err)
	}
	for range 5 {
		if _, err := client.Add(ctx, rota.AddParams{Type: "sms.send"}); err != nil {
			log.Fatal(err)
		}
	}
	jobs, err := client.Accept(ctx, rota.AcceptParams{Types: []string{"sms.send"}, Limit: 10})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("at once:", len(jobs))
	start := time.Now()
	more, err := client.Accept(ctx, rota.AcceptParams{Types: []string{"sms.send"}, Limit: 10, Wait: 2 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	waited := time.Since(start)
	fmt.Println("then", len(more), "when the next token came, half a second later:", waited > 400*time.Millisecond && waited < 900*time.Millisecond)
	// Output:
	// at once: 3
	// then 1 when the next token came, half a second later: true
}

// A job's Timeout bounds each of its runs: a handler that outlasts it
// sees its context end (cause rota.ErrTimedOut), and the attempt fails as
// "timed out after …", retried under the job's policy. The server takes
// the run back at that time even if the worker keeps sending heartbeats.
func ExampleAddParams_timeout() {
	path, cleanup := dbPath()
	defer cleanup()
	client, err := rota.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()

	added, err := client.Add(ctx, rota.AddParams{Type: "report.build", Timeout: 200 * time.Millisecond, MaxAttempts: 1})
	if err != nil {
		log.Fatal(err)
	}
	w := rota.NewWorker(client, rota.WorkerConfig{})
	w.Handle("report.build", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		select {
		case <-time.After(time.Minute): // far longer than the job may run
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(runCtx) }()

	job, err := client.Wait(ctx, added.Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	stop()
	<-done
	fmt.Println(job.State, job.Timeout, job.LastError)
	// Output: failed 200ms timed out after 200ms
}

// A handler logs through the job's logger; its records are kept with the
// job's attempt (at most 64 KiB of them), and read with Client.Logs.
func ExampleLogger() {
	path, cleanup := dbPath()
	defer cleanup()
	client, err := rota.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()

	added, err := client.Add(ctx, rota.AddParams{Type: "invoice.send"})
	if err != nil {
		log.Fatal(err)
	}
	// The worker's own logger gets the records too; here it drops them.
	w := rota.NewWorker(client, rota.WorkerConfig{Logger: slog.New(slog.DiscardHandler)})
	w.Handle("invoice.send", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		log := rota.Logger(ctx)
		log.Info("rendering", "pages", 3)
		log.Warn("mail server slow", "ms", 900)
		return nil
	}))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(runCtx) }()
	if _, err := client.Wait(ctx, added.Job.ID); err != nil {
		log.Fatal(err)
	}
	stop()
	<-done

	page, err := client.Logs(ctx, rota.LogsParams{ID: added.Job.ID})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range page.Records {
		fmt.Println(page.Attempt, r.Seq, r.Level, r.Message, string(r.Attrs))
	}
	// Output:
	// 1 1 INFO rendering {"pages":3}
	// 1 2 WARN mail server slow {"ms":900}
}

// A job's ExpiresAt is a deadline to start by: a job not started by then
// (here nothing accepts it) is never started, and the lease monitor ends
// it, cancelled and Expired.
func ExampleAddParams_expiresAt() {
	path, cleanup := dbPath()
	defer cleanup()
	client, err := rota.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()

	added, err := client.Add(ctx, rota.AddParams{Type: "quote.fetch", ExpiresAt: time.Now().Add(200 * time.Millisecond)})
	if err != nil {
		log.Fatal(err)
	}
	job, err := client.Wait(ctx, added.Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.State, job.Expired, job.Attempt, strings.HasPrefix(job.LastError, "expired at "))
	// Output: cancelled true 0 true
}

// A workflow added in one call: fetch two feeds, then merge them once
// both are done (AfterKeys names earlier jobs of the same call by key;
// After names jobs by id). The merge waits until its dependencies have
// ended, and its handler sees their outcomes (Job.Deps).
func ExampleAddParams_after() {
	path, cleanup := dbPath()
	defer cleanup()
	client, err := rota.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()

	added, err := client.AddMany(ctx, []rota.AddParams{
		{Type: "feed.fetch", Key: "a", Data: json.RawMessage(`{"url":"a"}`)},
		{Type: "feed.fetch", Key: "b", Data: json.RawMessage(`{"url":"b"}`)},
		{Type: "feed.merge", AfterKeys: []string{"a", "b"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("merge is", added[2].Job.State)
	w := rota.NewWorker(client, rota.WorkerConfig{})
	w.Handle("feed.fetch", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		return rota.SetResult(ctx, map[string]int{"items": len(job.Key)})
	}))
	w.Handle("feed.merge", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		for _, d := range job.Deps {
			fmt.Println("after", d.Key, d.State, string(d.Result))
		}
		return nil
	}))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(runCtx) }()
	job, err := client.Wait(ctx, added[2].Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	stop()
	<-done
	fmt.Println("merge", job.State)
	// Output:
	// merge is waiting
	// after a completed {"items":1}
	// after b completed {"items":1}
	// merge completed
}

// Every change a program makes to a job (cancel, retry, update, remove,
// a pause of its type or group) is recorded with the time and the actor
// its context names; History shows them with what the job did itself.
func ExampleClient_History() {
	path, cleanup := dbPath()
	defer cleanup()
	client, err := rota.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := rota.WithActor(context.Background(), "billing-service")

	res, err := client.Add(ctx, rota.AddParams{Type: "invoice.send", Data: []byte(`{"invoice":42}`)})
	if err != nil {
		log.Fatal(err)
	}
	priority := 5
	if _, err := client.Update(ctx, rota.UpdateParams{ID: res.Job.ID, Priority: &priority}); err != nil {
		log.Fatal(err)
	}
	if err := client.Cancel(rota.WithActor(ctx, "alice"), res.Job.ID); err != nil {
		log.Fatal(err)
	}
	history, err := client.History(ctx, res.Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range history {
		if e.Audited {
			fmt.Printf("%s by %s: %s\n", e.Action, e.Actor, e.Detail)
		} else {
			fmt.Printf("%s\n", e.Action)
		}
	}
	// Output:
	// added
	// update by billing-service: priority 0 → 5
	// cancel by alice: pending → cancelled
	// ended
}

// Add a batch of jobs with callbacks: "report.merge" runs once every page
// has ended, whatever the outcome, and sees the batch's counts in its data;
// "report.mail" only when every page completed.
func ExampleClient_AddBatch() {
	path, cleanup := dbPath()
	defer cleanup()
	client, err := rota.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()

	var pages []rota.AddParams
	for page := 1; page <= 3; page++ {
		pages = append(pages, rota.AddParams{Type: "report.page", Data: json.RawMessage(fmt.Sprintf(`{"page":%d}`, page))})
	}
	batch, _, err := client.AddBatch(ctx, rota.NewBatch{
		Jobs:       pages,
		OnComplete: &rota.AddParams{Type: "report.merge", Data: json.RawMessage(`{"report":"q3"}`)},
		OnSuccess:  &rota.AddParams{Type: "report.mail"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("members:", batch.Counts.Total, "done:", batch.Done)

	// Run the pages: the last one to end adds the callbacks.
	for range 3 {
		jobs, err := client.Accept(ctx, rota.AcceptParams{Types: []string{"report.page"}})
		if err != nil {
			log.Fatal(err)
		}
		if err := client.Complete(ctx, jobs[0].Lease(), nil); err != nil {
			log.Fatal(err)
		}
	}
	batch, err = client.GetBatch(ctx, batch.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("completed:", batch.Counts.Completed, "done:", batch.Done)
	merge, err := client.Get(ctx, batch.CompleteJob)
	if err != nil {
		log.Fatal(err)
	}
	var data struct {
		Report string `json:"report"`
		Batch  struct {
			Counts   rota.BatchCounts `json:"counts"`
			Callback string           `json:"callback"`
		} `json:"batch"`
	}
	if err := json.Unmarshal(merge.Data, &data); err != nil {
		log.Fatal(err)
	}
	fmt.Println(merge.Type, data.Report, data.Batch.Callback, data.Batch.Counts.Completed, "of", data.Batch.Counts.Total)
	// Output:
	// members: 3 done: false
	// completed: 3 done: true
	// report.merge q3 complete 3 of 3
}
