package e2e_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// TestIdleConnectionsDoNotExhaustServer holds every connection the server
// takes (--max-conns) with idle keep-alive clients, and checks that another
// client is still served once the idle timeout closes them, and that an
// idle connection is closed.
func TestIdleConnectionsDoNotExhaustServer(t *testing.T) {
	s := startServer(t, "--max-conns", "4", "--idle-timeout", "300ms")
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	for range 4 {
		c, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", u.Host)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		held = append(held, c) // kept alive, idle
	}
	start := time.Now()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(s.URL + "/healthz")
	if err != nil {
		t.Fatalf("a fifth client was not served while four idle ones held the server: %v", err)
	}
	resp.Body.Close()
	t.Logf("the fifth client was served after %v", time.Since(start).Round(time.Millisecond))
	// The held connections were closed by the idle timeout.
	held[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := held[0].Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("an idle connection is still open (read %d, %v)", n, err)
	}
}
