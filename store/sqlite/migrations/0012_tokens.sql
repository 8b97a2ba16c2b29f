-- Named API tokens (store.Tokens): the SHA-256 of each secret, never the
-- secret, and what the token may reach (JSON arrays of GLOB patterns).
CREATE TABLE rota_tokens (
	name       TEXT PRIMARY KEY,
	hash       BLOB NOT NULL UNIQUE,
	groups     TEXT NOT NULL,
	types      TEXT NOT NULL,
	read_only  INTEGER NOT NULL,
	created_at INTEGER NOT NULL
);
