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

// TestTokens: rota token create, ls and revoke against a real server, and
// what a scoped token may do with the CLI.
func TestTokens(t *testing.T) {
	s := startServer(t, "--auth-token", "adm")
	admin := *s
	admin.token = "adm"
	if r := s.run(t, "", "token", "ls"); r.code != 6 {
		t.Fatalf("token ls without a token: %v", r)
	}
	secret := strings.TrimSpace(admin.rota(t, "token", "create", "acme", "--groups", "acme-*"))
	if !strings.HasPrefix(secret, "rota_") {
		t.Fatalf("token create printed %q", secret)
	}
	if out := admin.rota(t, "token", "ls"); !strings.Contains(out, "acme") || strings.Contains(out, secret) {
		t.Errorf("token ls:\n%s", out)
	}
	acme := *s
	acme.token = secret
	acme.rota(t, "add", "mail", "{}", "--group", "acme-1")
	if r := acme.run(t, "", "add", "mail", "{}", "--group", "beta"); r.code != 6 || !strings.Contains(r.stderr, `may not add jobs of type "mail" in group "beta"`) {
		t.Errorf("a scoped add out of reach: %v", r)
	}
	if r := acme.run(t, "", "add", "mail", "{}"); r.code != 6 || !strings.Contains(r.stderr, `may not add jobs of type "mail" in the default group`) {
		t.Errorf("a scoped add to the default group: %v", r)
	}
	admin.rota(t, "add", "mail", "{}", "--group", "beta")
	if out := acme.rota(t, "ls"); strings.Contains(out, "beta") || !strings.Contains(out, "acme-1") {
		t.Errorf("acme's ls shows what it does not reach:\n%s", out)
	}
	admin.rota(t, "token", "revoke", "acme")
	if r := acme.run(t, "", "stats"); r.code != 6 {
		t.Errorf("a revoked token: %v", r)
	}
	if r := admin.run(t, "", "token", "revoke", "acme"); r.code != 3 || !strings.Contains(r.stderr, `no token named "acme"`) {
		t.Errorf("revoking twice: %v", r)
	}
}
