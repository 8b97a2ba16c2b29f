package backend

import (
	"encoding/json"
	"fmt"

	"github.com/rotajobs/rota/store"
)

// CallbackJSON is how both stores keep a batch's callback (an add,
// normalized): JSON of store.AddParams, nil for none.
func CallbackJSON(p *store.AddParams) ([]byte, error) {
	if p == nil {
		return nil, nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("batch callback: %w", err)
	}
	return b, nil
}

// Callback reads a callback that CallbackJSON wrote (nil: none).
func Callback(b []byte) (*store.AddParams, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var p store.AddParams
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("batch callback: %w", err)
	}
	return &p, nil
}
