package e2e_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardJobTimeout opens the page of a job added with a timeout
// (rota add --timeout): it shows the timeout; a job without one shows none.
func TestDashboardJobTimeout(t *testing.T) {
	s := startServer(t, "--auth-token", "adm")
	s.token = "adm"
	timed := s.add(t, "e2e.timed", "--timeout", "90s")
	plain := s.add(t, "e2e.timed")

	ctx := browser(t, 1280, 800)
	signIn(t, ctx, s.URL, "adm")
	var text string
	run(t, ctx, "the page of a job with a timeout",
		chromedp.Navigate(s.URL+"/jobs/"+id(timed)),
		chromedp.WaitVisible(`dl.facts`),
		chromedp.Text(`dl.facts`, &text),
	)
	if !strings.Contains(text, "Timeout") || !strings.Contains(text, "90 s per run") {
		t.Errorf("the job's page does not show its timeout of 90s:\n%s", text)
	}
	shot(t, ctx, "job-timeout")
	run(t, ctx, "the page of a job without one",
		chromedp.Navigate(s.URL+"/jobs/"+id(plain)),
		chromedp.WaitVisible(`dl.facts`),
		chromedp.Text(`dl.facts`, &text),
	)
	if strings.Contains(text, "Timeout") {
		t.Errorf("the page of a job without a timeout shows one:\n%s", text)
	}
}
