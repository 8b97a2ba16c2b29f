package e2e_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboardFailed opens the Failed page from the nav: it lists the
// failed jobs with their last error, and only them; a bulk retry of the
// selected ones runs them again (they are pending), the others stay
// failed.
func TestDashboardFailed(t *testing.T) {
	s := startServer(t, "--auth-token", "adm")
	s.token = "adm"
	var failed []int64
	for i := range 3 {
		failed = append(failed, s.add(t, "e2e.dead", fmt.Sprintf(`{"n":%d}`, i), "--max-attempts", "1"))
	}
	done := s.add(t, "e2e.ok")
	w := s.start(t, "work", "--type", "e2e.dead", "--type", "e2e.ok", "--shutdown-timeout", "2s", "--", "sh", "-c",
		`read -r data; if [ "$ROTA_JOB_TYPE" = e2e.dead ]; then echo "the mailbox is full" >&2; exit 3; fi; echo '{}'`)
	eventually(t, "the jobs end", func() bool {
		for _, id := range append(failed, done) {
			if st := s.get(t, id).State; st != "failed" && st != "completed" {
				return false
			}
		}
		return true
	})
	w.signal(t, syscall.SIGTERM)

	ctx := browser(t, 1280, 800)
	signIn(t, ctx, s.URL, "adm")
	var text string
	run(t, ctx, "the Failed page from the nav",
		chromedp.Click(`nav a[href="/failed"]`),
		chromedp.WaitVisible(`table.jobs`),
		chromedp.Text(`main`, &text),
	)
	if !strings.Contains(text, "Failed jobs") || strings.Count(text, "the mailbox is full") != 3 {
		t.Errorf("the Failed page does not list the 3 failed jobs with their last error:\n%s", text)
	}
	var rows int
	run(t, ctx, "rows", chromedp.Evaluate(`document.querySelectorAll("table.jobs tbody tr").length`, &rows))
	if rows != 3 {
		t.Errorf("the Failed page has %d rows, want the 3 failed jobs (not the completed one)", rows)
	}
	shot(t, ctx, "failed")

	// Retry two of them, selected.
	run(t, ctx, "bulk retry",
		chromedp.Click(fmt.Sprintf(`input[name=id][value="%d"]`, failed[0])),
		chromedp.Click(fmt.Sprintf(`input[name=id][value="%d"]`, failed[1])),
		chromedp.SetValue(`select[name=action]`, "retry"),
		chromedp.Click(`#bulk button[type=submit]`),
		chromedp.WaitVisible(`.progress`),
	)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var progress string
		run(t, ctx, "bulk progress", chromedp.Reload(), chromedp.WaitVisible(`.progress`), chromedp.Text(`.progress`, &progress))
		if strings.Contains(progress, "Finished") {
			if !strings.HasPrefix(progress, "2 jobs done") {
				t.Errorf("the bulk retry says %q, want 2 jobs done", progress)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bulk retry did not finish: %q", progress)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for i, id := range failed {
		want := "pending"
		if i == 2 {
			want = "failed"
		}
		if st := s.get(t, id).State; st != want {
			t.Errorf("after the bulk retry job %d is %s, want %s", id, st, want)
		}
	}
	if st := s.get(t, done).State; st != "completed" {
		t.Errorf("the completed job is %s", st)
	}
	run(t, ctx, "the Failed page after the retry",
		chromedp.Navigate(s.URL+"/failed"),
		chromedp.WaitVisible(`table.jobs`),
		chromedp.Evaluate(`document.querySelectorAll("table.jobs tbody tr").length`, &rows),
	)
	if rows != 1 {
		t.Errorf("after the retry the Failed page has %d rows, want the one left failed", rows)
	}
}
