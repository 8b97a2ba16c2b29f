package cli

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota/bedrock"
	"github.com/rotajobs/rota/store"
)

// importCommand is `rota import`: jobs from another system's database,
// into a store opened directly (like rota migrate).
func importCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Import jobs from another job system's database",
		Args:  noArgs,
	}
	cmd.AddCommand(importBedrockCommand())
	return cmd
}

func importBedrockCommand() *cobra.Command {
	var storeSpec, dataDir string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "bedrock FILE.db [--store PATH|postgres://…] [--dry-run]",
		Short: "Import the jobs of a Bedrock database (its jobs table)",
		Long: `import bedrock reads the jobs table of a Bedrock SQLite database and adds
its jobs to rota's store (the embedded database in --data, or --store) with
their Bedrock ids, states, repeats, retryAfters, priorities, parents and
data, so that Bedrock's clients find them through rota serve --bedrock.

Every row is checked first; if one cannot be mapped (a name rota cannot
take as a type, data that is not a JSON object, a malformed repeat or
nextRun, a child whose parent is missing, an id already in rota), nothing
is imported and each such row is listed. QUEUED jobs are pending at their
nextRun; RUNNING and RUNQUEUED ones are pending at once (their workers are
Bedrock's: they run again); PAUSED, FINISHED, FAILED and CANCELLED keep
their state. A family is imported in one transaction. --dry-run checks
and reports without importing.`,
		Example: "  rota import bedrock /var/lib/bedrock/bedrock.db\n  rota import bedrock bedrock.db --store postgres://rota@db/rota --dry-run",
		Args:    exactArgs(1, "the Bedrock database file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec := storeSpec
			if spec == "" {
				if err := os.MkdirAll(dataDir, 0o700); err != nil {
					return fmt.Errorf("--data: %w", err)
				}
				spec = filepath.Join(dataDir, "rota.db")
			}
			return importBedrock(cmd.Context(), cmd.OutOrStdout(), args[0], spec, dryRun)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data", "rota-data", "directory of the embedded SQLite database")
	f.StringVar(&storeSpec, "store", "", "store to import into instead: a SQLite file path, sqlite:PATH, or postgres://…")
	f.BoolVar(&dryRun, "dry-run", false, "check every row and report, importing nothing")
	return cmd
}

// bedrockRow is one row of Bedrock's jobs table (§2.1).
type bedrockRow struct {
	id, parent, priority                        int64
	state, name, nextRun, created, repeat, data string
	retryAfter                                  string
}

func importBedrock(ctx context.Context, out io.Writer, file, spec string, dryRun bool) error {
	if _, err := os.Stat(file); err != nil {
		return usageErrorf("%s: %v", file, err)
	}
	src, err := sql.Open("sqlite3", "file:"+file+"?mode=ro")
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	defer src.Close()
	rows, err := src.QueryContext(ctx, `SELECT jobID, state, name, nextRun, coalesce(created, ''), coalesce(repeat, ''), coalesce(data, '{}'),
		coalesce(priority, 500), coalesce(parentJobID, 0), coalesce(retryAfter, '') FROM jobs ORDER BY parentJobID != 0, jobID`)
	if err != nil {
		return fmt.Errorf("%s: not a Bedrock database (no readable jobs table): %w", file, err)
	}
	var all []bedrockRow
	for rows.Next() {
		var r bedrockRow
		if err := rows.Scan(&r.id, &r.state, &r.name, &r.nextRun, &r.created, &r.repeat, &r.data, &r.priority, &r.parent, &r.retryAfter); err != nil {
			rows.Close()
			return fmt.Errorf("%s: jobs: %w", file, err)
		}
		all = append(all, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: jobs: %w", file, err)
	}

	st, _, err := openStore(ctx, spec, "")
	if err != nil {
		return err
	}
	defer st.Close()
	im, ok := st.(store.Importer)
	ids, ok2 := st.(store.BedrockIDs)
	if !ok || !ok2 {
		return fmt.Errorf("the store %s cannot import jobs", spec)
	}

	// Map every row first; any refusal stops the import before it starts.
	index := map[int64]int{} // Bedrock id → index in jobs
	var jobs []store.ImportJob
	var refused []string
	ran := 0
	bids := make([]int64, 0, len(all))
	for _, r := range all {
		bids = append(bids, r.id)
	}
	existing, err := ids.ByBedrockID(ctx, bids)
	if err != nil {
		return err
	}
	for _, r := range all {
		j, why := bedrock.ImportRow(r.name, r.state, r.nextRun, r.created, r.repeat, r.data, r.retryAfter, r.priority)
		switch {
		case why != "":
		case r.id <= 0:
			why = "its jobID is not a positive integer"
		case existing[r.id] != 0:
			why = fmt.Sprintf("rota has a job with this Bedrock id already (job %d): imported before?", existing[r.id])
		case r.parent != 0:
			p, found := index[r.parent]
			switch {
			case !found:
				why = fmt.Sprintf("its parent %d is not in the database (or could not be imported)", r.parent)
			case jobs[p].ParentIndex >= 0:
				why = fmt.Sprintf("its parent %d is itself a child", r.parent)
			default:
				j.ParentIndex = p
			}
		}
		if why != "" {
			refused = append(refused, fmt.Sprintf("job %d (%s, %s): %s", r.id, r.name, r.state, why))
			continue
		}
		if r.state == "RUNNING" || r.state == "RUNQUEUED" {
			ran++
		}
		j.BedrockID = r.id
		index[r.id] = len(jobs)
		jobs = append(jobs, j)
	}
	if len(refused) > 0 {
		fmt.Fprintf(out, "%d of %d jobs cannot be imported; nothing was imported:\n", len(refused), len(all))
		for _, line := range refused {
			fmt.Fprintln(out, "  "+line)
		}
		return &exitError{code: exitUsage}
	}
	byState := map[string]int{}
	for _, j := range jobs {
		byState[j.State.String()]++
	}
	var parts []string
	for _, s := range []string{"pending", "paused", "completed", "failed", "cancelled"} {
		if byState[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", byState[s], s))
		}
	}
	summary := strings.Join(parts, ", ")
	if ran > 0 {
		summary += fmt.Sprintf(" (%d were running in Bedrock: they run again)", ran)
	}
	if dryRun {
		fmt.Fprintf(out, "dry run: all %d jobs can be imported: %s\n", len(jobs), summary)
		return nil
	}
	// In batches of whole families: a parent and its children go in one
	// transaction (the children name their parent by its index there).
	children := map[int][]int{}
	var roots []int
	for i, j := range jobs {
		if j.ParentIndex >= 0 {
			children[j.ParentIndex] = append(children[j.ParentIndex], i)
		} else {
			roots = append(roots, i)
		}
	}
	done := 0
	var batch []store.ImportJob
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if _, err := im.Import(ctx, batch); err != nil {
			return fmt.Errorf("import stopped after %d of %d jobs (the batch from Bedrock job %d changed nothing): %w", done, len(jobs), batch[0].BedrockID, err)
		}
		done += len(batch)
		batch = batch[:0]
		return nil
	}
	for _, r := range roots {
		family := append([]int{r}, children[r]...)
		if len(batch)+len(family) > store.MaxAddBatch {
			if err := flush(); err != nil {
				return err
			}
		}
		base := len(batch)
		for k, i := range family {
			j := jobs[i]
			j.ParentIndex = -1
			if k > 0 {
				j.ParentIndex = base
			}
			batch = append(batch, j)
		}
	}
	if err := flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "imported %d jobs from %s at %s: %s\n", done, file, time.Now().UTC().Format(time.RFC3339), summary)
	return nil
}
