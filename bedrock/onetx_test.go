package bedrock_test

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota/bedrock"
	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/sqlite"
)

// The tests of this file show that each command that changes several
// things is one transaction: a statement inside it is made to fail (a
// deferred constraint trigger on PostgreSQL, which raises when the
// transaction commits; a trigger that aborts the statement on SQLite,
// inside the writer's transaction), and nothing of the command is
// applied. Then the fault is taken away and the same command succeeds.

// faults makes statements of the store's transactions fail.
type faults struct {
	t      *testing.T
	exec   func(q string) error
	create func(name, event, table, cond string) string
	drop   func(name, table string) string
	made   map[string]string // trigger → its table
}

// failWhen makes the store's transactions fail when a row of the jobs
// table (PostgreSQL: table, "jobs" or "jobs_ended"; SQLite has one) is
// written by event (INSERT, UPDATE or DELETE) under cond, written with
// NEW. and OLD. in the columns both stores share.
func (f *faults) failWhen(event, table, cond string) {
	f.t.Helper()
	name := fmt.Sprintf("injected_%d", len(f.made))
	if err := f.exec(f.create(name, event, table, cond)); err != nil {
		f.t.Fatalf("inject a failure: %v", err)
	}
	f.made[name] = table
}

// clear takes every injected failure away.
func (f *faults) clear() {
	f.t.Helper()
	for name, table := range f.made {
		if err := f.exec(f.drop(name, table)); err != nil {
			f.t.Fatalf("take the failure away: %v", err)
		}
	}
	clear(f.made)
}

// forEachStoreWithFaults is forEachStore with a way to make statements
// fail.
func forEachStoreWithFaults(t *testing.T, fn func(t *testing.T, tr *tester, f *faults)) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "rota.db")
		st, err := sqlite.Open(path, sqlite.Config{})
		if err != nil {
			t.Fatal(err)
		}
		tr := start(t, st, bedrock.Config{})
		db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		fn(t, tr, &faults{t: t, made: map[string]string{},
			exec: func(q string) error { _, err := db.Exec(q); return err },
			create: func(name, event, _, cond string) string {
				return fmt.Sprintf(`CREATE TRIGGER %s AFTER %s ON rota_jobs WHEN %s BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
					name, event, cond)
			},
			drop: func(name, _ string) string { return "DROP TRIGGER " + name },
		})
	})
	t.Run("postgres", func(t *testing.T) {
		st := openPostgres(t)
		tr := start(t, st, bedrock.Config{})
		schema := schemaOf(t, st)
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, os.Getenv("ROTA_TEST_POSTGRES"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		exec := func(q string) error { _, err := conn.Exec(ctx, q); return err }
		if err := exec(`CREATE FUNCTION ` + schema + `.injected_failure() RETURNS trigger LANGUAGE plpgsql AS
			$$ BEGIN RAISE EXCEPTION 'injected failure'; END $$`); err != nil {
			t.Fatal(err)
		}
		fn(t, tr, &faults{t: t, made: map[string]string{}, exec: exec,
			create: func(name, event, table, cond string) string {
				return fmt.Sprintf(`CREATE CONSTRAINT TRIGGER %s AFTER %s ON %s.%s DEFERRABLE INITIALLY DEFERRED
					FOR EACH ROW WHEN (%s) EXECUTE FUNCTION %s.injected_failure()`, name, event, schema, table, cond, schema)
			},
			drop: func(name, table string) string { return fmt.Sprintf("DROP TRIGGER %s ON %s.%s", name, schema, table) },
		})
	})
}

// schemaOf is the schema of a PostgreSQL store opened by openPostgres.
func schemaOf(t *testing.T, st store.Store) string {
	t.Helper()
	s, ok := st.(interface{ Schema() string })
	if !ok {
		t.Fatalf("%T does not tell its schema", st)
	}
	return pgx.Identifier{s.Schema()}.Sanitize()
}

// rotaID is the rota id of the job with Bedrock id bid.
func (tr *tester) rotaID(bid string) int64 {
	tr.t.Helper()
	n, err := strconv.ParseInt(bid, 10, 64)
	if err != nil {
		tr.t.Fatal(err)
	}
	m, err := tr.c.Store().(store.BedrockIDs).ByBedrockID(context.Background(), []int64{n})
	if err != nil || m[n] == 0 {
		tr.t.Fatalf("job %s: %v", bid, err)
	}
	return m[n]
}

// snapshot is what QueryJob shows of each job (missing: "gone").
func (tr *tester) snapshot(bids ...string) map[string]string {
	tr.t.Helper()
	out := map[string]string{}
	for _, id := range bids {
		r := tr.do("QueryJob", "jobID", id)
		if r.Status != "200 OK" {
			out[id] = r.Status
			continue
		}
		out[id] = r.Body
	}
	return out
}

// refused runs a command that the injected failure must refuse, and
// checks that the jobs are as they were.
func (tr *tester) refused(t *testing.T, jobs []string, method string, headers ...string) {
	t.Helper()
	before := tr.snapshot(jobs...)
	if r := tr.do(method, headers...); strings.HasPrefix(r.Status, "2") {
		t.Fatalf("%s %v: %s under an injected failure", method, headers, r.Status)
	}
	if after := tr.snapshot(jobs...); !maps.Equal(before, after) {
		for _, id := range jobs {
			if before[id] != after[id] {
				t.Errorf("%s was partly applied: job %s was\n\t%s\nand is\n\t%s", method, id, before[id], after[id])
			}
		}
	}
}

// familyWithEndedChild makes a parent (name, with a repeat) running
// again after a child it added finished: the parent's next finish or
// retry drops that child.
func familyWithEndedChild(tr *tester, name string) (parent, child string) {
	parent = tr.create("name", name, "repeat", "FINISHED, +1 HOUR", "data", `{"n":1}`)
	tr.ok("GetJob", "name", name)
	child = tr.create("name", name+"_child", "parentJobID", parent)
	tr.ok("FinishJob", "jobID", parent)
	tr.ok("GetJob", "name", name+"_child")
	tr.ok("FinishJob", "jobID", child)
	tr.ok("GetJob", "name", name)
	return parent, child
}

// TestFinishJobIsOneTransaction: FinishJob with data and ignoreRepeat
// writes the data, ends the repeat, completes the run and drops the ended
// children together; a failure of the last (the child's removal) leaves
// all of it undone.
func TestFinishJobIsOneTransaction(t *testing.T) {
	forEachStoreWithFaults(t, func(t *testing.T, tr *tester, f *faults) {
		parent, child := familyWithEndedChild(tr, "parent")
		f.failWhen("DELETE", "jobs_ended", fmt.Sprintf("OLD.id = %d", tr.rotaID(child)))
		finish := []string{"jobID", parent, "data", `{"n":2}`, "ignoreRepeat", "true"}
		tr.refused(t, []string{parent, child}, "FinishJob", finish...)
		eq(t, "state", tr.query(parent)["state"], "RUNNING")
		f.clear()
		tr.ok("FinishJob", finish...)
		tr.expect("404 No job with this jobID", "QueryJob", "jobID", parent)
		tr.expect("404 No job with this jobID", "QueryJob", "jobID", child)
	})
}

// TestRetryJobIsOneTransaction: RetryJob with data, a new priority, a
// name and a delay, of a parent with an ended child.
func TestRetryJobIsOneTransaction(t *testing.T) {
	forEachStoreWithFaults(t, func(t *testing.T, tr *tester, f *faults) {
		parent, child := familyWithEndedChild(tr, "parent")
		f.failWhen("DELETE", "jobs_ended", fmt.Sprintf("OLD.id = %d", tr.rotaID(child)))
		retry := []string{"jobID", parent, "data", `{"n":2}`, "jobPriority", "1000", "name", "renamed",
			"ignoreRepeat", "true", "delay", "60"}
		tr.refused(t, []string{parent, child}, "RetryJob", retry...)
		f.clear()
		tr.ok("RetryJob", retry...)
		q := tr.query(parent)
		eq(t, "state", q["state"], "QUEUED")
		eq(t, "data", q["data"], `{"n":2}`)
		eq(t, "priority", q["priority"], "1000")
		eq(t, "name", q["name"], "renamed")
		tr.expect("404 No job with this jobID", "QueryJob", "jobID", child)

		// The same when the failure is the run's end itself, after the
		// data and priority are written.
		id := tr.create("name", "single", "data", `{"n":1}`)
		tr.ok("GetJob", "name", "single")
		f.failWhen("UPDATE", "jobs", fmt.Sprintf("NEW.id = %d AND NEW.state = 0", tr.rotaID(id)))
		tr.refused(t, []string{id}, "RetryJob", "jobID", id, "data", `{"n":2}`, "jobPriority", "1000", "delay", "5")
		f.clear()
	})
}

// TestFailJobIsOneTransaction: FailJob with data writes the data and
// fails the job together.
func TestFailJobIsOneTransaction(t *testing.T) {
	forEachStoreWithFaults(t, func(t *testing.T, tr *tester, f *faults) {
		id := tr.create("name", "job", "data", `{"n":1}`)
		tr.ok("GetJob", "name", "job")
		// PostgreSQL moves the failed job to the ended table; SQLite
		// updates its row.
		f.failWhen("INSERT", "jobs_ended", fmt.Sprintf("NEW.id = %d", tr.rotaID(id)))
		f.failWhen("UPDATE", "jobs", fmt.Sprintf("NEW.id = %d AND NEW.state = 4", tr.rotaID(id)))
		tr.refused(t, []string{id}, "FailJob", "jobID", id, "data", `{"why":"broken"}`)
		f.clear()
		tr.ok("FailJob", "jobID", id, "data", `{"why":"broken"}`)
		q := tr.query(id)
		eq(t, "state", q["state"], "FAILED")
		eq(t, "data", q["data"], `{"why":"broken"}`)
	})
}

// TestRequeueJobsIsOneTransaction: RequeueJobs over several jobs changes
// all of them or none.
func TestRequeueJobsIsOneTransaction(t *testing.T) {
	forEachStoreWithFaults(t, func(t *testing.T, tr *tester, f *faults) {
		a := tr.create("name", "a")
		b := tr.create("name", "b")
		ended := tr.create("name", "c")
		tr.ok("GetJob", "name", "a")
		tr.ok("GetJob", "name", "b")
		tr.ok("GetJob", "name", "c")
		tr.ok("FailJob", "jobID", ended)
		f.failWhen("UPDATE", "jobs", fmt.Sprintf("NEW.id = %d AND NEW.state = 0", tr.rotaID(b)))
		ids := a + "," + ended + "," + b
		tr.refused(t, []string{a, b, ended}, "RequeueJobs", "jobIDs", ids, "name", "again")
		f.clear()
		tr.ok("RequeueJobs", "jobIDs", ids, "name", "again")
		for _, id := range []string{a, b, ended} {
			q := tr.query(id)
			eq(t, "state", q["state"], "QUEUED")
			eq(t, "name", q["name"], "again")
		}
	})
}

// TestCreateJobsIsOneTransaction: CreateJobs adds all its jobs or none.
func TestCreateJobsIsOneTransaction(t *testing.T) {
	forEachStoreWithFaults(t, func(t *testing.T, tr *tester, f *faults) {
		f.failWhen("INSERT", "jobs", "NEW.type = 'second'")
		jobs := `[{"name":"first"},{"name":"second"}]`
		if r := tr.do("CreateJobs", "jobs", jobs); strings.HasPrefix(r.Status, "2") {
			t.Fatalf("CreateJobs: %s under an injected failure", r.Status)
		}
		tr.expect("404 No job found", "GetJob", "name", "first")
		f.clear()
		tr.ok("CreateJobs", "jobs", jobs)
		tr.ok("GetJob", "name", "first")
	})
}

// TestCancelJobIsOneTransaction: cancelling a paused parent's last
// unfinished child cancels it and resumes the parent together.
func TestCancelJobIsOneTransaction(t *testing.T) {
	forEachStoreWithFaults(t, func(t *testing.T, tr *tester, f *faults) {
		parent := tr.create("name", "parent")
		tr.ok("GetJob", "name", "parent")
		child := tr.create("name", "child", "parentJobID", parent)
		tr.ok("FinishJob", "jobID", parent)
		eq(t, "parent", tr.query(parent)["state"], "PAUSED")
		f.failWhen("UPDATE", "jobs", fmt.Sprintf("NEW.id = %d AND NEW.state = 0", tr.rotaID(parent)))
		tr.refused(t, []string{parent, child}, "CancelJob", "jobID", child)
		f.clear()
		tr.ok("CancelJob", "jobID", child)
		eq(t, "child", tr.query(child)["state"], "CANCELLED")
		eq(t, "parent", tr.query(parent)["state"], "QUEUED")
	})
}

// TestUpdateJobRepeatFromStoreTime: UpdateJob with a repeat moves a
// queued job to the repeat's next run, computed by the store (its clock),
// and keeps a running job's run time.
func TestUpdateJobRepeatFromStoreTime(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		id := tr.create("name", "job")
		tr.ok("UpdateJob", "jobID", id, "data", `{}`, "repeat", "SCHEDULED, +1 HOUR")
		q := tr.query(id)
		if d := time.Until(bedrockTime(t, q["nextRun"])); d < 58*time.Minute || d > 61*time.Minute {
			t.Errorf("nextRun in %v, want an hour", d)
		}
		eq(t, "repeat", q["repeat"], "SCHEDULED, +1 HOUR")
	})
}
