package dashboard

import (
	"context"
	"slices"

	"github.com/rotajobs/rota"
)

// The workflow of a job (its dependencies and dependants, AddParams.After,
// and theirs, transitively) is drawn on its page as a layered graph,
// rendered on the server as SVG: each job a box in the column of its depth
// (the longest chain of dependencies before it), coloured by its state,
// each dependency an edge from left to right. It is bounded so that a page
// stays quick and readable whatever the workflow's size: at most
// maxWorkflowJobs jobs are read, at most maxLayerJobs drawn per column,
// and the page says how many it left out.
const (
	maxWorkflowJobs = 300
	maxLayerJobs    = 40
	nodeW, nodeH    = 150, 34
	colGap, rowGap  = 60, 10
	graphPad        = 8
)

// workflow is a job's workflow as the template draws it.
type workflow struct {
	Width, Height int
	Nodes         []wfNode
	Edges         []wfEdge
	// Jobs is how many jobs were read, Hidden how many of them are not
	// drawn (a column past maxLayerJobs); More says the workflow has jobs
	// beyond maxWorkflowJobs that were not read.
	Jobs, Hidden int
	More         bool
}

type wfNode struct {
	ID      int64
	Type    string
	State   string
	Current bool // the page's job
	X, Y    int
}

type wfEdge struct{ X1, Y1, X2, Y2 int }

// workflowOf reads job id's workflow, breadth first from it, through
// Client.Deps, within the caller's reach (ctx). It returns nil for a job
// with neither dependencies nor dependants.
func workflowOf(ctx context.Context, c *rota.Client, id int64) *workflow {
	type edge struct{ from, to int64 }
	seen := map[int64]bool{id: true}
	queue := []int64{id}
	var edges []edge
	// The states of dependencies out of the caller's reach, which Deps
	// gives by id and state alone and GetMany not at all: drawn so, not
	// as removed.
	outOfReach := map[int64]string{}
	more := false
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		deps, after, err := c.Deps(ctx, n, maxWorkflowJobs)
		if err != nil {
			continue // out of reach or gone meanwhile: drawn without its edges
		}
		visit := func(other int64) bool {
			if seen[other] {
				return true
			}
			if len(seen) >= maxWorkflowJobs {
				more = true
				return false
			}
			seen[other] = true
			queue = append(queue, other)
			return true
		}
		for _, d := range deps {
			if d.Type == "" && !d.Removed {
				outOfReach[d.ID] = d.State.String()
			}
			if visit(d.ID) {
				edges = append(edges, edge{d.ID, n})
			}
		}
		for _, a := range after {
			if visit(a) {
				edges = append(edges, edge{n, a})
			}
		}
		if len(after) == maxWorkflowJobs {
			more = true
		}
	}
	if len(seen) == 1 {
		return nil
	}
	ids := make([]int64, 0, len(seen))
	for k := range seen {
		ids = append(ids, k)
	}
	slices.Sort(ids)
	jobs, err := c.GetMany(ctx, ids)
	if err != nil {
		return nil
	}
	// Depth: the longest chain of dependencies before a job among those
	// read. Ids grow along every edge (a dependency exists before its
	// dependant), so one pass in id order settles every depth.
	uniq := map[edge]bool{}
	into := map[int64][]int64{}
	for _, e := range edges {
		if !uniq[e] {
			uniq[e] = true
			into[e.to] = append(into[e.to], e.from)
		}
	}
	depth := map[int64]int{}
	for _, k := range ids {
		for _, from := range into[k] {
			depth[k] = max(depth[k], depth[from]+1)
		}
	}
	w := &workflow{Jobs: len(ids), More: more}
	at := map[int64][2]int{}
	rows := map[int]int{}
	maxRow, maxCol := 0, 0
	for i, k := range ids {
		col := depth[k]
		if rows[col] == maxLayerJobs && k != id {
			w.Hidden++
			continue
		}
		row := rows[col]
		rows[col]++
		x, y := graphPad+col*(nodeW+colGap), graphPad+row*(nodeH+rowGap)
		at[k] = [2]int{x, y}
		maxRow, maxCol = max(maxRow, row), max(maxCol, col)
		n := wfNode{ID: k, X: x, Y: y, Current: k == id, State: "removed"}
		if j := jobs[i]; j.ID != 0 {
			n.Type, n.State = j.Type, j.State.String()
		} else if st, ok := outOfReach[k]; ok {
			n.State = st
		}
		w.Nodes = append(w.Nodes, n)
	}
	for e := range uniq {
		a, okA := at[e.from]
		b, okB := at[e.to]
		if okA && okB {
			w.Edges = append(w.Edges, wfEdge{a[0] + nodeW, a[1] + nodeH/2, b[0], b[1] + nodeH/2})
		}
	}
	slices.SortFunc(w.Edges, func(a, b wfEdge) int {
		if a.X1 != b.X1 {
			return a.X1 - b.X1
		}
		if a.Y1 != b.Y1 {
			return a.Y1 - b.Y1
		}
		return a.Y2 - b.Y2
	})
	w.Width = 2*graphPad + (maxCol+1)*nodeW + maxCol*colGap
	w.Height = 2*graphPad + (maxRow+1)*nodeH + maxRow*rowGap
	return w
}
