package store

import (
	"context"
	"time"
)

// ImportJob is a job brought over from another system (rota import
// bedrock): added as its AddParams say, then put in the state it had
// there.
type ImportJob struct {
	AddParams
	// State is Pending, Paused, Completed, Failed or Cancelled. A job that
	// was running elsewhere is imported pending: its worker is not rota's.
	State State
	// ParentIndex is the index in the batch of the job's parent, which
	// must come before it; -1 for none. (AddParams.Parent must be 0.)
	ParentIndex int
	// BedrockID is the job's id in Bedrock's protocol; 0 for none.
	BedrockID int64
	// CreatedAt is when the job was created elsewhere; zero means now.
	CreatedAt time.Time
	// LastError is the job's last error, kept for an ended job.
	LastError string
}

// Importer is a store that imports jobs in the states they had in another
// system. Both stores are.
type Importer interface {
	// Import adds the jobs in one transaction (all or none) and returns
	// their ids, in order.
	Import(ctx context.Context, jobs []ImportJob) ([]int64, error)
}
