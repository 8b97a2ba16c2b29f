package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// batchJSON is the part of a batch's JSON the tests look at.
type batchJSON struct {
	ID     int64 `json:"id"`
	Counts struct {
		Total, Remaining, Completed, Failed int64
	} `json:"counts"`
	Open        bool  `json:"open"`
	Done        bool  `json:"done"`
	CompleteJob int64 `json:"complete_job"`
	SuccessJob  int64 `json:"success_job"`
}

// TestBatchCommands: rota batch add (from arguments and from a file),
// rota add --batch, rota batch close, get and ls, and a callback job that
// sees its batch; bad input is refused with nothing added.
func TestBatchCommands(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	id := strings.TrimSpace(s.rota(t, "batch", "add", "-q", "--open", "e2e.page", `{"page":1}`, `{"page":2}`,
		"--on-complete", "e2e.merge", "--on-complete-data", `{"report":"q3"}`, "--on-success", "e2e.mail", "--description", "q3"))
	if _, err := strconv.ParseInt(id, 10, 64); err != nil {
		t.Fatalf("batch add -q printed %q, want an id", id)
	}
	member := s.add(t, "e2e.page", `{"page":3}`, "--batch", id)
	if out := s.rota(t, "get", strconv.FormatInt(member, 10)); !strings.Contains(out, "batch:") || !strings.Contains(out, "rota batch get "+id) {
		t.Errorf("rota get of a member does not show its batch:\n%s", out)
	}
	if out := s.rota(t, "batch", "close", id); !strings.Contains(out, "batch "+id+": 3 jobs") {
		t.Errorf("batch close: %q", out)
	}
	// Run the pages: the batch is done and its callbacks are added.
	s.start(t, "work", "--type", "e2e.page", "--", "true")
	var got struct{ Batch batchJSON }
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if s.rotaJSON(t, &got, "batch", "get", id); got.Batch.Done {
			break
		}
	}
	if !got.Batch.Done || got.Batch.Counts.Completed != 3 || got.Batch.CompleteJob == 0 || got.Batch.SuccessJob == 0 {
		t.Fatalf("batch get after its jobs: %+v", got.Batch)
	}
	merge := s.get(t, got.Batch.CompleteJob)
	var data struct {
		Report string `json:"report"`
		Batch  struct {
			ID       int64  `json:"id"`
			Callback string `json:"callback"`
		} `json:"batch"`
	}
	if err := json.Unmarshal(merge.Data, &data); err != nil || data.Report != "q3" || strconv.FormatInt(data.Batch.ID, 10) != id || data.Batch.Callback != "complete" {
		t.Errorf("the on-complete job's data %s", merge.Data)
	}
	out := s.rota(t, "batch", "get", id)
	for _, want := range []string{"state:       done", "3: 0 remaining, 3 completed", "e2e.merge (job ", "description: q3"} {
		if !strings.Contains(out, want) {
			t.Errorf("batch get does not say %q:\n%s", want, out)
		}
	}

	// From a file.
	file := filepath.Join(t.TempDir(), "batch.json")
	if err := os.WriteFile(file, []byte(`{"jobs":[{"type":"e2e.row"},{"type":"e2e.row","data":{"n":2}}],"on_success":{"type":"e2e.done"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var added struct {
		Batch   batchJSON
		Results []struct{ Job job }
	}
	s.rotaJSON(t, &added, "batch", "add", "--file", file)
	if added.Batch.Counts.Total != 2 || len(added.Results) != 2 || added.Batch.Open {
		t.Errorf("batch add --file: %+v", added)
	}
	ls := s.rota(t, "batch", "ls")
	if !strings.Contains(ls, "REMAINING") || !strings.Contains(ls, strconv.FormatInt(added.Batch.ID, 10)+"  ") || !strings.Contains(ls, "done") {
		t.Errorf("batch ls:\n%s", ls)
	}

	// Refusals: nothing added.
	before := s.rota(t, "stats", "--json")
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"batch", "add", "e2e.page", `[1]`}, "must be a JSON object"},
		{[]string{"batch", "add"}, "give a TYPE"},
		{[]string{"batch", "add", "e2e.page", "--on-success-data", `{}`}, "--on-success-data needs --on-success"},
		{[]string{"batch", "add", "e2e.page", "--on-complete", "x", "--on-complete-data", `{"batch":1}`}, `"batch"`},
		{[]string{"add", "e2e.page", "--batch", id}, "is done"},
		{[]string{"batch", "get", "999999"}, "batch 999999"},
	} {
		r := s.run(t, "", c.args...)
		if r.code == 0 || !strings.Contains(r.stderr, c.msg) {
			t.Errorf("%v: want a failure saying %q", r, c.msg)
		}
	}
	if after := s.rota(t, "stats", "--json"); after != before {
		t.Errorf("refused commands changed the jobs:\n%s\nthen\n%s", before, after)
	}
}
