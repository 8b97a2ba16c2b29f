-- API tokens (tokens.go). A token is stored by the hash of its secret.

-- name: create_token
-- $1 name, $2 hash, $3 groups (text[]), $4 types (text[]), $5 read-only.
INSERT INTO {{schema}}.tokens (name, hash, groups, types, read_only) VALUES ($1, $2, $3, $4, $5);

-- name: tokens
-- Every token, by name.
SELECT name, groups, types, read_only, created_at FROM {{schema}}.tokens ORDER BY name;

-- name: revoke_token
-- $1 name.
DELETE FROM {{schema}}.tokens WHERE name = $1;

-- name: token_by_hash
-- $1 hash.
SELECT name, groups, types, read_only, created_at FROM {{schema}}.tokens WHERE hash = $1;
