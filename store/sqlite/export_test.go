package sqlite

// BreakWAL closes the descriptor the syncer fsyncs the write-ahead log
// through, so that the next sync fails as a failing disk would.
func BreakWAL(s *Store) { s.wal.Close() }

// ReadClaimed is readClaimed, which Accept runs after each claim.
var ReadClaimed = (*Store).readClaimed
