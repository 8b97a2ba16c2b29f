package dashboard

import (
	"fmt"
	"html/template"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rotajobs/rota"
)

// pages are the templates ExecuteTemplate draws; each defines itself and
// shares "head" and "foot" (templates/layout.html).
var pages = []string{"login", "error", "overview", "overview-live", "jobs", "job", "bulk", "types", "groups", "recurring", "batches", "batch"}

func parseTemplates() (map[string]*template.Template, error) {
	t, err := template.New("").Funcs(template.FuncMap{
		"seg":   seg,
		"rel":   rel,
		"abs":   abs,
		"iso":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"num":   num,
		"pct":   func(p float64) string { return fmt.Sprintf("%.0f%%", p) },
		"clock": func(t time.Time) string { return t.UTC().Format("15:04:05 UTC") },
		"dur":   dur,
		"state": func(s rota.State) string { return s.String() },
		"stamp": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000") },
		// lvl is a log level's class: debug, info, warn or error.
		"lvl": func(l slog.Level) string {
			switch {
			case l >= slog.LevelError:
				return "error"
			case l >= slog.LevelWarn:
				return "warn"
			case l >= slog.LevelInfo:
				return "info"
			}
			return "debug"
		},
		"add":    func(a, b int) int { return a + b },
		"joined": func(s []string) string { return strings.Join(s, ", ") },
		"bands": func(b rota.Bands) string {
			if b.IsZero() {
				return ""
			}
			return b.String()
		},
		"group": func(g string) string {
			if g == "" {
				return "(default)"
			}
			return g
		},
	}).ParseFS(templateFiles, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: templates: %w", err)
	}
	out := map[string]*template.Template{}
	for _, p := range pages {
		if t.Lookup(p) == nil {
			return nil, fmt.Errorf("dashboard: no template %q", p)
		}
		out[p] = t
	}
	return out, nil
}

// seg is one path segment of a URL built from data (a type, an id): every
// character that would end the segment (/, ?, #) or change its meaning is
// escaped. html/template escapes query values by itself, not path parts.
func seg(v any) string { return url.PathEscape(fmt.Sprint(v)) }

// abs is a time in full, in UTC; the page shows it in the browser's zone.
func abs(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 MST")
}

// num writes an integer with thousands separators.
func num(v any) string {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int64:
		n = x
	default:
		return fmt.Sprint(v)
	}
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// dur is a setting's duration, blank when unset.
func dur(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return duration(d)
}
