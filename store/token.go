package store

import (
	"context"
	"time"
)

// Token is a named API token as a store keeps it: what it may reach, never
// its secret (stores keep a hash of it). A token scoped to groups or types
// reaches only jobs whose group and type match one of its patterns; a
// read-only token changes nothing. A token with no patterns and not read
// only reaches everything a job's API offers, but not the server's
// administration (tokens, type settings): that is the admin token's.
type Token struct {
	Name string `json:"name"`
	// Groups and Types are GLOB patterns (as accept takes for types);
	// empty means every group, every type.
	Groups    []string  `json:"groups,omitempty"`
	Types     []string  `json:"types,omitempty"`
	ReadOnly  bool      `json:"read_only,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// Tokens is a store that keeps named API tokens (rota token create). Both
// stores are; the HTTP API checks every request's bearer token against
// them. Secrets are hashed before they reach a store (SHA-256 of the
// secret); a store compares hashes only.
type Tokens interface {
	// CreateToken stores a token with the hash of its secret. A name or
	// hash in use is ErrInvalid.
	CreateToken(ctx context.Context, t Token, hash []byte) error
	// Tokens lists the tokens by name.
	Tokens(ctx context.Context) ([]Token, error)
	// RevokeToken deletes a token by name; an unknown name is ErrNotFound.
	RevokeToken(ctx context.Context, name string) error
	// TokenByHash returns the token whose secret has this hash, or
	// ErrNotFound.
	TokenByHash(ctx context.Context, hash []byte) (Token, error)
}
