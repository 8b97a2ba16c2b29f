package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardRates sets a type's rate on the Types page and a group's on
// the Groups page: the server keeps them, the pages show them with the due
// jobs waiting for a token, and a bad rate is refused naming the field,
// with nothing changed.
func TestDashboardRates(t *testing.T) {
	s := startServer(t, "--auth-token", "adm")
	s.token = "adm"
	for range 3 {
		s.add(t, "e2e.rated", "{}")
	}
	typeRate := func() (string, int) {
		var got struct {
			Types []struct {
				Type  string `json:"type"`
				Rate  string `json:"rate"`
				Burst int    `json:"burst"`
			} `json:"types"`
		}
		if err := json.Unmarshal(s.httpGet(t, "/v1/types"), &got); err != nil {
			t.Fatal(err)
		}
		for _, tc := range got.Types {
			if tc.Type == "e2e.rated" {
				return tc.Rate, tc.Burst
			}
		}
		return "?", -1
	}
	ctx := browser(t, 1600, 800)
	signIn(t, ctx, s.URL, "adm")
	rate := `form[action="/types/e2e.rated"] input[name=rate]`
	burst := `form[action="/types/e2e.rated"] input[name=burst]`
	var text string
	run(t, ctx, "set the type's rate",
		chromedp.Navigate(s.URL+"/types"),
		chromedp.WaitVisible(rate),
		chromedp.SetValue(rate, "2/m"),
		chromedp.SetValue(burst, "1"),
		chromedp.Submit(rate),
		chromedp.WaitVisible(`.notice, .error`),
		chromedp.Text(`main`, &text),
	)
	if r, b := typeRate(); r != "2/m" || b != 1 {
		t.Fatalf("after saving 2/m, burst 1 on the Types page, the type's rate is %q burst %d:\n%s", r, b, text)
	}
	// One job starts under the rate; the other two wait for a token.
	var got struct {
		Jobs []json.RawMessage `json:"jobs"`
	}
	s.httpPost(t, "/v1/accept", `{"types":["e2e.rated"],"limit":10}`, &got)
	if len(got.Jobs) != 1 {
		t.Fatalf("accept at 2/m, burst 1: %d jobs, want 1", len(got.Jobs))
	}
	var shown, waiting string
	run(t, ctx, "the page shows the rate and the jobs waiting",
		chromedp.Navigate(s.URL+"/types"),
		chromedp.WaitVisible(rate),
		chromedp.Text(`td.rate`, &shown),
		chromedp.Text(`td.waiting`, &waiting),
	)
	if shown != "2/m (burst 1)" || strings.TrimSpace(waiting) != "2" {
		t.Errorf("the Types page shows rate %q and %q waiting for a token, want 2/m (burst 1) and 2", shown, waiting)
	}
	run(t, ctx, "a bad rate",
		chromedp.SetValue(rate, "5/d"),
		chromedp.Submit(rate),
		chromedp.WaitVisible(`.notice, .error`),
		chromedp.Text(`main`, &text),
	)
	if !strings.Contains(text, "rate: want N/s, N/m or N/h") {
		t.Errorf("a rate of 5/d is not refused naming the field:\n%s", text)
	}
	if r, _ := typeRate(); r != "2/m" {
		t.Errorf("a refused rate changed it to %q", r)
	}
	// A group's rate, set with the new-setting form.
	run(t, ctx, "set a group's rate",
		chromedp.Navigate(s.URL+"/groups"),
		chromedp.WaitVisible(`#new-group`),
		chromedp.SetValue(`#new-group input[name=group]`, "acme"),
		chromedp.SetValue(`#new-group input[name=rate]`, "10/h"),
		chromedp.SetValue(`#new-group input[name=burst]`, "3"),
		chromedp.Submit(`#new-group input[name=group]`),
		chromedp.WaitVisible(`td.rate`),
		chromedp.Text(`td.rate`, &shown),
	)
	if shown != "10/h (burst 3)" {
		t.Errorf("the Groups page shows the group's rate as %q, want 10/h (burst 3)", shown)
	}
	if body := string(s.httpGet(t, "/v1/groups")); !strings.Contains(body, `"rate":"10/h"`) || !strings.Contains(body, `"burst":3`) {
		t.Errorf("the server's group settings: %s", body)
	}
}
