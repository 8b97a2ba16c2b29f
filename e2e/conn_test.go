package e2e_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests of this file hold connections of a real `rota serve` over
// TCP, as slow or unauthenticated clients would, and check that the
// server stays answerable within its --max-conns.

// promisedBody opens a connection and sends a request's headers, which
// promise a body of 100,000 bytes, and nothing of the body.
func promisedBody(t *testing.T, host, method, path string, hdr ...string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n", method, path, host)
	for i := 0; i+1 < len(hdr); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", hdr[i], hdr[i+1])
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	return c
}

// answerOn reads the response on c, waiting at most d; then it checks
// that the server closes the connection, waiting at most d again.
func answerOn(c net.Conn, d time.Duration) (status int, body string, err error) {
	c.SetReadDeadline(time.Now().Add(d))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, "", fmt.Errorf("no answer within %v: %w", d, err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !resp.Close {
		return resp.StatusCode, string(raw), errors.New("the answer does not close the connection (no Connection: close)")
	}
	c.SetReadDeadline(time.Now().Add(d))
	if n, err := br.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		return resp.StatusCode, string(raw), fmt.Errorf("the server did not close the connection within %v after its answer (read %d, %v)", d, n, err)
	}
	return resp.StatusCode, string(raw), nil
}

// healthy checks that the server answers /healthz within d.
func healthy(t *testing.T, s *server, d time.Duration, while string) {
	t.Helper()
	cl := &http.Client{Timeout: d}
	resp, err := cl.Get(s.URL + "/healthz")
	if err != nil {
		t.Fatalf("/healthz did not answer within %v while %s: %v", d, while, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz answered %d while %s", resp.StatusCode, while)
	}
}

// TestRefusedRequestsHoldNoConnection fills --max-conns with requests that
// promise a body and send none, and that the server refuses or answers
// without reading a body: with no token, with a wrong one, on /healthz, on
// the dashboard, and with a valid token on a route that takes no body.
// Each is answered at once (long before the body deadline, 2 minutes by
// default), with its connection closed, and the server answers /healthz.
func TestRefusedRequestsHoldNoConnection(t *testing.T) {
	s := startServer(t, "--auth-token", "adm", "--max-conns", "4")
	u, _ := url.Parse(s.URL)
	rounds := [][4]struct {
		method, path string
		hdr          []string
		status       int
	}{
		{
			{"POST", "/v1/jobs", nil, http.StatusUnauthorized},
			{"POST", "/v1/jobs", []string{"Authorization", "Bearer wrong"}, http.StatusForbidden},
			{"POST", "/v1/accept", nil, http.StatusUnauthorized},
			{"PATCH", "/v1/jobs/1", []string{"Authorization", "Basic eDp5"}, http.StatusForbidden},
		},
		{
			{"POST", "/healthz", nil, http.StatusMethodNotAllowed},
			{"POST", "/v1/jobs/1/cancel", []string{"Authorization", "Bearer adm"}, http.StatusNotFound},
			{"POST", "/jobs/1/cancel", nil, http.StatusUnauthorized}, // the dashboard, signed out
			{"GET", "/login", nil, http.StatusOK},
		},
	}
	for i, round := range rounds {
		var conns []net.Conn
		for _, r := range round {
			conns = append(conns, promisedBody(t, u.Host, r.method, r.path, r.hdr...))
		}
		for j, c := range conns {
			r := round[j]
			status, body, err := answerOn(c, 5*time.Second)
			if err != nil {
				t.Errorf("round %d: %s %s (%v), no body sent: %v", i+1, r.method, r.path, r.hdr, err)
				continue
			}
			if status != r.status {
				t.Errorf("round %d: %s %s (%v): %d, want %d: %.200s", i+1, r.method, r.path, r.hdr, status, r.status, body)
			}
		}
		healthy(t, s, 5*time.Second, fmt.Sprintf("round %d's clients sent no body", i+1))
	}
}

// TestSlowBodiesEndAtTheDeadline fills --max-conns with authenticated
// requests whose body never comes: each is answered 400 at --body-timeout,
// naming it, and closed, and /healthz is answered once they are.
func TestSlowBodiesEndAtTheDeadline(t *testing.T) {
	s := startServer(t, "--auth-token", "adm", "--max-conns", "3", "--body-timeout", "2s")
	u, _ := url.Parse(s.URL)
	start := time.Now()
	var conns []net.Conn
	for _, path := range []string{"/v1/jobs", "/v1/accept", "/v1/finish"} {
		conns = append(conns, promisedBody(t, u.Host, "POST", path, "Authorization", "Bearer adm"))
	}
	healthy(t, s, 15*time.Second, "three clients hold every connection and send no body")
	t.Logf("/healthz answered after %v", time.Since(start).Round(time.Millisecond))
	for i, c := range conns {
		status, body, err := answerOn(c, 10*time.Second)
		if err != nil {
			t.Errorf("client %d: %v", i, err)
			continue
		}
		if status != http.StatusBadRequest || !strings.Contains(body, "did not arrive within 2s") {
			t.Errorf("client %d: %d %s; want 400 naming the 2s deadline", i, status, body)
		}
	}
}

// TestServeConnectionFlags: --body-timeout and --allow-host are checked
// before the server starts, and --allow-host adds a name that a server
// without a token answers to.
func TestServeConnectionFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--body-timeout", "0s"}, "--body-timeout 0s must be positive"},
		{[]string{"--auth-token", "adm", "--allow-host", "rota.test"}, "--allow-host is for a server without a token"},
	} {
		cmd := exec.Command(bin, append([]string{"serve", "--http", "127.0.0.1:0", "--data", t.TempDir()}, c.args...)...)
		cmd.Env = cleanEnv()
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("serve %v: %v, want a refusal naming %q:\n%s", c.args, err, c.want, out)
		}
	}
	s := startServer(t, "--allow-host", "rota.test")
	port := s.URL[strings.LastIndex(s.URL, ":")+1:]
	for host, want := range map[string]int{"rota.test:" + port: http.StatusOK, "ROTA.TEST": http.StatusOK, "other.test:" + port: http.StatusForbidden} {
		req, _ := http.NewRequest("GET", s.URL+"/v1/stats", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET /v1/stats as Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
}

// TestSlowReadersEndAtTheDeadline fills --max-conns with a client that
// asks for a large listing and reads nothing: each write of an answer has
// --write-timeout to be taken, so its connection closes, cutting the answer
// short, and /healthz is answered.
func TestSlowReadersEndAtTheDeadline(t *testing.T) {
	s := startServer(t, "--max-conns", "1", "--write-timeout", "2s")
	u, _ := url.Parse(s.URL)
	// 12 MB of jobs: more than the kernel buffers on both ends hold.
	big := `{"x":"` + strings.Repeat("a", 1000*1000) + `"}`
	for range 12 {
		req, _ := http.NewRequest("POST", s.URL+"/v1/jobs", strings.NewReader(`{"type":"big","data":`+big+`}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("add: %d", resp.StatusCode)
		}
	}
	// A small receive buffer, set before connecting (set after, the window
	// it already offered shrinks and the transfer stalls).
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	fmt.Fprintf(c, "GET /v1/jobs?limit=1000 HTTP/1.1\r\nHost: %s\r\n\r\n", u.Host)
	healthy(t, s, 20*time.Second, "a client holds the only connection and reads nothing of its answer")
	t.Logf("/healthz answered after %v", time.Since(start).Round(time.Millisecond))
	// The server gave up on the answer and closed the connection: what
	// the buffers held, then the end.
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	n, err := io.Copy(io.Discard, c)
	if err != nil || n >= 12*1000*1000 {
		t.Errorf("the slow reader read %d bytes (%v); want the answer cut short and the connection closed", n, err)
	}
	t.Logf("the slow reader got %d bytes of its answer", n)
}

// TestRevocationEndsWatch: `rota watch` with a named token stops, with the
// exit status of a refused token (6) and the server's reason, once the
// token is revoked, and `rota work`'s long polls are refused too.
func TestRevocationEndsWatch(t *testing.T) {
	s := startServer(t, "--auth-token", "adm")
	admin := *s
	admin.token = "adm"
	temp := admin
	temp.token = strings.TrimSpace(admin.rota(t, "token", "create", "temp"))
	watch := temp.start(t, "watch", "--type", "mail")
	// The watch may not have subscribed yet when a job is added (a job
	// stream starts at the moment it opens): add one every half second
	// until it shows one.
	last := time.Time{}
	eventually(t, "the watch shows an added job", func() bool {
		if strings.Contains(watch.stdout.String(), "mail") {
			return true
		}
		if time.Since(last) > 500*time.Millisecond {
			admin.add(t, "mail", "{}")
			last = time.Now()
		}
		return false
	})
	start := time.Now()
	admin.rota(t, "token", "revoke", "temp")
	if code := watch.wait(t); code != 6 {
		t.Errorf("rota watch exited %d after the revocation, want 6:\n%s", code, watch.stderr)
	}
	t.Logf("rota watch ended %v after the revocation: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(watch.stderr.String()))
	if !strings.Contains(watch.stderr.String(), "not valid for this server") || strings.Contains(watch.stderr.String(), "reconnecting") {
		t.Errorf("rota watch does not say at once that the token is no longer valid:\n%s", watch.stderr)
	}
}
