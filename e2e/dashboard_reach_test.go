package e2e_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardScopedWorkflowAndBatch: signed in with a token scoped to
// its groups, a tenant's job page in headless Chromium draws no job of
// another tenant's that the admin made depend on it, and another tenant's
// batch with nothing in it yet is a missing batch, on the dashboard and
// through the CLI with the other tenant's token (which can neither join
// nor close it); its own tenant still sees, joins and closes it.
func TestDashboardScopedWorkflowAndBatch(t *testing.T) {
	s := startServer(t, "--auth-token", "adm")
	admin, acme, globex := *s, *s, *s
	admin.token = "adm"
	acme.token = strings.TrimSpace(admin.rota(t, "token", "create", "acme", "--groups", "acme-*"))
	globex.token = strings.TrimSpace(admin.rota(t, "token", "create", "globex", "--groups", "globex-*"))
	a := admin.add(t, "e2e.reach", `{}`, "--group", "acme-1")
	b := admin.add(t, "e2e.reach", `{}`, "--group", "globex-1", "--after", id(a))
	bid := strings.TrimSpace(acme.run(t, `{"open": true, "description": "acme-empty"}`, "batch", "add", "-q", "--file", "-").stdout)
	if bid == "" {
		t.Fatal("acme's empty batch: no id")
	}
	for _, args := range [][]string{
		{"batch", "get", bid},
		{"batch", "close", bid},
		{"add", "e2e.reach", `{}`, "--group", "globex-1", "--batch", bid},
	} {
		r := globex.run(t, "", args...)
		if r.code == 0 || !strings.Contains(r.stderr, "does not exist") {
			t.Errorf("globex's rota %v on acme's empty batch: %v; want it missing", args, r)
		}
	}

	ctx := browser(t, 1280, 900)
	signIn(t, ctx, s.URL, globex.token)
	var body string
	run(t, ctx, "globex opens acme's empty batch",
		chromedp.Navigate(s.URL+"/batches/"+bid),
		chromedp.WaitVisible(`h1`),
		chromedp.Text(`body`, &body),
	)
	if strings.Contains(body, "acme-empty") || !strings.Contains(body, "does not exist") {
		t.Errorf("globex's page of acme's empty batch:\n%s", body)
	}
	var listed int
	run(t, ctx, "globex's Batches page",
		chromedp.Navigate(s.URL+"/batches"),
		chromedp.WaitVisible(`h1`),
		chromedp.Evaluate(`document.querySelectorAll('[data-batch="`+bid+`"]').length`, &listed),
	)
	if listed != 0 {
		t.Errorf("globex's Batches page lists acme's empty batch")
	}

	other := browser(t, 1280, 900)
	signIn(t, other, s.URL, acme.token)
	var drawn []string
	nodes := `Array.from(document.querySelectorAll("#workflow a.wf-node")).map(n => n.dataset.job)`
	run(t, other, "acme opens its job that globex's job depends on",
		chromedp.Navigate(s.URL+"/jobs/"+id(a)),
		chromedp.WaitVisible(`dl.facts`),
		chromedp.Evaluate(nodes, &drawn),
	)
	for _, n := range drawn {
		if n == id(b) {
			t.Errorf("acme's job page draws globex's dependant %d: %v", b, drawn)
		}
	}
	run(t, other, "acme opens its empty batch",
		chromedp.Navigate(s.URL+"/batches/"+bid),
		chromedp.WaitVisible(`h1`),
		chromedp.Text(`body`, &body),
	)
	if !strings.Contains(body, "acme-empty") {
		t.Errorf("acme's page of its empty batch:\n%s", body)
	}
	acme.rota(t, "add", "e2e.reach", `{}`, "--group", "acme-1", "--batch", bid)
	acme.rota(t, "batch", "close", bid)

	// The admin sees the whole workflow.
	adm := browser(t, 1280, 900)
	signIn(t, adm, s.URL, "adm")
	run(t, adm, "the admin opens the job",
		chromedp.Navigate(s.URL+"/jobs/"+id(a)),
		chromedp.WaitVisible(`#workflow svg`),
		chromedp.Evaluate(nodes, &drawn),
	)
	if len(drawn) != 2 {
		t.Errorf("the admin's workflow of job %d: %v, want it and %d", a, drawn, b)
	}
}
