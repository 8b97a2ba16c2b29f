package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

// CreateToken stores a named token with the hash of its secret.
func (s *Store) CreateToken(ctx context.Context, t store.Token, hash []byte) error {
	if err := check.Token(t); err != nil {
		return err
	}
	groups, _ := json.Marshal(nonNil(t.Groups))
	types, _ := json.Marshal(nonNil(t.Types))
	err := s.write(ctx, true, func(w *txn) error {
		_, err := w.run("create_token",
			t.Name, hash, string(groups), string(types), t.ReadOnly, micros(w.now))
		return err
	})
	if isConstraint(err) {
		return check.Invalidf("a token named %q exists (revoke it first)", t.Name)
	}
	if err != nil {
		return fmt.Errorf("sqlite: create token %q: %w", t.Name, err)
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Tokens lists the tokens by name.
func (s *Store) Tokens(ctx context.Context) ([]store.Token, error) {
	rows, err := s.reader.QueryContext(ctx, stmt("tokens"))
	if err != nil {
		return nil, fmt.Errorf("sqlite: tokens: %w", err)
	}
	defer rows.Close()
	var out []store.Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: tokens: %w", err)
	}
	return out, nil
}

func scanToken(sc scanner) (store.Token, error) {
	var t store.Token
	var groups, types string
	var created int64
	if err := sc.Scan(&t.Name, &groups, &types, &t.ReadOnly, &created); err != nil {
		return t, err
	}
	if err := json.Unmarshal([]byte(groups), &t.Groups); err != nil {
		return t, fmt.Errorf("sqlite: token %q: groups: %w", t.Name, err)
	}
	if err := json.Unmarshal([]byte(types), &t.Types); err != nil {
		return t, fmt.Errorf("sqlite: token %q: types: %w", t.Name, err)
	}
	if len(t.Groups) == 0 {
		t.Groups = nil
	}
	if len(t.Types) == 0 {
		t.Types = nil
	}
	t.CreatedAt = fromMicros(created)
	return t, nil
}

// RevokeToken deletes a token by name.
func (s *Store) RevokeToken(ctx context.Context, name string) error {
	var n int64
	err := s.write(ctx, true, func(w *txn) error {
		res, err := w.run("revoke_token", name)
		if err == nil {
			n, err = res.RowsAffected()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: revoke token %q: %w", name, err)
	}
	if n == 0 {
		return check.TokenNotFound(name)
	}
	return nil
}

// TokenByHash returns the token whose secret has this hash.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (store.Token, error) {
	t, err := scanToken(s.reader.QueryRowContext(ctx, stmt("token_by_hash"), hash))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Token{}, check.TokenNotFound("")
	}
	if err != nil {
		return store.Token{}, fmt.Errorf("sqlite: token: %w", err)
	}
	return t, nil
}
