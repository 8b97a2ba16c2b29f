package sqlite

import (
	"context"

	"github.com/rotajobs/rota/store"
)

// BreakWAL closes the descriptor the syncer fsyncs the write-ahead log
// through, so that the next sync fails as a failing disk would.
func BreakWAL(s *Store) { s.wal.Close() }

// ReadClaimed is readClaimed, which Accept runs after each claim.
func ReadClaimed(s *Store, ctx context.Context, jobs []store.Job) ([]store.Job, error) {
	return s.readClaimed(ctx, jobs, func() {})
}

// CopyColumns are the columns a copy carries by table, and what it leaves
// out, for TestCopyCoversSchema.
func CopyColumns() (map[string][]string, map[string]string) { return copyColumns, notCopied }
