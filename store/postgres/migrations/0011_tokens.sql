-- Named API tokens (store.Tokens): the SHA-256 of each secret, never the
-- secret, and what the token may reach (GLOB patterns).
CREATE TABLE tokens (
	name       text PRIMARY KEY,
	hash       bytea NOT NULL UNIQUE,
	groups     text[] NOT NULL,
	types      text[] NOT NULL,
	read_only  boolean NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now()
);
