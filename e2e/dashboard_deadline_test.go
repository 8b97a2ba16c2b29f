package e2e_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardJobDeadline opens the page of a job added with a deadline
// (rota add --expires) that nothing starts: it shows the deadline, and,
// live, without a reload, that the job expired once the server's sweep
// ends it; the jobs list marks it expired too.
func TestDashboardJobDeadline(t *testing.T) {
	s := startServer(t, "--auth-token", "adm")
	s.token = "adm"
	j := s.add(t, "e2e.deadline", "--expires", "10s", "--timeout", "90s")
	plain := s.add(t, "e2e.deadline")
	windowed := s.add(t, "e2e.deadline", `{"n":1}`, "--unique-for", "1h")
	debounced := s.add(t, "e2e.deadline", "--key", "doc-1", "--debounce", "2m")

	ctx := browser(t, 1280, 800)
	signIn(t, ctx, s.URL, "adm")
	var text string
	run(t, ctx, "the page of a job with a deadline",
		chromedp.Navigate(s.URL+"/jobs/"+id(j)),
		chromedp.WaitVisible(`dl.facts`),
		chromedp.Text(`dl.facts`, &text),
	)
	if !strings.Contains(text, "Expires") || !strings.Contains(text, "a job not started by then is never started") ||
		!strings.Contains(text, "90 s per run") {
		t.Errorf("the job's page does not show its deadline and timeout:\n%s", text)
	}
	var h1 string
	run(t, ctx, "the job expires while its page is open",
		chromedp.WaitVisible(`h1 .st-expired`),
		chromedp.Text(`h1`, &h1),
		chromedp.Text(`dl.facts`, &text),
	)
	if !strings.Contains(h1, "cancelled") || !strings.Contains(h1, "expired") {
		t.Errorf("the heading after the deadline: %q, want cancelled and expired", h1)
	}
	if !strings.Contains(text, "it expired: its deadline passed before it started") || !strings.Contains(text, "expired at ") {
		t.Errorf("the facts after the deadline do not say it expired:\n%s", text)
	}
	shot(t, ctx, "job-expired")
	var list string
	run(t, ctx, "the jobs list",
		chromedp.Navigate(s.URL+"/jobs?type=e2e.deadline"),
		chromedp.WaitVisible(`table`),
		chromedp.Text(`table`, &list),
	)
	if strings.Count(list, "expired") < 1 {
		t.Errorf("the jobs list does not mark the expired job:\n%s", list)
	}
	run(t, ctx, "the page of a job without a deadline",
		chromedp.Navigate(s.URL+"/jobs/"+id(plain)),
		chromedp.WaitVisible(`dl.facts`),
		chromedp.Text(`dl.facts`, &text),
	)
	if strings.Contains(text, "Expires") {
		t.Errorf("the page of a job without a deadline shows one:\n%s", text)
	}
	if strings.Contains(text, "Unique window") || strings.Contains(text, "Debounce") {
		t.Errorf("the page of a job added without a unique window or debounce shows one:\n%s", text)
	}
	run(t, ctx, "the page of a job added with a unique window",
		chromedp.Navigate(s.URL+"/jobs/"+id(windowed)),
		chromedp.WaitVisible(`dl.facts`),
		chromedp.Text(`dl.facts`, &text),
	)
	if !strings.Contains(text, "Unique window") || !strings.Contains(text, "60 min") && !strings.Contains(text, "1 h") {
		t.Errorf("the page of a job added with --unique-for 1h does not show its window:\n%s", text)
	}
	run(t, ctx, "the page of a job added with a debounce",
		chromedp.Navigate(s.URL+"/jobs/"+id(debounced)),
		chromedp.WaitVisible(`dl.facts`),
		chromedp.Text(`dl.facts`, &text),
	)
	if !strings.Contains(text, "Debounce") || !strings.Contains(text, "another add of its key") {
		t.Errorf("the page of a job added with --debounce 2m does not show it:\n%s", text)
	}
}
