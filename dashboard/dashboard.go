// Package dashboard is rota's web dashboard: the pages an operator uses to
// see and steer jobs from a browser (counts by state, live; the job list
// with filters; a job's detail and actions; bulk actions; type and group
// settings), served by rota serve at / next to the HTTP API.
//
// It is server-rendered HTML (html/template) with a little JavaScript
// (static/app.js: live updates over Server-Sent Events, confirmations,
// copy buttons, local times), all embedded in the binary: it works
// offline, loads nothing from another host, and runs under a strict
// Content-Security-Policy with no inline script. Like the HTTP API, it
// translates to a rota.Client's operations and holds no job rule of its
// own; who may see and do what is the API's decision too
// (httpapi.Server.Authenticate), from the same tokens.
package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/store"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// Authenticator decides what a token reaches: the HTTP API's server.
type Authenticator interface {
	// Authenticate returns what the token reaches, or an error for a
	// token the server does not know.
	Authenticate(ctx context.Context, token string) (httpapi.Access, error)
	// Open reports whether the server checks no token.
	Open() bool
}

// Config tunes a Server. The zero value is ready to use.
type Config struct {
	// Logger receives errors; nil means slog.Default().
	Logger *slog.Logger
	// BulkBatch is how many jobs a bulk action changes per store call;
	// zero means 500.
	BulkBatch int
	// MaxSessions bounds the signed-in sessions held in memory; past it,
	// the oldest ends. Zero means DefaultMaxSessions.
	MaxSessions int
	// SessionLifetime is how long a sign-in lasts; zero means
	// DefaultSessionLifetime.
	SessionLifetime time.Duration
	// TrustedProxies are the networks of reverse proxies whose
	// X-Forwarded-Proto header is believed: a request through one of them
	// that says "https" gets a Secure cookie, as one over rota's own TLS
	// does. From any other address the header is ignored.
	TrustedProxies []netip.Prefix
}

// The defaults of Config.
const (
	DefaultMaxSessions     = 10000
	DefaultSessionLifetime = 7 * 24 * time.Hour
)

// Server serves the dashboard. Create it with New; Close stops its
// background work.
type Server struct {
	c      *rota.Client
	auth   Authenticator
	cfg    Config
	log    *slog.Logger
	mux    *http.ServeMux
	tmpl   map[string]*template.Template
	key    []byte // signs the sign-in form's CSRF tokens
	cop    *http.CrossOriginProtection
	ses    *sessionStore
	act    *activity
	counts statsCache
	bulk   *bulkTasks
	stop   context.CancelFunc
}

// New returns the dashboard of c, with auth's tokens.
func New(c *rota.Client, auth Authenticator, cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.BulkBatch <= 0 {
		cfg.BulkBatch = 500
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.SessionLifetime <= 0 {
		cfg.SessionLifetime = DefaultSessionLifetime
	}
	s := &Server{c: c, auth: auth, cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), key: make([]byte, 32),
		cop: http.NewCrossOriginProtection(), ses: newSessionStore(cfg.MaxSessions, cfg.SessionLifetime)}
	rand.Read(s.key)
	var err error
	if s.tmpl, err = parseTemplates(); err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	if s.act, err = watchActivity(ctx, c); err != nil {
		stop()
		return nil, err
	}
	s.bulk = newBulkTasks()
	s.routes()
	return s, nil
}

// Close stops the dashboard's background work (the activity counters and
// bulk actions under way).
func (s *Server) Close() { s.stop(); s.bulk.wait() }

func (s *Server) routes() {
	static, _ := fs.Sub(staticFiles, "static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /login", s.loginPage)
	s.mux.HandleFunc("POST /login", s.login)
	s.mux.HandleFunc("POST /logout", s.logout)
	s.mux.HandleFunc("GET /{$}", s.page(s.overview))
	s.mux.HandleFunc("GET /ui/overview", s.page(s.overviewFragment))
	s.mux.HandleFunc("GET /ui/stream", s.page(s.stream))
	s.mux.HandleFunc("GET /jobs", s.page(s.jobs))
	s.mux.HandleFunc("GET /failed", s.page(s.failed))
	s.mux.HandleFunc("POST /jobs/bulk", s.action(s.bulkAction))
	s.mux.HandleFunc("GET /bulk/{n}", s.page(s.bulkPage))
	s.mux.HandleFunc("GET /jobs/{id}", s.page(s.job))
	s.mux.HandleFunc("POST /jobs/{id}/{action}", s.action(s.jobAction))
	s.mux.HandleFunc("GET /recurring", s.page(s.recurring))
	s.mux.HandleFunc("GET /batches", s.page(s.batches))
	s.mux.HandleFunc("GET /batches/{id}", s.page(s.batch))
	s.mux.HandleFunc("GET /types", s.page(s.types))
	s.mux.HandleFunc("POST /types/{type}", s.action(s.setType))
	s.mux.HandleFunc("GET /groups", s.page(s.groups))
	s.mux.HandleFunc("POST /groups", s.action(s.setGroup))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.render(w, r, http.StatusNotFound, "error", view{Title: "Not found", Error: "There is no page at " + r.URL.Path + "."})
	})
}

// ServeHTTP serves the dashboard with its security headers.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	s.mux.ServeHTTP(w, r)
}

// ---- who is asking ----

const (
	// sessionCookie holds a session's random id (sessions.go).
	sessionCookie = "rota_session"
	// loginCookie holds a random value the sign-in form's CSRF token is
	// derived from, so that a page elsewhere cannot sign a browser in.
	loginCookie = "rota_login"
	// oldCookie is where earlier versions kept the raw token: sign-in
	// clears it, so that no browser keeps a token in a cookie.
	oldCookie = "rota_token"
)

// user is a signed-in person: what their token reaches.
type user struct {
	Access httpapi.Access
	Token  string // "" on an open server
	CSRF   string // the forms' token against cross-site requests
}

type userKey struct{}

func userOf(r *http.Request) *user { return r.Context().Value(userKey{}).(*user) }

// withUser is r for signed-in user u. Its context carries the token's
// reach, which the store honours (store.WithReach): the listings, counts
// and adds the pages make see only the jobs the token reaches.
func withUser(r *http.Request, u *user) *http.Request {
	// What the person changes is recorded with their token's name.
	ctx := store.WithActor(context.WithValue(r.Context(), userKey{}, u), u.Access.Actor())
	return r.WithContext(store.WithReach(ctx, u.Access.Reach()))
}

// errSessionEnded is a session cookie whose session is gone: signed out,
// expired, evicted, ended by a restart, or its token revoked.
var errSessionEnded = errors.New("the session ended")

// signIn finds the request's user from its session; nil without one. An
// error other than errSessionEnded is the server's (a store that does not
// answer).
func (s *Server) signIn(r *http.Request) (*user, error) {
	if s.auth.Open() {
		a, err := s.auth.Authenticate(r.Context(), "")
		if err != nil {
			return nil, err
		}
		return &user{Access: a, CSRF: s.mac("open")}, nil
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil, nil
	}
	ses := s.ses.get(c.Value)
	if ses == nil {
		return nil, errSessionEnded
	}
	a, err := s.auth.Authenticate(r.Context(), ses.token)
	if errors.Is(err, wire.ErrForbidden) {
		// Revoked (or expired): the session ends with its token.
		s.ses.end(c.Value)
		return nil, errSessionEnded
	}
	if err != nil {
		return nil, err
	}
	return &user{Access: a, Token: ses.token, CSRF: ses.csrf}, nil
}

// mac derives a token from the server's key.
func (s *Server) mac(what string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(what))
	return hex.EncodeToString(m.Sum(nil))[:32]
}

// page wraps a GET handler: a request without a session goes to the login
// page.
func (s *Server) page(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		u, err := s.signIn(r)
		if err != nil && !errors.Is(err, errSessionEnded) {
			s.fail(w, r, "Sign-in", err)
			return
		}
		if u == nil {
			if strings.HasPrefix(r.URL.Path, "/ui/") {
				http.Error(w, "sign in again", http.StatusUnauthorized)
				return
			}
			q := url.Values{"next": {r.URL.RequestURI()}}
			if err != nil {
				q.Set("error", "ended")
			}
			http.Redirect(w, r, "/login?"+q.Encode(), http.StatusSeeOther)
			return
		}
		h(w, withUser(r, u))
	}
}

// errReadOnly is a read-only token's attempt to change something.
var errReadOnly = errors.New("your token is read-only: it may not change anything")

// crossOrigin answers a post from another origin (a page elsewhere,
// another port of this host included) with 403, and reports whether it
// did.
func (s *Server) crossOrigin(w http.ResponseWriter, r *http.Request) bool {
	if err := s.cop.Check(r); err != nil {
		s.render(w, r, http.StatusForbidden, "error", view{Title: "Refused", Error: "The form came from another site. Open this dashboard and try again there."})
		return true
	}
	return false
}

// action wraps a POST handler: a session, a post from this origin with
// the session's CSRF token, and a token that may write.
func (s *Server) action(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.crossOrigin(w, r) {
			return
		}
		u, err := s.signIn(r)
		if err != nil && !errors.Is(err, errSessionEnded) {
			s.fail(w, r, "Sign-in", err)
			return
		}
		if u == nil {
			s.render(w, r, http.StatusUnauthorized, "error", view{Title: "Signed out", Error: "Sign in again: your session has ended."})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 2<<20)
		if err := r.ParseForm(); err != nil {
			s.render(w, r, http.StatusBadRequest, "error", view{Title: "Bad request", Error: "The form could not be read: " + err.Error()})
			return
		}
		if !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(u.CSRF)) {
			s.render(w, r, http.StatusForbidden, "error", view{Title: "Refused", Error: "The form is stale or came from another site (its CSRF token does not match). Reload the page and try again."})
			return
		}
		if u.Access.ReadOnly() {
			s.render(w, r, http.StatusForbidden, "error", view{Title: "Refused", Error: errReadOnly.Error()})
			return
		}
		h(w, withUser(r, u))
	}
}

// loginErrors and notices are the messages a redirect may ask a page to
// show, by code: a link made elsewhere can choose among them, never write
// its own.
var (
	loginErrors = map[string]string{
		"ended": "Your session ended (signed out, expired, or its token was revoked). Sign in again.",
	}
	notices = map[string]string{
		"cancel":     "cancelled",
		"retry":      "queued to run now",
		"reschedule": "rescheduled",
		"edit":       "data saved",
		"remove":     "job removed",
		"type":       "type settings saved",
		"group":      "group settings saved",
		"signed-out": "signed out",
	}
)

// notice is the message of a page's ?done= code; "" for none or an
// unknown code.
func notice(r *http.Request) string { return notices[r.URL.Query().Get("done")] }

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	if s.auth.Open() {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	q := r.URL.Query()
	s.loginForm(w, r, http.StatusOK, safeNext(q.Get("next")), loginErrors[q.Get("error")])
}

// loginForm draws the sign-in form, with a CSRF token derived from the
// browser's login cookie (set here when it has none).
func (s *Server) loginForm(w http.ResponseWriter, r *http.Request, status int, next, msg string) {
	v := ""
	if c, err := r.Cookie(loginCookie); err == nil && len(c.Value) == 43 {
		v = c.Value
	} else {
		v = randomID()
		http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: v, Path: "/login", HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: s.secure(r)})
	}
	s.render(w, r, status, "login", view{Title: "Sign in", Next: next, Error: msg, Notice: notice(r), Data: s.mac("login:" + v)})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if s.auth.Open() {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if s.crossOrigin(w, r) {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	token := strings.TrimSpace(r.PostFormValue("token"))
	next := safeNext(r.PostFormValue("next"))
	c, err := r.Cookie(loginCookie)
	if err != nil || !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(s.mac("login:"+c.Value))) {
		s.loginForm(w, r, http.StatusForbidden, next, "The sign-in form was stale or came from another site. Sign in here.")
		return
	}
	if _, err := s.auth.Authenticate(r.Context(), token); err != nil || token == "" {
		s.loginForm(w, r, http.StatusForbidden, next, "That token is not valid for this server. Use the server's --auth-token or a token from `rota token create`.")
		return
	}
	// A sign-in over a session still open ends that one.
	if old, err := r.Cookie(sessionCookie); err == nil {
		s.ses.end(old.Value)
	}
	id, _ := s.ses.create(token)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.secure(r), MaxAge: int(s.cfg.SessionLifetime.Seconds())})
	http.SetCookie(w, &http.Cookie{Name: oldCookie, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the session: a post from this origin with its CSRF token.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if s.crossOrigin(w, r) {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if c, err := r.Cookie(sessionCookie); err == nil {
		if ses := s.ses.get(c.Value); ses != nil {
			if !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(ses.csrf)) {
				s.render(w, r, http.StatusForbidden, "error", view{Title: "Refused", Error: "The form is stale or came from another site (its CSRF token does not match). Reload the page and try again."})
				return
			}
			s.ses.end(c.Value)
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/login?done=signed-out", http.StatusSeeOther)
}

// secure reports whether the request came over HTTPS: to rota itself, or
// to a trusted proxy that says so in X-Forwarded-Proto (its last value,
// the one the nearest proxy set).
func (s *Server) secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if len(s.cfg.TrustedProxies) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	from := ap.Addr().Unmap()
	if !slices.ContainsFunc(s.cfg.TrustedProxies, func(p netip.Prefix) bool { return p.Contains(from) }) {
		return false
	}
	vals := r.Header.Values("X-Forwarded-Proto")
	if len(vals) == 0 {
		return false
	}
	parts := strings.Split(vals[len(vals)-1], ",")
	return strings.EqualFold(strings.TrimSpace(parts[len(parts)-1]), "https")
}

// safeNext keeps a redirect after sign-in on this site: a path of
// printable ASCII that starts with one slash, with no backslash (browsers
// read \ as /) and no space or control character (browsers drop tabs and
// newlines, so "/\t/host" would become "//host", another site).
func safeNext(next string) string {
	if len(next) == 0 || next[0] != '/' || len(next) > 2048 {
		return "/"
	}
	if len(next) > 1 && (next[1] == '/' || next[1] == '\\') {
		return "/"
	}
	for i := 0; i < len(next); i++ {
		if c := next[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "/"
	}
	return next
}

// ---- rendering ----

// view is what every page template gets.
type view struct {
	Title  string
	Nav    string
	User   *user
	Error  string
	Notice string
	Next   string
	Data   any
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, v view) {
	if v.User == nil {
		if u, ok := r.Context().Value(userKey{}).(*user); ok {
			v.User = u
		}
	}
	t := s.tmpl[name]
	if t == nil {
		http.Error(w, "no template "+name, http.StatusInternalServerError)
		return
	}
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, name, v); err != nil {
		s.log.Error("dashboard: render", "page", name, "err", err)
		http.Error(w, "the page could not be drawn: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprint(w, b.String())
}

// fail shows an error page for an engine error.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, title string, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, rota.ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, rota.ErrInvalid):
		status = http.StatusBadRequest
	case errors.Is(err, rota.ErrWorkerConflict), errors.Is(err, rota.ErrFinished), errors.Is(err, rota.ErrCanceled):
		status = http.StatusConflict
	case errors.Is(err, rota.ErrUnavailable):
		status = http.StatusServiceUnavailable
	}
	s.render(w, r, status, "error", view{Title: title, Error: err.Error()})
}
