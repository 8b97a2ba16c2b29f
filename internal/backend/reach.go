package backend

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/rotajobs/rota/internal/rules/glob"
	"github.com/rotajobs/rota/store"
)

// ListInReach pages a listing for a caller with reach r: page reads the
// store's jobs in p's order (up to p.Limit+1 from p.After), and only jobs
// in reach are kept and counted, page after page of the store's, until
// there are p.Limit+1 of them or the store has no more; so the next
// cursor is set only when a job in reach follows. Requested groups and
// types out of reach are dropped first (none left: an empty page at once),
// and literal group names of the reach narrow the store's query. p must
// have passed check.List.
func ListInReach(p store.ListParams, r *store.Reach, page func(store.ListParams) ([]store.Job, error)) (store.ListResult, error) {
	if !r.Scoped() {
		jobs, err := page(p)
		if err != nil {
			return store.ListResult{}, err
		}
		return PageOf(jobs, p.Limit), nil
	}
	if len(p.Groups) > 0 {
		if p.Groups = slices.DeleteFunc(slices.Clone(p.Groups), func(g string) bool { return !r.HasGroup(g) }); len(p.Groups) == 0 {
			return store.ListResult{}, nil
		}
	} else if r.Groups() != nil && !slices.ContainsFunc(r.Groups(), func(g string) bool { return g != "" && !glob.Literal(g) }) {
		p.Groups = r.Groups() // names, not patterns: the store's query selects them
	}
	if len(p.Types) > 0 {
		if p.Types = slices.DeleteFunc(slices.Clone(p.Types), func(t string) bool { return !r.HasType(t) }); len(p.Types) == 0 {
			return store.ListResult{}, nil
		}
	}
	// The store is read a page of p's size first (a token's listing of
	// its own groups costs what an admin's does), then in pages of its
	// own size, so that a small page of a tenant among many others' jobs
	// takes few queries.
	q := p
	want := p.Limit + 1
	var out []store.Job
	for {
		jobs, err := page(q)
		if err != nil {
			return store.ListResult{}, err
		}
		for _, j := range jobs {
			if r.Has(j.Type, j.Group) {
				out = append(out, j)
				if len(out) == want {
					return PageOf(out, p.Limit), nil
				}
			}
		}
		if len(jobs) <= q.Limit {
			return PageOf(out, p.Limit), nil
		}
		q.After = jobs[len(jobs)-1].ID
		q.Limit = max(p.Limit, reachScan)
	}
}

// reachScan is how many jobs ListInReach reads from the store at a time.
const reachScan = 500

// JobsInReach makes the jobs out of reach r missing ones (a Job with ID 0), as Get answers an id that does not exist.
func JobsInReach(jobs []store.Job, r *store.Reach) []store.Job {
	if !r.Scoped() {
		return jobs
	}
	for i, j := range jobs {
		if j.ID != 0 && !r.Has(j.Type, j.Group) {
			jobs[i] = store.Job{}
		}
	}
	return jobs
}

// CountsInReach keeps the counts of types and groups in reach r.
func CountsInReach(counts []store.Count, r *store.Reach) []store.Count {
	if !r.Scoped() {
		return counts
	}
	return slices.DeleteFunc(counts, func(c store.Count) bool { return !r.Has(c.Type, c.Group) })
}

// PageOf makes a page of a listing from up to limit+1 jobs in order: the
// extra job, when there is one, only says that another page follows.
func PageOf(jobs []store.Job, limit int) store.ListResult {
	if len(jobs) <= limit {
		return store.ListResult{Jobs: jobs}
	}
	return store.ListResult{Jobs: jobs[:limit], Next: jobs[limit-1].ID}
}

// GroupRanges returns ranges [from, to) of group names, in byte order,
// that hold every group in reach r (to "": no bound above), for a store's
// listing query to read only those groups' jobs; ListInReach keeps the
// ones in reach exactly. Nil when the reach does not narrow the groups:
// every group, or a pattern that starts with a metacharacter.
func GroupRanges(r *store.Reach) [][2]string {
	if r.Groups() == nil {
		return nil
	}
	var out [][2]string
	for _, g := range r.Groups() {
		i := strings.IndexAny(g, glob.Meta)
		if i < 0 {
			// A name: itself (and names that go on with a NUL, which no
			// group has; a store's text may not hold one).
			out = append(out, [2]string{g, g + "\x01"})
			continue
		}
		if i == 0 {
			return nil
		}
		out = append(out, [2]string{g[:i], successor(g[:i])})
	}
	return out
}

// successor is the least string, in byte order, above every string that
// starts with prefix ("" when there is none): prefix with its last rune
// made the next one (UTF-8's byte order is code point order).
func successor(prefix string) string {
	for prefix != "" {
		c, n := utf8.DecodeLastRuneInString(prefix)
		prefix = prefix[:len(prefix)-n]
		if c == utf8.RuneError && n <= 1 {
			return "" // not UTF-8, which names are: no bound
		}
		if c < utf8.MaxRune {
			c++
			if c == 0xD800 {
				c = 0xE000 // past the surrogates, which UTF-8 does not hold
			}
			return prefix + string(c)
		}
	}
	return ""
}
