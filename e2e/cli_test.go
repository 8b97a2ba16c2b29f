package e2e_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func id(n int64) string { return strconv.FormatInt(n, 10) }

// compact returns raw JSON without spaces.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// itemResults is the --json answer of cancel, retry and rm.
type itemResults struct {
	Results []struct {
		ID      int64  `json:"id"`
		Job     *job   `json:"job"`
		Outcome string `json:"outcome"`
		Error   *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	} `json:"results"`
}

// TestJobCommands drives add, get, ls, cancel, retry, rm and stats, with
// and without --json.
func TestJobCommands(t *testing.T) {
	t.Parallel()
	s := startServer(t)

	// add: human output is "ID OUTCOME".
	fields := strings.Fields(s.rota(t, "add", "e2e.mail", `{"to":"ada"}`))
	if len(fields) != 2 || fields[1] != "inserted" {
		t.Fatalf("rota add printed %q, want \"ID inserted\"", fields)
	}
	id1, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		t.Fatalf("rota add printed %q, want an id first", fields)
	}

	// add --json, with a key, group, priority and attempts.
	var added struct {
		Job     job
		Outcome string
	}
	s.rotaJSON(t, &added, "add", "e2e.mail", `{"to":"bob"}`, "--key", "bob", "--group", "g1", "--priority", "5", "--max-attempts", "3")
	id2 := added.Job.ID
	if j := added.Job; added.Outcome != "inserted" || j.Key != "bob" || j.Group != "g1" || j.Priority != 5 || j.MaxAttempts != 3 ||
		j.State != "pending" || compact(j.Data) != `{"to":"bob"}` {
		t.Errorf("add --json = %+v, outcome %q", j, added.Outcome)
	}
	// The same key updates the job, with the new add's values.
	s.rotaJSON(t, &added, "add", "e2e.mail", `{"to":"bob2"}`, "--key", "bob", "--group", "g1")
	if added.Outcome != "updated" || added.Job.ID != id2 || compact(added.Job.Data) != `{"to":"bob2"}` {
		t.Errorf("re-add = job %d %s outcome %q, want job %d updated", added.Job.ID, added.Job.Data, added.Outcome, id2)
	}

	// Data from stdin, scheduled with --in; -q prints the id alone.
	r := s.run(t, `{"from": "stdin"}`, "add", "e2e.report", "-", "--in", "1h", "-q")
	id3, err := strconv.ParseInt(strings.TrimSpace(r.stdout), 10, 64)
	if r.code != 0 || err != nil {
		t.Fatalf("add -q: %v", r)
	}
	if j := s.get(t, id3); compact(j.Data) != `{"from":"stdin"}` || time.Until(j.RunAt) < 50*time.Minute {
		t.Errorf("job from stdin: data %s, run_at %v; want the data, an hour from now", j.Data, j.RunAt)
	}
	// Data from a file, scheduled with --at.
	file := filepath.Join(t.TempDir(), "data.json")
	os.WriteFile(file, []byte(`{"from": "file"}`), 0o644)
	id4 := s.add(t, "e2e.report", "--data-file", file, "--at", "2030-01-02T03:04:05Z")
	if j := s.get(t, id4); compact(j.Data) != `{"from":"file"}` || !j.RunAt.Equal(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("job from a file: data %s, run_at %v", j.Data, j.RunAt)
	}

	// get: a readable view.
	out := s.rota(t, "get", id(id2))
	for _, re := range []string{`(?m)^id:\s+` + id(id2) + `$`, `(?m)^type:\s+e2e\.mail$`, `(?m)^key:\s+bob$`, `(?m)^group:\s+g1$`,
		`(?m)^state:\s+pending$`, `(?m)^attempts:\s+0 of 20$`, `"to": "bob2"`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("rota get does not match %s:\n%s", re, out)
		}
	}

	// ls: a table with a header and a row per job.
	out = s.rota(t, "ls")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[0], "STATE") {
		t.Fatalf("rota ls printed:\n%s", out)
	}
	for i, want := range []int64{id1, id2, id3, id4} {
		if f := strings.Fields(lines[i+1]); f[0] != id(want) || f[2] != "pending" {
			t.Errorf("ls row %d = %q, want job %d pending", i+1, lines[i+1], want)
		}
	}
	var list struct {
		Jobs       []job  `json:"jobs"`
		NextCursor string `json:"next_cursor"`
	}
	s.rotaJSON(t, &list, "ls", "--type", "e2e.report")
	if len(list.Jobs) != 2 || list.Jobs[0].ID != id3 || list.Jobs[1].ID != id4 {
		t.Errorf("ls --type e2e.report = %+v", list.Jobs)
	}
	s.rotaJSON(t, &list, "ls", "--state", "pending", "--group", "g1")
	if len(list.Jobs) != 1 || list.Jobs[0].ID != id2 {
		t.Errorf("ls --state pending --group g1 = %+v", list.Jobs)
	}
	// Pages.
	s.rotaJSON(t, &list, "ls", "--limit", "3")
	if len(list.Jobs) != 3 || list.NextCursor == "" {
		t.Fatalf("ls --limit 3 = %d jobs, cursor %q", len(list.Jobs), list.NextCursor)
	}
	cursor := list.NextCursor
	list.NextCursor = ""
	s.rotaJSON(t, &list, "ls", "--limit", "3", "--cursor", cursor)
	if len(list.Jobs) != 1 || list.Jobs[0].ID != id4 || list.NextCursor != "" {
		t.Errorf("ls --cursor %s = %+v, cursor %q", cursor, list.Jobs, list.NextCursor)
	}
	s.rotaJSON(t, &list, "ls", "--limit", "1", "--all")
	if len(list.Jobs) != 4 || list.NextCursor != "" {
		t.Errorf("ls --limit 1 --all = %d jobs, cursor %q", len(list.Jobs), list.NextCursor)
	}
	r = s.run(t, "", "ls", "--limit", "1")
	if r.code != 0 || !strings.Contains(r.stderr, "--cursor "+id(id1)) {
		t.Errorf("ls --limit 1 does not say how to get the next page: %v", r)
	}

	// cancel.
	if out := s.rota(t, "cancel", id(id1)); strings.TrimSpace(out) != id(id1)+" cancelled" {
		t.Errorf("rota cancel printed %q", out)
	}
	if j := s.get(t, id1); j.State != "cancelled" {
		t.Errorf("cancelled job is %s", j.State)
	}
	r = s.run(t, "", "cancel", id(id3), "999999", "--json")
	var items itemResults
	if err := json.Unmarshal([]byte(r.stdout), &items); err != nil || r.code != 3 || len(items.Results) != 2 { // 3: not found
		t.Fatalf("cancel of an existing and a missing job: %v", r)
	}
	if res := items.Results[0]; res.ID != id3 || res.Error != nil || res.Job == nil || res.Job.State != "cancelled" {
		t.Errorf("cancel result 0 = %+v", res)
	}
	if res := items.Results[1]; res.ID != 999999 || res.Error == nil || res.Error.Code != "not_found" {
		t.Errorf("cancel result 1 = %+v", res)
	}

	// retry (resubmit).
	s.rotaJSON(t, &items, "retry", id(id1))
	if res := items.Results[0]; res.Outcome != "requeued" || res.Job == nil || res.Job.State != "pending" {
		t.Errorf("retry of a cancelled job = %+v", res)
	}
	if out := s.rota(t, "retry", id(id2), "--in", "2h"); strings.TrimSpace(out) != id(id2)+" updated" {
		t.Errorf("retry of a pending job printed %q", out)
	}
	if j := s.get(t, id2); time.Until(j.RunAt) < 90*time.Minute {
		t.Errorf("retry --in 2h: run_at %v", j.RunAt)
	}

	// stats.
	var stats struct {
		Counts []struct {
			Type  string `json:"type"`
			Group string `json:"group"`
			State string `json:"state"`
			Jobs  int64  `json:"jobs"`
		} `json:"counts"`
		ByState map[string]int64 `json:"by_state"`
	}
	s.rotaJSON(t, &stats, "stats")
	if stats.ByState["pending"] != 3 || stats.ByState["cancelled"] != 1 || stats.ByState["completed"] != 0 || len(stats.Counts) != 4 {
		t.Errorf("stats = %+v", stats)
	}
	out = s.rota(t, "stats")
	if !regexp.MustCompile(`(?m)^e2e\.mail\s+g1\s+1\s`).MatchString(out) || !regexp.MustCompile(`(?m)^total\s+3\s+0\s+0\s+0\s+0\s+1\s+0\s+4\s*$`).MatchString(out) {
		t.Errorf("rota stats printed:\n%s", out)
	}

	// rm.
	if out := s.rota(t, "rm", id(id1)); strings.TrimSpace(out) != id(id1)+" removed" {
		t.Errorf("rota rm printed %q", out)
	}
	if r := s.run(t, "", "get", id(id1)); r.code != 3 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("get of a removed job: %v", r)
	}
	if r := s.run(t, "", "rm", id(id1)); r.code != 3 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("second rm: %v", r)
	}
}

// closedURL returns the URL of a loopback port nobody listens on.
func closedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + ln.Addr().String()
	ln.Close()
	return u
}

// TestBadInput checks that bad input gets a clear error and exit status
// 2 without contacting the server, and changes nothing.
func TestBadInput(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	nobody := closedURL(t)
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"get", "abc"}, `bad job id "abc"`},
		{[]string{"get", "0"}, `bad job id "0"`},
		{[]string{"get"}, "one job ID"},
		{[]string{"add", "e2e.t", "{not json"}, "not valid JSON"},
		{[]string{"add", "e2e.t", "[1, 2]"}, "must be a JSON object"},
		{[]string{"add", "e2e\tt", "{}"}, "control character"},
		{[]string{"add", "e2e.t", "--in", "soon"}, `invalid argument "soon"`},
		{[]string{"add", "e2e.t", "--at", "tomorrow"}, "not an RFC 3339 time"},
		{[]string{"add", "e2e.t", "--max-attempts", "-1"}, "--max-attempts"},
		{[]string{"add", "e2e.t", "--unique-for", "-1s"}, "--unique-for -1s must not be negative"},
		{[]string{"add", "e2e.t", "--unique-for", "1h", "--unique-states", "asleep"}, `--unique-states: unknown state "asleep"`},
		{[]string{"add", "e2e.t", "--unique-states", "pending"}, "--unique-states apply with unique-for only"},
		{[]string{"add", "e2e.t", "--debounce", "1m"}, "--debounce needs a key"},
		{[]string{"retry", "1", "--in", "-5m"}, "must not be negative"},
		{[]string{"cancel", "1", "two"}, `bad job id "two"`},
		{[]string{"rm"}, "at least one job ID"},
		{[]string{"ls", "--state", "bogus"}, `unknown state "bogus"`},
		{[]string{"wait", "1", "--timeout", "forever"}, `invalid argument "forever"`},
		{[]string{"watch", "--job", "x"}, `bad job id "x"`},
		{[]string{"work", "--type", "e2e.t", "--", "/no/such/program"}, "cannot run"},
		{[]string{"work", "--", "true"}, "--type"},
		{[]string{"frobnicate"}, "unknown command"},
	} {
		for _, server := range []string{nobody, s.URL} {
			r := s.run(t, "", append(tc.args, "--server", server)...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.says) || strings.Contains(r.stderr, "no rota server") {
				t.Errorf("want exit status 2 and an error that says %q, before contacting %s; got %v", tc.says, server, r)
			}
		}
	}
	var list struct{ Jobs []job }
	s.rotaJSON(t, &list, "ls")
	if len(list.Jobs) != 0 {
		t.Errorf("bad input added jobs: %+v", list.Jobs)
	}
}

// TestNoServerAndAuth checks the errors for an address where nobody
// listens and for a server that needs a token.
func TestNoServerAndAuth(t *testing.T) {
	t.Parallel()
	nobody := &server{URL: closedURL(t)}
	for _, args := range [][]string{{"ls"}, {"add", "e2e.t"}, {"wait", "1"}, {"watch"}, {"work", "--type", "e2e.t", "--", "true"}} {
		r := nobody.run(t, "", args...)
		if r.code != 5 || !strings.Contains(r.stderr, "no rota server answered at "+nobody.URL) || !strings.Contains(r.stderr, "rota serve") {
			t.Errorf("without a server: %v", r)
		}
	}

	s := startServer(t, "--auth-token", "e2e-secret")
	for _, args := range [][]string{{"ls"}, {"add", "e2e.t"}, {"get", "1"}, {"watch"}, {"wait", "1"}, {"work", "--type", "e2e.t", "--", "true"}} {
		r := s.run(t, "", args...)
		if r.code != 6 || !strings.Contains(r.stderr, "needs a token") || !strings.Contains(r.stderr, "--token") {
			t.Errorf("without a token: %v", r)
		}
		r = s.run(t, "", append([]string{"--token", "wrong"}, args...)...)
		if r.code != 6 || !strings.Contains(r.stderr, "did not accept the token") {
			t.Errorf("with a wrong token: %v", r)
		}
	}
	if out := s.rota(t, "add", "e2e.t", "--token", "e2e-secret"); !strings.HasSuffix(strings.TrimSpace(out), " inserted") {
		t.Errorf("add with --token printed %q", out)
	}
	s.token = "e2e-secret" // from now on in ROTA_TOKEN
	var list struct{ Jobs []job }
	s.rotaJSON(t, &list, "ls")
	if len(list.Jobs) != 1 {
		t.Errorf("ls with ROTA_TOKEN = %+v", list.Jobs)
	}
}

// workerScript is a worker in shell: it acts by job type.
const workerScript = `
read -r data
case "$ROTA_JOB_TYPE" in
e2e.double)
	n=$(printf '%s' "$data" | sed 's/.*"n":\([0-9]*\).*/\1/')
	echo "rota:progress 50"
	echo "{\"n\": $n, \"double\": $((n * 2)), \"id\": $ROTA_JOB_ID, \"attempt\": $ROTA_JOB_ATTEMPT}"
	;;
e2e.text)
	echo "plain text, not JSON"
	;;
e2e.fail)
	echo "some output"
	echo "it broke on attempt $ROTA_JOB_ATTEMPT" >&2
	exit 3
	;;
e2e.bad)
	echo "bad data: $data" >&2
	exit 65
	;;
esac
`

// TestWorkScript runs a shell script as a worker: jobs complete with the
// JSON (or text) it prints, failures retry and end with its stderr as the
// error, and rota wait's exit status follows.
func TestWorkScript(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	w := s.start(t, "work", "--type", "e2e.double", "--type", "e2e.text", "--type", "e2e.fail", "--type", "e2e.bad",
		"--concurrency", "4", "--shutdown-timeout", "2s", "--", "sh", "-c", workerScript)

	var doubles []int64
	for n := 1; n <= 6; n++ {
		doubles = append(doubles, s.add(t, "e2e.double", `{"n":`+strconv.Itoa(n)+`}`))
	}
	text := s.add(t, "e2e.text")
	fail := s.add(t, "e2e.fail", "--max-attempts", "3", "--backoff-base", "20ms", "--backoff-max", "50ms")
	bad := s.add(t, "e2e.bad", `{"oops":true}`)

	for i, jid := range doubles {
		r := s.run(t, "", "wait", id(jid))
		if r.code != 0 || !strings.Contains(r.stdout, "job "+id(jid)+" completed") {
			t.Fatalf("wait for a completing job: %v", r)
		}
		j := s.get(t, jid)
		var res struct{ N, Double, ID, Attempt int64 }
		if err := json.Unmarshal(j.Result, &res); err != nil || j.State != "completed" || res.N != int64(i+1) || res.Double != 2*res.N || res.ID != jid || res.Attempt != 1 {
			t.Errorf("job %d: state %s, result %s", jid, j.State, j.Result)
		}
		if j.Progress != 50 {
			t.Errorf("job %d: progress %v, want the 50 the script reported", jid, j.Progress)
		}
	}

	var waited struct{ Job job }
	r := s.run(t, "", "wait", id(text), "--json")
	if err := json.Unmarshal([]byte(r.stdout), &waited); err != nil || r.code != 0 || compact(waited.Job.Result) != `"plain text, not JSON"` {
		t.Errorf("wait --json for a job with text output: %v", r)
	}

	r = s.run(t, "", "wait", id(fail))
	if r.code != 1 || !strings.Contains(r.stderr, "failed after 3 of 3 attempts") || !strings.Contains(r.stderr, "it broke on attempt 3") {
		t.Errorf("wait for a failing job: %v", r)
	}
	j := s.get(t, fail)
	if j.State != "failed" || j.Attempt != 3 || len(j.Errors) != 3 || j.LastError != "exit status 3: it broke on attempt 3" {
		t.Errorf("failing job: state %s, attempt %d, %d errors, last error %q", j.State, j.Attempt, len(j.Errors), j.LastError)
	}
	for i, e := range j.Errors {
		if want := "exit status 3: it broke on attempt " + strconv.Itoa(i+1); e.Error != want {
			t.Errorf("error %d = %q, want %q", i, e.Error, want)
		}
	}

	r = s.run(t, "", "wait", id(bad))
	if r.code != 1 || !strings.Contains(r.stderr, "exit status 65") {
		t.Errorf("wait for a job failed for good: %v", r)
	}
	if j := s.get(t, bad); j.State != "failed" || j.Attempt != 1 || j.LastError != `exit status 65: bad data: {"oops":true}` {
		t.Errorf("job failed for good: state %s, attempt %d, last error %q", j.State, j.Attempt, j.LastError)
	}

	if code := w.signal(t, syscall.SIGTERM); code != 0 {
		t.Errorf("worker exited with status %d on SIGTERM", code)
	}
	if !strings.Contains(w.stderr.String(), "job "+id(fail)+" | it broke on attempt 1") {
		t.Errorf("the worker did not pass on the script's stderr:\n%s", w.stderr)
	}
}

// TestWaitProgress checks rota wait's progress lines and its exit
// statuses for a timeout and a missing job.
func TestWaitProgress(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	gate := filepath.Join(t.TempDir(), "gate")
	script := `echo "rota:progress 50"; while [ ! -e '` + gate + `' ]; do sleep 0.02; done; echo '{"done": true}'`
	s.start(t, "work", "--type", "e2e.gated", "--shutdown-timeout", "2s", "--", "sh", "-c", script)

	jid := s.add(t, "e2e.gated")
	waiter := s.start(t, "wait", id(jid))
	eventually(t, "the job reports progress 50", func() bool { return s.get(t, jid).Progress == 50 })
	eventually(t, "rota wait shows the progress", func() bool { return strings.Contains(waiter.stdout.String(), "running 50%") })
	os.WriteFile(gate, nil, 0o644)
	if code := waiter.wait(t); code != 0 {
		t.Fatalf("rota wait exited with %d\n%s%s", code, waiter.stdout, waiter.stderr)
	}
	if out := waiter.stdout.String(); !strings.Contains(out, "job "+id(jid)+" completed") || !strings.Contains(out, `result: {"done":true}`) {
		t.Errorf("rota wait printed:\n%s", out)
	}

	idle := s.add(t, "e2e.nobody")
	if r := s.run(t, "", "wait", id(idle), "--timeout", "200ms"); r.code != 124 || !strings.Contains(r.stderr, "has not ended") {
		t.Errorf("wait with a timeout: %v", r)
	}
	if r := s.run(t, "", "wait", "999999"); r.code != 3 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("wait for a missing job: %v", r)
	}
}

// TestWatch checks that rota watch shows a job's transitions in order.
func TestWatch(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	jsonWatch := s.start(t, "watch", "--type", "e2e.watch*", "--json")
	textWatch := s.start(t, "watch", "--type", "e2e.watch*")
	eventually(t, "both watches are connected", func() bool {
		return strings.Contains(jsonWatch.stderr.String(), "watching") && strings.Contains(textWatch.stderr.String(), "watching")
	})
	s.start(t, "work", "--type", "e2e.watched", "--shutdown-timeout", "2s", "--", "sh", "-c", `echo "rota:progress 30"; echo '{}'`)
	other := s.add(t, "e2e.other") // not matched by the pattern
	jid := s.add(t, "e2e.watched")
	if r := s.run(t, "", "wait", id(jid)); r.code != 0 {
		t.Fatalf("%v", r)
	}

	type event struct {
		ID       int64   `json:"id"`
		Type     string  `json:"type"`
		State    string  `json:"state"`
		Progress float64 `json:"progress"`
		At       string  `json:"at"`
	}
	var events []event
	eventually(t, "the JSON watch shows the job completed", func() bool {
		events = events[:0]
		sc := bufio.NewScanner(strings.NewReader(jsonWatch.stdout.String()))
		for sc.Scan() {
			var ev event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatalf("watch --json printed a line that is not JSON: %q", sc.Text())
			}
			events = append(events, ev)
		}
		return len(events) > 0 && events[len(events)-1].State == "completed"
	})
	var states []string
	sawProgress := false
	for _, ev := range events {
		if ev.ID == other {
			t.Errorf("watch --type e2e.watch* showed job %d of type %s", ev.ID, ev.Type)
		}
		if ev.ID != jid || ev.At == "" {
			t.Errorf("unexpected event %+v", ev)
		}
		if ev.State == "running" && ev.Progress == 30 {
			sawProgress = true
		}
		if len(states) == 0 || states[len(states)-1] != ev.State {
			states = append(states, ev.State)
		}
	}
	if strings.Join(states, " ") != "pending running completed" || !sawProgress {
		t.Errorf("watch --json showed states %v (progress 30 seen: %v), want pending running completed with progress", states, sawProgress)
	}

	lineRE := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3}\s+` + id(jid) + `\s+e2e\.watched\s+(\w+)`)
	eventually(t, "the text watch shows the job completed", func() bool { return strings.Contains(textWatch.stdout.String(), "completed") })
	states = states[:0]
	for _, line := range strings.Split(strings.TrimSpace(textWatch.stdout.String()), "\n") {
		m := lineRE.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("rota watch printed %q", line)
			continue
		}
		if len(states) == 0 || states[len(states)-1] != m[1] {
			states = append(states, m[1])
		}
	}
	if strings.Join(states, " ") != "pending running completed" {
		t.Errorf("rota watch showed states %v", states)
	}

	// --job follows one job and exits once it has ended.
	r := s.run(t, "", "watch", "--job", id(jid))
	if r.code != 0 || !strings.Contains(r.stdout, "completed") {
		t.Errorf("watch --job of an ended job: %v", r)
	}
	for _, w := range []*process{jsonWatch, textWatch} {
		if code := w.signal(t, syscall.SIGINT); code != 0 {
			t.Errorf("rota watch exited with %d on SIGINT", code)
		}
	}
}

// TestWorkStopsPrograms checks that a program is killed when its job is
// cancelled, and when the worker shuts down, and that the shut-down
// worker hands its job back.
func TestWorkStopsPrograms(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	dir := t.TempDir()
	// The script and a child of its own record their pids, then sleep.
	script := `read -r data
case "$data" in *quick*) echo '{"quick": true}'; exit 0;; esac
sleep 300 &
echo $$ $! > '` + dir + `'/tmp.$ROTA_JOB_ID
mv '` + dir + `'/tmp.$ROTA_JOB_ID '` + dir + `'/pids.$ROTA_JOB_ID
wait`
	w := s.start(t, "work", "--type", "e2e.long", "--kill-grace", "2s", "--shutdown-timeout", "500ms", "--", "sh", "-c", script)
	pidsOf := func(jid int64) []int {
		var pids []int
		eventually(t, "the script records its pids", func() bool {
			b, err := os.ReadFile(filepath.Join(dir, "pids."+id(jid)))
			if err != nil {
				return false
			}
			for _, f := range strings.Fields(string(b)) {
				n, _ := strconv.Atoi(f)
				pids = append(pids, n)
			}
			return true
		})
		for _, pid := range pids {
			if !alive(pid) {
				t.Fatalf("process %d of job %d is not running", pid, jid)
			}
		}
		return pids
	}

	jid := s.add(t, "e2e.long")
	pids := pidsOf(jid)
	if j := s.get(t, jid); j.State != "running" {
		t.Fatalf("job %d is %s, want running", jid, j.State)
	}
	s.rota(t, "cancel", id(jid))
	eventually(t, "the cancelled job's processes are gone", func() bool { return !alive(pids[0]) && !alive(pids[1]) })
	if j := s.get(t, jid); j.State != "cancelled" {
		t.Errorf("job %d is %s, want cancelled", jid, j.State)
	}

	// The worker goes on taking jobs.
	quick := s.add(t, "e2e.long", `{"quick": 1}`)
	if r := s.run(t, "", "wait", id(quick)); r.code != 0 {
		t.Fatalf("after a cancel: %v", r)
	}

	// On shutdown, a running program is stopped and its job handed back.
	jid = s.add(t, "e2e.long")
	pids = pidsOf(jid)
	if code := w.signal(t, syscall.SIGTERM); code != 0 {
		t.Errorf("worker exited with status %d", code)
	}
	eventually(t, "the processes are gone after the worker", func() bool { return !alive(pids[0]) && !alive(pids[1]) })
	if j := s.get(t, jid); j.State != "pending" || j.Attempt != 0 {
		t.Errorf("after shutdown, job %d is %s with attempt %d; want pending with the attempt given back", jid, j.State, j.Attempt)
	}
}

// TestWorkTimeout checks that a program running longer than --timeout is
// stopped and its attempt fails with the stderr it wrote.
func TestWorkTimeout(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.start(t, "work", "--type", "e2e.slow", "--timeout", "300ms", "--kill-grace", "1s", "--", "sh", "-c", `echo "starting" >&2; sleep 30`)
	jid := s.add(t, "e2e.slow", "--max-attempts", "1")
	r := s.run(t, "", "wait", id(jid))
	if r.code != 1 {
		t.Fatalf("wait for a job that times out: %v", r)
	}
	if j := s.get(t, jid); j.State != "failed" || j.LastError != "timed out after 300ms and was stopped: starting" {
		t.Errorf("job %d: state %s, last error %q", jid, j.State, j.LastError)
	}
}

// TestAddMeta checks that rota add --meta stores metadata with the job and
// rota get shows it.
func TestAddMeta(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	var withMeta struct{ Job job }
	s.rotaJSON(t, &withMeta, "add", "e2e.meta", "--meta", "route=eu,tier=gold")
	if m := withMeta.Job.Meta; m["route"] != "eu" || m["tier"] != "gold" || len(m) != 2 {
		t.Errorf("add --meta stored %v", m)
	}
	if out := s.rota(t, "get", strconv.FormatInt(withMeta.Job.ID, 10)); !strings.Contains(out, "route=eu tier=gold") {
		t.Errorf("rota get does not show the metadata:\n%s", out)
	}
}

// TestAddUniqueFor: rota add --unique-for prints the job it found and
// outcome unchanged within the window; --unique-states narrows what counts.
func TestAddUniqueFor(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	first := s.rota(t, "add", "e2e.unique", `{"to":"a"}`, "--unique-for", "1h")
	again := s.rota(t, "add", "e2e.unique", `{"to":"a"}`, "--unique-for", "1h")
	id, _, _ := strings.Cut(first, " ")
	if !strings.HasSuffix(strings.TrimSpace(first), "inserted") || strings.TrimSpace(again) != id+" unchanged" {
		t.Errorf("two adds within the window printed %q and %q, want the same job, inserted then unchanged", first, again)
	}
	other := s.rota(t, "add", "e2e.unique", `{"to":"a"}`, "--unique-for", "1h", "--unique-states", "completed,failed")
	if !strings.HasSuffix(strings.TrimSpace(other), "inserted") {
		t.Errorf("an add counting completed and failed jobs only printed %q, want a new job", other)
	}
}

// TestAddDebounce: rota add --debounce runs the job that long after the
// add; another add of the key replaces its data, outcome updated.
func TestAddDebounce(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	var first, again struct {
		Job     job
		Outcome string
	}
	s.rotaJSON(t, &first, "add", "e2e.debounce", `{"v":1}`, "--key", "doc-1", "--debounce", "1h")
	s.rotaJSON(t, &again, "add", "e2e.debounce", `{"v":2}`, "--key", "doc-1", "--debounce", "1h")
	if first.Outcome != "inserted" || again.Outcome != "updated" || again.Job.ID != first.Job.ID {
		t.Errorf("two debounced adds: %d %s, %d %s; want one job, inserted then updated", first.Job.ID, first.Outcome, again.Job.ID, again.Outcome)
	}
	if compact(again.Job.Data) != `{"v":2}` {
		t.Errorf("data after the second add: %s", again.Job.Data)
	}
}

// TestWaitForStates: rota wait --state waits until the job is in one of
// the states (couch_jobs' wait) and prints its state and data; a job that
// ends elsewhere exits 1.
func TestWaitForStates(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	gate := filepath.Join(t.TempDir(), "gate")
	s.start(t, "work", "--type", "e2e.states", "--shutdown-timeout", "2s", "--", "sh", "-c",
		`while [ ! -e '`+gate+`' ]; do sleep 0.02; done; echo '{}'`)
	jid := s.add(t, "e2e.states", `{"step":1}`)
	r := s.run(t, "", "wait", id(jid), "--state", "running")
	if r.code != 0 || !strings.Contains(r.stdout, "job "+id(jid)+" is running") || !strings.Contains(r.stdout, `data: {"step":1}`) {
		t.Fatalf("wait --state running: %v", r)
	}
	waiter := s.start(t, "wait", id(jid), "--state", "paused,cancelled")
	os.WriteFile(gate, nil, 0o644)
	if code := waiter.wait(t); code != 1 || !strings.Contains(waiter.stderr.String(), "ended completed without being paused or cancelled") {
		t.Errorf("wait --state paused,cancelled of a job that completed: exit %d\n%s", code, waiter.stderr)
	}
	var waited struct{ Job job }
	r = s.run(t, "", "wait", id(jid), "--state", "completed", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &waited); err != nil || r.code != 0 || waited.Job.State != "completed" {
		t.Errorf("wait --state completed --json: %v", r)
	}
	if r := s.run(t, "", "wait", id(jid), "--state", "sleeping"); r.code != 2 || !strings.Contains(r.stderr, `unknown state "sleeping"`) {
		t.Errorf("wait --state sleeping: %v", r)
	}
}
