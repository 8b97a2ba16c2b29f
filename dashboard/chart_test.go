package dashboard

import (
	"strings"
	"testing"
	"time"
)

// TestChartCoversItsWindow: a chart drawn in a server's first minutes
// spans only the minutes counted, and says it is partial; after an hour
// it spans the hour.
func TestChartCoversItsWindow(t *testing.T) {
	end := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	pts := make([]point, 60)
	for i := range pts {
		pts[i] = point{At: end.Add(time.Duration(i-59) * time.Minute), Queued: 2}
	}
	started := end.Add(20 * time.Second) // in the last minute
	c := newChart(pts, started)
	if !c.Partial || !c.From.Equal(started) {
		t.Errorf("a chart of a server started in the last minute: partial %v from %v", c.Partial, c.From)
	}
	if got := c.Series[0].Points; strings.Count(got, ",") != 2 || !strings.HasPrefix(got, "0,") {
		t.Errorf("one minute counted draws %q, want one line across the chart", got)
	}
	c = newChart(pts, end.Add(-3*time.Minute+time.Second))
	if got := strings.Count(c.Series[0].Points, ","); !c.Partial || got != 4 {
		t.Errorf("four minutes counted: partial %v, %d points", c.Partial, got)
	}
	c = newChart(pts, end.Add(-2*time.Hour))
	if got := strings.Count(c.Series[0].Points, ","); c.Partial || got != 60 {
		t.Errorf("an hour counted: partial %v, %d points", c.Partial, got)
	}
	if c.Total[0] != 120 {
		t.Errorf("queued over the hour: %d, want 120", c.Total[0])
	}
}
