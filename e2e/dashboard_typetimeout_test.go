package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardTypeTimeout sets a type's default run timeout on the Types
// page: the page shows it, the server keeps it (and rota limit reports
// it), and a bad value is refused with the field named and nothing
// changed.
func TestDashboardTypeTimeout(t *testing.T) {
	s := startServer(t, "--auth-token", "adm")
	s.token = "adm"
	s.add(t, "e2e.slow", "{}")
	typeTimeout := func() string {
		var got struct {
			Types []struct {
				Type    string `json:"type"`
				Timeout string `json:"timeout"`
			} `json:"types"`
		}
		if err := json.Unmarshal(s.httpGet(t, "/v1/types"), &got); err != nil {
			t.Fatal(err)
		}
		for _, tc := range got.Types {
			if tc.Type == "e2e.slow" {
				return tc.Timeout
			}
		}
		return "?"
	}
	ctx := browser(t, 1600, 800)
	signIn(t, ctx, s.URL, "adm")
	form := `form[action="/types/e2e.slow"] input[name=timeout]`
	var text string
	run(t, ctx, "set the type's run timeout",
		chromedp.Navigate(s.URL+"/types"),
		chromedp.WaitVisible(form),
		chromedp.SetValue(form, "45s"),
		chromedp.Submit(form),
		chromedp.WaitVisible(`.notice, .error`),
		chromedp.Text(`main`, &text),
	)
	if got := typeTimeout(); got != "45s" {
		t.Fatalf("after saving 45s on the Types page, the type's timeout is %q:\n%s", got, text)
	}
	if out := s.rota(t, "limit", "--type", "e2e.slow"); !strings.Contains(out, "run timeout 45s") {
		t.Errorf("rota limit does not report the timeout set on the page:\n%s", out)
	}
	var value, table string
	run(t, ctx, "the page shows it", chromedp.Navigate(s.URL+"/types"), chromedp.WaitVisible(form),
		chromedp.Value(form, &value), chromedp.Text(`table`, &table))
	if value != "45 s" && value != "45s" {
		t.Errorf("the Types page's Run timeout field shows %q, want 45 s", value)
	}
	if !strings.Contains(table, "Run timeout") {
		t.Errorf("the Types table has no Run timeout column:\n%s", table)
	}
	run(t, ctx, "a bad timeout",
		chromedp.SetValue(form, "soon"),
		chromedp.Submit(form),
		chromedp.WaitVisible(`.notice, .error`),
		chromedp.Text(`main`, &text),
	)
	if !strings.Contains(text, "timeout") {
		t.Errorf("a timeout of \"soon\" is not refused naming the field:\n%s", text)
	}
	if got := typeTimeout(); got != "45s" {
		t.Errorf("a refused timeout changed it to %q", got)
	}
	// rota limit sets it too, and removes it.
	s.rota(t, "limit", "--type", "e2e.slow", "--timeout", "0")
	if got := typeTimeout(); got != "" {
		t.Errorf("after rota limit --timeout 0, the type's timeout is %q, want none", got)
	}
	if r := s.run(t, "", "limit", "--group", "g", "--timeout", "1m"); r.code != 2 || !strings.Contains(r.stderr, "--timeout is a type's setting") {
		t.Errorf("rota limit --group --timeout: %v, want a usage error", r)
	}
}
