package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardTypeBound sets a type's bound on running jobs on the Types
// page: the page shows it, the server keeps it, and a bad value is refused
// with the field named and nothing changed.
func TestDashboardTypeBound(t *testing.T) {
	s := startServer(t, "--auth-token", "adm")
	s.token = "adm"
	s.add(t, "e2e.bounded", "{}")
	typeBound := func() int {
		var got struct {
			Types []struct {
				Type       string `json:"type"`
				MaxRunning int    `json:"max_running"`
			} `json:"types"`
		}
		if err := json.Unmarshal(s.httpGet(t, "/v1/types"), &got); err != nil {
			t.Fatal(err)
		}
		for _, tc := range got.Types {
			if tc.Type == "e2e.bounded" {
				return tc.MaxRunning
			}
		}
		return -1
	}
	ctx := browser(t, 1400, 800)
	signIn(t, ctx, s.URL, "adm")
	form := `form[action="/types/e2e.bounded"] input[name=max_running]`
	var text string
	run(t, ctx, "set the type's bound",
		chromedp.Navigate(s.URL+"/types"),
		chromedp.WaitVisible(form),
		chromedp.SetValue(form, "7"),
		chromedp.Submit(form),
		chromedp.WaitVisible(`.notice, .error`),
		chromedp.Text(`main`, &text),
	)
	if got := typeBound(); got != 7 {
		t.Fatalf("after saving 7 on the Types page, the type's max_running is %d:\n%s", got, text)
	}
	var value string
	run(t, ctx, "the page shows it", chromedp.Navigate(s.URL+"/types"), chromedp.WaitVisible(form), chromedp.Value(form, &value))
	if value != "7" {
		t.Errorf("the Types page's Running field shows %q, want 7", value)
	}
	run(t, ctx, "a bad bound",
		chromedp.SetValue(form, "-2"),
		chromedp.Submit(form),
		chromedp.WaitVisible(`.notice, .error`),
		chromedp.Text(`main`, &text),
	)
	if !strings.Contains(text, "max_running") && !strings.Contains(text, "max running") {
		t.Errorf("a bound of -2 is not refused naming the field:\n%s", text)
	}
	if got := typeBound(); got != 7 {
		t.Errorf("a refused bound changed it to %d", got)
	}
}
