package e2e_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardJobHistory: a job's page shows its history in headless
// Chromium: its add, a change made with the CLI by one named token, a
// pause of its type by the admin, and a cancel made on the page itself by
// the signed-in person, recorded with their token's name.
func TestDashboardJobHistory(t *testing.T) {
	s := startServer(t, "--auth-token", "adm")
	admin := *s
	admin.token = "adm"
	alice := *s
	alice.token = strings.TrimSpace(admin.rota(t, "token", "create", "ops-alice"))
	bob := strings.TrimSpace(admin.rota(t, "token", "create", "ops-bob", "--groups", "acme"))
	jid := alice.add(t, "e2e.history", `{}`, "--group", "acme")
	alice.rota(t, "update", id(jid), "--priority", "7")
	admin.rota(t, "pause", "--type", "e2e.history")

	ctx := browser(t, 1280, 900)
	signIn(t, ctx, s.URL, bob)
	page := s.URL + "/jobs/" + id(jid)
	run(t, ctx, "cancel on the job's page",
		chromedp.Navigate(page),
		chromedp.WaitVisible(`#timeline`),
		chromedp.Click(`form[action="/jobs/`+id(jid)+`/cancel"] button`),
		chromedp.WaitVisible(`.notice`),
	)
	var text string
	run(t, ctx, "the history after the cancel",
		chromedp.Navigate(page),
		chromedp.WaitVisible(`#timeline`),
		chromedp.Text(`#timeline`, &text),
	)
	for _, want := range []string{
		"added\tthe job",
		"update\tops-alice\tpriority 0 → 7",
		"pause type\tadmin\ttype e2e.history",
		"cancel\tops-bob\tpending → cancelled",
		"ended\tthe job\tcancelled",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the job's history does not show %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "update\tops-alice") > strings.Index(text, "cancel\tops-bob") {
		t.Errorf("the history is not in time order:\n%s", text)
	}
	shot(t, ctx, "job-history")

	// Removed, the job's page is its history; another tenant's token
	// finds no such job.
	alice.rota(t, "rm", id(jid))
	run(t, ctx, "the removed job's page",
		chromedp.Navigate(page),
		chromedp.WaitVisible(`#timeline`),
		chromedp.Text(`h1`, &text),
	)
	if !strings.Contains(text, "removed") {
		t.Errorf("the removed job's page is titled %q", text)
	}
	run(t, ctx, "the removed job's history", chromedp.Text(`#timeline`, &text))
	if !strings.Contains(text, "remove\tops-alice\tremoved while cancelled") || !strings.Contains(text, "cancel\tops-bob") {
		t.Errorf("the removed job's history:\n%s", text)
	}
	eve := strings.TrimSpace(admin.rota(t, "token", "create", "ops-eve", "--groups", "globex"))
	other := browser(t, 1280, 900)
	signIn(t, other, s.URL, eve)
	run(t, other, "another tenant opens the removed job's page",
		chromedp.Navigate(page),
		chromedp.WaitVisible(`h1`),
		chromedp.Text(`body`, &text),
	)
	if strings.Contains(text, "ops-alice") || !strings.Contains(text, "not found") {
		t.Errorf("another tenant's page of the removed job:\n%s", text)
	}
}
