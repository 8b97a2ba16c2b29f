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
	// What the file's directives say, lines of their own in it (rota's
	// PostgreSQL store reads them; SQLite, one process, needs none):
	//
	//	-- rota:no-transaction  its statements run one by one outside a
	//	                        transaction (CREATE INDEX CONCURRENTLY);
	//	                        each must be safe to run again
	//	-- rota:compatible      nodes that know only the versions before it
	//	                        keep working beside it (it only adds)
	//	-- rota:offline         nodes that know only the versions before it
	//	                        must not run beside it: stop them all first
	NoTransaction, Compatible, Offline bool
}

// directives reads a migration's directives.
func (m *Migration) directives() error {
	for _, line := range strings.Split(m.SQL, "\n") {
		d, ok := strings.CutPrefix(strings.TrimSpace(line), "-- rota:")
		if !ok {
			continue
		}
		switch strings.TrimSpace(d) {
		case "no-transaction":
			m.NoTransaction = true
		case "compatible":
			m.Compatible = true
		case "offline":
			m.Offline = true
		default:
			return fmt.Errorf("migration %s: unknown directive %q", m.Name, strings.TrimSpace(line))
		}
	}
	if m.Compatible && m.Offline {
		return fmt.Errorf("migration %s: compatible and offline at once", m.Name)
	}
	return nil
}

// Statements splits a migration's SQL into statements, at semicolons that
// end a line, for migrations that run outside a transaction (which
// PostgreSQL would otherwise run as one implicit transaction). Comments
// and blank lines are left out.
func Statements(sql string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(sql, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(t, ";") {
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		}
	}
	if rest := strings.TrimSpace(cur.String()); rest != "" {
		out = append(out, rest)
	}
	return out
}

// Runnable reports whether a node that knows all can run on a schema at
// version have, and why not: a schema it knows, or a newer one whose
// migrations past all were each recorded compatible (compatible reports
// that of a version).
func Runnable(all []Migration, have int, compatible func(version int) bool) error {
	for v := Latest(all) + 1; v <= have; v++ {
		if !compatible(v) {
			return fmt.Errorf("the schema is at version %d, newer than this rota knows (%d), and migration %d does not let older nodes run beside it: upgrade rota", have, Latest(all), v)
		}
	}
	return nil
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
		m := Migration{Version: v, Name: name, SQL: string(body)}
		if err := m.directives(); err != nil {
			return nil, err
		}
		out = append(out, m)
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
