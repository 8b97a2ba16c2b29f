package remote_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store"
)

// TestNotCarriedIsRefused: what the HTTP API does not carry (the fields
// of Bedrock's one-call commands) is refused with ErrInvalid before any
// request, rather than dropped.
func TestNotCarriedIsRefused(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "no", http.StatusTeapot)
	}))
	defer srv.Close()
	st, err := remote.New(srv.URL, remote.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	lease := store.Lease{ID: 1, Token: "t"}
	prio := 1
	for name, call := range map[string]func() error{
		"finish data": func() error {
			_, err := st.Finish(ctx, []store.FinishParams{{Lease: lease, As: store.Complete, Data: json.RawMessage(`{}`)}})
			return err
		},
		"finish priority": func() error {
			_, err := st.Finish(ctx, []store.FinishParams{{Lease: lease, As: store.Snooze, Priority: &prio}})
			return err
		},
		"finish keep attempt": func() error {
			_, err := st.Finish(ctx, []store.FinishParams{{Lease: lease, As: store.Snooze, KeepAttempt: true}})
			return err
		},
		"add bedrock id": func() error {
			_, err := st.Add(ctx, []store.AddParams{{Type: "t", BedrockID: true}})
			return err
		},
		"resubmit hand back": func() error {
			_, _, err := st.Resubmit(ctx, []store.ResubmitParams{{ID: 1, HandBack: true}})
			return err
		},
		"update run in": func() error {
			_, _, err := st.Update(ctx, []store.UpdateParams{{ID: 1, RunIn: time.Second}})
			return err
		},
	} {
		if err := call(); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests were sent", n)
	}
}
