package e2e_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3" // to write a Bedrock database

	"github.com/rotajobs/rota/internal/pgtest"
)

var bedrockRE = regexp.MustCompile(`msg="rota serving Bedrock::Jobs" bedrock=(\S+)`)

// bedrockAddr is where a server started with --bedrock speaks the
// protocol, from its log.
func (s *server) bedrockAddr(t *testing.T) string {
	t.Helper()
	m := bedrockRE.FindStringSubmatch(s.log.String())
	if m == nil {
		t.Fatalf("rota serve --bedrock did not log its Bedrock address:\n%s", s.log)
	}
	return m[1]
}

// bedrockCall sends one command on a new connection and returns the
// status line and body.
func bedrockCall(t *testing.T, addr, method string, headers ...string) (string, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(commandTimeout))
	var b strings.Builder
	b.WriteString(method + "\r\n")
	for i := 0; i+1 < len(headers); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", headers[i], headers[i+1])
	}
	b.WriteString("Connection: close\r\n\r\n")
	io.WriteString(conn, b.String())
	br := bufio.NewReader(conn)
	status, _ := br.ReadString('\n')
	n := 0
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			n, _ = strconv.Atoi(v)
		}
	}
	body := make([]byte, n)
	io.ReadFull(br, body)
	return strings.TrimRight(status, "\r\n"), string(body)
}

// TestBedrockServe runs Bedrock's protocol on a real rota serve: a job
// added through it is the same job over HTTP, and a job it handed out
// survives a SIGKILL of the server with its Bedrock id.
func TestBedrockServe(t *testing.T) {
	data := t.TempDir()
	s := serveAt(t, "127.0.0.1:0", data, "--bedrock", "127.0.0.1:0")
	addr := s.bedrockAddr(t)
	status, body := bedrockCall(t, addr, "CreateJob", "name", "report", "data", `{"n":1}`)
	if status != "200 OK" {
		t.Fatalf("CreateJob: %s", status)
	}
	bid := strings.TrimSuffix(strings.TrimPrefix(body, `{"jobID":`), "}")
	var got struct {
		Job struct {
			Type      string `json:"type"`
			State     string `json:"state"`
			BedrockID int64  `json:"bedrock_id"`
		} `json:"job"`
	}
	s.rotaJSON(t, &got, "get", "1")
	j := &got.Job
	if j.Type != "report" || strconv.FormatInt(j.BedrockID, 10) != bid {
		t.Fatalf("over HTTP the job is %+v, Bedrock's id %s", j, bid)
	}
	if status, _ := bedrockCall(t, addr, "GetJob", "name", "report"); status != "200 OK" {
		t.Fatalf("GetJob: %s", status)
	}

	stop(t, s.cmd, syscall.SIGKILL)
	s = serveAt(t, "127.0.0.1:0", data, "--bedrock", "127.0.0.1:0")
	addr = s.bedrockAddr(t)
	if status, body := bedrockCall(t, addr, "QueryJob", "jobID", bid); status != "200 OK" || !strings.Contains(body, `"state":"RUNNING"`) {
		t.Fatalf("after a SIGKILL, QueryJob: %s %s", status, body)
	}
	if status, _ := bedrockCall(t, addr, "FinishJob", "jobID", bid); status != "200 OK" {
		t.Fatalf("FinishJob after the restart: %s", status)
	}
	s.rotaJSON(t, &got, "get", "1")
	if j.State != "completed" {
		t.Errorf("after FinishJob the job is %s over HTTP", j.State)
	}
}

// TestBedrockBindSafety: the protocol has no authentication, so only
// loopback clients are served unless the operator lists networks.
func TestBedrockBindSafety(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--data", t.TempDir(), "--http", "127.0.0.1:0", "--bedrock", "0.0.0.0:0")
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if code := exitCode(err); code != 2 || !strings.Contains(string(out), "--bedrock-allow") {
		t.Fatalf("--bedrock on 0.0.0.0 without --bedrock-allow: exit %d\n%s", code, out)
	}
	s := startServer(t, "--bedrock", "0.0.0.0:0", "--bedrock-allow", "127.0.0.0/8,10.1.2.3")
	// Listening on every address; the client comes from 127.0.0.1.
	_, port, _ := net.SplitHostPort(s.bedrockAddr(t))
	if status, _ := bedrockCall(t, "127.0.0.1:"+port, "CreateJob", "name", "a"); status != "200 OK" {
		t.Fatalf("an allowed client: %s", status)
	}
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// bedrockDo is one command on a new connection to *addr (which may change
// as the server restarts), retried while the server is down.
func bedrockDo(t *testing.T, addr *atomic.Pointer[string], method string, headers ...string) (string, string) {
	t.Helper()
	deadline := time.Now().Add(commandTimeout)
	for {
		conn, err := net.DialTimeout("tcp", *addr.Load(), time.Second)
		if err == nil {
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			var b strings.Builder
			b.WriteString(method + "\r\n")
			for i := 0; i+1 < len(headers); i += 2 {
				fmt.Fprintf(&b, "%s: %s\r\n", headers[i], headers[i+1])
			}
			b.WriteString("Connection: close\r\n\r\n")
			io.WriteString(conn, b.String())
			body, rerr := io.ReadAll(conn)
			conn.Close()
			if head, rest, ok := strings.Cut(string(body), "\r\n\r\n"); rerr == nil && ok {
				status, _, _ := strings.Cut(head, "\r\n")
				return status, rest
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no answer from the server", method)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBedrockWorkerLoop runs a worker written only against the protocol
// (GetJobs, then FinishJob, RetryJob or CreateJobs) through a SIGKILL and
// restart of the server: a recurring job keeps recurring, and a parent
// adds children, waits for them and sees them all when it runs again.
func TestBedrockWorkerLoop(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { bedrockWorkerLoop(t) })
	t.Run("postgres", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts a PostgreSQL of its own")
		}
		pg := pgtest.Start(t)
		bedrockWorkerLoop(t, "--store", pg.DSN("postgres"))
	})
}

func bedrockWorkerLoop(t *testing.T, storeArgs ...string) {
	data := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	baddr := l.Addr().String()
	l.Close()
	srv := serveAt(t, "127.0.0.1:0", data, append([]string{"--bedrock", baddr}, storeArgs...)...)
	var addr atomic.Pointer[string]
	addr.Store(&baddr)

	if st, _ := bedrockDo(t, &addr, "CreateJob", "name", "report", "repeat", "FINISHED, +1 SECOND"); st != "200 OK" {
		t.Fatalf("CreateJob report: %s", st)
	}
	if st, _ := bedrockDo(t, &addr, "CreateJob", "name", "batch", "data", `{"size":3}`); st != "200 OK" {
		t.Fatalf("CreateJob batch: %s", st)
	}

	var (
		mu            sync.Mutex
		reports       int
		childrenSeen  int
		parentDone    bool
		childrenDone  int
		retried       = map[string]bool{}
		quit          = make(chan struct{})
		workerStopped = make(chan struct{})
	)
	go func() {
		defer close(workerStopped)
		for {
			select {
			case <-quit:
				return
			default:
			}
			st, body := bedrockDo(t, &addr, "GetJobs", "name", "report,batch,batch.child", "numResults", "5")
			if st != "200 OK" {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			var got struct {
				Jobs []map[string]json.RawMessage `json:"jobs"`
			}
			json.Unmarshal([]byte(body), &got)
			for _, j := range got.Jobs {
				id := string(j["jobID"])
				var name string
				json.Unmarshal(j["name"], &name)
				switch {
				case name == "report":
					bedrockDo(t, &addr, "FinishJob", "jobID", id)
					mu.Lock()
					reports++
					mu.Unlock()
				case name == "batch" && j["finishedChildJobs"] == nil:
					var kids []string
					for i := range 3 {
						kids = append(kids, fmt.Sprintf(`{"name":"batch.child","data":{"i":%d},"parentJobID":%s}`, i, id))
					}
					if st, _ := bedrockDo(t, &addr, "CreateJobs", "jobs", "["+strings.Join(kids, ",")+"]"); st != "200 OK" {
						t.Errorf("CreateJobs children: %s", st)
					}
					bedrockDo(t, &addr, "FinishJob", "jobID", id)
				case name == "batch":
					var finished []json.RawMessage
					json.Unmarshal(j["finishedChildJobs"], &finished)
					mu.Lock()
					childrenSeen, parentDone = len(finished), true
					mu.Unlock()
					bedrockDo(t, &addr, "FinishJob", "jobID", id)
				case name == "batch.child":
					mu.Lock()
					first := !retried[id]
					retried[id] = true
					mu.Unlock()
					if first {
						bedrockDo(t, &addr, "RetryJob", "jobID", id, "delay", "0")
						continue
					}
					bedrockDo(t, &addr, "FinishJob", "jobID", id)
					mu.Lock()
					childrenDone++
					mu.Unlock()
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()

	time.Sleep(1500 * time.Millisecond)
	stop(t, srv.cmd, syscall.SIGKILL)
	mu.Lock()
	before := reports
	mu.Unlock()
	serveAt(t, "127.0.0.1:0", data, append([]string{"--bedrock", baddr}, storeArgs...)...)

	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		ok := reports >= before+2 && parentDone && childrenDone == 3
		r, p, c, s := reports, parentDone, childrenDone, childrenSeen
		mu.Unlock()
		if ok {
			if s != 3 {
				t.Errorf("the parent saw %d finished children, want 3", s)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart: %d report runs, parent done %v, %d children done", r, p, c)
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(quit)
	<-workerStopped
	t.Logf("through a SIGKILL of the server: %d runs of the recurring job (%d before it), the parent saw %d children", reports, before, childrenSeen)
}

// bedrockDB writes a Bedrock database (its jobs table, §2.1 of the
// reference) with the rows given as (jobID, state, name, nextRun, repeat,
// data, priority, parentJobID, retryAfter).
func bedrockDB(t *testing.T, rows [][]any) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bedrock.db")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE jobs (
		created TIMESTAMP NOT NULL, jobID INTEGER NOT NULL PRIMARY KEY, state TEXT NOT NULL, name TEXT NOT NULL,
		nextRun TIMESTAMP NOT NULL, lastRun TIMESTAMP, repeat TEXT NOT NULL, data TEXT NOT NULL,
		priority INTEGER NOT NULL DEFAULT 500, parentJobID INTEGER NOT NULL DEFAULT 0, retryAfter TEXT NOT NULL DEFAULT "")`); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if _, err := db.Exec(`INSERT INTO jobs (created, jobID, state, name, nextRun, repeat, data, priority, parentJobID, retryAfter)
			VALUES ('2024-05-06 07:08:09', ?, ?, ?, ?, ?, ?, ?, ?, ?)`, r...); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestBedrockImport: rota import bedrock moves a Bedrock database's jobs
// with their ids, states, repeats and families; a database with a row it
// cannot map changes nothing.
func TestBedrockImport(t *testing.T) {
	rows := [][]any{
		{int64(7001), "QUEUED", "report", "2042-01-01 00:00:00", "SCHEDULED, +1 HOUR", `{"a":1}`, 750, 0, ""},
		{int64(7002), "QUEUED", "now", "2020-01-01 00:00:00.123", "", `{}`, 500, 0, ""},
		{int64(7003), "RUNNING", "was.running", "2020-01-01 00:00:00", "", `{}`, 500, 0, "+5 MINUTES"},
		{int64(7004), "PAUSED", "parent", "2020-01-01 00:00:00", "", `{"p":1}`, 500, 0, ""},
		{int64(7005), "QUEUED", "child", "2020-01-01 00:00:00", "", `{"c":1}`, 500, 7004, ""},
		{int64(7006), "FINISHED", "child", "2020-01-01 00:00:00", "", `{"c":2}`, 500, 7004, ""},
		{int64(7007), "CANCELLED", "child", "2020-01-01 00:00:00", "", `{"c":3}`, 500, 7004, ""},
		{int64(7008), "FAILED", "broken", "2020-01-01 00:00:00", "", `{}`, 500, 0, ""},
		{int64(7010), "QUEUED", "www-prod/Evaluator?accountID=856,[1]*", "2042-01-01 00:00:00", "", `{}`, 500, 0, ""},
	}
	data := t.TempDir()
	s := &server{}
	// A row rota cannot take: nothing is imported, and the report says why.
	bad := bedrockDB(t, append(slices.Clone(rows), []any{int64(7009), "QUEUED", "bad.data", "2020-01-01 00:00:00", "", `not json`, 500, 0, ""}))
	r := s.run(t, "", "import", "bedrock", bad, "--data", data)
	if r.code != 2 || !strings.Contains(r.stdout, "job 7009 (bad.data, QUEUED)") || !strings.Contains(r.stdout, "nothing was imported") {
		t.Fatalf("importing a bad row: %v", r)
	}
	good := bedrockDB(t, rows)
	if r := s.run(t, "", "import", "bedrock", good, "--data", data, "--dry-run"); r.code != 0 || !strings.Contains(r.stdout, "all 9 jobs can be imported") {
		t.Fatalf("dry run: %v", r)
	}
	r = s.run(t, "", "import", "bedrock", good, "--data", data)
	if r.code != 0 || !strings.Contains(r.stdout, "imported 9 jobs") || !strings.Contains(r.stdout, "1 were running") {
		t.Fatalf("import: %v", r)
	}
	if r := s.run(t, "", "import", "bedrock", good, "--data", data); r.code != 2 || !strings.Contains(r.stdout, "imported before?") {
		t.Errorf("importing twice: %v", r)
	}

	srv := serveAt(t, "127.0.0.1:0", data, "--bedrock", "127.0.0.1:0")
	addr := srv.bedrockAddr(t)
	for id, want := range map[string]string{"7001": "QUEUED", "7002": "QUEUED", "7003": "QUEUED", "7004": "PAUSED",
		"7005": "QUEUED", "7006": "FINISHED", "7007": "CANCELLED", "7008": "FAILED", "7010": "QUEUED"} {
		st, body := bedrockCall(t, addr, "QueryJob", "jobID", id)
		if st != "200 OK" || !strings.Contains(body, `"state":"`+want+`"`) {
			t.Errorf("job %s after the import: %s %s, want %s", id, st, body, want)
		}
	}
	if _, body := bedrockCall(t, addr, "QueryJob", "jobID", "7001"); !strings.Contains(body, `"nextRun":"2042-01-01 00:00:00"`) ||
		!strings.Contains(body, `"repeat":"SCHEDULED, +1 HOUR"`) || !strings.Contains(body, `"priority":750`) || !strings.Contains(body, `"created":"2024-05-06 07:08:09"`) {
		t.Errorf("the recurring job after the import: %s", body)
	}
	// Every name Bedrock has comes over as it is.
	if _, body := bedrockCall(t, addr, "QueryJob", "jobID", "7010"); !strings.Contains(body, `"name":"www-prod\/Evaluator?accountID=856,[1]*"`) {
		t.Errorf("the job with a path and a query string in its name: %s", body)
	}
	if st, body := bedrockCall(t, addr, "GetJob", "name", "child"); st != "200 OK" || !strings.Contains(body, `"jobID":7005`) || !strings.Contains(body, `"parentJobID":7004`) {
		t.Errorf("the imported child: %s %s", st, body)
	}
}

// TestBedrockCommands sends every command once to a real rota serve, on
// SQLite and on PostgreSQL.
func TestBedrockCommands(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { bedrockCommands(t) })
	t.Run("postgres", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts a PostgreSQL of its own")
		}
		pg := pgtest.Start(t)
		bedrockCommands(t, "--store", pg.DSN("postgres"))
	})
}

func bedrockCommands(t *testing.T, storeArgs ...string) {
	srv := startServer(t, append([]string{"--bedrock", "127.0.0.1:0"}, storeArgs...)...)
	addr := srv.bedrockAddr(t)
	id := func(body string) string {
		var m map[string]json.RawMessage
		json.Unmarshal([]byte(body), &m)
		return string(m["jobID"])
	}
	want := func(st, status string, what string) {
		t.Helper()
		if st != status {
			t.Errorf("%s: %q, want %q", what, st, status)
		}
	}
	st, body := bedrockCall(t, addr, "CreateJob", "name", "a", "data", `{"x":1}`, "repeat", "FINISHED, +1 HOUR")
	want(st, "200 OK", "CreateJob")
	a := id(body)
	st, body = bedrockCall(t, addr, "CreateJobs", "jobs", `[{"name":"b"},{"name":"c","jobPriority":1000}]`)
	want(st, "200 OK", "CreateJobs")
	if !strings.Contains(body, `"jobIDs":[`) {
		t.Errorf("CreateJobs: %s", body)
	}
	st, body = bedrockCall(t, addr, "GetJobs", "name", "b,c", "numResults", "2")
	want(st, "200 OK", "GetJobs")
	if strings.Index(body, `"name":"c"`) > strings.Index(body, `"name":"b"`) {
		t.Errorf("GetJobs did not hand out the higher priority first: %s", body)
	}
	var got struct {
		Jobs []map[string]json.RawMessage `json:"jobs"`
	}
	json.Unmarshal([]byte(body), &got)
	if len(got.Jobs) != 2 {
		t.Fatalf("GetJobs: %s", body)
	}
	b, c := string(got.Jobs[1]["jobID"]), string(got.Jobs[0]["jobID"])
	want(st, "200 OK", "GetJobs")
	st, _ = bedrockCall(t, addr, "GetJob", "name", "a")
	want(st, "200 OK", "GetJob")
	st, body = bedrockCall(t, addr, "QueryJob", "jobID", a)
	want(st, "200 OK", "QueryJob")
	if !strings.Contains(body, `"state":"RUNNING"`) {
		t.Errorf("QueryJob: %s", body)
	}
	st, _ = bedrockCall(t, addr, "UpdateJob", "jobID", a, "data", `{"x":2}`)
	want(st, "200 OK", "UpdateJob")
	st, _ = bedrockCall(t, addr, "FinishJob", "jobID", a)
	want(st, "200 OK", "FinishJob of a repeating job")
	st, _ = bedrockCall(t, addr, "RetryJob", "jobID", b, "delay", "60")
	want(st, "200 OK", "RetryJob")
	st, _ = bedrockCall(t, addr, "FailJob", "jobID", c)
	want(st, "200 OK", "FailJob")
	st, _ = bedrockCall(t, addr, "CancelJob", "jobID", c)
	want(st, "404 Invalid jobID - Cannot cancel a job without a parent", "CancelJob")
	st, _ = bedrockCall(t, addr, "RequeueJobs", "jobIDs", b+","+c)
	want(st, "200 OK", "RequeueJobs")
	st, body = bedrockCall(t, addr, "QueryJob", "jobID", c)
	if !strings.Contains(body, `"state":"QUEUED"`) {
		t.Errorf("after RequeueJobs: %s %s", st, body)
	}
	st, _ = bedrockCall(t, addr, "DeleteJob", "jobID", b)
	want(st, "200 OK", "DeleteJob")
	st, _ = bedrockCall(t, addr, "CrashBedrockJob", "names", "c")
	want(st, "200 OK", "CrashBedrockJob")
	st, _ = bedrockCall(t, addr, "GetJob", "name", "c")
	want(st, "200 OK", "GetJob of a blacklisted job (failed, not handed out)")
	st, _ = bedrockCall(t, addr, "ClearCrashedBedrockJobs")
	want(st, "200 OK", "ClearCrashedBedrockJobs")
	st, _ = bedrockCall(t, addr, "Nope")
	want(st, "430 Unrecognized command", "an unknown command")
}
