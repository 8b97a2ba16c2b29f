package store

import (
	"context"
	"time"
)

// HistoryEntry is one line of a job's history (Auditor): what the job did
// (added, started an attempt, failed an attempt, ended), read from its
// row, and what someone changed (an audit record: a cancel, a retry, an
// update, a removal, a pause of its type or group), with who did it.
type HistoryEntry struct {
	At time.Time `json:"at"`
	// Action is what happened: "added", "started", "attempt failed",
	// "ended" (the job's own life), or the change someone made: "cancel",
	// "remove", "update", "retry", "run now", "resubmit", "hand back",
	// "pause type", "resume type", "set type", "pause group",
	// "resume group", "set group".
	Action string `json:"action"`
	// Actor is who made the change (WithActor: a token's name over HTTP
	// and on the dashboard, the peer over Bedrock, what a program set
	// with rota.WithActor); empty for what the job did itself, and for a
	// change made through the Go API without an actor.
	Actor string `json:"actor,omitempty"`
	// Audited says the line is an audit record (a change someone made)
	// rather than a fact of the job's row.
	Audited bool `json:"audited,omitempty"`
	// Detail says more: the states a change moved the job between, the
	// fields an update changed ("priority 0 → 5"), an attempt's error.
	Detail string `json:"detail,omitempty"`
}

// Auditor is a store that records who changed which job (an audit trail)
// and tells a job's history. Both stores are: every producer operation
// (Cancel, Remove, Resubmit, Update) and every change of a type's or
// group's settings writes its record in the operation's own transaction,
// with the store's time and the actor its context carries (WithActor).
type Auditor interface {
	// History returns job id's history in time order: the facts of its
	// row merged with the audit records of the job and of its type's and
	// group's settings made during its life. A removed job's history is
	// its audit records (the last is its removal) while they are kept
	// (AuditRetention). A job out of the caller's reach, or one with no
	// row and no record, is ErrNotFound.
	History(ctx context.Context, id int64) ([]HistoryEntry, error)
}

// AuditRetention is how long stores keep audit records: the retention
// sweep (Retirer) deletes older ones, so that the trail of a busy
// deployment stays bounded. The records of a removed job are kept as long
// as any other's, so that its removal can be traced.
const AuditRetention = 90 * 24 * time.Hour

// MaxHistory bounds the audit records one History returns: the newest
// ones are kept.
const MaxHistory = 1000

type actorKey struct{}

// WithActor returns ctx naming who makes the changes made with it: the
// stores record the name with each change (Auditor). A server names a
// request's token; a program names itself, or the person it acts for.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// ActorOf returns the actor ctx names; "" when none.
func ActorOf(ctx context.Context) string {
	a, _ := ctx.Value(actorKey{}).(string)
	return a
}
