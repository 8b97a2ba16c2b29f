package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/internal/rules/lifecycle"
	"github.com/rotajobs/rota/store"
)

// This file is who may do what: the bearer token of each request, and
// what it reaches. The admin token (Config.AuthToken) reaches everything;
// a named token (store.Tokens, rota token create) reaches the jobs of its
// groups and types, and changes nothing when read-only. A job outside a
// token's reach is answered as if it did not exist, so that ids leak
// nothing.

// access is what a request's token may reach.
type access struct {
	name     string // the named token; "" for the admin token, or an open server
	admin    bool
	readOnly bool
	groups   []string // patterns; nil: every group
	types    []string // patterns; nil: every type
	// reach is the groups and types as the stores honour them: every
	// request of a scoped token carries it (store.WithReach), so that
	// what the store does on its behalf (a parent it names, a listing's
	// pages, counts) stays within it.
	reach *store.Reach
}

// admin is the access of the admin token, and of every request to a
// server without one (which serve binds to loopback only).
var adminAccess = &access{admin: true}

func newAccess(t store.Token) (*access, error) {
	a := &access{name: t.Name, readOnly: t.ReadOnly, groups: t.Groups, types: t.Types}
	var err error
	if a.reach, err = store.NewReach(t.Groups, t.Types); err != nil {
		return nil, err
	}
	return a, nil
}

// scoped reports whether the token reaches only some groups or types.
func (a *access) scoped() bool { return a.reach.Scoped() }

// reaches reports whether the token reaches jobs of this type and group.
func (a *access) reaches(typ, group string) bool { return a.reach.Has(typ, group) }

// actor is who the audit trail records for the token's changes
// (store.WithActor): a named token's name, "admin" for the admin token
// and for a server without tokens.
func (a *access) actor() string {
	if a.name == "" {
		return "admin"
	}
	return a.name
}

// Actor is who the audit trail records for the token's changes: its name,
// "admin" for the admin token.
func (x Access) Actor() string { return x.a.actor() }

func (a *access) String() string {
	if a.name == "" {
		return "the admin token"
	}
	return fmt.Sprintf("token %q", a.name)
}

type accessKey struct{}

// accessOf returns the access ServeHTTP found for the request.
func accessOf(r *http.Request) *access {
	if a, ok := r.Context().Value(accessKey{}).(*access); ok {
		return a
	}
	return adminAccess
}

// need is what a route asks of a token.
type need uint8

const (
	needNothing need = iota // /healthz
	needRead                // any valid token; what it reads is filtered by its reach
	needWrite               // a token that is not read-only; the jobs it changes within its reach
	needAdmin               // the admin token
)

// routeNeeds says what each route asks; routes() checks every route has
// an entry.
var routeNeeds = map[string]need{
	"GET /healthz":                 needNothing,
	"GET /metrics":                 needAdmin, // its labels name every tenant's types
	"GET /v1/openapi.json":         needRead,
	"POST /v1/jobs":                needWrite,
	"GET /v1/jobs":                 needRead,
	"GET /v1/jobs/{id}":            needRead,
	"GET /v1/jobs/{id}/deps":       needRead,
	"GET /v1/jobs/{id}/history":    needRead,
	"DELETE /v1/jobs/{id}":         needWrite,
	"PATCH /v1/jobs/{id}":          needWrite,
	"POST /v1/jobs/{id}/cancel":    needWrite,
	"POST /v1/jobs/{id}/resubmit":  needWrite,
	"POST /v1/jobs/{id}/heartbeat": needWrite,
	"POST /v1/jobs/{id}/finish":    needWrite,
	"POST /v1/jobs/{id}/fail":      needWrite,
	"POST /v1/jobs/{id}/snooze":    needWrite,
	"POST /v1/jobs/{id}/release":   needWrite,
	"GET /v1/jobs/{id}/logs":       needRead,
	"POST /v1/jobs/{id}/logs":      needWrite,
	"POST /v1/accept":              needWrite,
	"POST /v1/heartbeat":           needWrite,
	"POST /v1/finish":              needWrite,
	"POST /v1/batches":             needWrite,
	"GET /v1/batches":              needRead,
	"GET /v1/batches/{id}":         needRead,
	"POST /v1/batches/{id}/jobs":   needWrite,
	"POST /v1/batches/{id}/close":  needWrite,
	"GET /v1/stats":                needRead,
	"GET /v1/events":               needRead,
	"GET /v1/types":                needRead,
	"PUT /v1/types/{type}":         needAdmin, // a type's lease and bands are every tenant's
	"GET /v1/groups":               needRead,
	"PUT /v1/groups":               needWrite,
	"GET /v1/tokens":               needAdmin,
	"POST /v1/tokens":              needAdmin,
	"DELETE /v1/tokens/{name}":     needAdmin,
}

// guard wraps a route's handler with its need.
func (s *Server) guard(route string, h http.HandlerFunc) http.HandlerFunc {
	n, ok := routeNeeds[route]
	if !ok {
		panic("httpapi: no need declared for " + route)
	}
	return func(w http.ResponseWriter, r *http.Request) {
		a := accessOf(r)
		switch {
		case n == needAdmin && !a.admin:
			s.writeError(w, r, fmt.Errorf("%w: %s may not use %s %s: it needs the admin token", wire.ErrForbidden, a, r.Method, r.URL.Path))
			return
		case n == needWrite && a.readOnly:
			s.writeError(w, r, fmt.Errorf("%w: %s is read-only", wire.ErrForbidden, a))
			return
		}
		h(w, r)
	}
}

// authenticate finds the request's access from its bearer token.
func (s *Server) authenticate(r *http.Request) (*access, int, string) {
	if s.cfg.AuthToken == "" || r.URL.Path == "/healthz" {
		return adminAccess, 0, ""
	}
	auth := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(auth, "Bearer ")
	switch {
	case auth == "":
		return nil, http.StatusUnauthorized, "this server needs an Authorization: Bearer <token> header"
	case !ok:
		return nil, http.StatusForbidden, "the Authorization header is not valid: want Bearer <token>"
	case subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.AuthToken)) == 1:
		return adminAccess, 0, ""
	}
	if s.tokens == nil {
		return nil, http.StatusForbidden, "the bearer token is not valid for this server"
	}
	a, err := s.tokens.lookup(r.Context(), token)
	if err != nil {
		return nil, 0, err.Error()
	}
	if a == nil {
		return nil, http.StatusForbidden, "the bearer token is not valid for this server (unknown, or revoked)"
	}
	return a, 0, ""
}

// tokenCache keeps what named tokens reach for a few seconds, so that a
// worker's every call does not read the store; a revocation through this
// server takes effect at once, through another node within TokenCacheTTL.
type tokenCache struct {
	st store.Tokens
	mu sync.Mutex
	m  map[[32]byte]cachedToken
}

type cachedToken struct {
	a  *access // nil: no such token
	at time.Time
}

// TokenCacheTTL is how long a server trusts what it read of a named token.
const TokenCacheTTL = 5 * time.Second

const maxCachedTokens = 10000

func (c *tokenCache) lookup(ctx context.Context, secret string) (*access, error) {
	h := sha256.Sum256([]byte(secret))
	c.mu.Lock()
	e, ok := c.m[h]
	c.mu.Unlock()
	if ok && time.Since(e.at) < TokenCacheTTL {
		return e.a, nil
	}
	t, err := c.st.TokenByHash(ctx, h[:])
	var a *access
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		if a, err = newAccess(t); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	if len(c.m) >= maxCachedTokens {
		clear(c.m) // bad tokens cannot grow the cache without bound
	}
	c.m[h] = cachedToken{a: a, at: time.Now()}
	c.mu.Unlock()
	return a, nil
}

func (c *tokenCache) forget() {
	c.mu.Lock()
	clear(c.m)
	c.mu.Unlock()
}

// ---- what a token reaches, route by route ----

// notFound is how a job outside a token's reach is answered by the
// producer's routes: as a job that does not exist (lifecycle.Cancel,
// RemoveJob, UpdateJob and Resubmit answer a missing job so).
func notFound(id int64) error { return check.NotFound(id) }

// noLease is how a job outside a token's reach is answered by the worker
// calls (heartbeat, finish, fail, snooze, release, one by one or in
// batches): as a job that does not exist, which is the fencing rule's
// answer for a missing job (lifecycle.Fence), so that status, code and
// message read the same.
func noLease(id int64) error { return lifecycle.Fence(id, nil, "") }

// reach checks that the request's token reaches the jobs with these ids,
// reading them only for a scoped token; a job it does not reach is
// answered as a missing one (notFound). Jobs that do not exist are left
// to the operation. A job's group never changes and its type only by its
// own worker's snooze, so the check holds for the operation that follows.
func (s *Server) reach(r *http.Request, ids ...int64) error {
	return first(s.reachEach(r, ids, notFound))
}

// reachLease is reach for worker calls (noLease).
func (s *Server) reachLease(r *http.Request, ids ...int64) error {
	return first(s.reachEach(r, ids, noLease))
}

func first(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// reachEach is reach with one error per id, for batches; missing says how
// a job out of reach is answered.
func (s *Server) reachEach(r *http.Request, ids []int64, missing func(int64) error) []error {
	out := make([]error, len(ids))
	a := accessOf(r)
	if !a.scoped() {
		return out
	}
	// Read past the reach (which would answer a job out of reach as
	// missing), so that a job out of reach is answered by missing here,
	// before the operation: a worker call's fencing would answer it as a
	// lease it does not hold. The stores apply the reach again inside
	// each producer operation (lifecycle.Reached), so a job added after
	// this read is out of reach there too.
	jobs, err := s.c.GetMany(store.WithReach(r.Context(), nil), ids)
	for i, id := range ids {
		switch {
		case err != nil:
			out[i] = err
		case jobs[i].ID != 0 && !a.reaches(jobs[i].Type, jobs[i].Group):
			out[i] = missing(id)
		}
	}
	return out
}

// mayAdd checks that the token reaches the jobs it adds.
func mayAdd(a *access, ps []store.AddParams) error {
	for _, p := range ps {
		if !a.reaches(p.Type, p.Group) {
			return fmt.Errorf("%w: %s may not add jobs of type %q in %s", wire.ErrForbidden, a, p.Type, groupName(p.Group))
		}
	}
	return nil
}

// scopeAccept limits an accept to the token's reach: its groups through
// the store, its types by the patterns asked for, each of which must be a
// type the token reaches or one of its own patterns.
func scopeAccept(a *access, p *store.AcceptParams) error {
	if a.groups != nil {
		p.Groups = a.groups // an accept names no groups over HTTP
	}
	for _, t := range p.Types {
		if _, err := check.CompilePattern(t); err != nil {
			return err
		}
	}
	if _, pat := check.AcceptInReach(a.reach, p); pat != "" {
		return fmt.Errorf("%w: %s may accept types matching %s, not %q", wire.ErrForbidden, a, strings.Join(a.types, ", "), pat)
	}
	return nil
}

// ---- the token routes ----

// newSecret is a token's secret: 32 random bytes, which a fast hash
// (SHA-256) protects as well as a slow one would, since nobody can guess
// them.
func newSecret() string {
	var b [32]byte
	rand.Read(b[:])
	return "rota_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// namedTokens refuses the token routes on a server that keeps no named
// tokens.
func (s *Server) namedTokens(*http.Request) error {
	if s.tokens == nil {
		return fmt.Errorf("%w: this server's store keeps no tokens", wire.ErrForbidden)
	}
	if s.cfg.AuthToken == "" {
		return fmt.Errorf("%w: this server has no admin token (--auth-token), so it checks no token: start it with one to use named tokens", wire.ErrForbidden)
	}
	return nil
}

func (s *Server) listTokens(r *http.Request, _ int64, _ *none) (answer, error) {
	ts, err := s.tokens.st.Tokens(r.Context())
	if err != nil {
		return answer{}, err
	}
	if ts == nil {
		ts = []store.Token{}
	}
	return ok(wire.TokensResponse{Tokens: ts}), nil
}

func (s *Server) createToken(r *http.Request, _ int64, req *wire.CreateTokenRequest) (answer, error) {
	t := store.Token{Name: req.Name, Groups: req.Groups, Types: req.Types, ReadOnly: req.ReadOnly}
	if len(t.Groups) == 0 {
		t.Groups = nil
	}
	if len(t.Types) == 0 {
		t.Types = nil
	}
	secret := newSecret()
	h := sha256.Sum256([]byte(secret))
	if err := s.tokens.st.CreateToken(r.Context(), t, h[:]); err != nil {
		return answer{}, err
	}
	s.tokens.forget()
	t.CreatedAt = time.Now().UTC()
	return answer{status: http.StatusCreated, body: wire.CreateTokenResponse{Token: t, Secret: secret}}, nil
}

func (s *Server) revokeToken(r *http.Request, _ int64, _ *none) (answer, error) {
	if err := s.tokens.st.RevokeToken(r.Context(), r.PathValue("name")); err != nil {
		return answer{}, err
	}
	s.tokens.forget()
	return noContent, nil
}

// reachesType reports whether the token reaches jobs of this type (in
// some group).
func (a *access) reachesType(typ string) bool { return a.reach.HasType(typ) }

// reachesGroupConfig reports whether the token reaches a group setting:
// its group, and its type (a setting for every type needs a token of
// every type).
func (a *access) reachesGroupConfig(g store.GroupConfig) bool {
	return check.GroupConfigInReach(a.reach, g)
}

// groupName names a group in a message: `group "acme"`, or the default
// group, whose name is empty.
func groupName(g string) string {
	if g == "" {
		return "the default group"
	}
	return fmt.Sprintf("group %q", g)
}

func typeName(t string) string {
	if t == "" {
		return "every type"
	}
	return fmt.Sprintf("type %q", t)
}

// Access is what a bearer token reaches, for other front ends of the same
// server (the dashboard) to apply the API's rules rather than their own.
type Access struct{ a *access }

// Admin reports whether the token is the admin token (or the server
// checks none).
func (x Access) Admin() bool { return x.a.admin }

// ReadOnly reports whether the token may change nothing.
func (x Access) ReadOnly() bool { return x.a.readOnly }

// Name is the named token's name; "" for the admin token.
func (x Access) Name() string { return x.a.name }

// Reaches reports whether the token reaches jobs of this type and group.
func (x Access) Reaches(typ, group string) bool { return x.a.reaches(typ, group) }

// ReachesType reports whether the token reaches jobs of this type.
func (x Access) ReachesType(typ string) bool { return x.a.reachesType(typ) }

// ReachesGroupConfig reports whether the token may see and set this group
// setting.
func (x Access) ReachesGroupConfig(g store.GroupConfig) bool { return x.a.reachesGroupConfig(g) }

// Groups are the token's group patterns, nil for every group (to limit an
// accept, AcceptParams.Groups).
func (x Access) Groups() []string { return x.a.groups }

// Reach is what the token reaches as the stores honour it
// (store.WithReach); nil for everything.
func (x Access) Reach() *store.Reach { return x.a.reach }

// Open reports whether the server checks no token (it has no admin token).
func (s *Server) Open() bool { return s.cfg.AuthToken == "" }

// Authenticate returns what a bearer token reaches, as the API decides
// it: the admin token, or a named token of the store's. A token the server
// does not know is an error matching wire.ErrForbidden. On an open server
// every token is the admin's.
func (s *Server) Authenticate(ctx context.Context, token string) (Access, error) {
	if s.Open() || subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.AuthToken)) == 1 {
		return Access{adminAccess}, nil
	}
	if s.tokens == nil || token == "" {
		return Access{}, fmt.Errorf("%w: the token is not valid for this server", wire.ErrForbidden)
	}
	a, err := s.tokens.lookup(ctx, token)
	if err != nil {
		return Access{}, err
	}
	if a == nil {
		return Access{}, fmt.Errorf("%w: the token is not valid for this server (unknown, or revoked)", wire.ErrForbidden)
	}
	return Access{a}, nil
}
