package httpapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/rotajobs/rota/httpapi/wire"
)

// errRevoked ends a long poll or a stream whose named token was revoked
// (or is no longer valid) while it lasted.
var errRevoked = fmt.Errorf("%w: the bearer token was revoked (or is no longer valid) while the request lasted", wire.ErrForbidden)

// whileValid returns the request's context, ended (with cause errRevoked)
// when the request's named token is no longer valid, for the requests
// that last (event streams, long-poll accepts): a revocation ends them
// within TokenCacheTTL, through any node, as it ends every other request
// of the token. The admin token cannot be revoked. Call stop when done.
func (s *Server) whileValid(r *http.Request) (ctx context.Context, stop func()) {
	a := accessOf(r)
	if a.admin || a.name == "" || s.tokens == nil {
		return r.Context(), func() {}
	}
	secret, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	ctx, cancel := context.WithCancelCause(r.Context())
	go func() {
		// Every half TTL, from a cache entry at most half a TTL old: a
		// revocation committed anywhere is seen within one TTL.
		t := time.NewTicker(TokenCacheTTL / 2)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			a, err := s.tokens.refresh(ctx, secret, TokenCacheTTL/2)
			if err == nil && a == nil {
				cancel(errRevoked)
				return
			}
			// A store that cannot be read now leaves the request be: the
			// next check reads it again.
		}
	}()
	return ctx, func() { cancel(nil) }
}

// revoked reports whether whileValid ended ctx.
func revoked(ctx context.Context) bool { return errors.Is(context.Cause(ctx), errRevoked) }

// refresh is lookup with a cache entry no older than maxAge.
func (c *tokenCache) refresh(ctx context.Context, secret string, maxAge time.Duration) (*access, error) {
	h := sha256.Sum256([]byte(secret))
	c.mu.Lock()
	if e, ok := c.m[h]; ok && time.Since(e.at) >= maxAge {
		delete(c.m, h)
	}
	c.mu.Unlock()
	return c.lookup(ctx, secret)
}
