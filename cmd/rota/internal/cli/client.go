package cli

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store"
)

// defaultServer is where the client commands look for a server when
// neither --server nor ROTA_SERVER says otherwise; it is where `rota serve`
// listens by default.
const defaultServer = "http://127.0.0.1:7700"

// Exit statuses of every command, one table (docs/cli.md, "Exit
// statuses"): scripts branch on them.
const (
	exitFailed      = 1 // the operation failed otherwise (or, for wait, the job did)
	exitUsage       = 2 // bad input: on the command line, or refused by the server as invalid
	exitNotFound    = 3 // no job has that id
	exitConflict    = 4 // the job's state does not allow it (ended, cancelled, lease lost)
	exitUnavailable = 5 // no server answered, or its database is unavailable
	exitAuth        = 6 // the server wants a token, or refused the one given
	exitTimeout     = 124
	exitSignal      = 130
)

// exitCodeOf is the exit status an error of an operation stands for.
func exitCodeOf(err error) int {
	var ue usageError
	switch {
	case errors.As(err, &ue), errors.Is(err, store.ErrInvalid):
		return exitUsage
	case errors.Is(err, store.ErrNotFound):
		return exitNotFound
	case errors.Is(err, store.ErrWorkerConflict), errors.Is(err, store.ErrCanceled), errors.Is(err, store.ErrFinished):
		return exitConflict
	case errors.Is(err, store.ErrUnavailable):
		return exitUnavailable
	}
	return exitFailed
}

// globals are the flags every client command shares.
type globals struct {
	server string
	token  string
	json   bool
	ca     string // PEM file of the certificate authorities to trust
}

// addGlobalFlags registers --server, --token and --json on root as
// persistent flags, with defaults from ROTA_SERVER and ROTA_TOKEN.
func addGlobalFlags(root *cobra.Command, g *globals) {
	server := os.Getenv("ROTA_SERVER")
	if server == "" {
		server = defaultServer
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.server, "server", server, "URL of the rota server (env ROTA_SERVER)")
	pf.StringVar(&g.token, "token", "", "bearer token for the server (default $ROTA_TOKEN)")
	pf.BoolVar(&g.json, "json", false, "print JSON for scripts instead of text for people")
	pf.StringVar(&g.ca, "ca", os.Getenv("ROTA_CA"), "PEM file of the certificate authorities that sign an https:// server's certificate (env ROTA_CA; default: the system's)")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath())}
	})
}

// bearer is the token to send: --token, else $ROTA_TOKEN. (The flag's
// default is not taken from the environment, so that --help does not show
// the token.)
func (g *globals) bearer() string {
	if g.token != "" {
		return g.token
	}
	return os.Getenv("ROTA_TOKEN")
}

// baseURL checks --server without contacting it.
func (g *globals) baseURL() (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(g.server, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageErrorf("--server %q: want a URL such as %s", g.server, defaultServer)
	}
	return u, nil
}

// client returns a rota.Client on the server. It checks the address but
// does not contact the server.
func (g *globals) client() (*rota.Client, error) {
	cfg, err := g.remoteConfig()
	if err != nil {
		return nil, err
	}
	c, err := remote.NewClient(g.server, cfg)
	if err != nil {
		return nil, usageError{err}
	}
	return c, nil
}

// remoteConfig is how the commands reach the server: its address checked,
// the token, the TLS settings.
func (g *globals) remoteConfig() (remote.Config, error) {
	if _, err := g.baseURL(); err != nil {
		return remote.Config{}, err
	}
	tlsConf, err := g.tlsConfig()
	if err != nil {
		return remote.Config{}, err
	}
	return remote.Config{Token: g.bearer(), TLS: tlsConf}, nil
}

// tlsConfig is the TLS configuration --ca asks for; nil for the system's
// roots.
func (g *globals) tlsConfig() (*tls.Config, error) {
	if g.ca == "" {
		return nil, nil
	}
	pool, err := rootCAs(g.ca)
	if err != nil {
		return nil, usageError{err}
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// explain turns errors about reaching the server (nobody listening, a
// missing or wrong token) into messages that say what to do, with exit
// status 2. Other errors pass through.
func (g *globals) explain(err error) error {
	if err == nil {
		return nil
	}
	var ue usageError
	var ee *exitError
	if errors.As(err, &ue) || errors.As(err, &ee) {
		return err
	}
	server := strings.TrimRight(g.server, "/")
	var opErr *net.OpError
	var dnsErr *net.DNSError
	var unknownCA x509.UnknownAuthorityError
	var wrongHost x509.HostnameError
	switch {
	case errors.As(err, &unknownCA):
		return &exitError{code: exitUnavailable, err: fmt.Errorf("the server at %s has a certificate signed by an authority this machine does not trust: pass its authority's PEM with --ca (or ROTA_CA)", server)}
	case errors.As(err, &wrongHost):
		return &exitError{code: exitUnavailable, err: fmt.Errorf("the server at %s has a certificate for another name (%v): check --server", server, wrongHost.Error())}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &exitError{code: exitUnavailable, err: &unreachableError{fmt.Sprintf("no rota server answered at %s (connection refused); start one with `rota serve`, or point --server or ROTA_SERVER at a running server", server)}}
	case errors.As(err, &dnsErr):
		return &exitError{code: exitUnavailable, err: &unreachableError{fmt.Sprintf("no rota server answered at %s: cannot resolve host %q; check --server or ROTA_SERVER", server, dnsErr.Name)}}
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return &exitError{code: exitUnavailable, err: &unreachableError{fmt.Sprintf("no rota server answered at %s (%v); start one with `rota serve`, or check --server or ROTA_SERVER", server, opErr.Err)}}
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, wire.CodeForbidden+": "); i >= 0 {
		msg = msg[i+len(wire.CodeForbidden+": "):] // the server's words
	}
	switch {
	case errors.Is(err, wire.ErrForbidden) && strings.Contains(msg, "not valid"):
		return &exitError{code: exitAuth, err: fmt.Errorf("the server at %s did not accept the token given by --token or ROTA_TOKEN (%s)", server, msg)}
	case errors.Is(err, wire.ErrForbidden):
		// A valid token that may not do this: out of its reach, or read-only.
		return &exitError{code: exitAuth, err: fmt.Errorf("the server refused: %s", msg)}
	case errors.Is(err, store.ErrUnauthorized):
		return &exitError{code: exitAuth, err: fmt.Errorf("the server at %s needs a token: pass --token or set ROTA_TOKEN", server)}
	}
	return err
}

// unreachableError says that no server answered.
type unreachableError struct{ msg string }

func (e *unreachableError) Error() string { return e.msg }

// ---- exit statuses ----

// usageError is bad input on the command line: exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitError ends the command with a given status; a nil err prints
// nothing more.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// report prints err (unless it asks for silence) and returns the exit
// status it stands for.
func report(w io.Writer, err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(w, "rota:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(w, "rota:", err)
	if strings.HasPrefix(err.Error(), "unknown command") || strings.HasPrefix(err.Error(), "unknown flag") ||
		strings.HasPrefix(err.Error(), "unknown shorthand flag") || strings.HasPrefix(err.Error(), "invalid argument") {
		return exitUsage // cobra's own parse errors
	}
	return exitCodeOf(err)
}

// ---- arguments ----

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("%s wants %s, got %d argument(s) (usage: %s)", cmd.CommandPath(), what, len(args), cmd.UseLine())
		}
		return nil
	}
}

func rangeArgs(lo, hi int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return usageErrorf("%s wants %s, got %d argument(s) (usage: %s)", cmd.CommandPath(), what, len(args), cmd.UseLine())
		}
		return nil
	}
}

func minArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usageErrorf("%s wants %s (usage: %s)", cmd.CommandPath(), what, cmd.UseLine())
		}
		return nil
	}
}

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("%s takes no arguments, got %q (usage: %s)", cmd.CommandPath(), args[0], cmd.UseLine())
	}
	return nil
}

// parseID parses a job id.
func parseID(s string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimPrefix(s, "#"), 10, 64)
	if err != nil || id <= 0 {
		return 0, usageErrorf("bad job id %q: want a positive integer", s)
	}
	return id, nil
}

func parseIDs(args []string) ([]int64, error) {
	ids := make([]int64, len(args))
	for i, a := range args {
		var err error
		if ids[i], err = parseID(a); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// ---- the event stream ----

// eventStream reads GET /v1/events. The CLI reads the stream itself
// rather than through rota.Client's subscriptions so that it can filter on
// the server, see each event's time, and report a refused connection or
// token instead of retrying silently.
type eventStream struct {
	body io.ReadCloser
	sc   *bufio.Scanner
}

// streamEvent is one event: a job change, or the end of a job's stream.
type streamEvent struct {
	End bool
	wire.Event
}

// openEvents opens the event stream with the given filter (job=ID, or
// type=PATTERN repeated).
func (g *globals) openEvents(ctx context.Context, q url.Values) (*eventStream, error) {
	base, err := g.baseURL()
	if err != nil {
		return nil, err
	}
	u := *base
	u.Path += "/v1/events"
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, "GET", u.String(), nil)
	if err != nil {
		return nil, usageError{err}
	}
	req.Header.Set("Accept", "text/event-stream")
	if t := g.bearer(); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	hc := streamClient
	if tlsConf, err := g.tlsConfig(); err != nil {
		return nil, err
	} else if tlsConf != nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = tlsConf
		hc = &http.Client{Transport: tr}
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, g.explain(err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var e wire.ErrorResponse
		if json.Unmarshal(raw, &e) != nil || e.Error.Code == "" {
			return nil, fmt.Errorf("GET /v1/events: %s: %s", resp.Status, strings.TrimSpace(string(raw)))
		}
		return nil, g.explain(wire.AsError(&e.Error))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	return &eventStream{body: resp.Body, sc: sc}, nil
}

var streamClient = &http.Client{}

// Next returns the next event; io.EOF when the stream ended (the server
// closed it, or the context ended).
func (s *eventStream) Next() (streamEvent, error) {
	var out streamEvent
	var perr error
	got := false
	wire.ParseEventStream(func() (string, bool) {
		if !s.sc.Scan() {
			return "", false
		}
		return s.sc.Text(), true
	}, func(event string, data []byte) bool {
		switch event {
		case "end":
			out, got = streamEvent{End: true}, true
			return false
		case "revoked":
			// Reconnecting would only be refused.
			perr = fmt.Errorf("%w: the server ended the event stream: the token is not valid for this server any more (revoked)", wire.ErrForbidden)
			return false
		case "job":
			if err := json.Unmarshal(data, &out.Event); err != nil {
				perr = fmt.Errorf("event stream: bad event %q: %w", data, err)
			}
			got = true
			return false
		}
		return true
	})
	if perr != nil {
		return streamEvent{}, perr
	}
	if !got {
		return streamEvent{}, io.EOF
	}
	return out, nil
}

// Close ends the stream.
func (s *eventStream) Close() error { return s.body.Close() }

// byID runs the body of a command on one job's or batch's ID: it parses
// the argument and opens the client, closed when run returns.
func byID(g *globals, arg string, run func(c *rota.Client, id int64) error) error {
	id, err := parseID(arg)
	if err != nil {
		return err
	}
	c, err := g.client()
	if err != nil {
		return err
	}
	defer c.Close()
	return run(c, id)
}
