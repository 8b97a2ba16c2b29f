package bedrock_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/bedrock"
)

// These tests follow Bedrock's own (test/tests/jobs/*.cpp), with the
// database reads of the originals replaced by QueryJob.

func TestCreateJob(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		for _, method := range []string{"CreateJob", "CreateJob / HTTP/1.1", "createjob"} {
			before := time.Now().UTC().Truncate(time.Second)
			m := tr.ok(method, "name", "testCreate")
			id := string(m["jobID"])
			q := tr.query(id)
			eq(t, "jobID", q["jobID"], id)
			eq(t, "state", q["state"], "QUEUED")
			eq(t, "name", q["name"], "testCreate")
			eq(t, "nextRun[:19]", q["nextRun"][:19], q["created"]) // due at creation, with ms
			eq(t, "lastRun", q["lastRun"], "")
			eq(t, "repeat", q["repeat"], "")
			eq(t, "data", q["data"], "{}")
			eq(t, "priority", q["priority"], "500")
			if c := bedrockTime(t, q["created"]); c.Before(before) || c.After(time.Now().Add(time.Second)) {
				t.Errorf("created %v, want about now", c)
			}
			if len(q) != 10 {
				t.Errorf("QueryJob has %d keys, want 10: %v", len(q), q)
			}
		}
		id := tr.create("name", "p", "priority", "1000", "data", `{"blabla":"blabla"}`, "repeat", "scheduled, +1 hour")
		q := tr.query(id)
		eq(t, "priority", q["priority"], "1000")
		eq(t, "data", q["data"], `{"blabla":"blabla"}`)
		eq(t, "repeat", q["repeat"], "SCHEDULED, +1 HOUR")

		id = tr.create("name", "later", "firstRun", "2042-04-02 00:42:42", "jobPriority", "250")
		q = tr.query(id)
		eq(t, "nextRun", q["nextRun"], "2042-04-02 00:42:42")
		eq(t, "priority", q["priority"], "250")
	})
}

func TestCreateJobErrors(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		tr.expect("402 Missing name", "CreateJob")
		tr.expect("402 Malformed name", "CreateJob", "name", strings.Repeat("n", 256))
		tr.expect("402 Data is not a valid JSON Object", "CreateJob", "name", "blabla", "data", "blabla")
		tr.expect("402 Data is not a valid JSON Object", "CreateJob", "name", "blabla", "data", "[1]")
		tr.expect("402 Data is not a valid JSON Object", "CreateJob", "name", "blabla", "data", "")
		tr.expect("402 Malformed repeat", "CreateJob", "name", "blabla", "repeat", "blabla")
		tr.expect("402 Malformed repeat", "CreateJob", "name", "blabla", "repeat", "SCHEDULED")
		tr.expect("402 Malformed repeat", "CreateJob", "name", "blabla", "repeat", "FINISHED, +1 WEEK")
		tr.expect("402 Invalid priority value", "CreateJob", "name", "blabla", "jobPriority", "7")
		tr.expect("402 Invalid priority value", "CreateJob", "name", "blabla", "priority", "501")
		tr.expect("402 Malformed retryAfter", "CreateJob", "name", "blabla", "retryAfter", "10")
		tr.expect("402 Malformed retryAfter", "CreateJob", "name", "blabla", "retryAfter", "+1 HOUR, START OF HOUR")
		tr.expect("402 Malformed retryAfter", "CreateJob", "name", "blabla", "retryAfter", "+1 HOUR, START OF DAY")
		tr.expect("402 Malformed firstRun", "CreateJob", "name", "blabla", "firstRun", "tomorrow")
		tr.expect("404 parentJobID does not exist", "CreateJob", "name", "child", "parentJobID", "12345")
		// The order of the checks: the name first, then the priority,
		// the data, the retryAfter.
		tr.expect("402 Missing name", "CreateJob", "jobPriority", "7", "data", "x")
		tr.expect("402 Invalid priority value", "CreateJob", "name", "a", "jobPriority", "7", "data", "x")
		tr.expect("402 Data is not a valid JSON Object", "CreateJob", "name", "a", "data", "x", "retryAfter", "10")
		// Nothing was added.
		tr.expect("404 No job found", "GetJobs", "name", "*", "numResults", "100")
	})
}

func TestCreateChildErrors(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		parent := tr.create("name", "parent")
		tr.expect("405 Can only create child job when parent is RUNNING, RUNQUEUED or PAUSED", "CreateJob", "name", "child", "parentJobID", parent)
		tr.ok("GetJob", "name", "parent")
		child := tr.create("name", "child", "parentJobID", parent)
		eq(t, "child state", tr.query(child)["state"], "PAUSED")
		tr.ok("FinishJob", "jobID", parent)
		eq(t, "parent state", tr.query(parent)["state"], "PAUSED")
		eq(t, "child state", tr.query(child)["state"], "QUEUED")
		tr.ok("GetJob", "name", "child")
		tr.expect("405 Cannot create grandchildren", "CreateJob", "name", "grandchild", "parentJobID", child)
	})
}

func TestUniqueJob(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		id := tr.create("name", "blabla", "data", `{"a":1, "b":2, "nestedObject": {"A":1, "B":2}, "nestedArray":[1,2]}`, "unique", "true")
		// The same data: the same job, unchanged.
		same := tr.create("name", "blabla", "data", `{"a":1, "b":2, "nestedObject": {"A":1, "B":2}, "nestedArray":[1,2]}`, "unique", "true")
		eq(t, "same id", same, id)
		// Other data: merged in, keys kept in order, new ones appended.
		merged := tr.create("name", "blabla", "data", `{"b":3, "c":4, "nestedObject":{"B":null, "C":3}}`, "unique", "true")
		eq(t, "merged id", merged, id)
		eq(t, "merged data", tr.query(id)["data"], `{"a":1,"b":3,"nestedObject":{"A":1,"C":3},"nestedArray":[1,2],"c":4}`)
		// overwrite false keeps the data.
		kept := tr.create("name", "blabla", "data", `{"z":1}`, "unique", "true", "overwrite", "false")
		eq(t, "kept id", kept, id)
		if strings.Contains(tr.query(id)["data"], `"z"`) {
			t.Errorf("overwrite: false changed the data")
		}
		// unique must be exactly "true".
		other := tr.create("name", "blabla", "unique", "TRUE")
		if other == id {
			t.Errorf("unique: TRUE made the add unique")
		}
	})
}

func TestCreateJobs(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		m := tr.ok("CreateJobs", "jobs", `[{"name":"one","data":{"a":1},"jobPriority":1000},{"name":"two","data":"{\"b\":2}","repeat":"FINISHED, +1 DAY"},{"name":"three","firstRun":"2042-01-01 00:00:00"}]`)
		var ids []json.Number
		if err := json.Unmarshal(m["jobIDs"], &ids); err != nil || len(ids) != 3 {
			t.Fatalf("jobIDs %s: %v", m["jobIDs"], err)
		}
		q := tr.query(ids[0].String())
		eq(t, "one data", q["data"], `{"a":1}`)
		eq(t, "one priority", q["priority"], "1000")
		q = tr.query(ids[1].String())
		eq(t, "two data", q["data"], `{"b":2}`)
		eq(t, "two repeat", q["repeat"], "FINISHED, +1 DAY")
		eq(t, "three nextRun", tr.query(ids[2].String())["nextRun"], "2042-01-01 00:00:00")

		for _, bad := range []string{"", "[]", "{}", "[{}]", "[1]", `[{"name":"x"},{}]`, "not json"} {
			tr.expect("401 Invalid JSON", "CreateJobs", "jobs", bad)
		}
		tr.expect("402 Missing name", "CreateJobs", "jobs", `[{"data":{}}]`)
		// One bad job refuses the batch; the first phase's error wins.
		tr.expect("402 Malformed retryAfter", "CreateJobs", "jobs", `[{"name":"a","repeat":"bad"},{"name":"b","retryAfter":"bad"}]`)
		tr.expect("402 Malformed repeat", "CreateJobs", "jobs", `[{"name":"ok"},{"name":"b","repeat":"bad"}]`)
		tr.expect("404 No job found", "GetJob", "name", "ok")
	})
}

func TestGetJob(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		tr.expect("404 No job found", "GetJob", "name", "none")
		tr.expect("402 Missing name", "GetJob")
		tr.expect("402 Cannot use numResults with GetJob; try GetJobs", "GetJob", "name", "x", "numResults", "")
		tr.expect("402 Missing numResults", "GetJobs", "name", "x")
		tr.expect("402 Invalid priority value", "GetJob", "name", "x", "jobPriority", "3")

		id := tr.create("name", "www-prod/Foo", "data", `{"value":1}`, "repeat", "FINISHED, +1 MINUTE")
		r := tr.do("GetJob / HTTP/1.1", "name", "www-prod/*")
		eq(t, "status", r.Status, "200 OK")
		// Keys in Bedrock's order, "/" escaped.
		if !strings.HasPrefix(r.Body, `{"created":"`) || !strings.Contains(r.Body, `,"data":{"value":1},"jobID":`+id+`,"lastRun":"","name":"www-prod\/Foo","nextRun":"`) ||
			!strings.HasSuffix(r.Body, `,"priority":500,"repeat":"FINISHED, +1 MINUTE","retryAfter":""}`) {
			t.Errorf("GetJob body %s", r.Body)
		}
		if n := len(r.JSON(t)); n != 9 {
			t.Errorf("GetJob has %d keys, want 9", n)
		}
		tr.expect("404 No job found", "GetJob", "name", "www-prod/*")
		q := tr.query(id)
		eq(t, "state", q["state"], "RUNNING")
		if bedrockTime(t, q["lastRun"]).Before(time.Now().Add(-time.Minute)) {
			t.Errorf("lastRun %s is not the dequeue", q["lastRun"])
		}
		// The finish of a repeating job: due again a minute after.
		tr.ok("FinishJob", "jobID", id)
		q = tr.query(id)
		eq(t, "state", q["state"], "QUEUED")
		if d := time.Until(bedrockTime(t, q["nextRun"])); d < 55*time.Second || d > 65*time.Second {
			t.Errorf("nextRun in %v, want a minute", d)
		}
	})
}

func TestGetJobsOrder(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		// Priority first, then due time; names in a list are exact.
		tr.create("name", "low_5", "priority", "0")
		tr.create("name", "high_1", "priority", "1000")
		tr.create("name", "medium_3", "priority", "500")
		tr.create("name", "high_2", "priority", "1000")
		tr.create("name", "medium_4", "priority", "500")
		tr.create("name", "other", "priority", "1000")
		m := tr.ok("GetJobs", "name", "high_1,high_2,medium_3,medium_4,low_5,*", "numResults", "10")
		var jobs []map[string]json.RawMessage
		if err := json.Unmarshal(m["jobs"], &jobs); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, j := range jobs {
			names = append(names, flat(t, j)["name"])
		}
		eq(t, "order", strings.Join(names, " "), "high_1 high_2 medium_3 medium_4 low_5")

		tr.create("name", "p", "priority", "250")
		tr.create("name", "p", "priority", "750")
		m = tr.ok("GetJob", "name", "p", "jobPriority", "250")
		eq(t, "priority", string(m["priority"]), "250")
		tr.expect("404 No job found", "GetJob", "name", "p", "jobPriority", "1000")
		m = tr.ok("GetJobs", "name", "p", "numResults", "0")
		eq(t, "priority", string(m["jobs"][0:1]), "[")
	})
}

func TestParentAndChildren(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		parent := tr.create("name", "parent", "data", `{"foo":"bar"}`)
		tr.ok("GetJob", "name", "parent")
		finished := tr.create("name", "child_finished", "data", `{"bar":"baz"}`, "parentJobID", parent)
		cancelled := tr.create("name", "child_cancelled", "data", `{"baz":"foo"}`, "parentJobID", parent)
		tr.expect("405 Can't delete a parent jobs with children running", "DeleteJob", "jobID", finished)
		tr.ok("FinishJob", "jobID", parent)
		child := flat(t, tr.ok("GetJob", "name", "child_finished"))
		tr.ok("CancelJob", "jobID", cancelled)
		eq(t, "child keys", len(child), 11)
		eq(t, "child jobID", child["jobID"], finished)
		eq(t, "child data", child["data"], `{"bar":"baz"}`)
		eq(t, "parentJobID", child["parentJobID"], parent)
		eq(t, "parentData", child["parentData"], `{"foo":"bar"}`)
		tr.expect("404 Invalid jobID - Cannot cancel a job with children", "CancelJob", "jobID", parent)
		tr.ok("FinishJob", "jobID", finished)
		eq(t, "parent state", tr.query(parent)["state"], "QUEUED")
		eq(t, "child state", tr.query(finished)["state"], "FINISHED")

		m := tr.ok("GetJob", "name", "parent")
		eq(t, "parent keys", len(m), 11)
		eq(t, "finishedChildJobs", string(m["finishedChildJobs"]), `[{"data":{"bar":"baz"},"jobID":`+finished+`}]`)
		eq(t, "cancelledChildJobs", string(m["cancelledChildJobs"]), `[{"data":{"baz":"foo"},"jobID":`+cancelled+`}]`)
		// The parent's finish deletes the children it saw.
		tr.ok("FinishJob", "jobID", parent)
		tr.expect("404 No job with this jobID", "QueryJob", "jobID", finished)
		tr.expect("404 No job with this jobID", "QueryJob", "jobID", parent)
	})
}

func TestRetryJob(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		tr.expect("402 Missing jobID", "RetryJob")
		tr.expect("402 Malformed jobID", "RetryJob", "jobID", "012")
		tr.expect("404 No job with this jobID", "RetryJob", "jobID", "1")
		id := tr.create("name", "job")
		tr.expect("405 Can only retry/finish RUNNING and RUNQUEUED jobs", "RetryJob", "jobID", id)
		tr.ok("GetJob", "name", "job")
		tr.expect("402 Must specify a non-negative delay when retrying", "RetryJob", "jobID", id, "delay", "-5")
		tr.expect("402 Malformed delay", "RetryJob", "jobID", id, "delay", "100000000")
		eq(t, "state after refusals", tr.query(id)["state"], "RUNNING")

		tr.ok("RetryJob", "jobID", id, "delay", "5", "data", `{"x":1}`, "name", "renamed", "jobPriority", "1000")
		q := tr.query(id)
		eq(t, "state", q["state"], "QUEUED")
		eq(t, "name", q["name"], "renamed")
		eq(t, "priority", q["priority"], "1000")
		eq(t, "data", q["data"], `{"x":1}`)
		if d := time.Until(bedrockTime(t, q["nextRun"])); d < 3*time.Second || d > 6*time.Second {
			t.Errorf("nextRun in %v, want 5s", d)
		}

		// nextRun beats delay; a repeat beats both unless ignoreRepeat.
		id = tr.create("name", "next")
		tr.ok("GetJob", "name", "next")
		tr.ok("RetryJob", "jobID", id, "nextRun", "2042-04-02 00:42:42", "delay", "5")
		eq(t, "nextRun", tr.query(id)["nextRun"], "2042-04-02 00:42:42")

		id = tr.create("name", "rep", "repeat", "FINISHED, +1 HOUR")
		tr.ok("GetJob", "name", "rep")
		tr.ok("RetryJob", "jobID", id, "nextRun", "2042-04-02 00:42:42")
		if d := time.Until(bedrockTime(t, tr.query(id)["nextRun"])); d < 59*time.Minute || d > 61*time.Minute {
			t.Errorf("a repeating job's retry: nextRun in %v, want an hour", d)
		}
		tr.ok("RequeueJobs", "jobIDs", id)
		tr.ok("GetJob", "name", "rep")
		tr.ok("RetryJob", "jobID", id, "nextRun", "2042-04-02 00:42:42", "ignoreRepeat", "true")
		eq(t, "ignoreRepeat nextRun", tr.query(id)["nextRun"], "2042-04-02 00:42:42")
		eq(t, "repeat kept", tr.query(id)["repeat"], "FINISHED, +1 HOUR")
	})
}

func TestFinishJob(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		id := tr.create("name", "job")
		tr.expect("405 Can only retry/finish RUNNING and RUNQUEUED jobs", "FinishJob", "jobID", id)
		tr.ok("GetJob", "name", "job")
		tr.ok("FinishJob", "jobID", id)
		// A finished job is gone, as in Bedrock.
		tr.expect("404 No job with this jobID", "QueryJob", "jobID", id)
		tr.expect("404 No job with this jobID", "FinishJob", "jobID", id)

		// A repeating job finished with ignoreRepeat, or data.delete, ends.
		for _, how := range [][]string{{"ignoreRepeat", "true"}, {"data", `{"delete":true}`}} {
			id := tr.create("name", "rep", "repeat", "FINISHED, +1 HOUR")
			tr.ok("GetJob", "name", "rep")
			tr.ok("FinishJob", append([]string{"jobID", id}, how...)...)
			tr.expect("404 No job with this jobID", "QueryJob", "jobID", id)
		}
		// A repeating job's finish keeps the data it was given.
		id = tr.create("name", "rep", "repeat", "SCHEDULED, +1 HOUR", "data", `{"n":1}`)
		tr.ok("GetJob", "name", "rep")
		tr.ok("FinishJob", "jobID", id, "data", `{"n":2}`)
		q := tr.query(id)
		eq(t, "data", q["data"], `{"n":2}`)
		eq(t, "state", q["state"], "QUEUED")
	})
}

func TestFailJob(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		tr.expect("404 No job with this jobID", "FailJob", "jobID", "1")
		id := tr.create("name", "job")
		tr.expect("405 Can only fail RUNNING or RUNQUEUED jobs", "FailJob", "jobID", id)
		tr.ok("GetJob", "name", "job")
		tr.ok("FailJob", "jobID", id, "data", `{"why":"broken"}`)
		q := tr.query(id)
		eq(t, "state", q["state"], "FAILED")
		eq(t, "data", q["data"], `{"why":"broken"}`)
		tr.expect("405 Can only fail RUNNING or RUNQUEUED jobs", "FailJob", "jobID", id)
		// A failed job can be deleted.
		tr.ok("DeleteJob", "jobID", id)
		tr.expect("404 No job with this jobID", "QueryJob", "jobID", id)
	})
}

func TestCancelAndDeleteJob(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		tr.expect("404 No job with this jobID", "CancelJob", "jobID", "1")
		tr.expect("404 No job with this jobID", "DeleteJob", "jobID", "1")
		id := tr.create("name", "job")
		tr.expect("404 Invalid jobID - Cannot cancel a job without a parent", "CancelJob", "jobID", id)
		tr.ok("GetJob", "name", "job")
		tr.expect("405 Can't delete a RUNNING job", "DeleteJob", "jobID", id)

		parent := tr.create("name", "parent")
		tr.ok("GetJob", "name", "parent")
		a := tr.create("name", "a", "parentJobID", parent)
		b := tr.create("name", "b", "parentJobID", parent)
		tr.ok("CancelJob", "jobID", a) // paused: no change
		eq(t, "paused child", tr.query(a)["state"], "PAUSED")
		tr.ok("FinishJob", "jobID", parent)
		tr.ok("CancelJob", "jobID", a)
		eq(t, "cancelled child", tr.query(a)["state"], "CANCELLED")
		eq(t, "parent while b waits", tr.query(parent)["state"], "PAUSED")
		tr.ok("CancelJob", "jobID", b)
		eq(t, "parent after its last child", tr.query(parent)["state"], "QUEUED")

		q := tr.create("name", "queued")
		tr.ok("DeleteJob", "jobID", q)
		tr.expect("404 No job with this jobID", "QueryJob", "jobID", q)
	})
}

func TestUpdateJob(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		tr.expect("402 Missing jobID", "UpdateJob", "data", "{}")
		tr.expect("402 Missing data", "UpdateJob", "jobID", "1")
		tr.expect("402 Malformed repeat", "UpdateJob", "jobID", "1", "data", "{}", "repeat", "x")
		tr.expect("402 Invalid priority value", "UpdateJob", "jobID", "1", "data", "{}", "jobPriority", "1")
		tr.expect("404 No job with this jobID", "UpdateJob", "jobID", "1", "data", "{}")
		id := tr.create("name", "job", "data", `{"old":1}`, "repeat", "FINISHED, +1 HOUR")
		tr.ok("UpdateJob", "jobID", id, "data", `{"value":"123"}`, "jobPriority", "1000", "nextRun", "2042-04-02 00:42:42")
		q := tr.query(id)
		eq(t, "data", q["data"], `{"value":"123"}`)
		eq(t, "priority", q["priority"], "1000")
		eq(t, "nextRun", q["nextRun"], "2042-04-02 00:42:42")
		eq(t, "repeat", q["repeat"], "FINISHED, +1 HOUR")
		tr.ok("UpdateJob", "jobID", id, "data", `{}`, "shouldClearRepeat", "true") // only numbers count
		eq(t, "repeat", tr.query(id)["repeat"], "FINISHED, +1 HOUR")
		tr.ok("UpdateJob", "jobID", id, "data", `{}`, "shouldClearRepeat", "1")
		eq(t, "repeat", tr.query(id)["repeat"], "")
		tr.ok("UpdateJob", "jobID", id, "data", `{}`, "repeat", "daily")
		eq(t, "repeat", tr.query(id)["repeat"], "DAILY")
	})
}

func TestRequeueJobs(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		a := tr.create("name", "a")
		b := tr.create("name", "b", "firstRun", "2042-01-01 00:00:00")
		tr.ok("GetJob", "name", "a")
		tr.ok("RequeueJobs", "jobIDs", a+","+b+",12345", "name", "renamed")
		q := tr.query(a)
		eq(t, "state", q["state"], "QUEUED")
		eq(t, "name", q["name"], "renamed")
		if bedrockTime(t, tr.query(b)["nextRun"]).After(time.Now()) {
			t.Errorf("a requeued job is not due")
		}
		tr.ok("RequeueJobs")
	})
}

func TestRetryAfter(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		id := tr.create("name", "ra", "retryAfter", "+1 SECOND", "data", `{"k":1}`)
		m := flat(t, tr.ok("GetJob", "name", "ra"))
		eq(t, "retryAfter", m["retryAfter"], "+1 SECOND")
		eq(t, "first data", m["data"], `{"k":1}`)
		q := tr.query(id)
		eq(t, "state", q["state"], "RUNQUEUED")
		eq(t, "counted", q["data"], `{"k":1,"retryAfterCount":1}`)
		tr.expect("404 No job found", "GetJob", "name", "ra")
		// When the fixed lease ends, the job runs again.
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := tr.do("GetJob", "name", "ra")
			if r.Status == "200 OK" {
				eq(t, "second data", flat(t, r.JSON(t))["data"], `{"k":1,"retryAfterCount":1}`)
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("a job with retryAfter did not run again")
			}
			time.Sleep(100 * time.Millisecond)
		}
		tr.ok("FinishJob", "jobID", id)
		tr.expect("404 No job with this jobID", "QueryJob", "jobID", id)
	})
}

func TestCrashBedrockJob(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		bad := tr.create("name", "crasher/1")
		good := tr.create("name", "fine")
		tr.ok("CrashBedrockJob", "names", "crasher/*")
		m := tr.ok("GetJobs", "name", "*", "numResults", "10")
		if strings.Contains(string(m["jobs"]), bad) || !strings.Contains(string(m["jobs"]), good) {
			t.Errorf("GetJobs with a blacklist: %s", m["jobs"])
		}
		eq(t, "blacklisted", tr.query(bad)["state"], "FAILED")
		tr.ok("ClearCrashedBedrockJobs")
		tr.create("name", "crasher/2")
		tr.ok("GetJob", "name", "crasher/*")
	})
}

func TestSameJobOverHTTPAndBedrock(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		ctx := context.Background()
		res, err := tr.c.Add(ctx, rota.AddParams{Type: "from-http", Data: json.RawMessage(`{"a":1}`)})
		if err != nil {
			t.Fatal(err)
		}
		m := tr.ok("GetJob", "name", "from-http")
		bid := string(m["jobID"])
		j, err := tr.c.Get(ctx, res.Job.ID)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "state", j.State, rota.Running)
		if j.BedrockID == 0 || bid != jsonInt(j.BedrockID) {
			t.Errorf("Bedrock id %s, the job says %d", bid, j.BedrockID)
		}
		tr.ok("FinishJob", "jobID", bid)
		j, _ = tr.c.Get(ctx, res.Job.ID)
		eq(t, "state after FinishJob", j.State, rota.Completed)
	})
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// A retryAfter job whose worker finishes after the fixed lease ended
// (Bedrock's RUNQUEUED past its nextRun) is still finished.
func TestFinishOverdue(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		once := tr.create("name", "once", "retryAfter", "+1 SECOND")
		rep := tr.create("name", "rep", "retryAfter", "+1 SECOND", "repeat", "SCHEDULED, +1 DAY")
		tr.ok("GetJob", "name", "once")
		tr.ok("GetJob", "name", "rep")
		deadline := time.Now().Add(10 * time.Second)
		for tr.query(once)["state"] != "QUEUED" || tr.query(rep)["state"] != "QUEUED" {
			if time.Now().After(deadline) {
				t.Fatal("the fixed leases did not end")
			}
			time.Sleep(50 * time.Millisecond)
		}
		tr.ok("FinishJob", "jobID", once)
		tr.expect("404 No job with this jobID", "QueryJob", "jobID", once)
		tr.ok("FinishJob", "jobID", rep)
		q := tr.query(rep)
		eq(t, "state", q["state"], "QUEUED")
		if d := time.Until(bedrockTime(t, q["nextRun"])); d < 23*time.Hour {
			t.Errorf("the repeating job is due in %v, want its next day", d)
		}
	})
}

// Bedrock's RetryJobTest: the next run of a repeating job, and the
// children a retried parent has seen.
func TestRetryJobRepeats(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		// STARTED, +1 HOUR: an hour after the run's start.
		id := tr.create("name", "started", "repeat", "STARTED, +1 HOUR")
		tr.ok("GetJob", "name", "started")
		tr.ok("RetryJob", "jobID", id)
		q := tr.query(id)
		if d := bedrockTime(t, q["nextRun"]).Sub(bedrockTime(t, q["lastRun"])); d != time.Hour {
			t.Errorf("STARTED, +1 HOUR: nextRun %s is %v after lastRun %s", q["nextRun"], d, q["lastRun"])
		}
		// Snapping modifiers: computed from the slot, left in the past.
		now := time.Now().UTC()
		first := now.Format("2006-01-02 15:04:05")
		for repeat, want := range map[string]string{
			"SCHEDULED, START OF DAY, +5 MINUTES, START OF HOUR":              now.Format("2006-01-02") + " 00:00:00",
			"SCHEDULED, START OF DAY, +30 MINUTES, START OF HOUR, +5 MINUTES": now.Format("2006-01-02") + " 00:05:00",
		} {
			name := "snap" + want[11:13] + want[14:16]
			id := tr.create("name", name, "repeat", repeat, "firstRun", first)
			tr.ok("GetJob", "name", name)
			tr.ok("RetryJob", "jobID", id)
			eq(t, repeat, tr.query(id)["nextRun"], want)
		}
		// SCHEDULED, +30 SECONDS an hour behind: the first slot to come,
		// on the original phase.
		past := now.Add(-time.Hour).Truncate(time.Second)
		id = tr.create("name", "phase", "repeat", "SCHEDULED, +30 SECONDS", "retryAfter", "+10 MINUTES", "firstRun", past.Format("2006-01-02 15:04:05"))
		tr.ok("GetJob", "name", "phase")
		tr.ok("RetryJob", "jobID", id)
		next := bedrockTime(t, tr.query(id)["nextRun"])
		if !next.After(now.Add(-time.Second)) || next.Sub(now) > 31*time.Second || next.Sub(past)%(30*time.Second) != 0 {
			t.Errorf("SCHEDULED, +30 SECONDS from %v: next %v", past, next)
		}

		// A retried parent's finished and cancelled children are deleted.
		parent := tr.create("name", "parent")
		tr.ok("GetJob", "name", "parent")
		done := tr.create("name", "child_finished", "parentJobID", parent)
		gone := tr.create("name", "child_cancelled", "parentJobID", parent)
		tr.ok("FinishJob", "jobID", parent)
		tr.ok("GetJob", "name", "child_finished")
		tr.ok("CancelJob", "jobID", gone)
		tr.ok("FinishJob", "jobID", done)
		tr.ok("GetJob", "name", "parent")
		tr.ok("RetryJob", "jobID", parent)
		tr.expect("404 No job with this jobID", "QueryJob", "jobID", done)
		tr.expect("404 No job with this jobID", "QueryJob", "jobID", gone)
		eq(t, "parent", tr.query(parent)["state"], "QUEUED")
	})
}

// Bedrock's UpdateJobTest.updateMockedJob and DeleteJobTest.deleteFinishedJob.
func TestMockedUpdateAndDeleteFinished(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		id := tr.create("name", "job", "jobPriority", "500", "mockRequest", "1", "repeat", "DAILY")
		q := tr.query(id)
		eq(t, "mocked data", q["data"], `{"mockRequest":true}`)
		eq(t, "a mocked job keeps no repeat", q["repeat"], "")
		tr.ok("UpdateJob", "jobID", id, "data", `{"key":"value"}`, "repeat", "HOURLY", "jobPriority", "1000", "nextRun", "2020-01-01 00:00:00")
		q = tr.query(id)
		eq(t, "repeat", q["repeat"], "HOURLY")
		eq(t, "data", q["data"], `{"key":"value","mockRequest":true}`)
		eq(t, "priority", q["priority"], "1000")
		eq(t, "nextRun", q["nextRun"], "2020-01-01 00:00:00")

		parent := tr.create("name", "parent")
		tr.ok("GetJob", "name", "parent")
		child := tr.create("name", "child", "parentJobID", parent)
		tr.ok("FinishJob", "jobID", parent)
		tr.ok("GetJob", "name", "child")
		tr.ok("FinishJob", "jobID", child)
		eq(t, "child", tr.query(child)["state"], "FINISHED")
		tr.ok("DeleteJob", "jobID", child)
		tr.expect("404 No job with this jobID", "DeleteJob", "jobID", child)
	})
}

// Bedrock's CreateJobsTest.createWithParentMocked: mocked jobs are
// finished in any state.
func TestMockedFamily(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		parent := tr.create("name", "mockedParent", "mockRequest", "true")
		tr.ok("GetJob", "name", "mockedParent", "mockRequest", "true")
		m := tr.ok("CreateJobs", "mockRequest", "true", "jobs", `[{"name":"child1","data":{"a":1},"parentJobID":`+parent+`},{"name":"child2","data":{"b":2}}]`)
		var ids []json.Number
		json.Unmarshal(m["jobIDs"], &ids)
		tr.ok("FinishJob", "jobID", parent)
		for _, name := range []string{"child1", "child2"} {
			j := flat(t, tr.ok("GetJob", "name", name, "mockRequest", "true"))
			if !strings.Contains(j["data"], `"mockRequest":true`) {
				t.Errorf("%s is not mocked: %s", name, j["data"])
			}
		}
		tr.ok("FinishJob", "jobID", ids[0].String())
		tr.ok("FinishJob", "jobID", ids[1].String())
		tr.ok("FinishJob", "jobID", parent) // queued again: finished all the same
		for _, id := range []string{parent, ids[0].String(), ids[1].String()} {
			tr.expect("404 No job with this jobID", "QueryJob", "jobID", id)
		}
	})
}

// Bedrock's GetJobTest.testPrioritiesWithRunQueued: jobs whose retryAfter
// ran out come back in priority order with the others.
func TestPrioritiesWithRunQueued(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		later := time.Now().UTC().Add(2 * time.Second).Format("2006-01-02 15:04:05")
		tr.create("name", "low_5", "priority", "0", "firstRun", later)
		tr.create("name", "high_1", "priority", "1000", "retryAfter", "+1 SECOND")
		tr.create("name", "medium_4", "priority", "500", "retryAfter", "+1 SECOND")
		tr.create("name", "high_2", "priority", "1000", "firstRun", later)
		tr.create("name", "medium_3", "priority", "500", "firstRun", later)
		tr.ok("GetJob", "name", "high_1")
		tr.ok("GetJob", "name", "medium_4")
		time.Sleep(3500 * time.Millisecond)
		var names []string
		for range 5 {
			names = append(names, flat(t, tr.ok("GetJob", "name", "*"))["name"])
		}
		got := strings.Join(names, " ")
		if !strings.HasPrefix(got, "high_") || !strings.HasPrefix(names[1], "high_") || !strings.HasPrefix(names[2], "medium_") ||
			!strings.HasPrefix(names[3], "medium_") || names[4] != "low_5" {
			t.Errorf("order %s, want the two high, the two medium, then low_5", got)
		}
	})
}

// TestCancelRunQueuedChild: as in Bedrock, CancelJob cancels a RUNQUEUED
// child (one with a retryAfter, handed out), and its parent, with no
// other child left, is QUEUED again.
func TestCancelRunQueuedChild(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		parent := tr.create("name", "parent")
		tr.ok("GetJob", "name", "parent")
		child := tr.create("name", "child", "retryAfter", "+1 HOUR", "parentJobID", parent)
		tr.ok("FinishJob", "jobID", parent)
		tr.ok("GetJob", "name", "child")
		eq(t, "child", tr.query(child)["state"], "RUNQUEUED")
		tr.ok("CancelJob", "jobID", child)
		eq(t, "cancelled child", tr.query(child)["state"], "CANCELLED")
		eq(t, "parent", tr.query(parent)["state"], "QUEUED")
		m := tr.ok("GetJob", "name", "parent")
		if !strings.Contains(string(m["cancelledChildJobs"]), `"jobID":`+child+`}`) {
			t.Errorf("cancelledChildJobs = %s, want the child", m["cancelledChildJobs"])
		}
	})
}

// TestUpdateJobNextRunOfHeldJob: rota cannot move a job that is handed
// out (its next run is decided when its worker finishes or retries it),
// so UpdateJob with a nextRun answers why, and changes nothing.
func TestUpdateJobNextRunOfHeldJob(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		running := tr.create("name", "running", "data", `{"v":1}`)
		runQueued := tr.create("name", "runqueued", "data", `{"v":1}`, "retryAfter", "+1 HOUR")
		tr.ok("GetJob", "name", "running")
		tr.ok("GetJob", "name", "runqueued")
		for id, state := range map[string]string{running: "RUNNING", runQueued: "RUNQUEUED"} {
			before := tr.query(id)
			tr.expect("405 Cannot set the nextRun of a "+state+" job; RetryJob with nextRun sets when it runs again",
				"UpdateJob", "jobID", id, "data", `{"v":2}`, "nextRun", "2042-04-02 00:42:42")
			after := tr.query(id)
			eq(t, state+" data", after["data"], before["data"])
			eq(t, state+" nextRun", after["nextRun"], before["nextRun"])
			// Without a nextRun, the update applies.
			tr.ok("UpdateJob", "jobID", id, "data", `{"v":3}`)
			if !strings.Contains(tr.query(id)["data"], `"v":3`) {
				t.Errorf("%s: update without nextRun did not apply: %s", state, tr.query(id)["data"])
			}
		}
	})
}

// TestMockedJobsOnlyToMockRequests: as in Bedrock, a mocked job is
// handed only to a GetJob or GetJobs that sends mockRequest or
// getMockedJobs; such a request takes real jobs too.
func TestMockedJobsOnlyToMockRequests(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		mocked := tr.create("name", "m", "mockRequest", "true")
		tr.expect("404 No job found", "GetJob", "name", "m")
		tr.expect("404 No job found", "GetJob", "name", "*")
		eq(t, "GetJobs", string(tr.do("GetJobs", "name", "m", "numResults", "5").Status), "404 No job found")
		eq(t, "mocked job", tr.query(mocked)["state"], "QUEUED")
		m := flat(t, tr.ok("GetJob", "name", "m", "getMockedJobs", "true"))
		eq(t, "getMockedJobs takes it", m["jobID"], mocked)

		child := tr.create("name", "m.child", "parentJobID", mocked) // mocked as its parent is
		tr.ok("FinishJob", "jobID", mocked)
		tr.expect("404 No job found", "GetJobs", "name", "m.*", "numResults", "5")
		m = flat(t, tr.ok("GetJob", "name", "m.*", "mockRequest", "false")) // present is enough
		eq(t, "mockRequest takes the mocked child", m["jobID"], child)

		real := tr.create("name", "r")
		m = flat(t, tr.ok("GetJob", "name", "r", "mockRequest", "1"))
		eq(t, "a mock request takes a real job", m["jobID"], real)
	})
}

// TestNames: every name Bedrock accepts is a job's name (paths, query
// strings, GLOB characters, commas), and GetJob matches them as Bedrock
// does: a single name is a GLOB pattern (SQLite's), a comma list exact
// names.
func TestNames(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		names := []string{"www-prod/UserActivityEvaluator?accountID=856", "a?b", "axb", "a*", "a[1]", "a,b", "{x,y}", "a[b", `back\slash`}
		ids := map[string]string{}
		for _, n := range names {
			ids[n] = tr.create("name", n)
			eq(t, n, tr.query(ids[n])["name"], n)
		}
		take := func(want string, headers ...string) {
			t.Helper()
			m := flat(t, tr.ok("GetJob", headers...))
			if m["jobID"] != ids[want] {
				t.Errorf("GetJob %v took %q, want %q", headers, m["name"], want)
			}
			tr.ok("RequeueJobs", "jobIDs", ids[want])
		}
		take("www-prod/UserActivityEvaluator?accountID=856", "name", "www-prod/UserActivityEvaluator?accountID=856")
		take("www-prod/UserActivityEvaluator?accountID=856", "name", "www-prod/*")
		take("a?b", "name", "a[?]b")       // exactly a?b, by a class
		take("a?b", "name", "a?b,nothing") // a list: exact names
		take("axb", "name", "axb,nothing")
		take("a[1]", "name", "a[[]1]")
		take("a[1]", "name", "a[1],nothing")
		take("a[b", "name", "a[b")      // a [ nothing closes: its own text
		take("a,b", "name", "a[^?x[]b") // a comma splits the header, so a class without it
		take("{x,y}", "name", "{x?y}")  // braces without a comma are plain
		take(`back\slash`, "name", `back\slash`)
		tr.expect("404 No job found", "GetJob", "name", "a[1]") // a1, as in Bedrock
		tr.expect("404 No job found", "GetJob", "name", "a,b")  // a or b
		// a?b matches every name of three characters between a and b, as
		// GLOB does.
		var got []string
		for {
			r := tr.do("GetJob", "name", "a?b")
			if r.Status != "200 OK" {
				eq(t, "GetJob a?b at the end", r.Status, "404 No job found")
				break
			}
			got = append(got, flat(t, r.JSON(t))["name"])
		}
		slices.Sort(got)
		eq(t, "GetJob a?b took", strings.Join(got, " "), "a,b a?b a[b axb")

		// RetryJob and RequeueJobs rename to any such name.
		tr.ok("GetJob", "name", "a[*]")
		tr.ok("RetryJob", "jobID", ids["a*"], "name", "renamed?x=1")
		eq(t, "renamed", tr.query(ids["a*"])["name"], "renamed?x=1")
		tr.expect("402 Malformed name", "CreateJob", "name", "tab\there")
	})
}

// TestRequeueJobsRenamesAndCounts: RequeueJobs with a name renames every
// job it requeues, whatever its state, and makes it due at its created
// time exactly (as Bedrock shows it); decrementFailures gives back one
// run of a retryAfter job's count, and without it the count stays.
func TestRequeueJobsRenamesAndCounts(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		queued := tr.create("name", "queued", "firstRun", "2042-01-01 00:00:00")
		running := tr.create("name", "running")
		failed := tr.create("name", "failed")
		tr.ok("GetJob", "name", "running")
		tr.ok("GetJob", "name", "failed")
		tr.ok("FailJob", "jobID", failed)
		tr.ok("RequeueJobs", "jobIDs", queued+","+running+","+failed, "name", "www/renamed?x=1")
		for _, id := range []string{queued, running, failed} {
			q := tr.query(id)
			eq(t, id+" state", q["state"], "QUEUED")
			eq(t, id+" name", q["name"], "www/renamed?x=1")
			eq(t, id+" nextRun", q["nextRun"], q["created"])
		}

		ra := tr.create("name", "ra", "retryAfter", "+1 HOUR")
		tr.ok("GetJob", "name", "ra")
		eq(t, "count after a run", tr.query(ra)["data"], `{"retryAfterCount":1}`)
		tr.ok("RequeueJobs", "jobIDs", ra)
		eq(t, "count kept", tr.query(ra)["data"], `{"retryAfterCount":1}`)
		tr.ok("GetJob", "name", "ra")
		eq(t, "count after two runs", tr.query(ra)["data"], `{"retryAfterCount":2}`)
		tr.ok("RequeueJobs", "jobIDs", ra, "decrementFailures", "true")
		q := tr.query(ra)
		eq(t, "count given back", q["data"], `{"retryAfterCount":1}`)
		eq(t, "state", q["state"], "QUEUED")
	})
}

// TestImportRowNamesAndMocks: rota import bedrock takes every name
// Bedrock has, and puts a mocked row's job with the other mocked jobs,
// for mock requests only.
func TestImportRowNamesAndMocks(t *testing.T) {
	j, why := bedrock.ImportRow("www-prod/Evaluator?accountID=856", "QUEUED", "2026-01-01 00:00:00", "2026-01-01 00:00:00", "", `{"mockRequest":true}`, "", 500)
	if why != "" || j.Type != "www-prod/Evaluator?accountID=856" || j.Group != bedrock.MockGroup {
		t.Errorf("mocked row: %q in group %q (%s)", j.Type, j.Group, why)
	}
	j, why = bedrock.ImportRow("a,b[1]*", "QUEUED", "2026-01-01 00:00:00", "2026-01-01 00:00:00", "", `{}`, "", 500)
	if why != "" || j.Type != "a,b[1]*" || j.Group != "" {
		t.Errorf("row: %q in group %q (%s)", j.Type, j.Group, why)
	}
	if _, why = bedrock.ImportRow("tab\there", "QUEUED", "2026-01-01 00:00:00", "", "", `{}`, "", 500); !strings.Contains(why, "control character") {
		t.Errorf("a name with a tab: %q, want it refused", why)
	}
}

// TestUniqueByMockedness: as in Bedrock, a unique add finds only jobs as
// mocked as itself.
func TestUniqueByMockedness(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		real := tr.create("name", "u", "unique", "true", "data", `{"a":1}`)
		mocked := tr.create("name", "u", "unique", "true", "data", `{"a":1}`, "mockRequest", "true")
		if mocked == real {
			t.Fatalf("a mocked unique add found the real job %s", real)
		}
		eq(t, "again, mocked", tr.create("name", "u", "unique", "true", "data", `{"a":1}`, "mockRequest", "true"), mocked)
		eq(t, "again, real", tr.create("name", "u", "unique", "true", "data", `{"a":1}`), real)
		eq(t, "real data", tr.query(real)["data"], `{"a":1}`)
	})
}
