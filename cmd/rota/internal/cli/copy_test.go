package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestCopyBar: on a terminal the bar shows each phase's jobs, share and
// rate on one line, redrawn in place, and is cleared at the end; elsewhere
// it draws nothing.
func TestCopyBar(t *testing.T) {
	var out bytes.Buffer
	b := newCopyBar(&out, true)
	b.show("copy", 0, 1000)
	b.show("copy", 500, 1000) // within 100 ms: skipped
	b.show("copy", 1000, 1000)
	b.show("check", 1000, 1000)
	b.done()
	got := out.String()
	for _, want := range []string{"\rcopying  [", "  0.0%  0/1000 jobs", "100.0%  1000/1000 jobs", "\rchecking [" + strings.Repeat("=", 30) + "]", "\r\033[K"} {
		if !strings.Contains(got, want) {
			t.Errorf("the bar does not show %q: %q", want, got)
		}
	}
	if strings.Contains(got, "500/1000") || strings.Contains(got, "\n") {
		t.Errorf("the bar drew more than ten times a second, or left its line: %q", got)
	}
	out.Reset()
	off := newCopyBar(&out, false)
	off.show("copy", 1, 2)
	off.done()
	if out.Len() != 0 {
		t.Errorf("off a terminal, the bar drew %q", out.String())
	}
}
