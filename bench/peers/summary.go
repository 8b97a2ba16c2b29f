package main

// `peers summarize`: medians, with ranges, of a compare's JSON lines, as
// markdown tables under the machine and its load.

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func summarizeMain(args []string) error {
	fs := flag.NewFlagSet("summarize", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), "usage: peers summarize DIR (the -out directory of a compare)") }
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("give the directory of one compare's results")
	}
	s, err := summarize(fs.Arg(0))
	if err != nil {
		return err
	}
	fmt.Print(s)
	return nil
}

// record is one JSON line of a compare.
type record map[string]any

func (r record) str(k string) string { s, _ := r[k].(string); return s }

func (r record) num(k string) (float64, bool) { v, ok := r[k].(float64); return v, ok }

// key is what rows are grouped by: the label, and rota's via (its
// baselines share the run's label).
func (r record) key() string {
	if v := r.str("via"); v != "" && v != "inprocess" {
		return r.str("label") + " " + v
	}
	return r.str("label")
}

func readRecords(path string) ([]record, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// summarize reads dir's machine.json, load.log, drain.jsonl and
// steady.jsonl and returns the markdown summary.
func summarize(dir string) (string, error) {
	var b strings.Builder
	var machine map[string]any
	mb, err := os.ReadFile(filepath.Join(dir, "machine.json"))
	if err != nil {
		return "", fmt.Errorf("%s is not a compare's output: %w", dir, err)
	}
	if err := json.Unmarshal(mb, &machine); err != nil {
		return "", fmt.Errorf("machine.json: %w", err)
	}
	drain, err := readRecords(filepath.Join(dir, "drain.jsonl"))
	if err != nil {
		return "", err
	}
	steady, err := readRecords(filepath.Join(dir, "steady.jsonl"))
	if err != nil {
		return "", err
	}
	get := func(k string) string {
		if v, ok := machine[k]; ok {
			return fmt.Sprint(v)
		}
		return "?"
	}
	rota := get("rota_commit")
	if rota == "?" { // -rota named a binary: say which
		rota = get("rota_bin") + " (" + get("rota_version") + ")"
	}
	fmt.Fprintf(&b, "Machine: %s, %s cores, %s GiB, Linux %s, %s. rota %s",
		get("cpu"), get("cores"), get("memory_gib"), get("kernel"), get("go"), rota)
	if v, ok := machine["postgres_version"]; ok {
		fmt.Fprintf(&b, "; PostgreSQL %v", v)
	}
	versions := map[string]string{}
	for _, r := range append(slices.Clone(drain), steady...) {
		if s := r.str("system"); s != "" && r.str("version") != "" {
			versions[s] = r.str("version")
		}
		if r.str("system") == "asynq" && r.str("store_version") != "" {
			versions["redis"] = r.str("store_version")
		}
	}
	for _, k := range []string{"river", "asynq", "redis"} {
		if v := versions[k]; v != "" {
			fmt.Fprintf(&b, "; %s %s", map[string]string{"river": "River", "asynq": "Asynq", "redis": "Redis"}[k], v)
		}
	}
	fmt.Fprintf(&b, ".\nFrom %s to %s.\n", get("started"), get("ended"))
	if v, ok := machine["postgres"]; ok {
		fmt.Fprintf(&b, "PostgreSQL %v.\n", v)
	}
	if load, err := os.ReadFile(filepath.Join(dir, "load.log")); err == nil {
		fmt.Fprintf(&b, "\nLoad before each round:\n\n```\n%s```\n", load)
	}

	if len(drain) > 0 {
		fmt.Fprintf(&b, "\n## Drain: %s no-op jobs, medians of the rounds (min–max, n)\n\n", get("jobs"))
		table(&b, drain, []column{
			{"jobs/s", "jobs_per_sec", 0},
			{"rota ÷ it, by round", "", 2},
			{"CPU µs/job, process", "cpu_us_per_job", 1},
			{"CPU µs/job, database server", "server_cpu_us_per_job", 1},
			{"CPU pressure", "cpu_pressure", 2},
		})
	}
	if len(steady) > 0 {
		fmt.Fprintf(&b, "\n## Steady: %s jobs/s added one at a time for %s, enqueue→start; medians of the rounds (min–max, n)\n\n", get("rate"), get("duration"))
		table(&b, steady, []column{
			{"p50 ms", "p50_ms", 2},
			{"p99 ms", "p99_ms", 2},
			{"→ completion p50 ms", "finish_p50_ms", 2},
			{"→ completion p99 ms", "finish_p99_ms", 2},
			{"add call p99 ms", "add_p99_ms", 2},
			{"jobs/s", "jobs_per_sec", 0},
			{"CPU pressure", "cpu_pressure", 2},
		})
	}
	return b.String(), nil
}

// column is one statistic of a table; an empty field is the ratio of
// rota's rate on the same store to the row's, by round.
type column struct {
	title, field string
	digits       int
}

func table(b *strings.Builder, rs []record, cols []column) {
	var order []string
	groups := map[string][]record{}
	var failed []record
	for _, r := range rs {
		if r.str("error") != "" {
			failed = append(failed, r)
			continue
		}
		k := r.key()
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	b.WriteString("| run | system | store |")
	for _, c := range cols {
		b.WriteString(" " + c.title + " |")
	}
	b.WriteString("\n|---|---|---|" + strings.Repeat("---|", len(cols)) + "\n")
	for _, k := range order {
		g := groups[k]
		sys := g[0].str("system")
		switch v := g[0].str("via"); {
		case sys != "":
		case v == "raw-sql":
			sys = "raw SQL ceiling (rota bench's baseline)"
		case v == "http":
			sys = "rota, a remote worker over HTTP"
		default:
			sys = "rota"
		}
		fmt.Fprintf(b, "| %s | %s | %s |", k, sys, g[0].str("store"))
		for _, c := range cols {
			var vals []float64
			if c.field == "" {
				vals = ratios(rs, g)
			} else {
				for _, r := range g {
					if v, ok := r.num(c.field); ok {
						vals = append(vals, v)
					}
				}
			}
			b.WriteString(" " + stat(vals, c.digits) + " |")
		}
		b.WriteString("\n")
	}
	for _, r := range failed {
		fmt.Fprintf(b, "\nFailed: round %v, %s: %s\n", r["round"], r.str("label"), r.str("error"))
	}
}

// ratios is, for each round of g, rota's drain rate in process on g's
// store in that round divided by g's rate: how many times faster rota ran
// in the same round. Asynq's Redis is set against rota's SQLite, the other
// store of one machine. Empty for rota's own rows.
func ratios(all, g []record) []float64 {
	if g[0].str("system") == "" || g[0].str("system") == "rota" {
		return nil
	}
	st := g[0].str("store")
	if st == "redis" {
		st = "sqlite"
	}
	var out []float64
	for _, r := range g {
		v, ok := r.num("jobs_per_sec")
		if !ok || v == 0 {
			continue
		}
		for _, o := range all {
			if o.str("workload") == "drain" && o.str("via") == "inprocess" && o.str("store") == st &&
				(o.str("system") == "" || o.str("system") == "rota") && o["round"] == r["round"] {
				if rv, ok := o.num("jobs_per_sec"); ok {
					out = append(out, rv/v)
				}
			}
		}
	}
	return out
}

// stat is "median (min–max, n=N)", or the value alone for one, "–" for none.
func stat(vals []float64, digits int) string {
	if len(vals) == 0 {
		return "–"
	}
	s := slices.Clone(vals)
	slices.Sort(s)
	var med float64
	if n := len(s); n%2 == 1 {
		med = s[n/2]
	} else {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	f := func(v float64) string { return commas(fmt.Sprintf("%.*f", digits, v)) }
	if len(s) == 1 {
		return f(med)
	}
	return fmt.Sprintf("%s (%s–%s, n=%d)", f(med), f(s[0]), f(s[len(s)-1]), len(s))
}

// commas groups an integer part by thousands: 12345.6 → 12,345.6.
func commas(s string) string {
	intPart, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	for i := len(intPart) - 3; i > 0; i -= 3 {
		intPart = intPart[:i] + "," + intPart[i:]
	}
	if neg {
		intPart = "-" + intPart
	}
	if frac != "" {
		return intPart + "." + frac
	}
	return intPart
}
