package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }

// TestHistory: the audit trail through a real server and the CLI. Two
// named tokens and the admin change a job and pause its type; rota
// history shows each change with the token that made it, --json too; a
// token of another tenant finds no such job, before and after the job is
// removed, while its own tenant's token still reads the removal.
func TestHistory(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--auth-token", "adm")
	admin := *s
	admin.token = "adm"
	as := func(name string, args ...string) *server {
		u := *s
		u.token = strings.TrimSpace(admin.rota(t, append([]string{"token", "create", name}, args...)...))
		return &u
	}
	alice := as("alice", "--groups", "acme")
	bob := as("bob", "--groups", "acme")
	eve := as("eve", "--groups", "globex")

	jid := strings.Fields(alice.rota(t, "add", "e2e.invoice", `{"n":1}`, "--group", "acme", "-q"))[0]
	alice.rota(t, "update", jid, "--priority", "5")
	admin.rota(t, "pause", "--type", "e2e.invoice")
	admin.rota(t, "resume", "--type", "e2e.invoice")
	bob.rota(t, "cancel", jid)
	alice.rota(t, "retry", jid)

	out := bob.rota(t, "history", jid)
	for _, want := range []string{
		`added +- +type e2e.invoice, group "acme"`,
		`update +alice +priority 0 → 5`,
		`pause type +admin +type e2e.invoice`,
		`resume type +admin +type e2e.invoice`,
		`cancel +bob +pending → cancelled`,
		`retry +alice +cancelled → pending`,
	} {
		if !regexpMatch(want, out) {
			t.Errorf("rota history does not show %q:\n%s", want, out)
		}
	}
	var h struct {
		History []struct {
			Action, Actor, Detail string
			Audited               bool
		}
	}
	if err := json.Unmarshal([]byte(alice.rota(t, "history", jid, "--json")), &h); err != nil {
		t.Fatal(err)
	}
	var actors []string
	for _, e := range h.History {
		if e.Audited {
			actors = append(actors, e.Actor)
		}
	}
	if got := strings.Join(actors, ","); got != "alice,admin,admin,bob,alice" {
		t.Errorf("rota history --json actors: %s, want alice,admin,admin,bob,alice", got)
	}
	if r := eve.run(t, "", "history", jid); r.code != 3 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("another tenant's rota history: %v, want not found (exit 3)", r)
	}

	bob.rota(t, "rm", jid)
	if out := alice.rota(t, "history", jid); !regexpMatch(`remove +bob +removed while pending`, out) || strings.Contains(out, "added") {
		t.Errorf("a removed job's history:\n%s", out)
	}
	if r := eve.run(t, "", "history", jid); r.code != 3 {
		t.Errorf("another tenant's rota history of a removed job: %v, want not found (exit 3)", r)
	}
	if r := alice.run(t, "", "history", "x"); r.code == 0 || !strings.Contains(r.stderr, `bad job id "x"`) {
		t.Errorf("rota history x: %v", r)
	}
}

// TestHistoryOfConfigFile: settings that rota serve --config changes at
// start are recorded as made by the file.
func TestHistoryOfConfigFile(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	jid := s.add(t, "e2e.configured")
	config := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(config, []byte(`{"types": [{"type": "e2e.configured", "paused": true, "max_running": 4}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s.args = append(s.args, "--config", config)
	s.restart(t)
	out := s.rota(t, "history", id(jid))
	if !regexpMatch(`pause type +rota serve --config +type e2e.configured: max_running 0 → 4`, out) {
		t.Errorf("rota history after a restart with --config:\n%s", out)
	}
}
