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
}
