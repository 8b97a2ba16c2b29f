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

// CheckImports validates a batch of imports as Import does, and returns
// their add parameters checked (CheckAdds) and their data.
func CheckImports(jobs []ImportJob) ([]AddParams, [][]byte, error) {
	ps := make([]AddParams, len(jobs))
	for i, j := range jobs {
		switch {
		case j.State == Running || !j.State.Valid():
			return nil, nil, Invalidf("import %d: state %s cannot be imported (a running job is imported pending)", i, j.State)
		case j.Parent != 0 || j.Key != "" || j.Unique:
			return nil, nil, Invalidf("import %d: a parent is given by ParentIndex, and imports have no key and are not unique", i)
		case j.ParentIndex >= i || j.ParentIndex < -1:
			return nil, nil, Invalidf("import %d: its parent (%d) must come before it in the batch", i, j.ParentIndex)
		case j.ParentIndex >= 0 && jobs[j.ParentIndex].ParentIndex >= 0:
			return nil, nil, Invalidf("import %d: its parent is itself a child: children cannot have children", i)
		case j.BedrockID < 0:
			return nil, nil, Invalidf("import %d: Bedrock id %d is negative", i, j.BedrockID)
		}
		if err := CheckTime("created_at", j.CreatedAt); err != nil {
			return nil, nil, err
		}
		ps[i] = j.AddParams
	}
	return CheckAdds(ps)
}
