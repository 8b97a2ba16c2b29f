package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardWorkflow opens the page of a job in a diamond (a, then b
// and c after a, then d after both) in Chromium: its workflow is drawn
// with every job in its state, one arrow per dependency, d to the right
// of b and c; after a completes, the page drawn again shows b and c
// pending. A fan-in of 400 jobs is drawn bounded, saying what it left out.
func TestDashboardWorkflow(t *testing.T) {
	s := startServer(t, "--auth-token", "adm")
	s.token = "adm"
	a := s.add(t, "e2e.wf")
	b := s.add(t, "e2e.wf", "--after", id(a))
	c := s.add(t, "e2e.wf", "--after", id(a))
	d := s.add(t, "e2e.wf", "--after", id(b)+","+id(c))

	ctx := browser(t, 1280, 800)
	signIn(t, ctx, s.URL, "adm")
	type node struct {
		ID    string `json:"id"`
		State string `json:"state"`
		X     float64
	}
	var nodes []node
	var edges int
	read := `Array.from(document.querySelectorAll("#workflow a.wf-node")).map(n => ({id: n.dataset.job, state: n.dataset.state, X: n.querySelector("rect").x.baseVal.value}))`
	run(t, ctx, "the page of a job in a diamond",
		chromedp.Navigate(s.URL+"/jobs/"+id(b)),
		chromedp.WaitVisible(`#workflow svg`),
		chromedp.Evaluate(read, &nodes),
		chromedp.Evaluate(`document.querySelectorAll("#workflow line.wf-edge").length`, &edges),
	)
	shot(t, ctx, "job-workflow")
	states := map[string]string{}
	xs := map[string]float64{}
	for _, n := range nodes {
		states[n.ID], xs[n.ID] = n.State, n.X
	}
	want := map[string]string{id(a): "pending", id(b): "waiting", id(c): "waiting", id(d): "waiting"}
	if fmt.Sprint(states) != fmt.Sprint(want) || edges != 4 {
		t.Errorf("workflow drawn: %v with %d edges, want %v with 4", states, edges, want)
	}
	if !(xs[id(a)] < xs[id(b)] && xs[id(b)] == xs[id(c)] && xs[id(c)] < xs[id(d)]) {
		t.Errorf("columns: %v, want a, then b and c, then d", xs)
	}
	run(t, ctx, "a job with no workflow has none drawn",
		chromedp.Navigate(s.URL+"/jobs/"+id(s.add(t, "e2e.alone"))),
		chromedp.WaitVisible(`dl.facts`),
		chromedp.Evaluate(`document.querySelectorAll("#workflow").length`, &edges),
	)
	if edges != 0 {
		t.Errorf("a job without dependencies shows a workflow")
	}
	s.rota(t, "cancel", id(a))
	run(t, ctx, "the diamond after its first job's cancel",
		chromedp.Navigate(s.URL+"/jobs/"+id(b)),
		chromedp.WaitVisible(`#workflow svg`),
		chromedp.Evaluate(read, &nodes),
	)
	for _, n := range nodes {
		if n.State != "cancelled" {
			t.Errorf("job %s drawn %s after the cancel went down the graph, want cancelled", n.ID, n.State)
		}
	}

	// A fan-in: one job after 400 others.
	var batch []map[string]any
	var keys []string
	for i := range 400 {
		k := fmt.Sprintf("k%d", i)
		batch = append(batch, map[string]any{"type": "e2e.fan", "key": k})
		keys = append(keys, k)
	}
	batch = append(batch, map[string]any{"type": "e2e.fan", "key": "sink", "after_keys": keys})
	body, _ := json.Marshal(map[string]any{"jobs": batch})
	req, _ := http.NewRequest("POST", s.URL+"/v1/jobs", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer adm")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Results []struct{ Job struct{ ID int64 } }
	}
	err = json.NewDecoder(resp.Body).Decode(&res)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || len(res.Results) != 401 {
		t.Fatalf("add the fan-in: %d %v", resp.StatusCode, err)
	}
	sink := res.Results[400].Job.ID
	var note string
	var drawn int
	run(t, ctx, "the page of a fan-in of 400",
		chromedp.Navigate(s.URL+"/jobs/"+id(sink)),
		chromedp.WaitVisible(`#workflow svg`),
		chromedp.Text(`#workflow p`, &note),
		chromedp.Evaluate(`document.querySelectorAll("#workflow a.wf-node").length`, &drawn),
	)
	if drawn > 45 || !strings.Contains(note, "larger workflow") || !strings.Contains(note, "not drawn") {
		t.Errorf("fan-in of 400: %d jobs drawn, note %q; want at most a column's 40 and the sink, saying what it left out", drawn, note)
	}
}
