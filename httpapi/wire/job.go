package wire

import (
	"fmt"
	"time"

	"github.com/rotajobs/rota/store"
)

// AcceptWire is AcceptResponse in a form encoding/json reads and writes in
// one pass: store.Job's own JSON methods marshal each job on its own (and
// the encoder then scans their output again) and parse each job twice.
// The bytes are the same as AcceptResponse's. The server writes accept
// answers with it, and the remote client reads them with it.
type AcceptWire struct {
	Jobs []JobWire `json:"jobs"`
}

// JobWire is a job in the JSON form store.Job's methods write, with no
// methods of its own. Make it with NewJobWire; read it with Job.
type JobWire struct {
	jobFields
	BackoffBase string `json:"backoff_base"`
	BackoffMax  string `json:"backoff_max"`
	// RetryAfter is a duration string, as store.Job's methods and the
	// OpenAPI document's Duration write it.
	RetryAfter string `json:"retry_after,omitempty"`
	Timeout    string `json:"timeout,omitempty"`
	UniqueFor  string `json:"unique_for,omitempty"`
	Debounce   string `json:"debounce,omitempty"`
}

// jobFields is store.Job without its methods; JobWire's own fields take
// the place of its durations (the shallower field wins).
type jobFields store.Job

// NewJobWire returns j's wire form.
func NewJobWire(j store.Job) JobWire {
	w := JobWire{jobFields: jobFields(j), BackoffBase: j.BackoffBase.String(), BackoffMax: j.BackoffMax.String()}
	if j.RetryAfter > 0 {
		w.RetryAfter = j.RetryAfter.String()
	}
	if j.Timeout > 0 {
		w.Timeout = j.Timeout.String()
	}
	if j.UniqueFor > 0 {
		w.UniqueFor = j.UniqueFor.String()
	}
	if j.Debounce > 0 {
		w.Debounce = j.Debounce.String()
	}
	return w
}

// Job returns the job, as store.Job's UnmarshalJSON would.
func (w JobWire) Job() (store.Job, error) {
	j := store.Job(w.jobFields)
	var err error
	if w.BackoffBase != "" {
		if j.BackoffBase, err = time.ParseDuration(w.BackoffBase); err != nil {
			return j, fmt.Errorf("backoff_base: %w", err)
		}
	}
	if w.BackoffMax != "" {
		if j.BackoffMax, err = time.ParseDuration(w.BackoffMax); err != nil {
			return j, fmt.Errorf("backoff_max: %w", err)
		}
	}
	if w.RetryAfter != "" {
		if j.RetryAfter, err = time.ParseDuration(w.RetryAfter); err != nil {
			return j, fmt.Errorf("retry_after: %w", err)
		}
	}
	if w.Timeout != "" {
		if j.Timeout, err = time.ParseDuration(w.Timeout); err != nil {
			return j, fmt.Errorf("timeout: %w", err)
		}
	}
	if w.UniqueFor != "" {
		if j.UniqueFor, err = time.ParseDuration(w.UniqueFor); err != nil {
			return j, fmt.Errorf("unique_for: %w", err)
		}
	}
	if w.Debounce != "" {
		if j.Debounce, err = time.ParseDuration(w.Debounce); err != nil {
			return j, fmt.Errorf("debounce: %w", err)
		}
	}
	return j, nil
}
