package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"math"
	"slices"
	"time"
)

// Moving a deployment between stores (rota copy): a store exports all it
// holds as a stream of CopyBatches, in one snapshot, and another loads the
// stream in one transaction. The batches are store-neutral, so every pair
// of stores copies alike, and CopySummary checks the copy the same way on
// both sides: counts by type, group and state, and a checksum of every
// job's every column.

// CopyJob is a job with every column a store keeps: the Job that reads
// return, and the columns that only the store's own transitions use.
type CopyJob struct {
	Job
	// LeaseTimeout is the lease length a heartbeat extends by (0: none
	// set).
	LeaseTimeout time.Duration
	// ResubmitAt and NextData are the run time and data that a resubmit
	// of the running job asked for.
	ResubmitAt time.Time
	NextData   []byte
}

// CopyType is a type's row: its settings and its virtual clock.
type CopyType struct {
	Name                       string
	LeaseTimeout               time.Duration
	UpdatedAt                  time.Time
	BandsHigh, BandsLow        int64
	GroupMaxRunning            int64
	MaxRunning                 int64
	VClock                     float64
	Paused                     bool
	Retention, FailedRetention time.Duration
	Timeout                    time.Duration // the default run timeout
	// RateN jobs per RatePer, and Burst: the type's rate (TypeConfig.Rate).
	// Its bucket's tokens are not carried: it starts full.
	RateN, Burst int64
	RatePer      time.Duration
}

// CopyGroup is a group's place in its type's round robin. Its counts are
// not carried: the loading store counts its jobs.
type CopyGroup struct {
	Type, Group string
	Turn        float64
	BandCount   int64
}

// CopyGroupConfig is a group's settings, for one type or ("") all.
type CopyGroupConfig struct {
	Group, Type string
	MaxRunning  int64
	Weight      float64
	Paused      bool
	// RateN jobs per RatePer, and Burst: the group's rate; its bucket
	// starts full.
	RateN, Burst int64
	RatePer      time.Duration
}

// CopyToken is a named API token, its secret still hashed.
type CopyToken struct {
	Name          string
	Hash          []byte
	Groups, Types []string
	ReadOnly      bool
	CreatedAt     time.Time
}

// CopyBatch is one piece of an export. The first carries everything but
// the jobs (and TotalJobs, NextID); the others carry jobs, in id order.
type CopyBatch struct {
	Types       []CopyType
	GroupConfig []CopyGroupConfig
	Groups      []CopyGroup
	Tokens      []CopyToken
	// NextID is the id the store would give its next job: past every id
	// it ever gave, so that the ids of removed jobs stay unused.
	NextID int64
	// TotalJobs is how many jobs the export holds.
	TotalJobs int
	Jobs      []CopyJob
}

// Copier is a store that exports and loads its whole content. Both
// stores are. Neither is meant for a store in use: copy while the servers
// are stopped.
type Copier interface {
	// Export calls fn with the store's content from one snapshot: a
	// batch of settings, then the jobs in id order, at most size per
	// batch. fn may keep nothing of a batch after it returns.
	Export(ctx context.Context, size int, fn func(*CopyBatch) error) error
	// BeginLoad starts loading an export in one transaction. It refuses
	// a store that holds jobs, types, group settings or tokens, with an
	// error that matches ErrNotEmpty, unless replace is set: then it
	// deletes them all first (in the same transaction).
	BeginLoad(ctx context.Context, replace bool) (Loader, error)
}

// Loader is a load in progress: Write the batches of an export in their
// order, then Commit, or Rollback to leave the store as it was.
type Loader interface {
	Write(ctx context.Context, b *CopyBatch) error
	// Commit counts the groups' jobs, sets the next id, and commits.
	Commit(ctx context.Context) error
	Rollback() error
}

// ErrNotEmpty is returned by BeginLoad when the store holds something
// and replace was not asked for.
var ErrNotEmpty = errors.New("the store is not empty")

// ErrCopyMismatch is returned by Copy when the destination, read back
// after the copy, does not hold what the source held.
var ErrCopyMismatch = errors.New("the copy does not match its source")

// CountKey is a (type, group, state) whose jobs CopySummary counts.
type CountKey struct {
	Type, Group string
	State       State
}

// CopySummary is what a copy is checked by: what each table held, the
// jobs counted by type, group and state, and checksums of the jobs and of
// the rest.
type CopySummary struct {
	Jobs, Types, Groups, GroupConfig, Tokens int
	ByState                                  map[State]int
	Counts                                   map[CountKey]int
	NextID                                   int64
	jobs, settings                           hash.Hash
}

// NewCopySummary returns an empty summary, ready to Add batches to.
func NewCopySummary() *CopySummary {
	return &CopySummary{ByState: map[State]int{}, Counts: map[CountKey]int{}, jobs: sha256.New(), settings: sha256.New()}
}

// Add counts a batch and adds it to the checksums. Batches must come in
// export order (jobs by id).
func (s *CopySummary) Add(b *CopyBatch) {
	s.Types += len(b.Types)
	s.Groups += len(b.Groups)
	s.GroupConfig += len(b.GroupConfig)
	s.Tokens += len(b.Tokens)
	if b.NextID != 0 {
		s.NextID = b.NextID
	}
	var e enc
	// Settings come in the order the store keeps them; sorted here, so
	// that two stores' orders agree.
	types := slices.Clone(b.Types)
	slices.SortFunc(types, func(a, b CopyType) int { return cmp.Compare(a.Name, b.Name) })
	for _, t := range types {
		e = e.str("type").str(t.Name).i(int64(t.LeaseTimeout)).t(t.UpdatedAt).i(t.BandsHigh).i(t.BandsLow).i(t.GroupMaxRunning).
			f(t.VClock).b(t.Paused).i(int64(t.Retention)).i(int64(t.FailedRetention)).i(t.MaxRunning).i(int64(t.Timeout)).
			i(t.RateN).i(int64(t.RatePer)).i(t.Burst)
	}
	groups := slices.Clone(b.Groups)
	slices.SortFunc(groups, func(a, b CopyGroup) int { return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Group, b.Group)) })
	for _, g := range groups {
		e = e.str("group").str(g.Type).str(g.Group).f(g.Turn).i(g.BandCount)
	}
	gcs := slices.Clone(b.GroupConfig)
	slices.SortFunc(gcs, func(a, b CopyGroupConfig) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Type, b.Type))
	})
	for _, g := range gcs {
		e = e.str("config").str(g.Group).str(g.Type).i(g.MaxRunning).f(g.Weight).b(g.Paused).i(g.RateN).i(int64(g.RatePer)).i(g.Burst)
	}
	tokens := slices.Clone(b.Tokens)
	slices.SortFunc(tokens, func(a, b CopyToken) int { return cmp.Compare(a.Name, b.Name) })
	for _, t := range tokens {
		e = e.str("token").str(t.Name).bytes(t.Hash).strs(t.Groups).strs(t.Types).b(t.ReadOnly).t(t.CreatedAt)
	}
	s.settings.Write(e)
	for i := range b.Jobs {
		j := &b.Jobs[i]
		s.Jobs++
		s.ByState[j.State]++
		s.Counts[CountKey{j.Type, j.Group, j.State}]++
		e = hashJob(e[:0], j)
		s.jobs.Write(e)
	}
}

// hashJob appends the canonical encoding of every column of j: what the
// job checksum is made of.
func hashJob(e enc, j *CopyJob) enc {
	e = e.i(j.ID).str(j.Type).str(j.Key).str(j.Group).i(int64(j.Priority)).i(int64(j.State)).t(j.RunAt).bytes(j.Data).
		i(int64(j.Attempt)).i(int64(j.MaxAttempts)).i(int64(j.BackoffBase)).i(int64(j.BackoffMax)).
		str(j.Token).str(j.Worker).t(j.LeaseUntil).b(j.CancelRequested).b(j.Resubmit).f(j.Progress).
		str(j.LastError).i(int64(len(j.Errors)))
	for _, a := range j.Errors {
		e = e.i(int64(a.Attempt)).t(a.At).str(a.Error)
	}
	e = e.bytes(j.Result).bytes(metaJSON(j.Meta)).str(j.Schedule).i(int64(j.Missed)).t(j.Slot).i(int64(j.RetryAfter)).
		i(j.Parent).b(j.HasChildren).i(j.BedrockID).t(j.CreatedAt).t(j.StartedAt).t(j.PrevStartedAt).t(j.FinishedAt).
		t(j.UpdatedAt).i(int64(j.LeaseTimeout)).t(j.ResubmitAt).bytes(j.NextData).i(int64(j.Timeout)).t(j.ExpiresAt).b(j.Expired).i(int64(j.UniqueFor)).i(int64(j.Debounce)).
		b(j.HasDeps).i(int64(j.DepPolicy)).i(j.Batch)
	return e
}

// metaJSON is metadata as the stores keep it (a JSON object, nil for
// nil), so that the checksum of a job is that of its column.
func metaJSON(m map[string]string) []byte {
	if m == nil {
		return nil
	}
	b, _ := json.Marshal(m) // a map of strings always encodes
	return b
}

// JobsChecksum is the SHA-256 of every column of every job, in id order.
func (s *CopySummary) JobsChecksum() string { return hex.EncodeToString(s.jobs.Sum(nil)) }

// SettingsChecksum is the SHA-256 of the types, groups, group settings
// and tokens.
func (s *CopySummary) SettingsChecksum() string { return hex.EncodeToString(s.settings.Sum(nil)) }

// Diff says how other differs from s, one line per difference (at most
// a few counts); none when they match.
func (s *CopySummary) Diff(other *CopySummary) []string {
	var out []string
	add := func(what string, a, b any) {
		if a != b {
			out = append(out, fmt.Sprintf("%s: %v in the source, %v in the copy", what, a, b))
		}
	}
	add("jobs", s.Jobs, other.Jobs)
	add("types", s.Types, other.Types)
	add("groups", s.Groups, other.Groups)
	add("group settings", s.GroupConfig, other.GroupConfig)
	add("tokens", s.Tokens, other.Tokens)
	add("next job id", s.NextID, other.NextID)
	keys := make([]CountKey, 0, len(s.Counts))
	for k := range s.Counts {
		keys = append(keys, k)
	}
	for k := range other.Counts {
		if _, ok := s.Counts[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b CountKey) int {
		return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Group, b.Group), cmp.Compare(a.State, b.State))
	})
	shown := 0
	for _, k := range keys {
		if s.Counts[k] != other.Counts[k] && shown < 5 {
			shown++
			add(fmt.Sprintf("%s jobs of type %q in group %q", k.State, k.Type, k.Group), s.Counts[k], other.Counts[k])
		}
	}
	add("checksum of the jobs", s.JobsChecksum(), other.JobsChecksum())
	add("checksum of the types, groups and tokens", s.SettingsChecksum(), other.SettingsChecksum())
	return out
}

// CopyOptions tune Copy.
type CopyOptions struct {
	// BatchSize is the jobs per batch; zero means 2000.
	BatchSize int
	// Replace empties the destination first; without it, a destination
	// that holds anything is refused (ErrNotEmpty).
	Replace bool
	// Progress, when set, is told of the jobs copied so far, after each
	// batch, and then of the jobs read back by the check.
	Progress func(phase string, done, total int)
}

// CopyReport is what Copy did.
type CopyReport struct {
	Source, Copy *CopySummary
	Copied       time.Duration // the export and load
	Checked      time.Duration // the read back
}

// Copy copies everything src holds into dst, in one transaction of dst,
// then reads dst back and checks it against what was read from src. A
// failure before the commit leaves dst as it was; a mismatch found by the
// check returns an error matching ErrCopyMismatch (the copy is then in
// dst, and should not be used).
func Copy(ctx context.Context, src, dst Copier, opt CopyOptions) (CopyReport, error) {
	if opt.BatchSize <= 0 {
		opt.BatchSize = 2000
	}
	progress := opt.Progress
	if progress == nil {
		progress = func(string, int, int) {}
	}
	rep := CopyReport{Source: NewCopySummary(), Copy: NewCopySummary()}
	start := time.Now()
	load, err := dst.BeginLoad(ctx, opt.Replace)
	if err != nil {
		return rep, err
	}
	total := 0
	err = src.Export(ctx, opt.BatchSize, func(b *CopyBatch) error {
		if b.TotalJobs > 0 {
			total = b.TotalJobs
		}
		rep.Source.Add(b)
		if err := load.Write(ctx, b); err != nil {
			return err
		}
		progress("copy", rep.Source.Jobs, total)
		return nil
	})
	if err == nil {
		err = load.Commit(ctx)
	}
	if err != nil {
		load.Rollback()
		return rep, err
	}
	rep.Copied = time.Since(start)
	start = time.Now()
	err = dst.Export(ctx, opt.BatchSize, func(b *CopyBatch) error {
		rep.Copy.Add(b)
		progress("check", rep.Copy.Jobs, total)
		return nil
	})
	rep.Checked = time.Since(start)
	if err != nil {
		return rep, fmt.Errorf("read the copy back: %w", err)
	}
	if diff := rep.Source.Diff(rep.Copy); len(diff) > 0 {
		return rep, fmt.Errorf("%w: %s", ErrCopyMismatch, diff)
	}
	return rep, nil
}

// enc is a canonical encoding: fixed-width numbers, length-prefixed
// strings, times as Unix microseconds (what both stores keep; the zero
// time is its own value).
type enc []byte

func (e enc) i(v int64) enc { return binary.BigEndian.AppendUint64(e, uint64(v)) }

func (e enc) f(v float64) enc { return binary.BigEndian.AppendUint64(e, math.Float64bits(v)) }

func (e enc) b(v bool) enc {
	if v {
		return append(e, 1)
	}
	return append(e, 0)
}

func (e enc) str(s string) enc { return append(e.i(int64(len(s))), s...) }

func (e enc) bytes(v []byte) enc { return append(e.i(int64(len(v))), v...) }

func (e enc) strs(v []string) enc {
	e = e.i(int64(len(v)))
	for _, s := range v {
		e = e.str(s)
	}
	return e
}

func (e enc) t(v time.Time) enc {
	if v.IsZero() {
		return e.b(false)
	}
	return e.b(true).i(v.UnixMicro())
}
