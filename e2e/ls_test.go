package e2e_test

import (
	"strings"
	"testing"
)

// TestLsShowsBedrockID: a job added through Bedrock's protocol is listed
// by `rota ls` with the id Bedrock's clients know it by (docs/bedrock.md
// says so), and `rota get` shows it too; a listing without such jobs has
// no column for it.
func TestLsShowsBedrockID(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--bedrock", "127.0.0.1:0")
	s.add(t, "e2e.plain")
	if out := s.rota(t, "ls"); strings.Contains(out, "BEDROCK") {
		t.Errorf("rota ls without Bedrock jobs has a Bedrock column:\n%s", out)
	}
	status, body := bedrockCall(t, s.bedrockAddr(t), "CreateJob", "name", "report", "data", `{}`)
	if status != "200 OK" {
		t.Fatalf("CreateJob: %s %s", status, body)
	}
	bid := strings.TrimSuffix(strings.TrimPrefix(body, `{"jobID":`), "}")
	out := s.rota(t, "ls")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(strings.Join(strings.Fields(lines[0]), " "), "ID BEDROCK ID TYPE") {
		t.Fatalf("rota ls:\n%s", out)
	}
	if f := strings.Fields(lines[1]); f[0] != "1" || f[1] != "-" || f[2] != "e2e.plain" {
		t.Errorf("a job without a Bedrock id is listed as %q", lines[1])
	}
	if f := strings.Fields(lines[2]); f[0] != "2" || f[1] != bid || f[2] != "report" {
		t.Errorf("the Bedrock job (Bedrock id %s) is listed as %q", bid, lines[2])
	}
	if out := s.rota(t, "get", "2"); !strings.Contains(out, "bedrock id:  "+bid+"\n") {
		t.Errorf("rota get does not show the Bedrock id %s:\n%s", bid, out)
	}
}
