package cli

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/sqlite"
)

// backupCommand is `rota backup FILE`: a consistent copy of the embedded
// SQLite database, made while `rota serve` keeps serving it. It reads the
// file directly rather than through the server: a read transaction in
// SQLite's WAL mode never blocks the server's writer, so there is nothing
// to coordinate with the server (and its lock on the data directory does
// not apply), and a backup works the same whether a server runs or not.
func backupCommand() *cobra.Command {
	var spec, dataDir string
	cmd := &cobra.Command{
		Use:   "backup FILE [--data DIR | --store PATH]",
		Short: "Copy the embedded SQLite database, consistently, while it is in use",
		Long: `Write a consistent copy of the embedded SQLite database (the one in
--data, or --store PATH) to FILE, while rota serve keeps serving it.

The copy is SQLite's VACUUM INTO, one read transaction: it holds exactly
what was committed when it began, every acknowledged add and finish
included, and it never stops the server's writes (only the write-ahead
log grows until the copy ends). FILE must not exist; it appears whole or
not at all, readable by its owner only.

To restore, serve the copy: rota serve --store FILE, or stop the server
and put FILE in place of DIR/rota.db. For PostgreSQL, use its own tools
(docs/postgres.md, Backups).`,
		Args: exactArgs(1, "the file to write"),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := sqlitePath(spec, dataDir)
			if path == "" {
				return usageErrorf("--store %q: rota backup copies a SQLite database; back up PostgreSQL with its own tools (docs/postgres.md, Backups)", spec)
			}
			info, err := sqlite.Backup(cmd.Context(), path, args[0])
			if err != nil {
				if errors.Is(err, fs.ErrExist) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, store.ErrInvalid) {
					return &exitError{code: exitUsage, err: err}
				}
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "backed up %s to %s: %d jobs, %s, in %s\n",
				path, info.Path, info.Jobs, byteSize(info.Bytes), info.Duration.Round(1e6))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&spec, "store", "", "the SQLite database to copy: a path or sqlite:PATH (default: the database in --data)")
	f.StringVar(&dataDir, "data", "rota-data", "directory of the embedded SQLite database, when --store is not given")
	return cmd
}

// byteSize writes n bytes for people: 812 B, 3.4 MB.
func byteSize(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}
