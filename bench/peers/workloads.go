package main

// The workloads compare knows, the systems (labels) of each in the order
// they run within a round, and each run's command.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// workloads, in the order compare runs them.
var workloads = []string{"drain", "steady", "rate", "fanin", "batch", "clients", "scale"}

// system is one label of a workload: a program run on one store.
type system struct {
	label string
	store string // sqlite, postgres or redis; postgres needs -pg
	// tool is what the run needs besides Go and rota ("python", "node",
	// "bullmq": Node.js and the npm packages of bullmq/); without it the
	// label is skipped with a message.
	tool string
}

// systems lists each workload's labels, in the order they run in a round.
var systems = map[string][]system{
	"drain": {
		{"rota-sqlite", "sqlite", ""}, {"rota-sqlite-http", "sqlite", ""}, {"river-sqlite", "sqlite", ""},
		{"asynq", "redis", ""}, {"bullmq", "redis", "bullmq"},
		{"rota-pg", "postgres", ""}, {"river-pg-100", "postgres", ""}, {"river-pg-1000", "postgres", ""},
	},
	"steady": {
		{"rota-sqlite", "sqlite", ""}, {"river-sqlite", "sqlite", ""}, {"asynq-1ms", "redis", ""},
		{"bullmq", "redis", "bullmq"}, {"rota-pg", "postgres", ""}, {"river-pg-pool20", "postgres", ""},
	},
	// Flow control: a drain with a rate, and with a bound on running
	// jobs, neither binding, each after the same drain without them in the
	// same process; and a rate that binds (rota bench rate).
	"rate": {
		{"rota-sqlite", "sqlite", ""}, {"rota-sqlite-max-running", "sqlite", ""}, {"rota-sqlite-rate-limited", "sqlite", ""},
		{"rota-pg", "postgres", ""}, {"rota-pg-max-running", "postgres", ""}, {"rota-pg-rate-limited", "postgres", ""},
	},
	"fanin": {{"rota-sqlite", "sqlite", ""}, {"rota-pg", "postgres", ""}},
	"batch": {{"rota-sqlite", "sqlite", ""}, {"rota-pg", "postgres", ""}},
	// The clients' workers against one `rota serve`, the Go remote worker
	// first: the baseline of the others in the same round.
	"clients": {
		{"go-remote-sqlite", "sqlite", ""}, {"python-threads-sqlite", "sqlite", "python"},
		{"python-asyncio-sqlite", "sqlite", "python"}, {"typescript-sqlite", "sqlite", "node"},
		{"go-remote-pg", "postgres", ""}, {"python-threads-pg", "postgres", "python"},
		{"python-asyncio-pg", "postgres", "python"}, {"typescript-pg", "postgres", "node"},
	},
	// What issue 30 keeps: backlog cost flat, memory with 1M queued, the
	// HTTP drain against in process, fairness.
	"scale": {
		{"rota-sqlite-backlog", "sqlite", ""}, {"rota-sqlite-memory", "sqlite", ""},
		{"rota-sqlite-http", "sqlite", ""}, {"rota-sqlite-fairness", "sqlite", ""},
		{"rota-pg-backlog", "postgres", ""}, {"rota-pg-memory", "postgres", ""},
		{"rota-pg-http", "postgres", ""}, {"rota-pg-fairness", "postgres", ""},
	},
}

// lookup finds label in any workload.
func lookup(label string) (system, bool) {
	for _, w := range workloads {
		for _, s := range systems[w] {
			if s.label == label {
				return s, true
			}
		}
	}
	return system{}, false
}

// allLabels is every label, once, for messages.
func allLabels() []string {
	var out []string
	for _, w := range workloads {
		for _, s := range systems[w] {
			if !slices.Contains(out, s.label) {
				out = append(out, s.label)
			}
		}
	}
	return out
}

// isRota says whether label's runs write rota's schema on PostgreSQL
// (dropped before each, as a fresh database would be).
func isRota(label string) bool {
	return strings.HasPrefix(label, "rota-") || strings.HasSuffix(label, "-pg") && !strings.HasPrefix(label, "river")
}

// command is the program and arguments of label's run of workload.
func (h *harness) command(workload, label string) (string, []string) {
	c := h.c
	n := strconv.Itoa(c.jobs)
	sqlite := []string{"--store", "sqlite", "--dir", h.work, "--json"}
	pg := []string{"--store", "postgres", "--dsn", c.pgDSN, "--json"}
	on := func(store string) []string {
		if store == "postgres" {
			return pg
		}
		return sqlite
	}
	rota := func(store string, args ...string) (string, []string) {
		return h.rota, append(append([]string{"bench"}, args...), on(store)...)
	}
	st, _ := lookup(label)
	switch workload {
	case "drain":
		switch label {
		case "rota-sqlite", "rota-pg":
			return rota(st.store, "drain", "--jobs", n)
		case "rota-sqlite-http":
			return rota(st.store, "drain", "--via", "http", "--no-baseline", "--jobs", n)
		case "river-pg-100":
			return h.self, []string{"river-pg", "-dsn", c.pgDSN, "-n", n, "-workers", "100"}
		case "river-pg-1000":
			return h.self, []string{"river-pg", "-dsn", c.pgDSN, "-n", n, "-workers", "1000"}
		case "river-sqlite":
			return h.self, []string{"river-sqlite", "-dir", h.work, "-n", n, "-workers", "100"}
		case "asynq":
			return h.self, []string{"asynq", "-redis", h.redis, "-n", n, "-concurrency", "100"}
		case "bullmq":
			return c.node, []string{h.bullmq, "-redis", h.redis, "-mode", "drain", "-n", n, "-concurrency", "100"}
		}
	case "steady":
		steady := []string{"--rate", fmt.Sprint(c.rate), "--duration", c.duration.String(), "--warmup", c.warmup.String()}
		peerSteady := []string{"-mode", "steady", "-rate", fmt.Sprint(c.rate), "-duration", c.duration.String(), "-warmup", c.warmup.String()}
		switch label {
		case "rota-sqlite", "rota-pg":
			return rota(st.store, append([]string{"steady"}, steady...)...)
		case "river-pg-pool20":
			return h.self, append([]string{"river-pg", "-dsn", c.pgDSN, "-workers", "100", "-pool", "20"}, peerSteady...)
		case "river-sqlite":
			return h.self, append([]string{"river-sqlite", "-dir", h.work, "-workers", "100"}, peerSteady...)
		case "asynq-1ms":
			return h.self, append([]string{"asynq", "-redis", h.redis, "-concurrency", "100", "-check-interval", "1ms"}, peerSteady...)
		case "bullmq":
			return c.node, append([]string{h.bullmq, "-redis", h.redis, "-concurrency", "100"}, peerSteady...)
		}
	case "rate":
		switch label {
		case "rota-sqlite", "rota-pg":
			return rota(st.store, "drain", "--jobs", n, "--rate", "1000000")
		case "rota-sqlite-max-running", "rota-pg-max-running":
			return rota(st.store, "drain", "--jobs", n, "--max-running", "100000")
		case "rota-sqlite-rate-limited", "rota-pg-rate-limited":
			nodes := "1"
			if st.store == "postgres" {
				nodes = "2" // nodes of their own on one database share the rate
			}
			return rota(st.store, "rate", "--rate", strconv.Itoa(c.rateLimit), "--duration", c.rateDuration.String(), "--nodes", nodes)
		}
	case "fanin":
		return rota(st.store, "fanin", "--jobs", strconv.Itoa(c.faninJobs))
	case "batch":
		return rota(st.store, "batch", "--sizes", c.batchSizes)
	case "clients":
		worker, _ := strings.CutSuffix(strings.TrimSuffix(label, "-sqlite"), "-pg")
		spec := "sqlite"
		if st.store == "postgres" {
			spec = c.pgDSN
		}
		return h.self, []string{"client-drain", "-worker", worker, "-store", spec, "-n", n,
			"-concurrency", strconv.Itoa(c.clientConcurrency), "-rota", h.rota, "-godrain", h.godrain,
			"-repo", h.repo, "-python", c.python, "-node", c.node, "-dir", h.work}
	case "scale":
		switch strings.TrimPrefix(strings.TrimPrefix(label, "rota-sqlite-"), "rota-pg-") {
		case "backlog":
			return rota(st.store, "backlog", "--sizes", c.backlogSizes, "--measure", strconv.Itoa(c.backlogMeasure))
		case "memory":
			return rota(st.store, "memory", "--jobs", strconv.Itoa(c.memoryJobs), "--work", strconv.Itoa(min(20_000, c.memoryJobs/10)))
		case "http":
			return rota(st.store, "drain", "--via", "http", "--jobs", n)
		case "fairness":
			f := c.fairness
			return rota(st.store, "fairness", "--big", strconv.Itoa(f[0]), "--small", strconv.Itoa(f[1]),
				"--small-jobs", strconv.Itoa(f[2]), "--workers", strconv.Itoa(f[3]))
		}
	}
	panic("peers: no command for " + workload + " " + label)
}
