package cli

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestDocsListEveryCommand compares the command tree with docs/cli.md,
// so that neither drifts: every command a user can run (cobra's help and
// completion included) has a heading "rota NAME" there, and every
// subcommand (rota token ls, rota bench drain) is named on the page; and
// every command a heading names exists.
func TestDocsListEveryCommand(t *testing.T) {
	raw, err := os.ReadFile("../../../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	root := newRoot()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()

	var headings []string // the command paths the headings name
	inCode := false
	for line := range strings.Lines(doc) {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		for _, m := range regexp.MustCompile("(?:^#+ | / )rota((?: [a-z][a-z-]*)+)").FindAllStringSubmatch(line, -1) {
			headings = append(headings, strings.TrimSpace(m[1]))
		}
	}
	// known says whether path (such as "token ls") starts with a command.
	known := func(path string) bool {
		c, rest, err := root.Find(strings.Fields(path))
		return err == nil && c != root && len(rest) < len(strings.Fields(path))
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden {
				continue
			}
			path := strings.TrimPrefix(sub.CommandPath(), "rota ")
			if c == root {
				if !slices.ContainsFunc(headings, func(h string) bool { return h == path || strings.HasPrefix(h, path+" ") }) {
					t.Errorf("docs/cli.md has no heading for `rota %s` (%s)", path, sub.Short)
				}
			} else if !strings.Contains(doc, "rota "+path) {
				t.Errorf("docs/cli.md does not name `rota %s` (%s)", path, sub.Short)
			}
			walk(sub)
		}
	}
	walk(root)
	for _, h := range headings {
		if !known(h) {
			t.Errorf("docs/cli.md has a heading for `rota %s`, which is no command", h)
		}
	}
}
