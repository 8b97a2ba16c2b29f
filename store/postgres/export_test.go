package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rotajobs/rota/internal/migrate"
)

// LeaderLockKey is the advisory lock key of a schema's sweep leader, for
// tests that kill the leader's session.
func LeaderLockKey(schema string) int64 { return hash64("leader", schema) }

// HeadTurns runs headTurnsSQL, the choice of the head step: the group of
// typ that goes first and how many turns in a row it wins, at most want;
// ok is false when the step leaves the type to the rounds.
func (s *Store) HeadTurns(ctx context.Context, typ string, want int64) (grp string, n int64, ok bool, err error) {
	var turn, w float64
	var pending int64
	err = s.pool.QueryRow(ctx, s.q(headTurnsSQL), typ, want).Scan(&grp, &turn, &pending, &w, &n)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, false, nil
	}
	return grp, n, err == nil, err
}

// Refill runs refillSQL and burstSQL, the head step's token bucket, on
// one bucket: rate n per per µs with burst (0: the default), holding tokens
// at refilled at (µs; 0: never), read at now (µs). It returns the tokens
// and the refill's time.
func (s *Store) Refill(ctx context.Context, n, per, burst int64, tokens float64, at, now int64) (float64, int64, error) {
	var t float64
	var tAt int64
	err := s.pool.QueryRow(ctx, `SELECT `+refillSQL("v")+` FROM (SELECT rn, rp, `+burstSQL("c")+` AS burst, tokens, refilled_at, now_us
		FROM (VALUES ($1::bigint, $2::bigint, $3::bigint, $4::float8, $5::bigint, $6::bigint)) AS c(rate_n, rate_per, burst, tokens, refilled_at, now_us),
		LATERAL (SELECT c.rate_n AS rn, c.rate_per AS rp) r) v`, n, per, burst, tokens, at, now).Scan(&t, &tAt)
	return t, tAt, err
}

// CopyColumns are the columns a copy carries by table, and what it leaves
// out, for TestCopyCoversSchema.
func CopyColumns() (map[string][]string, map[string]string) { return copyColumns, notCopied }

// MigrateTo applies the migrations up to version v, as Migrate does.
func MigrateTo(s *Store, ctx context.Context, v int) error { return s.migrateTo(ctx, v) }

// Migrations are the schema's migrations.
func Migrations() []migrate.Migration { return migrations }

// WithTracer is cfg with a tracer on the pool's connections.
func WithTracer(cfg Config, tr pgx.QueryTracer) Config {
	cfg.tracer = tr
	return cfg
}

// Statement is the named statement of sql/*.sql, the schema filled in.
func Statement(s *Store, name string) string { return s.stmt(name) }

// HearPeer notes node's "here" as the LISTEN connection does, without the
// replay that follows it there (Replay), for tests of what is sent
// between the two.
func HearPeer(s *Store, node string) { s.peers.hear(node, "here", time.Now()) }

// Replay is the LISTEN connection's replay after a node's first presence.
func Replay(s *Store) { s.out.replay() }
