package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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
