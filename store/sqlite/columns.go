package sqlite

import (
	"fmt"
	"time"
)

// columns reads a row as the driver gives it (int64, float64, string,
// []byte or nil) and converts each column itself. It is how the store reads
// jobs, made for the statements that read every job a drain runs (the
// claim, the completion): database/sql
// converts into typed destinations by reflection (and sql.Null* by a
// second conversion), which cost the writer about 1.5 µs per claimed job,
// a tenth of its time. Scanning into *any takes database/sql's fast path.
//
// A conversion that fails (a NULL where none may be, a value of another
// type) is kept in err, named by its column, as database/sql would report
// it; the first one wins.
type columns struct {
	names []string
	v     []any
	ptrs  []any
	err   error
}

func newColumns(names ...string) *columns {
	c := &columns{names: names, v: make([]any, len(names)), ptrs: make([]any, len(names))}
	for i := range c.v {
		c.ptrs[i] = &c.v[i]
	}
	return c
}

// scan reads a row (the current one of *sql.Rows, or an *sql.Row).
func (c *columns) scan(sc scanner) error {
	return sc.Scan(c.ptrs...)
}

func (c *columns) fail(i int, want string) {
	if c.err == nil {
		c.err = fmt.Errorf("column %s: %T is not %s", c.names[i], c.v[i], want)
	}
}

// int64 reads an INTEGER column that is never NULL.
func (c *columns) int64(i int) int64 {
	v, ok := c.v[i].(int64)
	if !ok {
		c.fail(i, "an integer")
	}
	return v
}

func (c *columns) int(i int) int { return int(c.int64(i)) }

// uint8 reads a small code (such as store.Missed).
func (c *columns) uint8(i int) uint8 {
	v := c.int64(i)
	if v < 0 || v > 255 {
		c.fail(i, "a code from 0 to 255")
	}
	return uint8(v)
}

// bool reads 0 or 1, as database/sql does into a bool.
func (c *columns) bool(i int) bool {
	v := c.int64(i)
	if v != 0 && v != 1 {
		c.fail(i, "0 or 1")
	}
	return v == 1
}

// time reads a time in Unix microseconds that is never NULL.
func (c *columns) time(i int) time.Time { return fromMicros(c.int64(i)) }

// nullTime reads a time in Unix microseconds; NULL is the zero time.
func (c *columns) nullTime(i int) time.Time {
	if c.v[i] == nil {
		return time.Time{}
	}
	return c.time(i)
}

// str reads a TEXT column that is never NULL.
func (c *columns) str(i int) string {
	if c.v[i] == nil {
		c.fail(i, "text")
		return ""
	}
	return c.nullStr(i)
}

// nullStr reads a TEXT column; NULL is "".
func (c *columns) nullStr(i int) string {
	switch v := c.v[i].(type) {
	case nil:
		return ""
	case string:
		return v
	case []byte:
		return string(v)
	}
	c.fail(i, "text")
	return ""
}

// bytes reads a BLOB column; NULL is nil. The slice is the row's own
// (database/sql copies it for *any).
func (c *columns) bytes(i int) []byte {
	switch v := c.v[i].(type) {
	case nil:
		return nil
	case []byte:
		return v
	case string:
		return []byte(v)
	}
	c.fail(i, "a blob")
	return nil
}

// float reads a REAL column that is never NULL.
func (c *columns) float(i int) float64 {
	switch v := c.v[i].(type) {
	case float64:
		return v
	case int64:
		return float64(v)
	}
	c.fail(i, "a number")
	return 0
}
