package dashboard

import (
	"container/list"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"sync"
	"time"
)

// A session is a signed-in browser: its cookie holds a random id, and the
// server maps the id to the token given at sign-in. The token never
// travels back to the browser, signing out ends the session on the server,
// and a revoked token ends every session made with it (found at the
// session's next request, within the token cache's lifetime,
// httpapi.TokenCacheTTL).
//
// Sessions live in this server's memory: a restart signs everyone out, and
// behind a load balancer each node knows only the sessions made through it
// (route a browser to one node, or sign in again on another).
type session struct {
	key     [32]byte // the hash of the cookie's id
	token   string
	csrf    string // the forms' token against cross-site requests
	created time.Time
	elem    *list.Element
}

// sessionStore holds the sessions, oldest first; past max, the oldest
// ends.
type sessionStore struct {
	mu    sync.Mutex
	m     map[[32]byte]*session
	order *list.List // of *session, oldest first
	max   int
	life  time.Duration
}

func newSessionStore(max int, life time.Duration) *sessionStore {
	return &sessionStore{m: map[[32]byte]*session{}, order: list.New(), max: max, life: life}
}

// randomID is 32 random bytes, URL-safe.
func randomID() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// randomHex is 16 random bytes in hex: a form's CSRF token.
func randomHex() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// create starts a session for token and returns the cookie's id.
func (st *sessionStore) create(token string) (string, *session) {
	id := randomID()
	ses := &session{key: sha256.Sum256([]byte(id)), token: token, csrf: randomHex(), created: time.Now()}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.expireLocked()
	for st.order.Len() >= st.max {
		st.removeLocked(st.order.Front().Value.(*session))
	}
	ses.elem = st.order.PushBack(ses)
	st.m[ses.key] = ses
	return id, ses
}

// get returns the live session of a cookie's id, or nil.
func (st *sessionStore) get(id string) *session {
	k := sha256.Sum256([]byte(id))
	st.mu.Lock()
	defer st.mu.Unlock()
	ses := st.m[k]
	if ses == nil {
		return nil
	}
	if time.Since(ses.created) >= st.life {
		st.removeLocked(ses)
		return nil
	}
	return ses
}

// end ends the session of a cookie's id, if any.
func (st *sessionStore) end(id string) {
	k := sha256.Sum256([]byte(id))
	st.mu.Lock()
	defer st.mu.Unlock()
	if ses := st.m[k]; ses != nil {
		st.removeLocked(ses)
	}
}

// expireLocked ends the sessions past their lifetime: the oldest come
// first.
func (st *sessionStore) expireLocked() {
	for e := st.order.Front(); e != nil; e = st.order.Front() {
		ses := e.Value.(*session)
		if time.Since(ses.created) < st.life {
			return
		}
		st.removeLocked(ses)
	}
}

func (st *sessionStore) removeLocked(ses *session) {
	delete(st.m, ses.key)
	st.order.Remove(ses.elem)
}
