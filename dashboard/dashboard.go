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
	"net/url"
	"strings"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi"
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
}

// Server serves the dashboard. Create it with New; Close stops its
// background work.
type Server struct {
	c      *rota.Client
	auth   Authenticator
	cfg    Config
	log    *slog.Logger
	mux    *http.ServeMux
	tmpl   map[string]*template.Template
	key    []byte // signs CSRF tokens
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
	s := &Server{c: c, auth: auth, cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), key: make([]byte, 32)}
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
	s.mux.HandleFunc("POST /jobs/bulk", s.action(s.bulkAction))
	s.mux.HandleFunc("GET /bulk/{n}", s.page(s.bulkPage))
	s.mux.HandleFunc("GET /jobs/{id}", s.page(s.job))
	s.mux.HandleFunc("POST /jobs/{id}/{action}", s.action(s.jobAction))
	s.mux.HandleFunc("GET /recurring", s.page(s.recurring))
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

const cookieName = "rota_token"

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
	return r.WithContext(store.WithReach(context.WithValue(r.Context(), userKey{}, u), u.Access.Reach()))
}

// signIn finds the request's user from the cookie; nil when there is
// none or it is no longer valid.
func (s *Server) signIn(r *http.Request) (*user, error) {
	token := ""
	if c, err := r.Cookie(cookieName); err == nil {
		token = c.Value
	} else if !s.auth.Open() {
		return nil, nil
	}
	a, err := s.auth.Authenticate(r.Context(), token)
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(token))
	return &user{Access: a, Token: token, CSRF: hex.EncodeToString(mac.Sum(nil))[:32]}, nil
}

// page wraps a GET handler: a request without a valid token goes to the
// login page.
func (s *Server) page(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		u, err := s.signIn(r)
		if u == nil {
			if strings.HasPrefix(r.URL.Path, "/ui/") {
				http.Error(w, "sign in again", http.StatusUnauthorized)
				return
			}
			q := url.Values{"next": {r.URL.RequestURI()}}
			if err != nil {
				q.Set("error", "Your token is no longer valid (revoked?). Sign in again.")
			}
			http.Redirect(w, r, "/login?"+q.Encode(), http.StatusSeeOther)
			return
		}
		h(w, withUser(r, u))
	}
}

// errReadOnly is a read-only token's attempt to change something.
var errReadOnly = errors.New("your token is read-only: it may not change anything")

// action wraps a POST handler: a valid token, the form's CSRF token, and
// a token that may write.
func (s *Server) action(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		u, _ := s.signIn(r)
		if u == nil {
			s.render(w, r, http.StatusUnauthorized, "error", view{Title: "Signed out", Error: "Sign in again: your session has no valid token."})
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

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	if s.auth.Open() {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "login", view{Title: "Sign in", Error: r.URL.Query().Get("error"), Next: safeNext(r.URL.Query().Get("next"))})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	token := strings.TrimSpace(r.PostFormValue("token"))
	next := safeNext(r.PostFormValue("next"))
	if _, err := s.auth.Authenticate(r.Context(), token); err != nil || token == "" {
		s.render(w, r, http.StatusForbidden, "login", view{Title: "Sign in", Next: next,
			Error: "That token is not valid for this server. Use the server's --auth-token or a token from `rota token create`."})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int((30 * 24 * time.Hour).Seconds())})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// safeNext keeps a redirect after sign-in on this site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
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
