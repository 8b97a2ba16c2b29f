package e2e_test

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
)

// TestWorkLogs: rota work keeps its program's stderr with the job's
// attempt, line by line, through a real server; rota logs shows the
// latest attempt's records, --attempt an earlier one, --json the API's
// answer; a program that writes past the bound has the rest counted as
// dropped; rota rm removes the job's logs with it.
func TestWorkLogs(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	script := `echo "attempt $ROTA_JOB_ATTEMPT starts" >&2
echo "to stdout"
if [ "$ROTA_JOB_ATTEMPT" = 1 ]; then echo "no luck" >&2; exit 1; fi
if [ "$(cat)" = '{"chatty":true}' ]; then i=0; while [ $i -lt 2000 ]; do echo "chatter $i: $(printf '%080d' $i)" >&2; i=$((i+1)); done; fi
exit 0`
	w := s.start(t, "work", "--type", "e2e.logs", "--", "sh", "-c", script)
	jid := s.add(t, "e2e.logs", "--max-attempts", "2", "--backoff-base", "10ms", "--backoff-max", "10ms")
	if r := s.run(t, "", "wait", id(jid)); r.code != 0 {
		t.Fatalf("%v", r)
	}
	r := s.run(t, "", "logs", id(jid))
	if r.code != 0 || strings.TrimSpace(lastColumns(r.stdout)) != "INFO attempt 2 starts" || !strings.Contains(r.stderr, "attempt 2 (attempts that logged: 1, 2)") {
		t.Errorf("rota logs: %v", r)
	}
	r = s.run(t, "", "logs", id(jid), "--attempt", "1")
	if r.code != 0 || lastColumns(r.stdout) != "INFO attempt 1 starts\nINFO no luck" {
		t.Errorf("rota logs --attempt 1: %v", r)
	}
	r = s.run(t, "", "logs", id(jid), "--attempt", "1", "--json")
	var page struct {
		Attempt  int
		Attempts []struct{ Attempt, Records, Dropped int }
		Records  []struct {
			Seq     int
			Level   string
			Message string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil || page.Attempt != 1 || len(page.Records) != 2 || page.Records[1].Message != "no luck" || page.Records[1].Seq != 2 || len(page.Attempts) != 2 {
		t.Errorf("rota logs --json: %+v %v: %v", page, err, r)
	}

	// Past 64 KiB the rest is counted and dropped.
	chatty := s.add(t, "e2e.logs", `{"chatty":true}`, "--max-attempts", "2", "--backoff-base", "10ms", "--backoff-max", "10ms")
	if r := s.run(t, "", "wait", id(chatty)); r.code != 0 {
		t.Fatalf("%v", r)
	}
	r = s.run(t, "", "logs", id(chatty))
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) < 500 || !strings.HasPrefix(lines[len(lines)-1], "… ") || !strings.Contains(lines[len(lines)-1], "records dropped") {
		t.Errorf("rota logs of a chatty job: %d lines, ending %q", len(lines), lines[len(lines)-1])
	}
	if !strings.Contains(r.stdout, "chatter 0: ") || strings.Contains(r.stdout, "chatter 1999") {
		t.Errorf("rota logs of a chatty job does not keep the beginning and drop the end")
	}

	// Removed with the job.
	if r := s.run(t, "", "rm", id(jid)); r.code != 0 {
		t.Fatalf("%v", r)
	}
	if r := s.run(t, "", "logs", id(jid)); r.code == 0 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("rota logs of a removed job: %v", r)
	}
	if code := w.signal(t, syscall.SIGTERM); code != 0 {
		t.Errorf("worker exited with status %d", code)
	}
}

// lastColumns is each line's level and message: the date and time cut.
func lastColumns(out string) string {
	var b []string
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		f := strings.SplitN(line, " ", 3)
		if len(f) == 3 {
			line = strings.Join(strings.Fields(f[2]), " ")
		}
		b = append(b, line)
	}
	return strings.Join(b, "\n")
}
