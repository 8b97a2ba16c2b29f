-- API tokens (tokens.go). A token is stored by the hash of its secret;
-- groups and types are JSON arrays.

-- name: create_token
-- ? name, ? hash, ? groups, ? types, ? read-only, ? created_at.
INSERT INTO rota_tokens (name, hash, groups, types, read_only, created_at) VALUES (?, ?, ?, ?, ?, ?);

-- name: tokens
-- Every token, by name.
SELECT name, groups, types, read_only, created_at FROM rota_tokens ORDER BY name;

-- name: revoke_token
-- ? name.
DELETE FROM rota_tokens WHERE name = ?;

-- name: token_by_hash
-- ? hash.
SELECT name, groups, types, read_only, created_at FROM rota_tokens WHERE hash = ?;
