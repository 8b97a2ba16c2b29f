package rota

import (
	"context"
	"fmt"
	"time"
)

// Middleware wraps every handler of a worker, in the shape of net/http's
// and Asynq's middleware: it receives the next handler and returns one
// that runs code around it, sees the job, and may give the handler a
// context of its own (a deadline, a span, a logger). List it in
// WorkerConfig.Middleware; the first listed runs outermost. A panic
// anywhere inside still fails the attempt with its stack, as a handler's
// own panic does.
type Middleware func(next Handler) Handler

// chain wraps h in mws, the first outermost.
func chain(h Handler, mws []Middleware) Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// Timeout is middleware that cancels a run's context after d, and fails
// the attempt (to be retried) when the handler returns because of it.
func Timeout(d time.Duration) Middleware {
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, job *Job) error {
			ctx, cancel := context.WithTimeoutCause(ctx, d, fmt.Errorf("job %d ran longer than its timeout %v", job.ID, d))
			defer cancel()
			err := next.Work(ctx, job)
			if err != nil && ctx.Err() != nil && context.Cause(ctx) != nil {
				return fmt.Errorf("%w (%v)", context.Cause(ctx), err)
			}
			return err
		})
	}
}
