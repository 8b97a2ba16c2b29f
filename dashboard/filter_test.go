package dashboard_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi/wire"
)

var rowIDRE = regexp.MustCompile(`<input type="checkbox" name="id" value="(\d+)"`)

// TestBulkByFilterActsOnWhatThePageShows compares, for every field of the
// jobs page's filter, the jobs the page lists with the jobs a bulk action
// "every job matching the filter" removes: they must be the same.
func TestBulkByFilterActsOnWhatThePageShows(t *testing.T) {
	cases := []struct {
		name, query string
		scoped      bool // signed in with a token scoped to group a
	}{
		{"no filter", "", false},
		{"type", "type=email.send", false},
		{"type pattern", "type=email.*", false},
		{"group", "group=b", false},
		{"priority", "priority=5", false},
		{"state", "state=pending", false},
		{"states", "state=pending&state=cancelled", false},
		{"changed since", "since=SINCE", false},
		{"changed since in a zone", "since=SINCE_LOCAL&tz=Asia/Tokyo", false},
		{"order and limit", "order=asc&limit=3", false},
		{"everything", "type=email.*&group=b&priority=5&state=cancelled&since=SINCE", false},
		{"priority, scoped token", "priority=5", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSite(t, "adm")
			ctx := context.Background()
			// Every combination of type, group and priority; one of each
			// pair is cancelled after SINCE, so that state and time differ.
			var all []int64
			var later []int64
			for _, typ := range []string{"email.send", "email.bounce", "report"} {
				for _, group := range []string{"a", "b"} {
					for _, prio := range []int{0, 5} {
						for i := range 2 {
							res, err := s.c.Add(ctx, rota.AddParams{Type: typ, Group: group, Priority: prio})
							if err != nil {
								t.Fatal(err)
							}
							all = append(all, res.Job.ID)
							if i == 1 {
								later = append(later, res.Job.ID)
							}
						}
					}
				}
			}
			time.Sleep(1100 * time.Millisecond)
			since := time.Now().Truncate(time.Second)
			for _, id := range later {
				if err := s.c.Cancel(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
			tokyo, _ := time.LoadLocation("Asia/Tokyo")
			query := strings.NewReplacer("SINCE_LOCAL", since.In(tokyo).Format("2006-01-02T15:04:05"),
				"SINCE", url.QueryEscape(since.Format(time.RFC3339))).Replace(tc.query)

			token := "adm"
			if tc.scoped {
				token = createToken(t, s, wire.CreateTokenRequest{Name: "a", Groups: []string{"a"}})
			}
			cl, csrf := signIn(t, s, token)
			// What the page lists, every page of it.
			var listed []int64
			next := "/jobs?" + query
			for next != "" {
				resp, page := get(t, cl, s.url+strings.ReplaceAll(next, "&amp;", "&"))
				if resp.StatusCode != 200 {
					t.Fatalf("GET %s: %d", next, resp.StatusCode)
				}
				for _, m := range rowIDRE.FindAllStringSubmatch(page, -1) {
					id, _ := strconv.ParseInt(m[1], 10, 64)
					listed = append(listed, id)
				}
				next = ""
				if m := regexp.MustCompile(`<a href="([^"]+)" rel="next"`).FindStringSubmatch(page); m != nil {
					next = m[1]
				}
			}
			if len(listed) == 0 && tc.query != "" {
				t.Fatalf("the page lists no job for %s: the case tests nothing", tc.query)
			}
			// The bulk form's filter is the page's own.
			_, page := get(t, cl, s.url+"/jobs?"+query)
			m := regexp.MustCompile(`<input type="hidden" name="filter" value="([^"]*)">`).FindStringSubmatch(page)
			if m == nil {
				t.Fatalf("no bulk form on the page")
			}
			filter := strings.ReplaceAll(m[1], "&amp;", "&")
			resp, _ := postForm(t, cl, s.url+"/jobs/bulk", url.Values{"csrf": {csrf}, "action": {"remove"}, "scope": {"all"}, "filter": {filter}})
			if resp.StatusCode != 303 {
				t.Fatalf("bulk remove: %d", resp.StatusCode)
			}
			waitBulk(t, cl, s.url+resp.Header.Get("Location"))
			var removed []int64
			for _, id := range all {
				_, err := s.c.Get(ctx, id)
				if errors.Is(err, rota.ErrNotFound) {
					removed = append(removed, id)
				} else if err != nil {
					t.Fatal(err)
				}
			}
			slices.Sort(listed)
			if !slices.Equal(listed, removed) {
				t.Errorf("filter %s: the page lists %v, the bulk removal removed %v", query, listed, removed)
			}
		})
	}
}

// waitBulk waits for a bulk action's page to say it finished.
func waitBulk(t *testing.T, cl *http.Client, u string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, page := get(t, cl, u)
		if strings.Contains(page, "Finished.") {
			if strings.Contains(page, "It stopped") {
				t.Fatalf("the bulk action stopped: %s", page)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bulk action did not finish: %s", page)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
