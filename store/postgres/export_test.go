package postgres

// LeaderLockKey is the advisory lock key of a schema's sweep leader, for
// tests that kill the leader's session.
func LeaderLockKey(schema string) int64 { return hash64("leader", schema) }
