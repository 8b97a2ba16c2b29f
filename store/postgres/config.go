package postgres

import (
	"context"
	"fmt"
	"time"

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
	err := s.autocommit(ctx, "set type "+c.Type, func(t *txn) error {
		_, err := t.run("set_type_config", c.Type, us(c.LeaseTimeout), c.Bands.High, c.Bands.Low, c.GroupMaxRunning, c.Paused, us(c.Retention), us(c.FailedRetention), c.MaxRunning, us(c.Timeout),
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
	return s.autocommit(ctx, fmt.Sprintf("set group %q", c.Group), func(t *txn) error {
		if c.MaxRunning == 0 && c.Weight == 0 && !c.Paused && c.Rate.IsZero() {
			_, err := t.run("delete_group_config", c.Group, c.Type)
			return err
		}
		_, err := t.run("set_group_config", c.Group, c.Type, c.MaxRunning, c.Weight, c.Paused, c.Rate.N, us(c.Rate.Per), c.Burst)
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
		r, err := t.rows("group_configs")
		if err != nil {
			return err
		}
		defer r.Close()
		for r.Next() {
			var c store.GroupConfig
			var max, n, per, burst int64
			if err := r.Scan(&c.Group, &c.Type, &max, &c.Weight, &c.Paused, &n, &per, &burst); err != nil {
				return err
			}
			c.Rate = store.Rate{N: int(n), Per: time.Duration(per) * time.Microsecond}
			c.Burst = int(burst)
			c.MaxRunning = int(max)
			out = append(out, c)
		}
		return r.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
