package rota

import (
	"context"
	"fmt"
	"time"
)

// Hook is code of yours that runs at points of a job's life, in the shape
// River's users know: a value that implements one or more of the hook
// kinds (AddHook, FinishHook), listed in Config.Hooks. Embed HookDefaults
// in a hook type for Hook's method, or make a hook of a function with
// AddHookFunc or FinishHookFunc. Hooks run in this process, on an
// embedded store and on a remote one alike; each kind runs in the order
// listed.
//
// Hook asks for a method of its own, rather than being any value, so that
// what is not a hook does not compile in Config.Hooks; NewClient refuses a
// Hook that implements no kind (a misspelt method, say). For code around
// every handler run, use Middleware instead.
type Hook interface {
	// IsHook marks the type as a hook on purpose; HookDefaults
	// implements it.
	IsHook() bool
}

// HookDefaults gives a hook type Hook's method when embedded.
type HookDefaults struct{}

// IsHook reports true.
func (HookDefaults) IsHook() bool { return true }

// AddHook runs before jobs are added (Add, AddMany, AddTx). It may change
// the parameters, for example to stamp metadata into the data; an error
// rejects the add, and nothing is added. It changes a copy of each job's
// parameters, whose Meta map and Data are still the caller's: replace
// them rather than change them in place.
type AddHook interface {
	Hook
	BeforeAdd(ctx context.Context, p *AddParams) error
}

// FinishHook runs after a worker has ended a run and reported it to the
// store: job is the job as the handler saw it, p how the run ended (its
// As, Error, RunAt), took how long the handler ran, and err the store's
// answer (nil when the ending was recorded; ErrCanceled or
// ErrWorkerConflict when the lease had been lost). It must not block for
// long: the worker's slot is already free, but its finish is not done.
type FinishHook interface {
	Hook
	AfterFinish(ctx context.Context, job *Job, p FinishParams, took time.Duration, err error)
}

// AddHookFunc makes an AddHook of a function.
type AddHookFunc func(ctx context.Context, p *AddParams) error

// IsHook reports true.
func (AddHookFunc) IsHook() bool { return true }

// BeforeAdd calls f.
func (f AddHookFunc) BeforeAdd(ctx context.Context, p *AddParams) error { return f(ctx, p) }

// FinishHookFunc makes a FinishHook of a function.
type FinishHookFunc func(ctx context.Context, job *Job, p FinishParams, took time.Duration, err error)

// IsHook reports true.
func (FinishHookFunc) IsHook() bool { return true }

// AfterFinish calls f.
func (f FinishHookFunc) AfterFinish(ctx context.Context, job *Job, p FinishParams, took time.Duration, err error) {
	f(ctx, job, p, took, err)
}

// hooks are a client's hooks, by kind.
type hooks struct {
	add    []AddHook
	finish []FinishHook
}

func newHooks(list []Hook) (hooks, error) {
	var h hooks
	for i, v := range list {
		known := false
		if a, ok := v.(AddHook); ok {
			h.add, known = append(h.add, a), true
		}
		if f, ok := v.(FinishHook); ok {
			h.finish, known = append(h.finish, f), true
		}
		if !known {
			return hooks{}, fmt.Errorf("rota: Config.Hooks[%d] (%T) implements no hook kind (AddHook's BeforeAdd, FinishHook's AfterFinish)", i, v)
		}
	}
	return h, nil
}

// beforeAdd runs the add hooks on a copy of ps.
func (h *hooks) beforeAdd(ctx context.Context, ps []AddParams) ([]AddParams, error) {
	if len(h.add) == 0 {
		return ps, nil
	}
	out := make([]AddParams, len(ps))
	copy(out, ps)
	for i := range out {
		for _, a := range h.add {
			if err := a.BeforeAdd(ctx, &out[i]); err != nil {
				return nil, fmt.Errorf("rota: add hook %T: %w", a, err)
			}
		}
	}
	return out, nil
}
