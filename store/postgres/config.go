package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/rotajobs/rota/internal/engine"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

// Settings live in the database only: every accept reads its type's
// settings and the settings of the groups it looks at, in the statements
// that read the groups, so that a change made through any node applies to
// the next accept on every node, without caches to invalidate.

// SetTypeConfig stores a type's settings, replacing its previous ones.
func (s *Store) SetTypeConfig(ctx context.Context, c store.TypeConfig) error {
	if err := check.TypeConfig(c); err != nil {
		return err
	}
	err := s.inTx(ctx, "set type "+c.Type, func(t *txn) error {
		// The settings as they were, held until the change commits, for
		// the audit trail.
		if _, err := t.run("lock_type_config", c.Type); err != nil {
			return err
		}
		types, err := scanTypeConfigs(t.rows("type_configs"))
		if err != nil {
			return err
		}
		var old *store.TypeConfig
		if i := slices.IndexFunc(types, func(tc store.TypeConfig) bool { return tc.Type == c.Type }); i >= 0 {
			old = &types[i]
		}
		if err := engine.TypeConfigChanged(t, old, c, engine.CallerOf(ctx)); err != nil {
			return err
		}
		_, err = t.run("set_type_config", c.Type, us(c.LeaseTimeout), c.Bands.High, c.Bands.Low, c.GroupMaxRunning, c.Paused, us(c.Retention), us(c.FailedRetention), c.MaxRunning, us(c.Timeout),
			c.Rate.N, us(c.Rate.Per), c.Burst)
		return err
	})
	if err != nil {
		return err
	}
	s.addTypes([]string{c.Type})
	return nil
}

// SetGroupConfig stores a group's weight and bound for one type or for all
// (Type ""); zero MaxRunning and Weight remove the setting.
func (s *Store) SetGroupConfig(ctx context.Context, c store.GroupConfig) error {
	if err := check.GroupConfig(c); err != nil {
		return err
	}
	return s.inTx(ctx, fmt.Sprintf("set group %q", c.Group), func(t *txn) error {
		if _, err := t.run("lock_group_config", c.Group, c.Type); err != nil {
			return err
		}
		groups, err := scanGroupConfigs(t.rows("group_configs"))
		if err != nil {
			return err
		}
		var old *store.GroupConfig
		if i := slices.IndexFunc(groups, func(gc store.GroupConfig) bool { return gc.Group == c.Group && gc.Type == c.Type }); i >= 0 {
			old = &groups[i]
		}
		if err := engine.GroupConfigChanged(t, old, c, engine.CallerOf(ctx)); err != nil {
			return err
		}
		if c.MaxRunning == 0 && c.Weight == 0 && !c.Paused && c.Rate.IsZero() {
			_, err := t.run("delete_group_config", c.Group, c.Type)
			return err
		}
		_, err = t.run("set_group_config", c.Group, c.Type, c.MaxRunning, c.Weight, c.Paused, c.Rate.N, us(c.Rate.Per), c.Burst)
		return err
	})
}

// GroupConfigs lists the group settings by group, then type.
func (s *Store) GroupConfigs(ctx context.Context) ([]store.GroupConfig, error) {
	if s.closed.Load() {
		return nil, s.wrap("group configs", store.ErrClosed)
	}
	var out []store.GroupConfig
	err := s.read(ctx, "group configs", func(t *txn) error {
		out = out[:0]
		var err error
		out, err = scanGroupConfigs(t.rows("group_configs"))
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scanGroupConfigs reads the rows of group_configs.
func scanGroupConfigs(r rows, err error) ([]store.GroupConfig, error) {
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []store.GroupConfig
	for r.Next() {
		var c store.GroupConfig
		var max, n, per, burst int64
		if err := r.Scan(&c.Group, &c.Type, &max, &c.Weight, &c.Paused, &n, &per, &burst); err != nil {
			return nil, err
		}
		c.Rate = store.Rate{N: int(n), Per: time.Duration(per) * time.Microsecond}
		c.Burst = int(burst)
		c.MaxRunning = int(max)
		out = append(out, c)
	}
	return out, r.Err()
}
