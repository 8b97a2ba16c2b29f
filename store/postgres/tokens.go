package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

// CreateToken stores a named token with the hash of its secret.
func (s *Store) CreateToken(ctx context.Context, t store.Token, hash []byte) error {
	if err := check.Token(t); err != nil {
		return err
	}
	err := s.autocommit(ctx, fmt.Sprintf("create token %q", t.Name), func(tx *txn) error {
		_, err := tx.run("create_token",
			t.Name, hash, nonNil(t.Groups), nonNil(t.Types), t.ReadOnly)
		return err
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return check.Invalidf("a token named %q exists (revoke it first)", t.Name)
	}
	return err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func scanToken(r rows) (store.Token, error) {
	var t store.Token
	if err := r.Scan(&t.Name, &t.Groups, &t.Types, &t.ReadOnly, &t.CreatedAt); err != nil {
		return t, err
	}
	if len(t.Groups) == 0 {
		t.Groups = nil
	}
	if len(t.Types) == 0 {
		t.Types = nil
	}
	t.CreatedAt = t.CreatedAt.UTC().Truncate(time.Microsecond)
	return t, nil
}

// Tokens lists the tokens by name.
func (s *Store) Tokens(ctx context.Context) ([]store.Token, error) {
	var out []store.Token
	err := s.read(ctx, "tokens", func(t *txn) error {
		out = out[:0]
		r, err := t.rows("tokens")
		if err != nil {
			return err
		}
		defer r.Close()
		for r.Next() {
			tok, err := scanToken(r)
			if err != nil {
				return err
			}
			out = append(out, tok)
		}
		return r.Err()
	})
	return out, err
}

// RevokeToken deletes a token by name.
func (s *Store) RevokeToken(ctx context.Context, name string) error {
	var n int64
	err := s.autocommit(ctx, fmt.Sprintf("revoke token %q", name), func(t *txn) error {
		var err error
		n, err = t.run("revoke_token", name)
		return err
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return check.TokenNotFound(name)
	}
	return nil
}

// TokenByHash returns the token whose secret has this hash.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (store.Token, error) {
	var tok store.Token
	found := false
	err := s.read(ctx, "token", func(t *txn) error {
		r, err := t.rows("token_by_hash", hash)
		if err != nil {
			return err
		}
		defer r.Close()
		if found = r.Next(); found {
			if tok, err = scanToken(r); err != nil {
				return err
			}
		}
		return r.Err()
	})
	if err != nil {
		return store.Token{}, err
	}
	if !found {
		return store.Token{}, check.TokenNotFound("")
	}
	return tok, nil
}
