package httpapi_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store"
)

// TestGroupSettingsRemote sets type and group settings over HTTP through
// the remote client and checks that accepts through the server obey them.
func TestGroupSettingsRemote(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	c, err := remote.NewClient(s.URL, remote.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()

	tc := rota.TypeConfig{Type: "t", Bands: rota.Bands{High: 2, Low: 1}, GroupMaxRunning: 2}
	if err := c.SetTypeConfig(ctx, tc); err != nil {
		t.Fatal(err)
	}
	tcs, err := c.TypeConfigs(ctx)
	if err != nil || len(tcs) != 1 || tcs[0].Bands != tc.Bands || tcs[0].GroupMaxRunning != 2 {
		t.Fatalf("TypeConfigs = %+v, %v; want bands 2,1 and group max 2", tcs, err)
	}
	for _, gc := range []rota.GroupConfig{{Group: "", Weight: 3}, {Group: "acme", Type: "t", MaxRunning: 1}} {
		if err := c.SetGroupConfig(ctx, gc); err != nil {
			t.Fatal(err)
		}
	}
	gcs, err := c.GroupConfigs(ctx)
	if err != nil || len(gcs) != 2 || gcs[0].Weight != 3 || gcs[1].Group != "acme" || gcs[1].MaxRunning != 1 {
		t.Fatalf("GroupConfigs = %+v, %v", gcs, err)
	}
	// acme may run one job, the default group two (the type's bound).
	var ps []rota.AddParams
	for range 3 {
		ps = append(ps, rota.AddParams{Type: "t", Group: "acme"}, rota.AddParams{Type: "t"})
	}
	if _, err := c.AddMany(ctx, ps); err != nil {
		t.Fatal(err)
	}
	jobs, err := c.Accept(ctx, rota.AcceptParams{Types: []string{"t"}, Limit: 6})
	if err != nil {
		t.Fatal(err)
	}
	var groups []string
	for _, j := range jobs {
		groups = append(groups, "'"+j.Group+"'")
	}
	// Turns: '' at 0, acme at 0 (after '' by name), '' at 1/3; then both
	// are at their bounds (acme 1, '' 2 by the type's bound).
	if got := strings.Join(groups, " "); got != "'' 'acme' ''" {
		t.Errorf("accept through the server gave groups %s, want '' 'acme' ''", got)
	}

	for _, bad := range []rota.GroupConfig{{Group: "a", Weight: -1}, {Group: "a", Type: "x\x01"}} {
		if err := c.SetGroupConfig(ctx, bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("SetGroupConfig(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
	r := s.do(t, "PUT", "/v1/types/t", `{"bands":"2;1"}`)
	if r.Status != 400 || !strings.Contains(string(r.Body), "bands") {
		t.Errorf("PUT bands 2;1 = %d %s, want 400 naming the bands", r.Status, r.Body)
	}
	r = s.do(t, "PUT", "/v1/groups", `{"group":"a","weight":"heavy"}`)
	if r.Status != 400 || !strings.Contains(string(r.Body), "weight") {
		t.Errorf("PUT a string weight = %d %s, want 400 naming the field", r.Status, r.Body)
	}
}
