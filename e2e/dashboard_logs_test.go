package e2e_test

import (
	"strings"
	"syscall"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardJobLogs opens the page of a job whose program logged on
// stderr under rota work: it shows the latest attempt's records as text
// (markup in a message is not markup), links to the earlier attempt's,
// and says how many records an attempt dropped past its bound.
func TestDashboardJobLogs(t *testing.T) {
	s := startServer(t, "--auth-token", "adm")
	s.token = "adm"
	script := `echo "attempt $ROTA_JOB_ATTEMPT <b>starts</b>" >&2
if [ "$ROTA_JOB_ATTEMPT" = 1 ]; then echo "first try fails" >&2; exit 1; fi
i=0; while [ $i -lt 900 ]; do echo "line $i $(printf '%080d' $i)" >&2; i=$((i+1)); done
exit 0`
	w := s.start(t, "work", "--type", "e2e.dlogs", "--", "sh", "-c", script)
	jid := s.add(t, "e2e.dlogs", "--max-attempts", "2", "--backoff-base", "10ms", "--backoff-max", "10ms")
	quiet := s.add(t, "e2e.quiet")
	if r := s.run(t, "", "wait", id(jid)); r.code != 0 {
		t.Fatalf("%v", r)
	}
	if code := w.signal(t, syscall.SIGTERM); code != 0 {
		t.Errorf("worker exited with status %d", code)
	}

	ctx := browser(t, 1280, 800)
	signIn(t, ctx, s.URL, "adm")
	var heading, text, bold string
	var n int
	run(t, ctx, "the page of a job that logged",
		chromedp.Navigate(s.URL+"/jobs/"+id(jid)),
		chromedp.WaitVisible(`#logs table.log`),
		chromedp.Text(`#logs h2`, &heading),
		chromedp.Text(`#logs`, &text),
		chromedp.Evaluate(`document.querySelectorAll('#logs table.log tbody tr').length`, &n),
		chromedp.Evaluate(`String(document.querySelectorAll('#logs table.log b').length)`, &bold),
	)
	if heading != "Log of attempt 2" || !strings.Contains(text, "attempt 2 <b>starts</b>") || bold != "0" {
		t.Errorf("the job's page shows %q (bold elements: %s):\n%.400s", heading, bold, text)
	}
	if n < 500 || n > 700 || !strings.Contains(text, "records dropped") {
		t.Errorf("the page shows %d records of attempt 2 and no drop count:\n…%s", n, text[max(0, len(text)-300):])
	}
	run(t, ctx, "scroll to the log", chromedp.ScrollIntoView(`#logs`))
	shot(t, ctx, "job-logs")
	run(t, ctx, "the earlier attempt's log",
		chromedp.Click(`#logs .log-attempts a`),
		chromedp.WaitVisible(`#logs table.log`),
		chromedp.Text(`#logs h2`, &heading),
		chromedp.Text(`#logs table.log`, &text),
	)
	if heading != "Log of attempt 1" || !strings.Contains(text, "first try fails") || strings.Contains(text, "line 0") {
		t.Errorf("attempt 1's log: %q\n%s", heading, text)
	}
	run(t, ctx, "a job that logged nothing",
		chromedp.Navigate(s.URL+"/jobs/"+id(quiet)),
		chromedp.WaitVisible(`#logs`),
		chromedp.Text(`#logs`, &text),
	)
	if !strings.Contains(text, "logged nothing") {
		t.Errorf("the page of a job that logged nothing: %s", text)
	}
}
