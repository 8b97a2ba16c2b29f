package bedrock_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rotajobs/rota/bedrock"
	"github.com/rotajobs/rota/store/sqlite"
)

func sqliteServer(t testing.TB, cfg bedrock.Config) *tester {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "rota.db"), sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return start(t, st, cfg)
}

// Requests pipelined in one write are all answered, in order (Bedrock
// leaves the second waiting until more bytes arrive).
func TestPipelining(t *testing.T) {
	tr := sqliteServer(t, bedrock.Config{})
	var b strings.Builder
	for i := 0; i < 50; i++ {
		b.WriteString("CreateJob\r\nname: p\r\n\r\n")
	}
	b.WriteString("GetJobs\nname: p\nnumResults: 100\n\n") // bare \n endings too
	b.WriteString("QueryJob\r\njobID: 1\r\nContent-Length: 0\r\n\r\n")
	tr.raw(b.String())
	for i := 0; i < 50; i++ {
		if r := tr.read(); r.Status != "200 OK" || !strings.HasPrefix(r.Body, `{"jobID":`) {
			t.Fatalf("response %d: %s %s", i, r.Status, r.Body)
		}
	}
	r := tr.read()
	if n := strings.Count(r.Body, `"name":"p"`); r.Status != "200 OK" || n != 50 {
		t.Fatalf("GetJobs: %s, %d jobs", r.Status, n)
	}
	if r := tr.read(); r.Status != "404 No job with this jobID" {
		t.Fatalf("QueryJob: %s", r.Status)
	}
}

func TestFraming(t *testing.T) {
	tr := sqliteServer(t, bedrock.Config{})
	// A body is read and ignored; the request after it is answered.
	tr.raw("CreateJob\r\nname: a\r\nContent-Length: 5\r\n\r\nhelloQueryJob\r\njobID: 1\r\n\r\n")
	if r := tr.read(); r.Status != "200 OK" {
		t.Fatalf("CreateJob with a body: %s", r.Status)
	}
	if r := tr.read(); r.Status != "404 No job with this jobID" {
		t.Fatalf("after a body: %s", r.Status)
	}
	// Headers are case-insensitive and unescaped; values are trimmed.
	id := tr.create("NAME", "esc", "DaTa", `{"q":"a\"b"}`)
	eq(t, "data", tr.query(id)["data"], `{"q":"a\"b"}`)

	// Every response has Content-Length last (the reader checks) and the
	// node's name.
	r := tr.do("QueryJob", "jobID", id)
	if r.Headers["nodeName"] == "" {
		t.Errorf("no nodeName header: %v", r.Headers)
	}

	// A malformed request is answered with a 4xx, then the connection
	// closes.
	for req, want := range map[string]string{
		"CreateJob\r\nname: a\r\nContent-Length: abc\r\n\r\n":           "400 Malformed Content-Length",
		"CreateJob\r\nname: a\r\nContent-Length: 99999999\r\n\r\n":      "413 Content-Length 99999999 is more than 1048576",
		"CreateJob\r\nno colon here\r\n\r\n":                            "400 Malformed header line: want name: value",
		"CreateJob\r\n" + strings.Repeat("h: v\r\n", 300) + "\r\n":      "431 Too many headers: more than 256",
		"CreateJob\r\nname: " + strings.Repeat("n", 3<<20) + "\r\n\r\n": "431 Line too long: more than 2097152 bytes",
	} {
		conn, err := net.Dial("tcp", tr.addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		go io.WriteString(conn, req)
		br := bufio.NewReader(conn)
		r, err := readResponse(br)
		if err != nil || r.Status != want {
			t.Errorf("%.40q: got %q (%v), want %q", req, r.Status, err, want)
		}
		if r.Headers["Connection"] != "close" {
			t.Errorf("%.40q: no Connection: close", req)
		}
		// Closed: an end of stream, or a reset when the server closed it
		// with the client's bytes unread.
		if _, err := br.ReadByte(); err != io.EOF && (err == nil || !strings.Contains(err.Error(), "reset")) {
			t.Errorf("%.40q: the connection stayed open (%v)", req, err)
		}
		conn.Close()
	}
}

func TestConnectionHeaders(t *testing.T) {
	tr := sqliteServer(t, bedrock.Config{})
	// Connection: close is echoed and the connection closes.
	r := tr.do("CreateJob", "name", "a", "Connection", "close")
	eq(t, "status", r.Status, "200 OK")
	eq(t, "Connection", r.Headers["Connection"], "close")
	if _, err := tr.br.ReadByte(); err != io.EOF {
		t.Errorf("the connection stayed open after Connection: close (%v)", err)
	}
	tr.conn = nil

	// Connection: forget answers 202 at once, closes, and runs the
	// command anyway.
	r = tr.do("CreateJob", "name", "forgotten", "Connection", "forget")
	eq(t, "forget", r.Status, "202 Successfully queued")
	eq(t, "Connection", r.Headers["Connection"], "close")
	tr.conn = nil
	deadline := time.Now().Add(10 * time.Second)
	for tr.do("GetJob", "name", "forgotten").Status != "200 OK" {
		if time.Now().After(deadline) {
			t.Fatal("a command sent with Connection: forget did not run")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A forgotten GetJob hands out nothing.
	tr.create("name", "kept")
	tr.do("GetJob", "name", "kept", "Connection", "forget")
	tr.conn = nil
	tr.ok("GetJob", "name", "kept")

	// A command to run later.
	at := time.Now().Add(300 * time.Millisecond).UnixMicro()
	r = tr.do("CreateJob", "name", "later", "commandExecuteTime", jsonInt(at))
	eq(t, "commandExecuteTime", r.Status, "202 Successfully queued")
	tr.conn = nil
	tr.expect("404 No job found", "GetJob", "name", "later")
	time.Sleep(time.Second)
	tr.ok("GetJob", "name", "later")

	// A timeout of zero or less has passed already.
	tr.expect("555 Timeout", "CreateJob", "name", "a", "timeout", "0")
	tr.expect("555 Timeout", "GetJob", "name", "a", "timeout", "-5")
	tr.ok("CreateJob", "name", "a", "timeout", "5000")
}

func TestAllowList(t *testing.T) {
	// Loopback is refused when the list leaves it out.
	tr := sqliteServer(t, bedrock.Config{Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	conn, err := net.Dial("tcp", tr.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(conn, "CreateJob\r\nname: a\r\n\r\n")
	// Closed unread: an end of stream, or a reset (its request unread).
	if b, err := io.ReadAll(conn); len(b) != 0 || err != nil && !strings.Contains(err.Error(), "reset") {
		t.Errorf("a client outside the allowed networks got %q (%v)", b, err)
	}
	// And admitted when listed.
	ok := sqliteServer(t, bedrock.Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	ok.create("name", "a")
}

func TestMaxConns(t *testing.T) {
	tr := sqliteServer(t, bedrock.Config{MaxConns: 2, IdleTimeout: 300 * time.Millisecond})
	var held []net.Conn
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", tr.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	time.Sleep(50 * time.Millisecond)
	// The third is closed at once.
	c, err := net.Dial("tcp", tr.addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if b, _ := io.ReadAll(c); len(b) != 0 {
		t.Errorf("a connection past the cap got %q", b)
	}
	c.Close()
	// Idle ones are closed after the idle timeout, which frees the cap.
	for _, h := range held {
		h.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := h.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("an idle connection was not closed: %v", err)
		}
	}
	tr.create("name", "a")
}

// Connection: wait long-polls: a GetJob waits for a job until its timeout,
// woken when one is added; a client that hangs up while it waits loses
// nothing.
func TestConnectionWait(t *testing.T) {
	tr := sqliteServer(t, bedrock.Config{})
	start := time.Now()
	tr.expect("404 No job found", "GetJob", "name", "w", "Connection", "wait", "timeout", "300")
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("a GetJob with Connection: wait answered after %v, not at its timeout", d)
	}
	// Woken by an add from another connection.
	go func() {
		time.Sleep(200 * time.Millisecond)
		other := &tester{t: t, addr: tr.addr}
		other.create("name", "w")
		other.conn.Close()
	}()
	start = time.Now()
	m := tr.ok("GetJob", "name", "w", "Connection", "wait", "timeout", "10000")
	if d := time.Since(start); d > 5*time.Second || m["jobID"] == nil {
		t.Errorf("the waiting GetJob got %v after %v", m, d)
	}

	// A client that hangs up while it waits: the job added after is not
	// handed to it.
	conn, err := net.Dial("tcp", tr.addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(conn, "GetJob\r\nname: lost\r\nConnection: wait\r\ntimeout: 5000\r\n\r\n")
	time.Sleep(100 * time.Millisecond)
	conn.Close()
	time.Sleep(100 * time.Millisecond)
	id := tr.create("name", "lost")
	time.Sleep(300 * time.Millisecond)
	eq(t, "state", tr.query(id)["state"], "QUEUED")
	tr.ok("GetJob", "name", "lost")
}

// Response bytes as Bedrock writes them: the status line, headers sorted
// by name, Content-Length last, the body.
func TestResponseBytes(t *testing.T) {
	tr := sqliteServer(t, bedrock.Config{NodeName: "node1"})
	tr.raw("QueryJob\r\njobID: 7\r\n\r\n")
	line, _ := tr.br.ReadString('\n')
	var head []string
	for {
		l, _ := tr.br.ReadString('\n')
		if l == "\r\n" {
			break
		}
		head = append(head, strings.SplitN(l, ":", 2)[0])
	}
	eq(t, "status line", line, "404 No job with this jobID\r\n")
	eq(t, "headers", strings.Join(head, ","), "nodeName,totalTime,Content-Length")
	tr.raw("CreateJob\r\nname: a\r\nConnection: close\r\n\r\n")
	b, _ := io.ReadAll(tr.br)
	got := string(b)
	if !strings.HasPrefix(got, "200 OK\r\nConnection: close\r\nnodeName: node1\r\ntotalTime: ") ||
		!regexp.MustCompile(`\r\nContent-Length: [0-9]+\r\n\r\n\{"jobID":[0-9]+\}$`).MatchString(got) {
		t.Errorf("CreateJob answered %q", got)
	}
}

// Shutdown answers a request under way (a long poll), closes idle
// connections, and accepts no new ones.
func TestShutdown(t *testing.T) {
	tr := sqliteServer(t, bedrock.Config{})
	idle, err := net.Dial("tcp", tr.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	tr.raw("GetJob\r\nname: x\r\nConnection: wait\r\ntimeout: 1500\r\n\r\n")
	time.Sleep(200 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- tr.srv.Shutdown(ctx) }()
	r := tr.read() // the long poll still gets its answer
	eq(t, "answer during shutdown", r.Status, "404 No job found")
	eq(t, "Connection", r.Headers["Connection"], "close")
	idle.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("an idle connection was not closed: %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if c, err := net.Dial("tcp", tr.addr); err == nil {
		c.SetDeadline(time.Now().Add(2 * time.Second))
		if n, _ := c.Read(make([]byte, 1)); n != 0 {
			t.Errorf("a connection after shutdown was served")
		}
		c.Close()
	}
}

// Many connections at once: every answer is its own (the race detector
// found two connections writing the headers of one shared 200 OK).
func TestConcurrentConnections(t *testing.T) {
	tr := sqliteServer(t, bedrock.Config{})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			c := &tester{t: t, addr: tr.addr}
			defer func() {
				if c.conn != nil {
					c.conn.Close()
				}
			}()
			for i := range 10 {
				name := fmt.Sprintf("c%d-%d", g, i)
				id := c.create("name", name)
				c.ok("GetJob", "name", name)
				c.ok("FinishJob", "jobID", id)
			}
		})
	}
	wg.Wait()
}

// A client that closes its side after sending (as nc -N does) still gets
// every answer.
func TestHalfClose(t *testing.T) {
	tr := sqliteServer(t, bedrock.Config{})
	conn, err := net.Dial("tcp", tr.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(conn, "CreateJob\r\nname: a\r\n\r\nCreateJob\r\nname: b\r\n\r\nQueryJob\r\njobID: 1\r\n\r\n")
	conn.(*net.TCPConn).CloseWrite()
	br := bufio.NewReader(conn)
	for _, want := range []string{"200 OK", "200 OK", "404 No job with this jobID"} {
		r, err := readResponse(br)
		if err != nil || r.Status != want {
			t.Fatalf("got %q (%v), want %q", r.Status, err, want)
		}
	}
}
