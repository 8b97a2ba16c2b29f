// Package migrate applies a store's schema migrations, for both stores:
// numbered SQL files embedded in the store's package (0001_jobs.sql,
// 0002_groups.sql, …), applied in order, each once, all that are missing in
// one transaction, under the store's exclusion (SQLite's write lock,
// PostgreSQL's advisory lock), so that processes opening one database at
// once queue rather than race, and a failure leaves the schema as it was.
package migrate

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one numbered SQL file.
type Migration struct {
	Version int
	Name    string // the file's name, such as "0002_groups.sql"
	SQL     string
}

// Load reads the migrations in dir of fsys: files NNNN_name.sql, numbered
// 1, 2, 3… without gaps or repeats.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	files, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, f := range files {
		name := path.Base(f)
		v, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: the name must start with a positive version number and _", name)
		}
		body, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %s: want version %d (versions run 1, 2, 3… without gaps or repeats)", m.Name, i+1)
		}
	}
	return out, nil
}

// Latest is the highest version of all, 0 for none.
func Latest(all []Migration) int {
	if len(all) == 0 {
		return 0
	}
	return all[len(all)-1].Version
}

// Pending returns the migrations a database at version have lacks. A
// database newer than all is refused: this program does not know its
// schema.
func Pending(all []Migration, have int) ([]Migration, error) {
	if have > Latest(all) {
		return nil, fmt.Errorf("the schema is at version %d, newer than this rota knows (%d): upgrade rota", have, Latest(all))
	}
	return all[have:], nil
}

// Tx is a store's migration transaction, its exclusion held.
type Tx interface {
	// Applied returns the highest version applied, 0 for none, creating
	// the store's record of applied migrations if it is missing.
	Applied(ctx context.Context) (int, error)
	// Exec runs one migration's SQL.
	Exec(ctx context.Context, sql string) error
	// Record notes that m was applied.
	Record(ctx context.Context, m Migration) error
}

// Apply applies the migrations tx's database lacks, in order, and returns
// them. The store commits tx afterwards (or rolls it back on an error).
func Apply(ctx context.Context, tx Tx, all []Migration) ([]Migration, error) {
	have, err := tx.Applied(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the schema version: %w", err)
	}
	pending, err := Pending(all, have)
	if err != nil {
		return nil, err
	}
	for _, m := range pending {
		if err := tx.Exec(ctx, m.SQL); err != nil {
			return nil, fmt.Errorf("migration %s: %w", m.Name, err)
		}
		if err := tx.Record(ctx, m); err != nil {
			return nil, fmt.Errorf("migration %s: record: %w", m.Name, err)
		}
	}
	return pending, nil
}

// Script is the SQL Apply would run for pending, each migration headed by
// a comment with its name, for people to read (rota migrate --print-sql).
func Script(pending []Migration) string {
	var b strings.Builder
	for _, m := range pending {
		fmt.Fprintf(&b, "-- migration %d: %s\n%s", m.Version, m.Name, m.SQL)
		if !strings.HasSuffix(m.SQL, "\n") {
			b.WriteByte('\n')
		}
		b.WriteByte('\n')
	}
	return b.String()
}
