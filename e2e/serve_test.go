package e2e_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeBindSafety checks that rota serve will not expose an
// unauthenticated API beyond loopback by accident.
func TestServeBindSafety(t *testing.T) {
	t.Run("refuses a public address without a token", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "serve", "--http", "0.0.0.0:0", "--data", t.TempDir())
		cmd.Env = cleanEnv()
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("serve on 0.0.0.0 without a token started:\n%s", out)
		}
		for _, want := range []string{"not a loopback address", "--auth-token", "--allow-unauthenticated"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("refusal does not mention %q:\n%s", want, out)
			}
		}
	})
	t.Run("an empty token file is an error", func(t *testing.T) {
		empty := filepath.Join(t.TempDir(), "token")
		os.WriteFile(empty, []byte("\n"), 0o600)
		cmd := exec.Command(bin, "serve", "--auth-token-file", empty, "--data", t.TempDir())
		cmd.Env = cleanEnv()
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "empty") {
			t.Errorf("serve with an empty token file: %v\n%s", err, out)
		}
	})
	t.Run("a token file protects a public address", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "token")
		os.WriteFile(file, []byte("s3cret\n"), 0o600)
		s := startServer(t, "--http", "0.0.0.0:0", "--auth-token-file", file)
		status := func(path, token string) int {
			req, _ := http.NewRequest("GET", s.URL+path, nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if got := status("/v1/stats", ""); got != http.StatusUnauthorized {
			t.Errorf("no token: %d, want 401", got)
		}
		if got := status("/v1/stats", "wrong"); got != http.StatusForbidden {
			t.Errorf("wrong token: %d, want 403", got)
		}
		if got := status("/v1/stats", "s3cret"); got != http.StatusOK {
			t.Errorf("the file's token: %d, want 200", got)
		}
		if got := status("/healthz", ""); got != http.StatusOK {
			t.Errorf("/healthz without a token: %d, want 200", got)
		}
	})
	t.Run("explicitly unauthenticated", func(t *testing.T) {
		s := startServer(t, "--http", "0.0.0.0:0", "--allow-unauthenticated")
		if !strings.Contains(s.log.String(), "NO auth token") {
			t.Errorf("the log does not warn about serving without a token:\n%s", s.log)
		}
	})
}
