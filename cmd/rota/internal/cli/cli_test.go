package cli

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/cmd/rota/internal/bench"
)

func TestRelTime(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		0: "now", 500 * time.Millisecond: "now", 5 * time.Second: "in 5s", -90 * time.Second: "1m ago",
		3 * time.Hour: "in 3h", -50 * time.Hour: "2d ago",
	} {
		if got := relTime(now.Add(d), now); got != want {
			t.Errorf("relTime(%v) = %q, want %q", d, got, want)
		}
	}
	if got := relTime(time.Time{}, now); got != "-" {
		t.Errorf("relTime(zero) = %q", got)
	}
	// Beyond what a Duration holds it said "in 106751d".
	far := time.Date(9999, 12, 31, 12, 0, 0, 0, time.Local)
	if got := relTime(far, now); got != "9999-12-31" {
		t.Errorf("relTime(year 9999) = %q, want the date", got)
	}
}

func TestServeRefusesClientToken(t *testing.T) {
	if code := Main([]string{"serve", "--token", "secret", "--http", "127.0.0.1:0"}); code != exitUsage {
		t.Fatalf("rota serve --token: exit %d, want %d (usage)", code, exitUsage)
	}
}

func TestCheckData(t *testing.T) {
	if d, err := checkData([]byte(" { \"a\" : 1 } "), "x"); err != nil || string(d) != `{"a":1}` {
		t.Errorf("checkData = %s, %v", d, err)
	}
	for _, bad := range []string{"", "{", "[1]", "1", `"s"`, "{} {}"} {
		_, err := checkData([]byte(bad), "x")
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("checkData(%q) = %v, want a usage error", bad, err)
		}
	}
}

func TestParseID(t *testing.T) {
	for _, bad := range []string{"", "0", "-1", "abc", "1.5", "99999999999999999999"} {
		if _, err := parseID(bad); err == nil {
			t.Errorf("parseID(%q) succeeded", bad)
		}
	}
	if id, err := parseID("42"); err != nil || id != 42 {
		t.Errorf("parseID(42) = %d, %v", id, err)
	}
}

func TestTruncate(t *testing.T) {
	if got := truncate("first line\nsecond", 40); got != "first line …" {
		t.Errorf("got %q", got)
	}
	if got := truncate("ééééé", 3); got != "éé…" {
		t.Errorf("got %q", got)
	}
}

// closedAddr returns the URL of a loopback port nobody listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// TestExitStatuses runs commands that must fail before or at contacting
// the server, and checks their exit statuses.
func TestExitStatuses(t *testing.T) {
	nobody := closedAddr(t)
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"get"}, exitUsage},
		{[]string{"get", "abc"}, exitUsage},
		{[]string{"get", "1", "--server", "ftp://x"}, exitUsage},
		{[]string{"add", "t", "{bad"}, exitUsage},
		{[]string{"add", "t\x01", "{}"}, exitUsage},
		{[]string{"add", "t", "--in", "soon"}, exitUsage},
		{[]string{"add", "t", "--at", "tomorrow"}, exitUsage},
		{[]string{"add", "t", "--at", "2026-01-02T15:04:05Z", "--in", "1m"}, exitUsage},
		{[]string{"ls", "--state", "sleeping"}, exitUsage},
		{[]string{"ls", "--limit", "0"}, exitUsage},
		{[]string{"cancel", "1", "x"}, exitUsage},
		{[]string{"retry", "1", "--data", "[]"}, exitUsage},
		{[]string{"wait", "1", "--timeout", "-1s"}, exitUsage},
		{[]string{"watch", "--job", "1", "--type", "x"}, exitUsage},
		{[]string{"watch", "--type", "a\x01"}, exitUsage},
		{[]string{"work", "--type", "t", "--", "/no/such/program"}, exitUsage},
		{[]string{"work", "--", "true"}, exitUsage},
		{[]string{"work", "--type", "t\x01", "--", "true"}, exitUsage},
		{[]string{"nonsense"}, exitUsage},
		// No server: a usage-class error too, with exit status 2.
		{[]string{"get", "1", "--server", nobody}, exitUnavailable},
		{[]string{"add", "t", "--server", nobody}, exitUnavailable},
		{[]string{"wait", "1", "--server", nobody}, exitUnavailable},
		{[]string{"watch", "--server", nobody}, exitUnavailable},
		{[]string{"work", "--type", "t", "--server", nobody, "--", "true"}, exitUnavailable},
	} {
		if got := Main(tc.args); got != tc.want {
			t.Errorf("rota %s: exit status %d, want %d", strings.Join(tc.args, " "), got, tc.want)
		}
	}
}

func TestUnreachableMessage(t *testing.T) {
	g := &globals{server: closedAddr(t)}
	c, err := g.client()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Stats(t.Context())
	err = g.explain(err)
	var ue *unreachableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "no rota server answered at "+g.server) || !strings.Contains(err.Error(), "rota serve") {
		t.Errorf("error %q does not say that no server answered and how to start one", err)
	}
}

// TestBenchTableColumns: every workload's table has columns of its own
// (a workload without them printed only its name), and fault counts read 0.
func TestBenchTableColumns(t *testing.T) {
	for _, r := range []bench.Result{
		{Workload: "drain", JobsPerSec: 1000, Jobs: 10},
		{Workload: "steady", P50Ms: 1},
		{Workload: "backlog", MicrosPerJob: 2},
		{Workload: "memory", RSSMB: 3},
		{Workload: "fanout", JobsPerSec: 4000, Jobs: 10000},
		{Workload: "batch", JobsPerSec: 4000, Jobs: 10000, Ratio: 0.9},
		{Workload: "fanin-plain", JobsPerSec: 4000, Jobs: 10002},
		{Workload: "recurring", JobsPerSec: 1000, Jobs: 10000, P50Ms: 5},
	} {
		var out strings.Builder
		if err := benchTable(&out, []bench.Result{r}, 1); err != nil {
			t.Fatal(err)
		}
		header := strings.SplitN(out.String(), "\n", 2)[0]
		if len(strings.Fields(header)) <= 4 {
			t.Errorf("%s: the table has no columns of its own:\n%s", r.Workload, out.String())
		}
		if r.Workload == "recurring" && !strings.Contains(out.String(), " 0 ") {
			t.Errorf("recurring: no slot missed should read 0:\n%s", out.String())
		}
	}
}
