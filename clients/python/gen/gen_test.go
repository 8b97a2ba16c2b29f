package main

import (
	"bytes"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/store/sqlite"
)

// TestModelsMatchTheServer fetches the OpenAPI document from a real
// server and fails when the Python client's committed models are not
// what that document gives: a change to the API lands with its client.
func TestModelsMatchTheServer(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "rota.db"), sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := rota.NewClient(st, rota.Config{CloseStore: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	api := httpapi.New(c, httpapi.Config{})
	defer api.Close()
	srv := httptest.NewServer(api)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /v1/openapi.json: %v %v", resp.Status, err)
	}
	want, err := Generate(doc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "rota", "_models.py"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("clients/python/rota/_models.py is not what the server's OpenAPI document gives (first difference at line %d); run go run ./clients/python/gen, and update the Python client for the change",
			firstDiffLine(got, want))
	}
}

// TestGenerateRefusesADocumentWithoutErrorCodes: the generator fails
// rather than write a client without its exceptions.
func TestGenerateRefusesADocumentWithoutErrorCodes(t *testing.T) {
	_, err := Generate([]byte(`{"info":{"version":"1"},"paths":{},"components":{"schemas":{}}}`))
	if err == nil || !strings.Contains(err.Error(), "ErrorCode") {
		t.Fatalf("Generate without ErrorCode: %v, want an error naming it", err)
	}
}

// TestGenerateSeesAChangedField: a field added to a schema changes the
// generated module, so the drift test above cannot pass a stale file.
func TestGenerateSeesAChangedField(t *testing.T) {
	doc := httpapi.OpenAPI()
	before, err := Generate(doc)
	if err != nil {
		t.Fatal(err)
	}
	changed := bytes.Replace(doc, []byte(`"progress":`), []byte(`"progress_pct":{"type":"number"},"progress":`), 1)
	after, err := Generate(changed)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(before, after) || !bytes.Contains(after, []byte(`"progress_pct": "json"`)) {
		t.Fatal("a new field did not change the generated models")
	}
}

func firstDiffLine(a, b []byte) int {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(la), len(lb)) {
		if !bytes.Equal(la[i], lb[i]) {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}
