package httpapi

import (
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/rotajobs/rota/httpapi/wire"
)

// This file is what the server asks of a connection before a request
// reaches a route: reading a body has a deadline and a request that does
// not read its body closes its connection, so that neither slow nor
// unauthenticated clients hold connections; an open server (no token)
// answers only to its loopback names, against DNS rebinding; and no
// browser page of another origin may change anything.

// DefaultBodyTimeout is how long a request's body may take to arrive when
// Config.BodyTimeout is zero: an 8 MiB body (the default limit) needs
// about 560 kbit/s in it.
const DefaultBodyTimeout = 2 * time.Minute

// DefaultWriteTimeout is how long one write of an answer may wait for the
// client to take it when Config.WriteTimeout is zero.
const DefaultWriteTimeout = 2 * time.Minute

// bodyLinger bounds how long a connection whose request body went unread
// (a refused request: 401, 403, 404…) waits for that body after its answer
// was sent, before it closes: a client that sent its body has it taken
// and sees the answer; one that sends nothing holds its connection no
// longer.
const bodyLinger = time.Second

// Wrap returns h behind the connection rules the API follows itself, for
// another front end served next to it on the same listener (rota serve's
// dashboard): the body deadline, closing connections whose body went
// unread, and, on a server without a token, only loopback Host names.
func (s *Server) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serveConn(w, r, h.ServeHTTP)
	})
}

// serveConn applies the connection rules to one request, then calls h.
func (s *Server) serveConn(w http.ResponseWriter, r *http.Request, h http.HandlerFunc) {
	rc := http.NewResponseController(w)
	// Each write of the answer gets WriteTimeout to be taken: a client that
	// stops reading (a large listing, an event stream) loses its
	// connection instead of holding it. A long poll or a quiet stream is
	// not cut short: the deadline starts at each write.
	dw := &deadlineWriter{ResponseWriter: w, rc: rc, timeout: s.cfg.WriteTimeout}
	defer dw.extend() // for what net/http writes after the handler
	w = dw
	if s.Open() && !s.knownHost(r.Host) {
		closeAfter(w, r)
		writeErrorCode(w, http.StatusForbidden, wire.CodeForbidden, fmt.Sprintf(
			"Host %q is not a name of this server: a server without a token answers to localhost and IP addresses only (and to names given with --allow-host), so that no other site's page reaches it by DNS rebinding", r.Host))
		s.lingerUnread(w, nil)
		return
	}
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		h(w, r)
		return
	}
	// The deadline covers the body only: once it has been read, it is
	// lifted, as a long poll or a stream may then last (net/http's own
	// ReadTimeout would cancel them).
	if err := rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout)); err != nil {
		h(w, r) // not a connection that has deadlines
		return
	}
	b := &watchedBody{ReadCloser: r.Body}
	// Until the body has been read, the answer closes the connection:
	// else net/http, before it writes an answer, waits for the rest of a
	// body the handler left (up to 256 KiB, with no deadline), and a
	// client that sends none holds the connection.
	closeAfter(w, r)
	b.done = func() {
		if r.ProtoMajor == 1 && w.Header().Get("Connection") == "close" {
			w.Header().Del("Connection")
		}
		rc.SetReadDeadline(time.Time{})
	}
	r.Body = b
	h(w, r)
	if !b.eof {
		s.lingerUnread(w, rc)
	}
}

// closeAfter makes the answer close an HTTP/1 connection. Not HTTP/2's,
// whose requests are streams of one connection, which a refused request
// has no reason to end (Go's HTTP/2 server takes "Connection: close" as
// a reason to shut the whole connection down).
func closeAfter(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 1 {
		w.Header().Set("Connection", "close")
	}
}

// lingerUnread bounds how long net/http, after the answer, reads what is
// left of a body the handler did not read.
func (s *Server) lingerUnread(w http.ResponseWriter, rc *http.ResponseController) {
	if rc == nil {
		rc = http.NewResponseController(w)
	}
	rc.SetReadDeadline(time.Now().Add(bodyLinger))
}

// deadlineWriter gives each write of an answer WriteTimeout to be taken.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

// extend sets the deadline (where the connection has one: not under
// httptest's recorder).
func (d *deadlineWriter) extend() { d.rc.SetWriteDeadline(time.Now().Add(d.timeout)) }

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.extend()
	return d.ResponseWriter.Write(p)
}

// Flush serves event streams (http.Flusher).
func (d *deadlineWriter) Flush() {
	d.extend()
	d.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// watchedBody notes when the handler has read the whole body.
type watchedBody struct {
	io.ReadCloser
	eof  bool
	done func()
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.eof {
		b.eof = true
		b.done()
	}
	return n, err
}

// knownHost reports whether an open server answers to this Host: a
// browser reaches it only by a name that resolves to it, and a page of
// another site that rebinds its own name to 127.0.0.1 sends that name.
// IP addresses and localhost cannot be rebound. A name "*" in Config.Hosts
// lets every name through, for an operator who cannot list them.
func (s *Server) knownHost(hostport string) bool {
	if hostport == "" {
		return true // HTTP/1.0 without Host: no browser sends that
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" || net.ParseIP(host) != nil {
		return true
	}
	return slices.ContainsFunc(s.cfg.Hosts, func(h string) bool { return h == "*" || strings.EqualFold(h, host) })
}

// crossOrigin refuses changes that a browser page of another origin asks
// for (Sec-Fetch-Site, Origin): with no token to send, a page could
// otherwise cancel or resubmit jobs of an open server with a form or a
// no-cors fetch. Reads and non-browser clients pass.
var crossOrigin = http.NewCrossOriginProtection()

// jsonBody checks that a request's body, if it has one, is labelled JSON:
// a browser sends only form and text bodies to another origin without
// asking it first (CORS), so a page of another site cannot send one.
func jsonBody(r *http.Request) error {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && mt == "application/json" {
		return nil
	}
	if ct == "" {
		return fmt.Errorf("%w: the request body has no Content-Type: send it as \"Content-Type: application/json\"", wire.ErrUnsupportedMediaType)
	}
	return fmt.Errorf("%w: the request body is %q: send JSON, as \"Content-Type: application/json\"", wire.ErrUnsupportedMediaType, ct)
}
