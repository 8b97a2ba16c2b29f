package check

import (
	"fmt"

	"github.com/rotajobs/rota/store"
)

// Invalidf returns an error that matches store.ErrInvalid and says what
// is wrong.
func Invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", store.ErrInvalid, fmt.Sprintf(format, args...))
}

// JobErrorf returns an error about one job that matches sentinel (one of
// store's errors) and whose message is the formatted text alone: "job 7
// not found" rather than "job 7: job not found", so that messages do not
// say the same thing twice.
func JobErrorf(sentinel error, format string, args ...any) error {
	return &jobError{msg: fmt.Sprintf(format, args...), sentinel: sentinel}
}

// NotFound is the error for a job id that no job has.
func NotFound(id int64) error { return JobErrorf(store.ErrNotFound, "job %d not found", id) }

type jobError struct {
	msg      string
	sentinel error
}

func (e *jobError) Error() string { return e.msg }
func (e *jobError) Unwrap() error { return e.sentinel }

// asInvalid makes a rule's plain error (names, glob) match
// store.ErrInvalid.
func asInvalid(err error) error { return fmt.Errorf("%w: %w", store.ErrInvalid, err) }
