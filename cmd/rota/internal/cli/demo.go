package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"golang.org/x/term"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota"
)

func demoCommand() *cobra.Command {
	var (
		dataDir     string
		jobs        int
		concurrency int
		work        time.Duration
		failRate    float64
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Add jobs to the embedded database and run them with a worker",
		Long: `demo opens (or creates) the embedded SQLite database in --data, adds
--jobs jobs of type demo.resize, and runs them with a worker of --concurrency
handlers. Each job takes --work; a share of first attempts fail (--fail) and
are retried with back-off. It reports progress, then what ended in which
state. Interrupt it (Ctrl-C) to see a graceful shutdown: unfinished jobs go
back to pending and run on the next start.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if jobs < 0 || concurrency <= 0 || work < 0 || failRate < 0 || failRate > 1 {
				return errors.New("--jobs must be ≥ 0, --concurrency > 0, --work ≥ 0 and --fail within 0..1")
			}
			return runDemo(cmd.Context(), cmd.OutOrStdout(), dataDir, jobs, concurrency, work, failRate)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data", "rota-data", "directory of the embedded database")
	f.IntVar(&jobs, "jobs", 2000, "how many jobs to add")
	f.IntVar(&concurrency, "concurrency", 16, "how many jobs run at once")
	f.DurationVar(&work, "work", 5*time.Millisecond, "how long each job works")
	f.Float64Var(&failRate, "fail", 0.05, "share of first attempts that fail")
	return cmd
}

type resize struct {
	Image string `json:"image"`
	Width int    `json:"width"`
}

func runDemo(ctx context.Context, out io.Writer, dataDir string, n, concurrency int, work time.Duration, failRate float64) error {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return err
	}
	path := filepath.Join(dataDir, "rota.db")
	lock, err := lockDatabase(path)
	if err != nil {
		return err
	}
	defer lock.release()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := rota.Open(path)
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Fprintf(out, "database: %s\n", path)

	start := time.Now()
	for added := 0; added < n; {
		batch := make([]rota.AddParams, min(500, n-added))
		for i := range batch {
			data, _ := json.Marshal(resize{Image: fmt.Sprintf("img-%06d.png", added+i), Width: 320})
			batch[i] = rota.AddParams{Type: "demo.resize", Data: data, BackoffBase: 50 * time.Millisecond, BackoffMax: time.Second}
		}
		if _, err := c.AddMany(ctx, batch); err != nil {
			return err
		}
		added += len(batch)
	}
	fmt.Fprintf(out, "added %d jobs in %v\n", n, time.Since(start).Round(time.Millisecond))

	w := rota.NewWorker(c, rota.WorkerConfig{Concurrency: concurrency, Logger: logger, ShutdownTimeout: 2 * time.Second})
	rota.Handle(w, "demo.resize", func(ctx context.Context, job *rota.Job, args resize) error {
		select {
		case <-time.After(work):
		case <-ctx.Done():
			return ctx.Err()
		}
		if job.Attempt == 1 && rand.Float64() < failRate {
			return fmt.Errorf("resize %s: decoder busy", args.Image)
		}
		return nil
	})
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()

	runStart := time.Now()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	// On a terminal the counts are redrawn in place; into a file or a
	// pipe, they are written every second, one line each.
	live := isTerminal(out)
	var printed time.Time
	for {
		counts, err := countStates(context.Background(), c)
		if err != nil {
			return err
		}
		left := counts[rota.Pending] + counts[rota.Running]
		line := fmt.Sprintf("completed %d  failed %d  running %d  pending %d", counts[rota.Completed], counts[rota.Failed], counts[rota.Running], counts[rota.Pending])
		switch {
		case live:
			fmt.Fprintf(out, "\r%s   ", line)
		case left == 0 || ctx.Err() != nil || time.Since(printed) >= time.Second:
			fmt.Fprintln(out, line)
			printed = time.Now()
		}
		if left == 0 || ctx.Err() != nil {
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
	elapsed := time.Since(runStart)
	stop()
	if err := <-done; err != nil {
		return err
	}
	counts, err := countStates(context.Background(), c)
	if err != nil {
		return err
	}
	if live {
		fmt.Fprintln(out) // end the line redrawn in place
	}
	if ctx.Err() != nil {
		fmt.Fprintf(out, "interrupted: %d jobs are pending and run on the next start\n", counts[rota.Pending])
		return nil
	}
	fmt.Fprintf(out, "all jobs ended in %v (%.0f jobs/s with %d handlers of %v each)\n",
		elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), concurrency, work)
	return nil
}

func countStates(ctx context.Context, c *rota.Client) (map[rota.State]int64, error) {
	stats, err := c.Stats(ctx)
	if err != nil {
		return nil, err
	}
	counts := map[rota.State]int64{}
	for _, s := range stats {
		counts[s.State] += s.Jobs
	}
	return counts, nil
}

// isTerminal reports whether w is a terminal (golang.org/x/term).
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}
