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

// key is what a workload's rows are grouped by: the label, and what tells
// apart the several lines of one run (rota's baselines, flow control, a
// batch's size, a backlog's, fairness's mode) and the hog.
func (r record) key(workload string) string {
	k := r.str("label")
	if v := r.str("via"); v != "" && v != "inprocess" && workload != "clients" && r.str("workload") != "memory" {
		k += " " + v
	}
	// fanin's and batch's runs hold their plain drain beside the workflow;
	// the other workloads' labels say what ran.
	if w := r.str("workload"); w != workload && (workload == "fanin" || workload == "batch") {
		k += " " + w
	}
	if fc := r.str("flow_control"); fc != "" {
		k += " (" + fc + ")"
	}
	if workload == "batch" {
		if n, ok := r.num("jobs"); ok {
			k += " " + commas(fmt.Sprintf("%.0f", n))
		}
	}
	if n, ok := r.num("backlog"); ok {
		k += " " + commas(fmt.Sprintf("%.0f", n)) + " queued"
	}
	if m := r.str("mode"); m != "" {
		k += " " + m
	}
	if h, _ := r["hog"].(bool); h {
		k += " +hog"
	}
	return k
}

// brief is the run's main figures, for the progress lines.
func (r record) brief() string {
	f := func(k string) float64 { v, _ := r.num(k); return v }
	var s string
	switch {
	case r["jain_index"] != nil:
		s = fmt.Sprintf("Jain %.3f, small groups done at %.2f s", f("jain_index"), f("small_done_seconds"))
	case r["rss_mb"] != nil:
		s = fmt.Sprintf("RSS %.1f MB (peak %.1f)", f("rss_mb"), f("peak_rss_mb"))
	case r["us_per_job"] != nil:
		s = fmt.Sprintf("%.1f µs/job, %.1f CPU µs/job", f("us_per_job"), f("cpu_us_per_job"))
	case r["p50_ms"] != nil && r.str("workload") != "rate":
		s = fmt.Sprintf("enqueue→start p50 %.2f ms, p99 %.2f ms", f("p50_ms"), f("p99_ms"))
	default:
		s = fmt.Sprintf("%.0f jobs/s, %.1f CPU µs/job", f("jobs_per_sec"), f("cpu_us_per_job"))
	}
	if v, ok := r.num("ratio"); ok {
		s += fmt.Sprintf(", ratio %.2f", v)
	}
	if v, ok := r.num("hog_cpu_share"); ok {
		s += fmt.Sprintf(", hog %.2f of a core", v)
	}
	return s
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

// summarize reads dir's machine.json, load.log and the workloads' JSON
// lines and returns the markdown summary.
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
	recs := map[string][]record{}
	var all []record
	for _, w := range workloads {
		if recs[w], err = readRecords(filepath.Join(dir, w+".jsonl")); err != nil {
			return "", err
		}
		all = append(all, recs[w]...)
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
	for _, r := range all {
		if s := r.str("system"); s != "" && r.str("version") != "" {
			versions[s] = r.str("version")
		}
		if r.str("system") == "asynq" && r.str("store_version") != "" {
			versions["redis"] = r.str("store_version")
		}
	}
	for _, k := range []string{"river", "asynq", "bullmq", "redis"} {
		if v := versions[k]; v != "" {
			fmt.Fprintf(&b, "; %s %s", map[string]string{"river": "River", "asynq": "Asynq", "bullmq": "BullMQ", "redis": "Redis"}[k], v)
		}
	}
	if cv, ok := machine["client_versions"].(map[string]any); ok {
		for _, k := range []string{"python", "node"} {
			if v, ok := cv[k]; ok {
				fmt.Fprintf(&b, "; %s %v", map[string]string{"python": "Python", "node": "Node.js"}[k], v)
			}
		}
	}
	fmt.Fprintf(&b, ".\nFrom %s to %s.\n", get("started"), get("ended"))
	if v, ok := machine["postgres"]; ok {
		fmt.Fprintf(&b, "PostgreSQL %v.\n", v)
	}
	if sk, ok := machine["skipped"].(map[string]any); ok && len(sk) > 0 {
		keys := make([]string, 0, len(sk))
		for k := range sk {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteString("\nSkipped:\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "- %s: %v\n", k, sk[k])
		}
	}
	if load, err := os.ReadFile(filepath.Join(dir, "load.log")); err == nil {
		fmt.Fprintf(&b, "\nLoad average (1, 5, 15 min) and CPU pressure (some, avg10 avg60) before each round:\n\n```\n%s```\n", load)
	}
	b.WriteString("\nEach cell: the median of the rounds (min–max, n). \"By round\": a ratio taken within each round, between runs minutes apart, then its median.\n")

	if rs := recs["drain"]; len(rs) > 0 {
		fmt.Fprintf(&b, "\n## Drain: %s no-op jobs\n\n", get("jobs"))
		table(&b, "drain", rs, []column{
			{"jobs/s", field("jobs_per_sec"), 0},
			{"rota ÷ it, jobs/s by round", drainRatio, 2},
			{"CPU µs/job, process", field("cpu_us_per_job"), 1},
			{"CPU µs/job, database server", field("server_cpu_us_per_job"), 1},
			{"rota ÷ it, total CPU µs/job by round", drainCPURatio, 2},
			{"CPU pressure", field("cpu_pressure"), 2},
			{"load", field("load1"), 1},
		})
		b.WriteString("\n\"rota ÷ it\": rota's drain in process on the row's store (Asynq's Redis: rota on SQLite) in the same round; total CPU is the process's and the database server's.\n")
	}
	if rs := recs["steady"]; len(rs) > 0 {
		fmt.Fprintf(&b, "\n## Steady: %s jobs/s added one at a time for %s, enqueue→start\n\n", get("rate"), get("duration"))
		table(&b, "steady", rs, []column{
			{"p50 ms", field("p50_ms"), 2},
			{"p99 ms", field("p99_ms"), 2},
			{"rota ÷ it, p50 by round", steadyRatio("p50_ms"), 2},
			{"rota ÷ it, p99 by round", steadyRatio("p99_ms"), 2},
			{"+hog ÷ without, p50 by round", hogRatio("p50_ms"), 2},
			{"+hog ÷ without, p99 by round", hogRatio("p99_ms"), 2},
			{"→ completion p50 ms", field("finish_p50_ms"), 2},
			{"add call p99 ms", field("add_p99_ms"), 2},
			{"jobs/s", field("jobs_per_sec"), 0},
			{"hog's share of its core", field("hog_cpu_share"), 2},
			{"CPU pressure", field("cpu_pressure"), 2},
			{"load", field("load1"), 1},
		})
		b.WriteString("\n\"+hog\": the same system beside a busy loop pinned to one core, run next to the run without it (the order turning each round). \"rota ÷ it\": rota's run on the row's store (Asynq's Redis: SQLite), with or without the hog as the row, in the same round; below 1, rota's latency is lower.\n")
	}
	own := []column{
		{"jobs/s", field("jobs_per_sec"), 0},
		{"÷ its baseline, same run", field("ratio"), 2},
		{"CPU µs/job", field("cpu_us_per_job"), 1},
		{"DB CPU µs/job", field("server_cpu_us_per_job"), 1},
		{"CPU pressure", field("cpu_pressure"), 2},
		{"load", field("load1"), 1},
	}
	if rs := recs["rate"]; len(rs) > 0 {
		b.WriteString("\n## Flow control: a rate and a bound that do not bind, against the same drain without them; a rate that binds\n\n")
		table(&b, "rate", rs, append(slices.Clone(own[:2]),
			column{"late p50 ms", field("p50_ms"), 2}, column{"late p99 ms", field("p99_ms"), 2},
			column{"most in 1 s", field("most_in_a_second"), 0}, own[2], own[3], own[4], own[5]))
		fmt.Fprintf(&b, "\nThe drains are %s jobs; \"(rate 1000000/s)\" and \"(max_running 100000)\" are ÷ the drain without them, run just before in the same process. \"rate\" rows (rota bench rate, %s/s for %s): jobs/s is the rate achieved after the burst, ÷ the set rate; late is how long after its token a job started.\n", get("jobs"), get("rate_limit"), get("rate_duration"))
		baselines(&b, rs)
	}
	if rs := recs["fanin"]; len(rs) > 0 {
		fmt.Fprintf(&b, "\n## Fan-in: one job, %s after it, one after those, against a plain drain of as many\n\n", get("fanin_jobs"))
		table(&b, "fanin", rs, own)
		baselines(&b, rs)
	}
	if rs := recs["batch"]; len(rs) > 0 {
		fmt.Fprintf(&b, "\n## Batches with a callback (%s members), each against a plain drain of as many\n\n", get("batch_sizes"))
		table(&b, "batch", rs, own)
		baselines(&b, rs)
	}
	if rs := recs["clients"]; len(rs) > 0 {
		fmt.Fprintf(&b, "\n## Clients' workers: %s no-op jobs through one rota serve, %s slots each\n\n", get("jobs"), get("client_concurrency"))
		table(&b, "clients", rs, []column{
			{"jobs/s", field("jobs_per_sec"), 0},
			{"÷ Go remote worker, by round", clientRatio("jobs_per_sec"), 2},
			{"worker CPU µs/job", field("cpu_us_per_job"), 1},
			{"÷ Go remote worker, worker CPU by round", clientRatio("cpu_us_per_job"), 2},
			{"rota serve CPU µs/job", field("rota_server_cpu_us_per_job"), 1},
			{"DB CPU µs/job", field("server_cpu_us_per_job"), 1},
			{"CPU pressure", field("cpu_pressure"), 2},
			{"load", field("load1"), 1},
		})
		b.WriteString("\nA drain is timed from the worker process's start until the server counts every job completed; the Go remote worker (clients/godrain) runs first in each round, on the same store.\n")
	}
	if rs := recs["scale"]; len(rs) > 0 {
		scale(&b, rs, get)
	}
	return b.String(), nil
}

// column is one statistic of a table: its values over a group of rows
// (one a round), given every row of the workload.
type column struct {
	title  string
	vals   func(all, g []record) []float64
	digits int
}

// field is a column of a JSON field's values.
func field(name string) func(_, g []record) []float64 {
	return func(_, g []record) []float64 {
		var out []float64
		for _, r := range g {
			if v, ok := r.num(name); ok {
				out = append(out, v)
			}
		}
		return out
	}
}

// groupBy groups rs by key, in first-seen order; failed runs apart.
func groupBy(workload string, rs []record) (order []string, groups map[string][]record, failed []record) {
	groups = map[string][]record{}
	for _, r := range rs {
		if r.str("error") != "" {
			failed = append(failed, r)
			continue
		}
		k := r.key(workload)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	return order, groups, failed
}

func table(b *strings.Builder, workload string, rs []record, cols []column) {
	order, groups, failed := groupBy(workload, rs)
	// Columns no row has a value for are left out.
	var keep []column
	for _, c := range cols {
		for _, k := range order {
			if len(c.vals(rs, groups[k])) > 0 {
				keep = append(keep, c)
				break
			}
		}
	}
	b.WriteString("| run | system | store |")
	for _, c := range keep {
		b.WriteString(" " + c.title + " |")
	}
	b.WriteString("\n|---|---|---|" + strings.Repeat("---|", len(keep)) + "\n")
	for _, k := range order {
		g := groups[k]
		fmt.Fprintf(b, "| %s | %s | %s |", k, describe(g[0]), g[0].str("store"))
		for _, c := range keep {
			b.WriteString(" " + stat(c.vals(rs, g), c.digits) + " |")
		}
		b.WriteString("\n")
	}
	for _, r := range failed {
		name := r.str("label")
		if h, _ := r["hog"].(bool); h {
			name += " +hog"
		}
		fmt.Fprintf(b, "\nFailed: round %v, %s: %s\n", r["round"], name, r.str("error"))
	}
}

// describe names the system of a row.
func describe(r record) string {
	sys := r.str("system")
	switch v := r.str("via"); {
	case r.str("worker") != "":
		return map[string]string{"go-remote": "rota's Go remote worker", "python-threads": "Python client, Worker (threads)",
			"python-asyncio": "Python client, AsyncWorker", "typescript": "TypeScript client, Worker"}[r.str("worker")]
	case sys != "":
	case v == "raw-sql":
		sys = "raw SQL ceiling (rota bench's baseline)"
	case v == "http":
		sys = "rota, a remote worker over HTTP"
	default:
		sys = "rota"
	}
	return sys
}

// baselines says what each row's ratio is against, once per kind.
func baselines(b *strings.Builder, rs []record) {
	said := map[string]bool{}
	for _, r := range rs {
		if bl := r.str("baseline"); bl != "" && !said[r.str("workload")+bl] {
			said[r.str("workload")+bl] = true
			fmt.Fprintf(b, "\n%s: ÷ %s.", r.str("workload"), bl)
		}
	}
	if len(said) > 0 {
		b.WriteString("\n")
	}
}

// isRotaRecord says whether r is rota's own run, in process (not a peer,
// a baseline or a client's worker).
func isRotaRecord(r record) bool {
	return (r.str("system") == "" || r.str("system") == "rota") && r.str("worker") == "" &&
		(r.str("via") == "inprocess" || r.str("via") == "")
}

// sameStore is the store rota's row a peer's is set against: Asynq's
// Redis against rota's SQLite, the other store of one machine.
func sameStore(r record) string {
	if st := r.str("store"); st != "redis" {
		return st
	}
	return "sqlite"
}

// inRound finds the record of rs in r's round that match says is the
// one to set r against.
func inRound(rs []record, r record, match func(record) bool) (record, bool) {
	for _, o := range rs {
		if o.str("error") == "" && o["round"] == r["round"] && match(o) {
			return o, true
		}
	}
	return nil, false
}

// drainRatio is, for each round of g, rota's drain rate in process on g's
// store in that round divided by g's rate: how many times faster rota ran
// in the same round. Empty for rota's own rows.
func drainRatio(all, g []record) []float64 {
	if isRotaRecord(g[0]) || g[0].str("system") == "" {
		return nil
	}
	var out []float64
	for _, r := range g {
		v, ok := r.num("jobs_per_sec")
		o, found := inRound(all, r, func(o record) bool {
			return isRotaRecord(o) && o.str("workload") == "drain" && o.str("store") == sameStore(r)
		})
		if rv, rok := o.num("jobs_per_sec"); ok && found && rok && v > 0 {
			out = append(out, rv/v)
		}
	}
	return out
}

// drainCPURatio is, by round, rota's CPU per job (its process and the
// database server's) over g's.
func drainCPURatio(all, g []record) []float64 {
	if isRotaRecord(g[0]) || g[0].str("system") == "" {
		return nil
	}
	total := func(r record) float64 {
		a, _ := r.num("cpu_us_per_job")
		s, _ := r.num("server_cpu_us_per_job")
		return a + s
	}
	var out []float64
	for _, r := range g {
		o, found := inRound(all, r, func(o record) bool {
			return isRotaRecord(o) && o.str("workload") == "drain" && o.str("store") == sameStore(r)
		})
		if found && total(r) > 0 && total(o) > 0 {
			out = append(out, total(o)/total(r))
		}
	}
	return out
}

// steadyRatio is, by round, rota's figure (with the hog or without, as
// g's) over g's, on g's store.
func steadyRatio(name string) func(all, g []record) []float64 {
	return func(all, g []record) []float64 {
		if isRotaRecord(g[0]) {
			return nil
		}
		var out []float64
		for _, r := range g {
			v, ok := r.num(name)
			o, found := inRound(all, r, func(o record) bool {
				return isRotaRecord(o) && o.str("store") == sameStore(r) && o["hog"] == r["hog"]
			})
			if rv, rok := o.num(name); ok && found && rok && v > 0 {
				out = append(out, rv/v)
			}
		}
		return out
	}
}

// hogRatio is, by round, g's figure beside the hog over the same
// system's without it.
func hogRatio(name string) func(all, g []record) []float64 {
	return func(all, g []record) []float64 {
		if h, _ := g[0]["hog"].(bool); !h {
			return nil
		}
		var out []float64
		for _, r := range g {
			v, ok := r.num(name)
			o, found := inRound(all, r, func(o record) bool {
				return o.str("label") == r.str("label") && o["hog"] == false && o.str("via") == r.str("via")
			})
			if ov, ook := o.num(name); ok && found && ook && ov > 0 {
				out = append(out, v/ov)
			}
		}
		return out
	}
}

// clientRatio is, by round, g's figure over the Go remote worker's on the
// same store.
func clientRatio(name string) func(all, g []record) []float64 {
	return func(all, g []record) []float64 {
		if g[0].str("worker") == "go-remote" {
			return nil
		}
		var out []float64
		for _, r := range g {
			v, ok := r.num(name)
			o, found := inRound(all, r, func(o record) bool {
				return o.str("worker") == "go-remote" && o.str("store") == r.str("store")
			})
			if gv, gok := o.num(name); ok && found && gok && gv > 0 {
				out = append(out, v/gv)
			}
		}
		return out
	}
}

// scale prints the scale checks: their tables, and each check against
// the figure issue 30 keeps.
func scale(b *strings.Builder, rs []record, get func(string) string) {
	by := func(w string) []record {
		var out []record
		for _, r := range rs {
			if r.str("workload") == w || (r.str("error") != "" && strings.HasSuffix(r.str("label"), "-"+w)) {
				out = append(out, r)
			}
		}
		return out
	}
	fmt.Fprintf(b, "\n## Scale: backlog %s queued (%s accepted and finished at each)\n\n", get("backlog_sizes"), get("backlog_measure"))
	table(b, "scale", by("backlog"), []column{
		{"µs/job", field("us_per_job"), 1},
		{"CPU µs/job", field("cpu_us_per_job"), 1},
		{"÷ the smallest backlog, CPU µs/job", field("ratio"), 2},
		{"accept µs/call", field("accept_call_us"), 0},
		{"DB CPU µs/job", field("server_cpu_us_per_job"), 1},
		{"CPU pressure", field("cpu_pressure"), 2},
	})
	fmt.Fprintf(b, "\n## Scale: memory of rota serve with %s jobs queued\n\n", get("memory_jobs"))
	table(b, "scale", by("memory"), []column{
		{"RSS MB", field("rss_mb"), 1}, {"peak MB", field("peak_rss_mb"), 1}, {"before any request MB", field("idle_rss_mb"), 1},
	})
	fmt.Fprintf(b, "\n## Scale: the drain over HTTP against in process, %s jobs\n\n", get("jobs"))
	var drains []record
	for _, r := range rs {
		if r.str("workload") == "drain" || (r.str("error") != "" && strings.HasSuffix(r.str("label"), "-http")) {
			drains = append(drains, r)
		}
	}
	table(b, "scale", drains, []column{
		{"jobs/s", field("jobs_per_sec"), 0}, {"÷ its baseline, same run", field("ratio"), 2},
		{"CPU µs/job", field("cpu_us_per_job"), 1}, {"DB CPU µs/job", field("server_cpu_us_per_job"), 1},
		{"CPU pressure", field("cpu_pressure"), 2},
	})
	b.WriteString("\nThe HTTP row's ratio is ÷ the in-process drain of the same run; the in-process row's, ÷ the raw SQL ceiling.\n")
	f := get("fairness")
	fmt.Fprintf(b, "\n## Scale: fairness, one flooding group against many small ones (%s)\n\n", strings.TrimPrefix(f, "map"))
	table(b, "scale", by("fairness"), []column{
		{"jobs/s", field("jobs_per_sec"), 0},
		{"small groups done at s", field("small_done_seconds"), 2},
		{"big group done then", field("big_done_fraction_when_small_done"), 3},
		{"Jain (all backlogged)", field("jain_index"), 3},
		{"big group's share", field("big_share_while_backlogged"), 3},
	})

	// The checks, against what issue 30 keeps.
	b.WriteString("\nChecks (issue 30 keeps them):\n\n")
	for _, st := range []string{"sqlite", "postgres"} {
		var flat, rss, httpRatio, jain []float64
		var largest float64
		for _, r := range rs {
			if r.str("store") != st || r.str("error") != "" {
				continue
			}
			switch r.str("workload") {
			case "backlog":
				if n, _ := r.num("backlog"); n > largest {
					largest, flat = n, nil
				}
				if n, _ := r.num("backlog"); n == largest {
					if v, ok := r.num("ratio"); ok {
						flat = append(flat, v)
					}
				}
			case "memory":
				if v, ok := r.num("rss_mb"); ok {
					rss = append(rss, v)
				}
			case "drain":
				if v, ok := r.num("ratio"); ok && r.str("via") == "http" {
					httpRatio = append(httpRatio, v)
				}
			case "fairness":
				if v, ok := r.num("jain_index"); ok && r.str("mode") == "rota" {
					jain = append(jain, v)
				}
			}
		}
		if len(flat)+len(rss)+len(httpRatio)+len(jain) == 0 {
			continue
		}
		fmt.Fprintf(b, "- %s:", st)
		if len(flat) > 0 {
			fmt.Fprintf(b, " backlog %s ÷ the smallest, CPU µs/job %s (%s);", commas(fmt.Sprintf("%.0f", largest)),
				stat(flat, 2), verdict(slices.Max(flat) <= 1.3, "flat: ≤ 1.3"))
		}
		if len(rss) > 0 {
			fmt.Fprintf(b, " RSS %s MB (%s);", stat(rss, 1), verdict(slices.Max(rss) < 100, "< 100 MB"))
		}
		if len(httpRatio) > 0 {
			fmt.Fprintf(b, " HTTP ÷ in process %s (%s);", stat(httpRatio, 2), verdict(slices.Min(httpRatio) >= 0.8, "≥ 0.8"))
		}
		if len(jain) > 0 {
			fmt.Fprintf(b, " Jain's index with groups %s (FIFO's in the table)", stat(jain, 3))
		}
		b.WriteString("\n")
	}
}

func verdict(ok bool, goal string) string {
	if ok {
		return "met, " + goal
	}
	return "NOT met, " + goal
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
