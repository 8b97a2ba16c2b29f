package bedrock_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/bedrock"
	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
	"github.com/rotajobs/rota/store/sqlite"
)

// The tests speak the protocol over a real TCP connection to a Server on
// a loopback port, on a real store: a SQLite file, and PostgreSQL when
// ROTA_TEST_POSTGRES names one (required when ROTA_REQUIRE_POSTGRES=1).

type tester struct {
	t    testing.TB
	addr string
	c    *rota.Client
	srv  *bedrock.Server
	conn net.Conn
	br   *bufio.Reader
}

// forEachStore runs fn against a server on each store.
func forEachStore(t *testing.T, fn func(t *testing.T, tr *tester)) {
	t.Run("sqlite", func(t *testing.T) {
		st, err := sqlite.Open(filepath.Join(t.TempDir(), "rota.db"), sqlite.Config{})
		if err != nil {
			t.Fatal(err)
		}
		fn(t, start(t, st, bedrock.Config{}))
	})
	t.Run("postgres", func(t *testing.T) {
		fn(t, start(t, openPostgres(t), bedrock.Config{}))
	})
}

func openPostgres(t *testing.T) store.Store {
	dsn := os.Getenv("ROTA_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("ROTA_REQUIRE_POSTGRES") == "1" {
			t.Fatal("ROTA_TEST_POSTGRES is not set, and the PostgreSQL tests are required (ROTA_REQUIRE_POSTGRES=1)")
		}
		t.Skip("ROTA_TEST_POSTGRES is not set: skipping PostgreSQL")
	}
	schema := fmt.Sprintf("rota_bedrock_%016x", rand.Uint64())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, dsn, postgres.Config{Schema: schema, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func start(t testing.TB, st store.Store, cfg bedrock.Config) *tester {
	t.Helper()
	c, err := rota.NewClient(st, rota.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv, err := bedrock.New(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	tr := &tester{t: t, addr: ln.Addr().String(), c: c, srv: srv}
	t.Cleanup(func() {
		if tr.conn != nil {
			tr.conn.Close()
		}
		srv.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		c.Close()
		st.Close()
	})
	return tr
}

// result is one response.
type result struct {
	Status  string
	Headers map[string]string
	Body    string
}

// JSON decodes the body as an object whose values stay raw text.
func (r result) JSON(t testing.TB) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.Body), &m); err != nil {
		t.Fatalf("%s: body %q is not a JSON object: %v", r.Status, r.Body, err)
	}
	return m
}

// raw sends bytes on the tester's connection (opened on first use).
func (tr *tester) raw(s string) {
	tr.t.Helper()
	if tr.conn == nil {
		conn, err := net.Dial("tcp", tr.addr)
		if err != nil {
			tr.t.Fatal(err)
		}
		tr.conn, tr.br = conn, bufio.NewReader(conn)
	}
	tr.conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(tr.conn, s); err != nil {
		tr.t.Fatal(err)
	}
}

// read reads one response.
func (tr *tester) read() result {
	tr.t.Helper()
	r, err := readResponse(tr.br)
	if err != nil {
		tr.t.Fatalf("read response: %v", err)
	}
	return r
}

func readResponse(br *bufio.Reader) (result, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return result{}, err
	}
	r := result{Status: strings.TrimRight(line, "\r\n"), Headers: map[string]string{}}
	var last string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return result{}, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		k, v, _ := strings.Cut(line, ": ")
		r.Headers[k] = v
		last = k
	}
	if last != "Content-Length" {
		return result{}, fmt.Errorf("Content-Length is not the last header: %v", r.Headers)
	}
	n, err := strconv.Atoi(r.Headers["Content-Length"])
	if err != nil {
		return result{}, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return result{}, err
	}
	r.Body = string(body)
	return r, nil
}

// do sends a command with headers given as name, value pairs, and reads
// its response.
func (tr *tester) do(method string, headers ...string) result {
	tr.t.Helper()
	var b strings.Builder
	b.WriteString(method + "\r\n")
	for i := 0; i+1 < len(headers); i += 2 {
		// Values are escaped as Bedrock's clients do: backslashes doubled.
		fmt.Fprintf(&b, "%s: %s\r\n", headers[i], strings.ReplaceAll(headers[i+1], `\`, `\\`))
	}
	b.WriteString("\r\n")
	tr.raw(b.String())
	return tr.read()
}

// ok runs a command that must answer 200 and returns its JSON body (nil
// when empty).
func (tr *tester) ok(method string, headers ...string) map[string]json.RawMessage {
	tr.t.Helper()
	r := tr.do(method, headers...)
	if r.Status != "200 OK" {
		tr.t.Fatalf("%s %v: got %q, want 200 OK", method, headers, r.Status)
	}
	if r.Body == "" {
		return nil
	}
	return r.JSON(tr.t)
}

// expect runs a command that must answer status, with an empty body.
func (tr *tester) expect(status, method string, headers ...string) {
	tr.t.Helper()
	r := tr.do(method, headers...)
	if r.Status != status {
		tr.t.Fatalf("%s %v: got %q, want %q", method, headers, r.Status, status)
	}
	if !strings.HasPrefix(status, "200") && (r.Body != "" || r.Headers["Content-Length"] != "0") {
		tr.t.Fatalf("%s: an error has a body: %q", status, r.Body)
	}
}

// create adds a job and returns its id as text.
func (tr *tester) create(headers ...string) string {
	tr.t.Helper()
	m := tr.ok("CreateJob", headers...)
	id := string(m["jobID"])
	if n, err := strconv.ParseInt(id, 10, 64); err != nil || n <= 0 {
		tr.t.Fatalf("CreateJob: jobID %q is not a positive integer", id)
	}
	return id
}

// query returns QueryJob's view of a job, its values as strings (JSON
// strings unquoted, anything else as its text).
func (tr *tester) query(id string) map[string]string {
	tr.t.Helper()
	return flat(tr.t, tr.ok("QueryJob", "jobID", id))
}

func flat(t testing.TB, m map[string]json.RawMessage) map[string]string {
	t.Helper()
	out := map[string]string{}
	for k, v := range m {
		var s string
		if json.Unmarshal(v, &s) == nil {
			out[k] = s
		} else {
			out[k] = string(v)
		}
	}
	return out
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// bedrockTime parses a time as Bedrock writes it.
func bedrockTime(t *testing.T, s string) time.Time {
	t.Helper()
	for _, layout := range []string{"2006-01-02 15:04:05.000", "2006-01-02 15:04:05"} {
		if v, err := time.Parse(layout, s); err == nil {
			return v
		}
	}
	t.Fatalf("%q is not a Bedrock time", s)
	return time.Time{}
}
