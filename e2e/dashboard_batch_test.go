package e2e_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboardBatches: the Batches page lists a batch with its progress,
// its page shows the counts by outcome and, once done, links the job its
// callback added; a member's page links its batch (Chromium).
func TestDashboardBatches(t *testing.T) {
	s := startServer(t, "--auth-token", "adm")
	s.token = "adm"
	var added struct {
		Batch   batchJSON
		Results []struct{ Job job }
	}
	s.rotaJSON(t, &added, "batch", "add", "e2e.page", `{"p":1}`, `{"p":2}`, `{"p":3}`,
		"--on-complete", "e2e.merge", "--description", "quarterly pages")
	bid := strconv.FormatInt(added.Batch.ID, 10)

	ctx := browser(t, 1280, 800)
	signIn(t, ctx, s.URL, "adm")
	var text string
	run(t, ctx, "the Batches page",
		chromedp.Navigate(s.URL+"/batches"),
		chromedp.WaitVisible(`table.batches`),
		chromedp.Text(`tr[data-batch="`+bid+`"]`, &text),
	)
	for _, want := range []string{"quarterly pages", "running", "0%"} {
		if !strings.Contains(text, want) {
			t.Errorf("the Batches page's row does not say %q:\n%s", want, text)
		}
	}
	// Two pages complete, one fails for good (exit 65): the batch is done.
	s.start(t, "work", "--type", "e2e.page", "--", "sh", "-c", `grep -q '"p":3' && exit 65; exit 0`)
	var b struct{ Batch batchJSON }
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if s.rotaJSON(t, &b, "batch", "get", bid); b.Batch.Done {
			break
		}
	}
	if !b.Batch.Done {
		t.Fatalf("the batch is not done: %+v", b.Batch)
	}
	run(t, ctx, "the batch's page",
		chromedp.Navigate(s.URL+"/batches/"+bid),
		chromedp.WaitVisible(`#batch-counts`),
		chromedp.Text(`main`, &text),
	)
	for _, want := range []string{"Batch " + bid + ": quarterly pages", "done", "3 of 3 ended (100%)", "Completed\n2", "Failed\n1", "job " + strconv.FormatInt(b.Batch.CompleteJob, 10)} {
		if !strings.Contains(text, want) {
			t.Errorf("the batch's page does not say %q:\n%s", want, text)
		}
	}
	shot(t, ctx, "batch")
	var href string
	run(t, ctx, "a member's page",
		chromedp.Navigate(s.URL+"/jobs/"+id(added.Results[0].Job.ID)),
		chromedp.WaitVisible(`#job-batch`),
		chromedp.AttributeValue(`#job-batch`, "href", &href, nil),
	)
	if href != "/batches/"+bid {
		t.Errorf("a member's page links %q, want /batches/%s", href, bid)
	}
}
