package check

import (
	"encoding/json"
	"fmt"

	"github.com/rotajobs/rota/store"
)

// MaxBatchDescription bounds a batch's description, in bytes.
const MaxBatchDescription = 255

// Batch checks a new batch: its jobs as any add (none may name a batch:
// they join this one), its callbacks as adds whose data is an object
// without the field the batch is given in. It returns the batch with its
// jobs and callbacks normalized, and the jobs' data.
func Batch(b store.NewBatch) (store.NewBatch, [][]byte, error) {
	if len(b.Description) > MaxBatchDescription {
		return b, nil, Invalidf("batch description is longer than %d bytes", MaxBatchDescription)
	}
	for i := range b.Jobs {
		if b.Jobs[i].Batch != 0 {
			return b, nil, Invalidf("job %d of %d names batch %d: the jobs of a new batch join it", i+1, len(b.Jobs), b.Jobs[i].Batch)
		}
	}
	var datas [][]byte
	if len(b.Jobs) > 0 {
		jobs, ds, err := Adds(b.Jobs)
		if err != nil {
			return b, nil, err
		}
		b.Jobs, datas = jobs, ds
	}
	var err error
	if b.OnComplete, err = Callback("on_complete", b.OnComplete); err != nil {
		return b, nil, err
	}
	if b.OnSuccess, err = Callback("on_success", b.OnSuccess); err != nil {
		return b, nil, err
	}
	return b, datas, nil
}

// Callback checks a batch's callback (nil: none) as an add, named what,
// and returns it normalized, its data compacted.
func Callback(what string, p *store.AddParams) (*store.AddParams, error) {
	if p == nil {
		return nil, nil
	}
	c := *p
	if c.Batch != 0 {
		return nil, Invalidf("%s names batch %d: a callback is not a member of a batch", what, c.Batch)
	}
	// A child is added while its parent runs; a callback is added when
	// the batch is done, by then its parent may have ended.
	if c.Parent != 0 {
		return nil, Invalidf("%s: parent: a callback cannot be a child (of job %d): it is added when the batch is done, when its parent may have ended; name the job in after instead", what, c.Parent)
	}
	data, err := Add(&c)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return nil, Invalidf("%s: data must be a JSON object (the batch is added to it as %q)", what, store.BatchCallbackField)
	}
	if _, ok := fields[store.BatchCallbackField]; ok {
		return nil, Invalidf("%s: data has a field %q, where the batch goes", what, store.BatchCallbackField)
	}
	c.Data = data
	return &c, nil
}
