package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/rotajobs/rota/internal/engine"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/internal/rules/fair"
	"github.com/rotajobs/rota/store"
)

// typeConfig is a type's settings as the store caches them.
type typeConfig struct {
	lease           time.Duration // 0: the default
	bands           store.Bands
	groupMaxRunning int
	maxRunning      int // the bound on the whole type's running jobs; 0: none
	rate            store.Rate
	burst           int
	paused          bool
	retention       time.Duration // 0: the default
	failedRetention time.Duration // 0: until removed
	timeout         time.Duration // the default run timeout; 0: none
}

type groupKey struct{ grp, typ string }

// bucketKey names a rate's bucket: a type's ({typ: type}), a group's for a
// type ({true, group, type}) or for all types ({true, group, ""}).
type bucketKey struct {
	group    bool
	grp, typ string
}

func (s *Store) loadConfig() error {
	types, err := scanTypeConfigs(s.reader.Query(stmt("type_configs")))
	if err != nil {
		return fmt.Errorf("sqlite: load types: %w", err)
	}
	s.types = types
	groups, err := scanGroupConfigs(s.reader.Query(stmt("group_configs")))
	if err != nil {
		return fmt.Errorf("sqlite: load group settings: %w", err)
	}
	s.groups = groups
	return nil
}

// scanTypeConfigs reads the rows of type_configs.
func scanTypeConfigs(rows *sql.Rows, err error) (map[string]typeConfig, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]typeConfig{}
	for rows.Next() {
		var name string
		var lt, ret, fret, timeout, per int64
		var c typeConfig
		if err := rows.Scan(&name, &lt, &c.bands.High, &c.bands.Low, &c.groupMaxRunning, &c.paused, &ret, &fret, &c.maxRunning, &timeout,
			&c.rate.N, &per, &c.burst); err != nil {
			return nil, err
		}
		c.lease = time.Duration(lt) * time.Microsecond
		c.rate.Per = time.Duration(per) * time.Microsecond
		c.retention = time.Duration(ret) * time.Microsecond
		c.failedRetention = time.Duration(fret) * time.Microsecond
		c.timeout = time.Duration(timeout) * time.Microsecond
		out[name] = c
	}
	return out, rows.Err()
}

// scanGroupConfigs reads the rows of group_configs.
func scanGroupConfigs(rows *sql.Rows, err error) (map[groupKey]store.GroupConfig, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[groupKey]store.GroupConfig{}
	for rows.Next() {
		var c store.GroupConfig
		var per int64
		if err := rows.Scan(&c.Group, &c.Type, &c.MaxRunning, &c.Weight, &c.Paused, &c.Rate.N, &per, &c.Burst); err != nil {
			return nil, err
		}
		c.Rate.Per = time.Duration(per) * time.Microsecond
		out[groupKey{c.Group, c.Type}] = c
	}
	return out, rows.Err()
}

// settings is c as store.TypeConfig, for type typ.
func (c typeConfig) settings(typ string) store.TypeConfig {
	return store.TypeConfig{Type: typ, LeaseTimeout: c.lease, Bands: c.bands, GroupMaxRunning: c.groupMaxRunning, MaxRunning: c.maxRunning,
		Paused: c.paused, Retention: c.retention, FailedRetention: c.failedRetention, Timeout: c.timeout, Rate: c.rate, Burst: c.burst}
}

func (s *Store) typeConfig(typ string) typeConfig {
	s.typesMu.RLock()
	defer s.typesMu.RUnlock()
	return s.types[typ]
}

func (s *Store) leaseFor(typ string, override time.Duration) time.Duration {
	if override > 0 {
		return override
	}
	if d := s.typeConfig(typ).lease; d > 0 {
		return d
	}
	return store.DefaultLeaseTimeout
}

// applyGroupConfig sets g's weight and bounds from the group settings
// and the type's, reading its running jobs across types when a
// cross-type bound applies (once per accept: cross holds them).
func (s *Store) applyGroupConfig(w *txn, g *fair.Group, tc typeConfig, cross map[string]*fair.Bound) error {
	s.typesMu.RLock()
	own, hasOwn := s.groups[groupKey{g.Name, g.Type}]
	all, hasAll := s.groups[groupKey{g.Name, ""}]
	s.typesMu.RUnlock()
	g.Weight = 1
	switch {
	case hasOwn && own.Weight > 0:
		g.Weight = own.Weight
	case hasAll && all.Weight > 0:
		g.Weight = all.Weight
	}
	g.Paused = g.Paused || (hasOwn && own.Paused) || (hasAll && all.Paused)
	g.Limit = int64(tc.groupMaxRunning)
	if hasOwn && own.MaxRunning > 0 && (g.Limit == 0 || int64(own.MaxRunning) < g.Limit) {
		g.Limit = int64(own.MaxRunning)
	}
	if hasAll && all.MaxRunning > 0 {
		b, ok := cross[g.Name]
		if !ok {
			b = &fair.Bound{Max: int64(all.MaxRunning), Exact: true}
			if err := w.row("group_running", g.Name).Scan(&b.Running); err != nil {
				return fmt.Errorf("sqlite: accept: group %q: %w", g.Name, err)
			}
			cross[g.Name] = b
		}
		g.Cross = b
	}
	var err error
	if g.TypeRate, err = w.openBucket(bucketKey{typ: g.Type}, tc.rate, tc.burst); err != nil {
		return err
	}
	if hasOwn {
		if g.Rate, err = w.openBucket(bucketKey{true, g.Name, g.Type}, own.Rate, own.Burst); err != nil {
			return err
		}
	}
	if hasAll {
		if g.CrossRate, err = w.openBucket(bucketKey{true, g.Name, ""}, all.Rate, all.Burst); err != nil {
			return err
		}
	}
	return nil
}

// openBucket reads the token bucket of a rate (none: nil), once per
// accept: the accept's groups share it (w.buckets). k is a type's rate
// or a group's.
func (w *txn) openBucket(k bucketKey, rate store.Rate, burst int) (*fair.Bucket, error) {
	r, ok := fair.RateOf(rate, burst)
	if !ok {
		return nil, nil
	}
	if b := w.buckets[k]; b != nil {
		return b, nil
	}
	var tokens float64
	var at int64
	var err error
	if !k.group {
		err = w.row("type_tokens", k.typ).Scan(&tokens, &at)
	} else {
		err = w.row("group_tokens", k.grp, k.typ).Scan(&tokens, &at)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: accept: rate of %q %q: %w", k.grp, k.typ, err)
	}
	var refilled time.Time
	if at != 0 {
		refilled = fromMicros(at)
	}
	b := fair.OpenBucket(r, tokens, refilled, w.now)
	if w.buckets == nil {
		w.buckets = map[bucketKey]*fair.Bucket{}
	}
	w.buckets[k] = b
	return b, nil
}

// saveBuckets writes back the buckets an accept spent tokens of, and
// returns when the next token comes to those it emptied.
func (w *txn) saveBuckets() (time.Time, error) {
	var all []*fair.Bucket
	for k, b := range w.buckets {
		all = append(all, b)
		if b.Running == 0 {
			continue // nothing spent: the refill is read again next time
		}
		var err error
		if !k.group {
			_, err = w.run("save_type_tokens", b.Left(), micros(b.At), k.typ)
		} else {
			_, err = w.run("save_group_tokens", b.Left(), micros(b.At), k.grp, k.typ)
		}
		if err != nil {
			return time.Time{}, fmt.Errorf("sqlite: accept: save the tokens of %q %q: %w", k.grp, k.typ, err)
		}
	}
	return fair.NextToken(all), nil
}

// SetTypeConfig stores a type's settings, replacing its previous ones.
func (s *Store) SetTypeConfig(ctx context.Context, c store.TypeConfig) error {
	if err := check.TypeConfig(c); err != nil {
		return err
	}
	err := s.write(ctx, true, func(w *txn) error {
		// The settings as they were, read in the transaction that
		// changes them, for the audit trail.
		types, err := scanTypeConfigs(w.rows("type_configs"))
		if err != nil {
			return err
		}
		var old *store.TypeConfig
		if tc, ok := types[c.Type]; ok {
			o := tc.settings(c.Type)
			old = &o
		}
		if err := engine.TypeConfigChanged(w, old, c, engine.CallerOf(ctx)); err != nil {
			return err
		}
		_, err = w.run("set_type_config",
			c.Type, c.LeaseTimeout.Microseconds(), c.Bands.High, c.Bands.Low, c.GroupMaxRunning, c.Paused,
			c.Retention.Microseconds(), c.FailedRetention.Microseconds(), micros(w.now), c.MaxRunning, c.Timeout.Microseconds(),
			c.Rate.N, c.Rate.Per.Microseconds(), c.Burst)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: set type %q: %w", c.Type, err)
	}
	s.typesMu.Lock()
	s.types[c.Type] = typeConfig{lease: c.LeaseTimeout, bands: c.Bands, groupMaxRunning: c.GroupMaxRunning, maxRunning: c.MaxRunning, paused: c.Paused,
		retention: c.Retention, failedRetention: c.FailedRetention, timeout: c.Timeout, rate: c.Rate, burst: c.Burst}
	s.typesMu.Unlock()
	return nil
}

// TypeConfigs lists known types.
func (s *Store) TypeConfigs(ctx context.Context) ([]store.TypeConfig, error) {
	select {
	case <-s.closing:
		return nil, store.ErrClosed
	default:
	}
	s.typesMu.RLock()
	defer s.typesMu.RUnlock()
	out := make([]store.TypeConfig, 0, len(s.types))
	for name, c := range s.types {
		lt := c.lease
		if lt == 0 {
			lt = store.DefaultLeaseTimeout
		}
		out = append(out, store.TypeConfig{Type: name, LeaseTimeout: lt, Bands: c.bands, GroupMaxRunning: c.groupMaxRunning, MaxRunning: c.maxRunning, Paused: c.paused,
			Retention: cmp.Or(c.retention, store.DefaultRetention), FailedRetention: c.failedRetention, Timeout: c.timeout, Rate: c.rate, Burst: c.burst})
	}
	slices.SortFunc(out, func(a, b store.TypeConfig) int { return cmp.Compare(a.Type, b.Type) })
	return out, nil
}

// SetGroupConfig stores a group's weight and bound.
func (s *Store) SetGroupConfig(ctx context.Context, c store.GroupConfig) error {
	if err := check.GroupConfig(c); err != nil {
		return err
	}
	remove := c.MaxRunning == 0 && c.Weight == 0 && !c.Paused && c.Rate.IsZero()
	err := s.write(ctx, true, func(w *txn) error {
		groups, err := scanGroupConfigs(w.rows("group_configs"))
		if err != nil {
			return err
		}
		var old *store.GroupConfig
		if gc, ok := groups[groupKey{c.Group, c.Type}]; ok {
			old = &gc
		}
		if err := engine.GroupConfigChanged(w, old, c, engine.CallerOf(ctx)); err != nil {
			return err
		}
		if remove {
			_, err := w.run("delete_group_config", c.Group, c.Type)
			return err
		}
		_, err = w.run("set_group_config",
			c.Group, c.Type, c.MaxRunning, c.Weight, c.Paused, c.Rate.N, c.Rate.Per.Microseconds(), c.Burst)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: set group %q: %w", c.Group, err)
	}
	s.typesMu.Lock()
	if remove {
		delete(s.groups, groupKey{c.Group, c.Type})
	} else {
		s.groups[groupKey{c.Group, c.Type}] = c
	}
	s.typesMu.Unlock()
	return nil
}

// GroupConfigs lists group settings by group, then type.
func (s *Store) GroupConfigs(ctx context.Context) ([]store.GroupConfig, error) {
	select {
	case <-s.closing:
		return nil, store.ErrClosed
	default:
	}
	s.typesMu.RLock()
	out := make([]store.GroupConfig, 0, len(s.groups))
	for _, c := range s.groups {
		out = append(out, c)
	}
	s.typesMu.RUnlock()
	slices.SortFunc(out, func(a, b store.GroupConfig) int {
		if c := cmp.Compare(a.Group, b.Group); c != 0 {
			return c
		}
		return cmp.Compare(a.Type, b.Type)
	})
	return out, nil
}
