package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store"
)

// tokenKinds are the tokens the route table tries.
var tokenKinds = []string{"admin", "acme", "acme-read-only", "beta", "mail-only", "revoked", "wrong", "none"}

// tokenEnv is a server with an admin token and named tokens: acme reaches
// groups acme-*, acme-read-only the same without changing anything, beta
// reaches group beta, mail-only reaches types mail.* in every group.
type tokenEnv struct {
	*testServer
	secrets map[string]string
}

func newTokenEnv(t *testing.T) *tokenEnv {
	s := newServer(t, httpapi.Config{AuthToken: "admin-secret"})
	e := &tokenEnv{testServer: s, secrets: map[string]string{"admin": "admin-secret", "wrong": "nope", "none": ""}}
	for _, tk := range []wire.CreateTokenRequest{
		{Name: "acme", Groups: []string{"acme-*"}},
		{Name: "acme-read-only", Groups: []string{"acme-*"}, ReadOnly: true},
		{Name: "beta", Groups: []string{"beta"}},
		{Name: "mail-only", Types: []string{"mail.*"}},
		{Name: "revoked"},
	} {
		res := want[wire.CreateTokenResponse](t, s, http.StatusCreated, "POST", "/v1/tokens", tk)
		if !strings.HasPrefix(res.Secret, "rota_") || res.Token.Name != tk.Name {
			t.Fatalf("created token %+v", res)
		}
		e.secrets[tk.Name] = res.Secret
	}
	want[struct{}](t, s, http.StatusNoContent, "DELETE", "/v1/tokens/revoked", nil)
	return e
}

// as sends a request with a kind of token.
func (e *tokenEnv) as(t *testing.T, kind, method, target string, body any) reply {
	t.Helper()
	auth := "Bearer " + e.secrets[kind]
	if kind == "none" {
		auth = ""
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	r, err := e.send(ctx, method, target, body, "Authorization", auth)
	if err != nil {
		t.Fatalf("%s %s as %s: %v", method, target, kind, err)
	}
	e.check(t, method, target, r)
	return r
}

// reaches is what each named token reaches.
func reaches(kind, typ, group string) bool {
	switch kind {
	case "admin":
		return true
	case "acme", "acme-read-only":
		return strings.HasPrefix(group, "acme-")
	case "beta":
		return group == "beta"
	case "mail-only":
		return strings.HasPrefix(typ, "mail.")
	}
	return false
}

// TestTokenRoutes is the table of route × token kind: for each route and
// each kind of token, the status, that what a token reads is only what it
// reaches, and that a refused request changes nothing.
func TestTokenRoutes(t *testing.T) {
	e := newTokenEnv(t)
	ctx := t.Context()
	// A job of acme's, and one of beta's; a fresh running one of acme's
	// for each worker call.
	addJob := func(typ, group string) store.Job {
		res, err := e.c.Add(ctx, rota.AddParams{Type: typ, Group: group, Data: json.RawMessage(`{"n":1}`)})
		if err != nil {
			panic(err)
		}
		return res.Job
	}
	runs := 0
	runningIn := func(group string) store.Job {
		runs++
		typ := fmt.Sprintf("mail.run%d", runs) // a type of its own: nothing else to accept
		j := addJob(typ, group)
		jobs, err := e.c.Accept(ctx, rota.AcceptParams{Types: []string{typ}, Limit: 1})
		if err != nil || len(jobs) != 1 || jobs[0].ID != j.ID {
			panic(fmt.Sprintf("accept the running job: %v %v", jobs, err))
		}
		return jobs[0]
	}
	running := func() store.Job { return runningIn("acme-1") }
	// theirs is another tenant's job (beta's) that an add names, with
	// data that must not leak.
	secret := `{"secret":"beta-only"}`
	theirs := func(p rota.AddParams, run bool) store.Job {
		p.Group, p.Data = "beta", json.RawMessage(secret)
		res, err := e.c.Add(ctx, p)
		if err != nil {
			panic(err)
		}
		if run {
			jobs, err := e.c.Accept(ctx, rota.AcceptParams{Types: []string{p.Type}, Limit: 1})
			if err != nil || len(jobs) != 1 || jobs[0].ID != res.Job.ID {
				panic(fmt.Sprintf("accept beta's job: %v %v", jobs, err))
			}
			return jobs[0]
		}
		return res.Job
	}
	adds := 0
	type route struct {
		method, path string
		need         string // read, write, admin
		ok           int
		// job makes the job the request is about (nil: none) and returns
		// the request's path and body for it.
		job func() (store.Job, string, any)
		// add is the type and group the request adds, for adds.
		addType, addGroup string
		// other makes another tenant's job (beta's) that the add names
		// (by key, unique or parent), and returns the add's other fields.
		other func() (store.Job, map[string]any)
		name  string // the subtest's name, for routes that are in the table more than once
		// batch sends the add as a batch's jobs ({"jobs": [...]}).
		batch bool
	}
	jobRoute := func(method, suffix, need string, ok int, body func(j store.Job) any, run bool) route {
		return route{method: method, path: "/v1/jobs/{id}" + suffix, need: need, ok: ok, job: func() (store.Job, string, any) {
			j := addJob("mail.send", "acme-1")
			if run {
				j = running()
			}
			var b any
			if body != nil {
				b = body(j)
			}
			return j, fmt.Sprintf("/v1/jobs/%d%s", j.ID, suffix), b
		}}
	}
	token := func(j store.Job) any { return map[string]any{"token": j.Token} }
	routes := []route{
		{method: "GET", path: "/metrics", need: "admin", ok: 200},
		{method: "GET", path: "/v1/openapi.json", need: "read", ok: 200},
		{method: "POST", path: "/v1/jobs", need: "write", ok: 201, addType: "mail.send", addGroup: "acme-2"},
		// Adds that name another job: beta holds a job of the same type
		// and key, or of the same type (unique, with and without
		// overwrite), in its group; acme adds in its own and gets a job of
		// its own. A parent out of reach is a missing parent.
		{method: "POST", path: "/v1/jobs", name: "key", need: "write", ok: 201, addGroup: "acme-2",
			other: func() (store.Job, map[string]any) {
				adds++
				typ := fmt.Sprintf("mail.key%d", adds) // a type of its own: nothing else to accept
				return theirs(rota.AddParams{Type: typ, Key: "inv-1001"}, adds%2 == 0), map[string]any{"type": typ, "key": "inv-1001"}
			}},
		{method: "POST", path: "/v1/jobs", name: "unique", need: "write", ok: 201, addGroup: "acme-2",
			other: func() (store.Job, map[string]any) {
				adds++
				typ := fmt.Sprintf("mail.unique%d", adds)
				return theirs(rota.AddParams{Type: typ}, false), map[string]any{"type": typ, "unique": true}
			}},
		{method: "POST", path: "/v1/jobs", name: "overwrite", need: "write", ok: 201, addGroup: "acme-2",
			other: func() (store.Job, map[string]any) {
				adds++
				typ := fmt.Sprintf("mail.overwrite%d", adds)
				return theirs(rota.AddParams{Type: typ}, adds%2 == 0),
					map[string]any{"type": typ, "unique": true, "overwrite": true, "priority": 9, "data": map[string]any{"secret": "acme-wrote-this"}}
			}},
		{method: "POST", path: "/v1/jobs", name: "parent", need: "write", ok: 201, addType: "mail.child", addGroup: "acme-2",
			other: func() (store.Job, map[string]any) {
				adds++
				parent := theirs(rota.AddParams{Type: fmt.Sprintf("mail.parent%d", adds)}, true)
				return parent, map[string]any{"parent": parent.ID}
			}},
		{method: "GET", path: "/v1/jobs", need: "read", ok: 200},
		// Batches: their jobs are adds like any other; a batch is in a
		// token's reach when its members and callbacks are, and out of it
		// is a missing batch (the {id} routes' batch holds a job of beta's).
		{method: "POST", path: "/v1/batches", need: "write", ok: 201, addType: "mail.send", addGroup: "acme-2", batch: true},
		{method: "GET", path: "/v1/batches", need: "read", ok: 200},
		{method: "GET", path: "/v1/batches/{id}", need: "read", ok: 200},
		{method: "POST", path: "/v1/batches/{id}/jobs", need: "write", ok: 200, addType: "mail.send", addGroup: "acme-2", batch: true},
		{method: "POST", path: "/v1/batches/{id}/close", need: "write", ok: 200},
		{method: "GET", path: "/v1/stats", need: "read", ok: 200},
		{method: "GET", path: "/v1/types", need: "read", ok: 200},
		{method: "PUT", path: "/v1/types/{type}", need: "admin", ok: 200},
		{method: "GET", path: "/v1/groups", need: "read", ok: 200},
		{method: "PUT", path: "/v1/groups", need: "write", ok: 200},
		{method: "POST", path: "/v1/accept", need: "write", ok: 200},
		{method: "GET", path: "/v1/tokens", need: "admin", ok: 200},
		{method: "POST", path: "/v1/tokens", need: "admin", ok: 201},
		{method: "DELETE", path: "/v1/tokens/{name}", need: "admin", ok: 204},
		jobRoute("GET", "", "read", 200, nil, false),
		jobRoute("GET", "/deps", "read", 200, nil, false),
		jobRoute("DELETE", "", "write", 204, nil, false),
		jobRoute("PATCH", "", "write", 200, func(store.Job) any { return map[string]any{"priority": 5} }, false),
		jobRoute("POST", "/cancel", "write", 200, nil, false),
		jobRoute("GET", "/history", "read", 200, nil, false),
		jobRoute("POST", "/resubmit", "write", 200, nil, false),
		jobRoute("POST", "/heartbeat", "write", 200, token, true),
		jobRoute("POST", "/finish", "write", 204, token, true),
		jobRoute("POST", "/fail", "write", 204, token, true),
		jobRoute("POST", "/snooze", "write", 204, token, true),
		jobRoute("POST", "/release", "write", 204, token, true),
		jobRoute("GET", "/logs", "read", 200, nil, false),
		jobRoute("POST", "/logs", "write", 200, func(j store.Job) any {
			return map[string]any{"token": j.Token, "records": []any{map[string]any{"level": "INFO", "message": "m"}}}
		}, true),
		{method: "POST", path: "/v1/heartbeat", need: "write", ok: 200, job: func() (store.Job, string, any) {
			j := running()
			return j, "/v1/heartbeat", map[string]any{"items": []any{map[string]any{"id": j.ID, "token": j.Token}}}
		}},
		{method: "POST", path: "/v1/finish", need: "write", ok: 200, job: func() (store.Job, string, any) {
			j := running()
			return j, "/v1/finish", map[string]any{"items": []any{map[string]any{"id": j.ID, "token": j.Token, "as": "complete"}}}
		}},
	}
	// Every route of the API is in the table but /healthz and the event
	// stream (TestTokenEvents).
	seen := map[string]bool{"GET /healthz": true, "GET /v1/events": true}
	for _, r := range routes {
		seen[r.method+" "+r.path] = true
	}
	for _, r := range httpapi.Routes {
		if !seen[r] {
			t.Errorf("route %s is not in the token table", r)
		}
	}
	beta := addJob("mail.send", "beta")
	betaBatch, _, err := e.c.AddBatch(ctx, rota.NewBatch{Jobs: []rota.AddParams{{Type: "mail.send", Group: "beta"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		for _, kind := range tokenKinds {
			t.Run(strings.ReplaceAll(r.method+" "+r.path+" "+r.name, "/", "_")+"/"+kind, func(t *testing.T) {
				path, body := r.path, any(nil)
				var job, other store.Job
				if r.job != nil {
					job, path, body = r.job()
				}
				addType := r.addType
				switch {
				case r.addType != "" || r.other != nil:
					m := map[string]any{"type": r.addType, "group": r.addGroup}
					if r.other != nil {
						var extra map[string]any
						other, extra = r.other()
						maps.Copy(m, extra)
						addType = m["type"].(string)
					}
					body = m
					if r.batch {
						body = map[string]any{"jobs": []any{m}}
					}
				case r.path == "/v1/types/{type}":
					path, body = "/v1/types/mail.send", map[string]any{"lease_timeout": "1m"}
				case r.path == "/v1/groups" && r.method == "PUT":
					body = map[string]any{"group": "acme-1", "type": "mail.send", "weight": 0.5} // a lower share: raising one is the admin's (TestTokenGroupWeight)
				case r.path == "/v1/accept":
					body = map[string]any{"types": []string{"mail.send"}, "limit": 100}
				case r.path == "/v1/tokens" && r.method == "POST":
					body = map[string]any{"name": "new-" + kind}
				case r.path == "/v1/tokens/{name}":
					name := "doomed-" + kind
					want[wire.CreateTokenResponse](t, e.testServer, http.StatusCreated, "POST", "/v1/tokens", map[string]any{"name": name})
					path = "/v1/tokens/" + name
				}
				if strings.HasPrefix(path, "/v1/batches/{id}") {
					b, _, err := e.c.AddBatch(ctx, rota.NewBatch{Open: true, Jobs: []rota.AddParams{{Type: "mail.send", Group: "beta"}}})
					if err != nil {
						t.Fatal(err)
					}
					path = strings.Replace(path, "{id}", strconv.FormatInt(b.ID, 10), 1)
				}
				var before, otherBefore store.Job
				if job.ID != 0 {
					before, _ = e.c.Get(ctx, job.ID)
				}
				if other.ID != 0 {
					otherBefore, _ = e.c.Get(ctx, other.ID)
				}
				got := e.as(t, kind, r.method, path, body)
				worker := slices.ContainsFunc([]string{"/heartbeat", "/finish", "/fail", "/snooze", "/release"},
					func(s string) bool { return strings.HasSuffix(r.path, s) }) || r.method == "POST" && strings.HasSuffix(r.path, "/logs")

				wantStatus := r.ok
				named := kind != "admin"
				switch {
				case kind == "none":
					wantStatus = http.StatusUnauthorized
				case kind == "wrong" || kind == "revoked":
					wantStatus = http.StatusForbidden
				case named && r.need == "admin":
					wantStatus = http.StatusForbidden
				case r.need == "write" && kind == "acme-read-only":
					wantStatus = http.StatusForbidden
				case job.ID != 0 && !reaches(kind, job.Type, job.Group) && r.job != nil && !strings.HasPrefix(r.path, "/v1/jobs/"):
					// A batch refuses the item, not the request, as it
					// refuses a missing job's.
					if !strings.Contains(string(got.Body), `"code":"canceled"`) {
						t.Errorf("%s: the item out of reach is not refused as a missing job's: %s", kind, got)
					}
				case job.ID != 0 && !reaches(kind, job.Type, job.Group) && worker:
					wantStatus = http.StatusConflict // as for a missing job: it was removed
				case job.ID != 0 && !reaches(kind, job.Type, job.Group):
					wantStatus = http.StatusNotFound
				case addType != "" && !reaches(kind, addType, r.addGroup):
					wantStatus = http.StatusForbidden
				case strings.HasPrefix(r.path, "/v1/batches/{id}") && !reaches(kind, "mail.send", "beta"):
					// Another tenant's batch is a missing batch, to the letter.
					wantStatus = http.StatusNotFound
					missing := e.as(t, kind, r.method, batchIDPath.ReplaceAllString(path, "/v1/batches/987654321"), body)
					if missing.Status != got.Status || batchIDText.ReplaceAllString(string(got.Body), "batch N") !=
						strings.ReplaceAll(string(missing.Body), "987654321", "N") {
						t.Errorf("%s: a batch out of reach is answered %s, a missing one %s", kind, got, missing)
					}
				case r.name == "parent" && !reaches(kind, other.Type, other.Group):
					// A parent out of reach is a missing parent, to the letter.
					wantStatus = http.StatusNotFound
					m := maps.Clone(body.(map[string]any))
					m["parent"] = 987654321
					missing := e.as(t, kind, r.method, path, m)
					if missing.Status != got.Status || strings.ReplaceAll(string(got.Body), strconv.FormatInt(other.ID, 10), "N") !=
						strings.ReplaceAll(string(missing.Body), "987654321", "N") {
						t.Errorf("%s: a parent out of reach is answered %s, a missing one %s", kind, got, missing)
					}
				case r.path == "/v1/groups" && r.method == "PUT" && !reaches(kind, "mail.send", "acme-1"):
					wantStatus = http.StatusForbidden
				}
				if got.Status != wantStatus {
					t.Fatalf("%s %s as %s: %s, want %d", r.method, path, kind, got, wantStatus)
				}
				if wantStatus >= 400 && job.ID != 0 {
					after, _ := e.c.Get(ctx, job.ID)
					if !reflect.DeepEqual(before, after) {
						t.Errorf("a refused request changed the job:\nbefore %+v\nafter  %+v", before, after)
					}
				}
				if other.ID != 0 {
					// Another tenant's job that an add named: unchanged
					// (but for a child added by a token that reaches the
					// parent), and nothing of it in the answer.
					after, _ := e.c.Get(ctx, other.ID)
					if (r.name != "parent" || wantStatus >= 400) && !reflect.DeepEqual(otherBefore, after) {
						t.Errorf("%s's add changed beta's job:\nbefore %+v\nafter  %+v", kind, otherBefore, after)
					}
					if strings.Contains(string(got.Body), "beta-only") {
						t.Errorf("%s's add answered with beta's data: %s", kind, got)
					}
					if r.name != "parent" && got.Status == http.StatusCreated {
						var res wire.AddResponse
						json.Unmarshal(got.Body, &res)
						if res.Job.ID == other.ID || res.Job.Group != r.addGroup || res.Outcome != store.Inserted {
							t.Errorf("%s's add: %v job %d in %q; want a new job in %s", kind, res.Outcome, res.Job.ID, res.Job.Group, r.addGroup)
						}
					}
				}
				if got.Status == 200 && r.method == "GET" {
					// Reads show only what the token reaches.
					checkReads(t, kind, r.path, got.Body, beta)
					checkBatchReads(t, e, kind, r.path, got.Body, betaBatch.ID)
				}
				if r.path == "/v1/accept" && got.Status == 200 {
					var res wire.AcceptResponse
					json.Unmarshal(got.Body, &res)
					for _, j := range res.Jobs {
						if !reaches(kind, j.Type, j.Group) {
							t.Errorf("%s accepted job %d of group %q", kind, j.ID, j.Group)
						}
						e.c.Finish(ctx, rota.FinishParams{Lease: j.Lease(), As: rota.Release})
					}
				}
			})
		}
	}
}

var (
	batchIDPath = regexp.MustCompile(`^/v1/batches/[0-9]+`)
	batchIDText = regexp.MustCompile(`batch [0-9]+`)
)

// checkBatchReads fails when a read of batches shows one with a member or
// callback the token does not reach, or leaves out beta's batch from a
// token that reaches it.
func checkBatchReads(t *testing.T, e *tokenEnv, kind, path string, body []byte, betaBatch int64) {
	t.Helper()
	var ids []int64
	switch path {
	case "/v1/batches":
		var res wire.BatchesResponse
		json.Unmarshal(body, &res)
		for _, b := range res.Batches {
			ids = append(ids, b.ID)
		}
		if reaches(kind, "mail.send", "beta") != slices.Contains(ids, betaBatch) {
			t.Errorf("%s lists batches %v: beta's batch %d listed %v, reached %v", kind, ids, betaBatch,
				slices.Contains(ids, betaBatch), reaches(kind, "mail.send", "beta"))
		}
	case "/v1/batches/{id}":
		var res wire.BatchResponse
		json.Unmarshal(body, &res)
		ids = append(ids, res.Batch.ID)
	}
	for _, id := range ids {
		b, err := e.c.GetBatch(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range b.Groups {
			for _, typ := range b.Types {
				if !reaches(kind, typ, g) {
					t.Errorf("%s reads batch %d, which holds jobs of type %q in group %q", kind, id, typ, g)
				}
			}
		}
	}
}

// checkReads fails when a listing shows what the token does not reach.
func checkReads(t *testing.T, kind, path string, body []byte, beta store.Job) {
	t.Helper()
	switch path {
	case "/v1/jobs":
		var res wire.ListResponse
		json.Unmarshal(body, &res)
		sawBeta := false
		for _, j := range res.Jobs {
			if !reaches(kind, j.Type, j.Group) {
				t.Errorf("%s lists job %d of type %q in group %q", kind, j.ID, j.Type, j.Group)
			}
			sawBeta = sawBeta || j.ID == beta.ID
		}
		if reaches(kind, beta.Type, beta.Group) && !sawBeta {
			t.Errorf("%s does not list beta's job, which it reaches", kind)
		}
	case "/v1/stats":
		var res wire.StatsResponse
		json.Unmarshal(body, &res)
		for _, c := range res.Counts {
			if !reaches(kind, c.Type, c.Group) {
				t.Errorf("%s counts type %q in group %q", kind, c.Type, c.Group)
			}
		}
	case "/v1/groups":
		var res wire.GroupsResponse
		json.Unmarshal(body, &res)
		for _, g := range res.Groups {
			if kind == "beta" && g.Group != "beta" {
				t.Errorf("beta sees the settings of group %q", g.Group)
			}
		}
	}
}

// TestTokenEvents: a scoped token's event stream carries only the changes
// of jobs it reaches; a stream of one job it does not reach is a 404.
func TestTokenEvents(t *testing.T) {
	e := newTokenEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.URL+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+e.secrets["beta"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("events as beta: %d", resp.StatusCode)
	}
	acme, _ := e.c.Add(ctx, rota.AddParams{Type: "t", Group: "acme-1"})
	beta, _ := e.c.Add(ctx, rota.AddParams{Type: "t", Group: "beta"})
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev store.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.ID == acme.Job.ID {
			t.Fatalf("beta's stream carried acme's job %d", ev.ID)
		}
		if ev.ID == beta.Job.ID {
			break // beta's own change arrived, after acme's
		}
	}
	if r := e.as(t, "beta", "GET", fmt.Sprintf("/v1/events?job=%d", acme.Job.ID), nil); r.Status != http.StatusNotFound {
		t.Errorf("beta's stream of acme's job: %s, want 404", r)
	}
}

// TestTokenManagement: named tokens need the server to have an admin
// token, their names are unique, and a revoked one is refused at once.
func TestTokenManagement(t *testing.T) {
	open := newServer(t, httpapi.Config{})
	r := open.do(t, "POST", "/v1/tokens", map[string]any{"name": "x"})
	wantError(t, r, http.StatusForbidden, wire.CodeForbidden, "no admin token")

	e := newTokenEnv(t)
	r = e.do(t, "POST", "/v1/tokens", map[string]any{"name": "acme"})
	wantError(t, r, http.StatusBadRequest, wire.CodeInvalid, `a token named "acme" exists`)
	r = e.do(t, "POST", "/v1/tokens", map[string]any{"name": "bad", "groups": []string{"[\x01"}})
	wantError(t, r, http.StatusBadRequest, wire.CodeInvalid, "pattern")
	list := want[wire.TokensResponse](t, e.testServer, 200, "GET", "/v1/tokens", nil)
	var names []string
	for _, tk := range list.Tokens {
		names = append(names, tk.Name)
	}
	if strings.Join(names, " ") != "acme acme-read-only beta mail-only" {
		t.Errorf("tokens %v", names)
	}
	if strings.Contains(string(e.do(t, "GET", "/v1/tokens", nil).Body), "rota_") {
		t.Errorf("the token list shows a secret")
	}
	if r := e.as(t, "beta", "GET", "/v1/stats", nil); r.Status != 200 {
		t.Fatalf("beta before revocation: %s", r)
	}
	want[struct{}](t, e.testServer, http.StatusNoContent, "DELETE", "/v1/tokens/beta", nil)
	r = e.as(t, "beta", "GET", "/v1/stats", nil)
	wantError(t, r, http.StatusForbidden, wire.CodeForbidden, "revoked")
	r = e.do(t, "DELETE", "/v1/tokens/beta", nil)
	wantError(t, r, http.StatusNotFound, wire.CodeNotFound, "beta")
}

// TestTokenOutOfReachLikeMissing: every route that names a job answers a
// job out of the token's reach exactly as a job that does not exist
// (status, code, message), changing nothing; a listing's cursor and the
// counts tell nothing of another tenant's jobs either.
func TestTokenOutOfReachLikeMissing(t *testing.T) {
	e := newTokenEnv(t)
	ctx := t.Context()
	res, err := e.c.Add(ctx, rota.AddParams{Type: "report", Group: "beta", Data: json.RawMessage(`{"secret":"beta-only"}`)})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := e.c.Accept(ctx, rota.AcceptParams{Types: []string{"report"}, Limit: 1})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("accept beta's job: %v %v", jobs, err)
	}
	theirs := jobs[0]
	if theirs.ID != res.Job.ID {
		t.Fatalf("accepted job %d, want %d", theirs.ID, res.Job.ID)
	}
	const missing = 987654321
	tok := map[string]any{"token": theirs.Token}
	routes := []struct {
		method, suffix string
		body           func(id int64) any
	}{
		{"GET", "", nil},
		{"PATCH", "", func(int64) any { return map[string]any{"priority": 1} }},
		{"POST", "/cancel", nil},
		{"POST", "/resubmit", func(int64) any { return map[string]any{} }},
		{"POST", "/heartbeat", func(int64) any { return tok }},
		{"POST", "/finish", func(int64) any { return tok }},
		{"POST", "/fail", func(int64) any { return map[string]any{"token": theirs.Token, "error": "x"} }},
		{"POST", "/snooze", func(int64) any { return tok }},
		{"POST", "/release", func(int64) any { return tok }},
		{"GET", "/logs", nil},
		{"GET", "/logs?attempt=1", nil},
		{"GET", "/deps", nil},
		{"GET", "/deps?limit=5", nil},
		{"GET", "/history", nil},
		{"GET", "?wait=10ms", nil},
		{"POST", "/logs", func(int64) any {
			return map[string]any{"token": theirs.Token, "records": []any{map[string]any{"level": "INFO", "message": "planted"}}}
		}},
		{"POST", "/heartbeat", func(int64) any { return map[string]any{"token": 5} }}, // a bad body: the same 400 for both
		{"DELETE", "", nil},
		{"POST", "batch:/v1/heartbeat", func(id int64) any {
			return map[string]any{"items": []any{map[string]any{"id": id, "token": theirs.Token}}}
		}},
		{"POST", "batch:/v1/finish", func(id int64) any {
			return map[string]any{"items": []any{map[string]any{"id": id, "token": theirs.Token, "as": "complete"}}}
		}},
	}
	for _, rt := range routes {
		path := func(id int64) string {
			if p, ok := strings.CutPrefix(rt.suffix, "batch:"); ok {
				return p
			}
			return fmt.Sprintf("/v1/jobs/%d%s", id, rt.suffix)
		}
		body := func(id int64) any {
			if rt.body == nil {
				return nil
			}
			return rt.body(id)
		}
		for _, kind := range []string{"acme", "mail-only"} {
			before, _ := e.c.Get(ctx, theirs.ID)
			out := e.as(t, kind, rt.method, path(theirs.ID), body(theirs.ID))
			miss := e.as(t, kind, rt.method, path(missing), body(missing))
			a := strings.ReplaceAll(string(out.Body), strconv.FormatInt(theirs.ID, 10), "N")
			b := strings.ReplaceAll(string(miss.Body), strconv.Itoa(missing), "N")
			if out.Status != miss.Status || a != b {
				t.Errorf("%s %s as %s: beta's job is answered %s, a missing one %s", rt.method, path(0), kind, out, miss)
			}
			if after, _ := e.c.Get(ctx, theirs.ID); !reflect.DeepEqual(before, after) {
				t.Errorf("%s %s as %s changed beta's job:\nbefore %+v\nafter  %+v", rt.method, path(0), kind, before, after)
			}
		}
	}

	// Listings: a page has a cursor only when a job the token reaches
	// follows it, whatever the other tenants hold.
	for range 3 {
		if _, err := e.c.Add(ctx, rota.AddParams{Type: "report", Group: "beta"}); err != nil {
			t.Fatal(err)
		}
	}
	mine, _ := e.c.Add(ctx, rota.AddParams{Type: "report", Group: "acme-1"})
	for _, target := range []string{"/v1/jobs?group=beta&limit=1", "/v1/jobs?group=beta&limit=1&order=desc", "/v1/jobs?limit=1",
		"/v1/jobs?limit=1&order=desc", "/v1/jobs?type=report&limit=1", "/v1/jobs?state=pending&limit=1"} {
		var page wire.ListResponse
		r := e.as(t, "acme", "GET", target, nil)
		if err := json.Unmarshal(r.Body, &page); err != nil || r.Status != 200 {
			t.Fatalf("GET %s as acme: %s", target, r)
		}
		want := 1
		if strings.Contains(target, "group=beta") {
			want = 0
		}
		if len(page.Jobs) != want || page.NextCursor != "" || want == 1 && page.Jobs[0].ID != mine.Job.ID {
			t.Errorf("GET %s as acme: %s; want %d of acme's jobs and no cursor", target, r, want)
		}
	}

	// Batches: beta's batch (a member and a callback of beta's) is a
	// missing batch to every route, and stays as it was.
	theirBatch, _, err := e.c.AddBatch(ctx, rota.NewBatch{Open: true, Description: "beta's",
		Jobs:       []rota.AddParams{{Type: "report", Group: "beta", Data: json.RawMessage(`{"secret":"beta-only"}`)}},
		OnComplete: &rota.AddParams{Type: "report.done", Group: "beta", Data: json.RawMessage(`{"secret":"beta-only"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range []struct {
		method, suffix string
		body           any
	}{
		{"GET", "", nil},
		{"POST", "/jobs", map[string]any{"jobs": []any{map[string]any{"type": "mail.send", "group": "acme-1"}}}},
		{"POST", "/jobs", map[string]any{"jobs": []any{}}}, // a bad body: the same 400 for both
		{"POST", "/close", nil},
	} {
		for _, kind := range []string{"acme", "mail-only"} {
			out := e.as(t, kind, rt.method, fmt.Sprintf("/v1/batches/%d%s", theirBatch.ID, rt.suffix), rt.body)
			miss := e.as(t, kind, rt.method, fmt.Sprintf("/v1/batches/%d%s", missing, rt.suffix), rt.body)
			a := strings.ReplaceAll(string(out.Body), strconv.FormatInt(theirBatch.ID, 10), "N")
			b := strings.ReplaceAll(string(miss.Body), strconv.Itoa(missing), "N")
			if out.Status != miss.Status || a != b || strings.Contains(a, "beta-only") {
				t.Errorf("%s /v1/batches/{id}%s as %s: beta's batch is answered %s, a missing one %s", rt.method, rt.suffix, kind, out, miss)
			}
			if after, _ := e.c.GetBatch(ctx, theirBatch.ID); !reflect.DeepEqual(theirBatch, after) {
				t.Errorf("%s /v1/batches/{id}%s as %s changed beta's batch:\nbefore %+v\nafter  %+v", rt.method, rt.suffix, kind, theirBatch, after)
			}
		}
	}
	// A page of batches has a cursor only when a batch the token reaches
	// follows it.
	myBatch, _, err := e.c.AddBatch(ctx, rota.NewBatch{Jobs: []rota.AddParams{{Type: "mail.send", Group: "acme-1"}}})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, _, err := e.c.AddBatch(ctx, rota.NewBatch{Jobs: []rota.AddParams{{Type: "report", Group: "beta"}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, kind := range []string{"acme", "mail-only"} {
		var page wire.BatchesResponse
		r := e.as(t, kind, "GET", "/v1/batches?limit=1", nil)
		if err := json.Unmarshal(r.Body, &page); err != nil || r.Status != 200 {
			t.Fatalf("GET /v1/batches as %s: %s", kind, r)
		}
		if len(page.Batches) != 1 || page.Batches[0].ID != myBatch.ID || page.NextCursor != "" {
			t.Errorf("GET /v1/batches?limit=1 as %s: %s; want batch %d alone and no cursor", kind, r, myBatch.ID)
		}
	}
}

// TestTokenGoAPIAgrees: the Go API gives the same answers as the HTTP API
// to the same tenant, over a server with the tenant's token (remote) and
// on the store itself with the tenant's reach (rota.WithReach).
func TestTokenGoAPIAgrees(t *testing.T) {
	e := newTokenEnv(t)
	ctx := t.Context()
	res, err := e.c.Add(ctx, rota.AddParams{Type: "report", Key: "inv-1001", Group: "beta", Data: json.RawMessage(`{"secret":"beta-only"}`)})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := e.c.Accept(ctx, rota.AcceptParams{Types: []string{"report"}, Limit: 1})
	if err != nil || len(jobs) != 1 || jobs[0].ID != res.Job.ID {
		t.Fatalf("accept beta's job: %v %v", jobs, err)
	}
	theirs := jobs[0]
	reach, err := rota.NewReach([]string{"acme-*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	clients := map[string]struct {
		c   *rota.Client
		ctx context.Context
	}{
		"remote": {remoteClient(t, e.testServer, remote.Config{Token: e.secrets["acme"]}), ctx},
		"local":  {e.c, rota.WithReach(ctx, reach)},
	}
	for name, cl := range clients {
		before, _ := e.c.Get(ctx, theirs.ID)
		_, err := cl.c.Add(cl.ctx, rota.AddParams{Type: "report.part", Group: "acme-1", Parent: theirs.ID})
		if !errors.Is(err, rota.ErrNotFound) || !strings.Contains(err.Error(), fmt.Sprintf("parent job %d does not exist", theirs.ID)) {
			t.Errorf("%s: a child of beta's job: %v; want a missing parent's ErrNotFound", name, err)
		}
		added, err := cl.c.Add(cl.ctx, rota.AddParams{Type: "report", Key: "inv-1001", Group: "acme-" + name})
		if err != nil || added.Outcome != rota.Inserted || added.Job.ID == theirs.ID || strings.Contains(string(added.Job.Data), "beta-only") {
			t.Errorf("%s: an add of beta's key in acme's group: %+v, %v; want a new job", name, added, err)
		}
		page, err := cl.c.List(cl.ctx, rota.ListParams{Groups: []string{"beta"}, Limit: 1})
		if err != nil || len(page.Jobs) != 0 || page.Next != 0 {
			t.Errorf("%s: acme's listing of group beta: %v next %d, %v; want nothing", name, page.Jobs, page.Next, err)
		}
		counts, err := cl.c.Stats(cl.ctx)
		for _, c := range counts {
			if c.Group == "beta" || err != nil {
				t.Errorf("%s: acme's counts: %+v, %v", name, c, err)
			}
		}
		// By id and by key, beta's job is a missing one to every operation.
		_, err = cl.c.Get(cl.ctx, theirs.ID)
		wantNotFound(t, name+": get", err)
		_, err = cl.c.GetByKey(cl.ctx, "report", "beta", "inv-1001")
		wantNotFound(t, name+": get by key", err)
		if got, err := cl.c.GetMany(cl.ctx, []int64{theirs.ID}); err != nil || len(got) != 1 || got[0].ID != 0 {
			t.Errorf("%s: GetMany of beta's job: %+v, %v; want a missing job", name, got, err)
		}
		wantNotFound(t, name+": cancel", cl.c.Cancel(cl.ctx, theirs.ID))
		prio := 9
		_, err = cl.c.Update(cl.ctx, rota.UpdateParams{ID: theirs.ID, Priority: &prio, Data: json.RawMessage(`{"acme":1}`)})
		wantNotFound(t, name+": update", err)
		_, err = cl.c.Resubmit(cl.ctx, rota.ResubmitParams{ID: theirs.ID, Data: json.RawMessage(`{"acme":1}`)})
		wantNotFound(t, name+": resubmit", err)
		wantNotFound(t, name+": remove", cl.c.Remove(cl.ctx, theirs.ID))
		if after, _ := e.c.Get(ctx, theirs.ID); !reflect.DeepEqual(before, after) {
			t.Errorf("%s: acme changed beta's job:\nbefore %+v\nafter  %+v", name, before, after)
		}
	}
}

func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, rota.ErrNotFound) {
		t.Errorf("%s of beta's job: %v; want ErrNotFound, as for a missing job", what, err)
	}
}

// TestTokenRaceWithAnAdd: a scoped token that names an id before another
// tenant's job gets it (ids come from one sequence, so the next one is
// easy to guess) cannot remove, cancel, change or resubmit that job
// however its request and the other tenant's add interleave: the store
// applies the reach inside the operation, not only the front end before
// it.
func TestTokenRaceWithAnAdd(t *testing.T) {
	e := newTokenEnv(t)
	ctx := t.Context()
	ops := []struct{ method, suffix string }{{"DELETE", ""}, {"POST", "/cancel"}, {"PATCH", ""}, {"POST", "/resubmit"}}
	deadline := time.Now().Add(4 * time.Second)
	rounds := 0
	for ; rounds < 400 && time.Now().Before(deadline); rounds++ {
		mine, err := e.c.Add(ctx, rota.AddParams{Type: "report", Group: "acme-1"})
		if err != nil {
			t.Fatal(err)
		}
		next := mine.Job.ID + 1
		op := ops[rounds%len(ops)]
		var body any
		switch op.suffix {
		case "":
			if op.method == "PATCH" {
				body = map[string]any{"priority": 9, "data": map[string]any{"acme": "wrote this"}}
			}
		case "/resubmit":
			body = map[string]any{"data": map[string]any{"acme": "wrote this"}}
		}
		// acme asks again and again for the id beta's add is about to get,
		// while beta adds it.
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; i < 50; i++ {
				r, err := e.send(ctx, op.method, fmt.Sprintf("/v1/jobs/%d%s", next, op.suffix), body, "Authorization", "Bearer "+e.secrets["acme"])
				if err != nil || r.Status != http.StatusNotFound {
					return
				}
			}
		}()
		time.Sleep(time.Duration(rounds%7) * 100 * time.Microsecond)
		theirs, err := e.c.Add(ctx, rota.AddParams{Type: "report", Group: "beta", Data: json.RawMessage(`{"secret":"beta-only"}`)})
		<-done
		if err != nil {
			t.Fatal(err)
		}
		if theirs.Job.ID != next {
			continue
		}
		after, err := e.c.Get(ctx, next)
		if err != nil || after.State != store.Pending || after.Priority != 0 || string(after.Data) != `{"secret":"beta-only"}` {
			t.Fatalf("round %d: acme's %s %s of the id beta's add took reached beta's job: %+v, %v", rounds, op.method, op.suffix, after, err)
		}
	}
	t.Logf("%d rounds", rounds)
}

// TestTokenGroupWeight: a scoped token may lower its groups' weights, or
// keep what the admin token gave them, but not raise a group's share of a
// type above other tenants' groups: weight 1000 in acme-1 would leave
// beta one job in a thousand of the type while both have due jobs.
func TestTokenGroupWeight(t *testing.T) {
	e := newTokenEnv(t)
	set := func(kind string, weight float64, paused bool) reply {
		return e.as(t, kind, "PUT", "/v1/groups", map[string]any{"group": "acme-1", "type": "report", "weight": weight, "paused": paused})
	}
	weight := func() float64 {
		gcs, err := e.c.GroupConfigs(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gcs {
			if g.Group == "acme-1" && g.Type == "report" {
				return g.Weight
			}
		}
		return 0
	}
	for _, kind := range []string{"acme", "mail-only"} {
		r := e.as(t, kind, "PUT", "/v1/groups", map[string]any{"group": "acme-1", "type": "mail.send", "weight": 1000})
		if kind == "mail-only" && r.Status != http.StatusBadRequest || kind == "acme" && r.Status != http.StatusBadRequest {
			t.Errorf("%s raising acme-1's weight of mail.send to 1000: %s, want 400", kind, r)
		}
	}
	wantError(t, set("acme", 1000, false), http.StatusBadRequest, wire.CodeInvalid, "may lower a group's weight, not raise it")
	if w := weight(); w != 0 {
		t.Errorf("after a refused raise, acme-1's weight is %g", w)
	}
	if r := set("acme", 0.5, false); r.Status != 200 || weight() != 0.5 {
		t.Errorf("acme lowering its weight to 0.5: %s, weight %g", r, weight())
	}
	if r := set("acme", 1, false); r.Status != 200 {
		t.Errorf("acme setting its weight back to 1: %s", r)
	}
	// What the admin token gave, acme keeps (a pause sends it back) and
	// may lower, not raise.
	if r := set("admin", 5, false); r.Status != 200 {
		t.Fatalf("admin: %s", r)
	}
	if r := set("acme", 5, true); r.Status != 200 || weight() != 5 {
		t.Errorf("acme pausing with the weight the admin set: %s, weight %g", r, weight())
	}
	wantError(t, set("acme", 6, false), http.StatusBadRequest, wire.CodeInvalid, "more than 5")
	if w := weight(); w != 5 {
		t.Errorf("after a refused raise, acme-1's weight is %g, want 5", w)
	}
	// The Go API with acme's reach agrees.
	reach, _ := rota.NewReach([]string{"acme-*"}, nil)
	err := e.c.SetGroupConfig(rota.WithReach(t.Context(), reach), rota.GroupConfig{Group: "acme-1", Type: "report", Weight: 1000})
	if !errors.Is(err, rota.ErrInvalid) {
		t.Errorf("the Go API with acme's reach raising the weight: %v, want ErrInvalid", err)
	}
}

// TestTokenFieldsNameNoOtherJob: every query field and body field that
// names a job, a key, a group or a type pattern, tried by acme (and its
// read-only twin) and by mail-only against beta's jobs, answers exactly
// what the same request answers when the job does not exist: the same
// status, the same body (ids aside), no next_cursor, nothing of beta's.
// An accept asking for beta's group or for every type gets nothing of
// beta's, or is refused.
func TestTokenFieldsNameNoOtherJob(t *testing.T) {
	e := newTokenEnv(t)
	ctx := t.Context()
	add := func(p rota.AddParams) store.Job {
		res, err := e.c.Add(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return res.Job
	}
	parent := add(rota.AddParams{Type: "report", Key: "r-7", Group: "beta", Data: json.RawMessage(`{"secret":"beta-only"}`)})
	jobs, err := e.c.Accept(ctx, rota.AcceptParams{Types: []string{"report"}, Limit: 1})
	if err != nil || len(jobs) != 1 || jobs[0].ID != parent.ID {
		t.Fatalf("accept beta's parent: %v %v", jobs, err)
	}
	add(rota.AddParams{Type: "report.part", Key: "p-1", Group: "beta", Parent: parent.ID, Data: json.RawMessage(`{"secret":"beta-only"}`)})
	add(rota.AddParams{Type: "report.daily", Group: "beta", Schedule: "@daily", Data: json.RawMessage(`{"secret":"beta-only"}`)})
	for range 3 {
		add(rota.AddParams{Type: "invoice", Group: "beta", Data: json.RawMessage(`{"secret":"beta-only"}`)})
	}
	const missing = 987654321
	id := strconv.FormatInt(parent.ID, 10)
	// Each target names beta's job (or key, or group); its twin names
	// something that does not exist.
	pairs := [][2]string{
		{"/v1/jobs?id=" + id, "/v1/jobs?id=987654321"},
		{"/v1/jobs?id=" + id + "&id=1", "/v1/jobs?id=987654321&id=1"},
		{"/v1/jobs?parent=" + id, "/v1/jobs?parent=987654321"},
		{"/v1/jobs?parent=" + id + "&limit=1", "/v1/jobs?parent=987654321&limit=1"},
		{"/v1/jobs?type=report&key=r-7&group=beta", "/v1/jobs?type=report&key=r-8&group=beta"},
		{"/v1/jobs?type=report.part&key=p-1&group=beta", "/v1/jobs?type=report.part&key=p-2&group=beta"},
		{"/v1/jobs?group=beta&limit=1", "/v1/jobs?group=nobody&limit=1"},
		{"/v1/jobs?group=beta&limit=1&cursor=1", "/v1/jobs?group=nobody&limit=1&cursor=1"},
		{"/v1/jobs?type=invoice&limit=1&cursor=" + id, "/v1/jobs?type=nothing&limit=1&cursor=" + id},
		{"/v1/jobs?type=invoice&state=pending&limit=1&order=desc", "/v1/jobs?type=nothing&state=pending&limit=1&order=desc"},
		{"/v1/jobs?recurring=true&limit=1", "/v1/jobs?recurring=true&type=nothing&limit=1"},
		{"/v1/jobs?updated_since=2000-01-01T00:00:00Z&group=beta&limit=1", "/v1/jobs?updated_since=2000-01-01T00:00:00Z&group=nobody&limit=1"},
		{"/v1/events?job=" + id, "/v1/events?job=987654321"},
	}
	for _, kind := range []string{"acme", "acme-read-only", "mail-only"} {
		for _, p := range pairs {
			out := e.as(t, kind, "GET", p[0], nil)
			miss := e.as(t, kind, "GET", p[1], nil)
			a := strings.ReplaceAll(string(out.Body), id, "N")
			b := strings.ReplaceAll(string(miss.Body), strconv.Itoa(missing), "N")
			if out.Status != miss.Status || a != b {
				t.Errorf("GET %s as %s: %s; for what does not exist: %s", p[0], kind, out, miss)
			}
			if strings.Contains(a, "beta-only") || strings.Contains(a, `"group":"beta"`) {
				t.Errorf("GET %s as %s shows beta's job: %s", p[0], kind, out)
			}
		}
	}
	// Accepts: acme asking for beta's types, or for every type, gets
	// nothing of beta's (an accept has no groups field: a token's groups
	// are its own); mail-only may ask only for its own patterns.
	for _, c := range []struct {
		kind   string
		body   map[string]any
		status int
	}{
		{"acme", map[string]any{"types": []string{"invoice"}, "limit": 10}, 200},
		{"acme", map[string]any{"types": []string{"*"}, "limit": 10}, 200},
		{"acme", map[string]any{"types": []string{"invoice", "report*", "*"}, "limit": 10}, 200},
		{"mail-only", map[string]any{"types": []string{"*"}, "limit": 10}, 403},
		{"mail-only", map[string]any{"types": []string{"invoice"}, "limit": 10}, 403},
		{"mail-only", map[string]any{"types": []string{"mail.*", "invoice"}, "limit": 10}, 403},
		{"mail-only", map[string]any{"types": []string{"mail.[a-z]*"}, "limit": 10}, 403},
		{"acme-read-only", map[string]any{"types": []string{"invoice"}, "limit": 10}, 403},
	} {
		r := e.as(t, c.kind, "POST", "/v1/accept", c.body)
		if r.Status != c.status {
			t.Errorf("accept %v as %s: %s, want %d", c.body, c.kind, r, c.status)
		}
		if r.Status == 200 && strings.Contains(string(r.Body), "beta-only") {
			t.Errorf("accept %v as %s took beta's job: %s", c.body, c.kind, r)
		}
	}
	if n := len(listAll(t, e, "invoice")); n != 3 {
		t.Errorf("beta's invoices: %d pending, want 3 (none accepted by another tenant)", n)
	}
	// Group settings of beta's group, and group settings for every type
	// by a token of some types, are refused whatever the field.
	for _, c := range []struct {
		kind string
		body map[string]any
	}{
		{"acme", map[string]any{"group": "beta", "type": "invoice", "paused": true}},
		{"acme", map[string]any{"group": "beta", "max_running": 1}},
		{"acme", map[string]any{"group": "", "paused": true}},
		{"mail-only", map[string]any{"group": "beta", "paused": true}},
		{"mail-only", map[string]any{"group": "beta", "type": "invoice", "paused": true}},
	} {
		if r := e.as(t, c.kind, "PUT", "/v1/groups", c.body); r.Status != http.StatusForbidden {
			t.Errorf("PUT /v1/groups %v as %s: %s, want 403", c.body, c.kind, r)
		}
	}
	if gcs, _ := e.c.GroupConfigs(ctx); len(gcs) != 0 {
		t.Errorf("refused group settings were set: %+v", gcs)
	}
}

// listAll lists the pending jobs of a type with the admin token.
func listAll(t *testing.T, e *tokenEnv, typ string) []store.Job {
	t.Helper()
	jobs, err := e.c.List(t.Context(), rota.ListParams{Types: []string{typ}, States: []rota.State{rota.Pending}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return jobs.Jobs
}

// TestTokenGoAPIAcceptAndEvents: a program that serves tenants through one
// Client (rota.WithReach) takes and hears only the tenant's jobs: an
// accept of every type takes acme's job and leaves beta's, a type pattern
// out of reach is refused, and a subscription carries only acme's
// changes. A remote client applies its token's reach, not a WithReach of
// its caller: it refuses one rather than seem to apply it.
func TestTokenGoAPIAcceptAndEvents(t *testing.T) {
	e := newTokenEnv(t)
	ctx := t.Context()
	acme, _ := rota.NewReach([]string{"acme-*"}, nil)
	mail, _ := rota.NewReach(nil, []string{"mail.*"})
	inAcme := rota.WithReach(ctx, acme)
	sub, err := e.c.SubscribeTypes(inAcme, "*")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	theirs, _ := e.c.Add(ctx, rota.AddParams{Type: "report", Group: "beta", Data: json.RawMessage(`{"secret":"beta-only"}`)})
	mine, _ := e.c.Add(ctx, rota.AddParams{Type: "report", Group: "acme-1"})
	jobs, err := e.c.Accept(inAcme, rota.AcceptParams{Types: []string{"*"}, Limit: 10})
	if err != nil || len(jobs) != 1 || jobs[0].ID != mine.Job.ID {
		t.Errorf("acme's accept of every type: %v, %v; want acme's job %d alone", ids(jobs), err, mine.Job.ID)
	}
	jobs, err = e.c.Accept(inAcme, rota.AcceptParams{Types: []string{"report"}, Groups: []string{"beta"}, Limit: 10})
	if !errors.Is(err, rota.ErrInvalid) || len(jobs) != 0 {
		t.Errorf("acme's accept of group beta: %v, %v; want ErrInvalid", ids(jobs), err)
	}
	jobs, err = e.c.Accept(rota.WithReach(ctx, mail), rota.AcceptParams{Types: []string{"*"}, Limit: 10})
	if !errors.Is(err, rota.ErrInvalid) || len(jobs) != 0 {
		t.Errorf("mail.*'s accept of every type: %v, %v; want ErrInvalid", ids(jobs), err)
	}
	jobs, err = e.c.Accept(inAcme, rota.AcceptParams{Types: []string{"report"}, Limit: 10, Wait: 50 * time.Millisecond})
	if err != nil || len(jobs) != 0 {
		t.Errorf("acme's waiting accept: %v, %v; want nothing (beta's job is not acme's)", ids(jobs), err)
	}
	if j, _ := e.c.Get(ctx, theirs.Job.ID); j.State != rota.Pending {
		t.Errorf("beta's job is %s after acme's accepts", j.State)
	}
	timeout := time.After(10 * time.Second)
	for seen := false; !seen; {
		select {
		case ev := <-sub.C:
			if ev.ID == theirs.Job.ID || ev.Group == "beta" {
				t.Fatalf("acme's subscription carried beta's change: %+v", ev)
			}
			seen = ev.ID == mine.Job.ID && ev.State == rota.Running
		case <-timeout:
			t.Fatal("acme's subscription did not carry its own job's start")
		}
	}
	rc := remoteClient(t, e.testServer, remote.Config{Token: e.secrets["admin"]})
	if _, err := rc.Get(inAcme, theirs.Job.ID); !errors.Is(err, rota.ErrInvalid) {
		t.Errorf("a remote client's Get with a reach: %v; want ErrInvalid (it cannot apply it)", err)
	}
	if err := rc.Cancel(inAcme, theirs.Job.ID); !errors.Is(err, rota.ErrInvalid) {
		t.Errorf("a remote client's Cancel with a reach: %v; want ErrInvalid", err)
	}
	if j, _ := e.c.Get(ctx, theirs.Job.ID); j.State != rota.Pending {
		t.Errorf("beta's job is %s after a remote cancel with acme's reach", j.State)
	}
}

// TestTokenGoAPISettings: with a tenant's reach (rota.WithReach), the Go
// API sets and reads settings as the HTTP API lets the tenant's token: a
// type's settings, which every tenant shares, are refused; so are another
// tenant's group settings, and a setting for every type from a reach of
// some types; a listing shows only the settings in reach.
func TestTokenGoAPISettings(t *testing.T) {
	e := newTokenEnv(t)
	ctx := t.Context()
	for _, g := range []rota.GroupConfig{{Group: "beta", Type: "report", MaxRunning: 3}, {Group: "acme-1", Type: "report", MaxRunning: 2}, {Group: "beta", Type: "mail.send", MaxRunning: 1}} {
		if err := e.c.SetGroupConfig(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	for _, typ := range []string{"report", "mail.send"} {
		if err := e.c.SetTypeConfig(ctx, rota.TypeConfig{Type: typ, LeaseTimeout: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	acme, _ := rota.NewReach([]string{"acme-*"}, nil)
	mail, _ := rota.NewReach(nil, []string{"mail.*"})
	inAcme, inMail := rota.WithReach(ctx, acme), rota.WithReach(ctx, mail)
	groupsBefore, _ := e.c.GroupConfigs(ctx)
	typesBefore, _ := e.c.TypeConfigs(ctx)
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, rota.ErrUnauthorized) {
			t.Errorf("%s: %v; want ErrUnauthorized", what, err)
		}
	}
	refused("acme pausing type report", e.c.SetTypeConfig(inAcme, rota.TypeConfig{Type: "report", Paused: true}))
	refused("mail.* pausing type mail.send", e.c.SetTypeConfig(inMail, rota.TypeConfig{Type: "mail.send", Paused: true}))
	refused("acme pausing beta's group", e.c.SetGroupConfig(inAcme, rota.GroupConfig{Group: "beta", Type: "report", Paused: true}))
	refused("mail.* pausing beta's group of every type", e.c.SetGroupConfig(inMail, rota.GroupConfig{Group: "beta", Paused: true}))
	refused("mail.* pausing beta's reports", e.c.SetGroupConfig(inMail, rota.GroupConfig{Group: "beta", Type: "report", Paused: true}))
	if g, _ := e.c.GroupConfigs(ctx); !reflect.DeepEqual(g, groupsBefore) {
		t.Errorf("refused settings changed the groups: %+v, was %+v", g, groupsBefore)
	}
	if tc, _ := e.c.TypeConfigs(ctx); !reflect.DeepEqual(tc, typesBefore) {
		t.Errorf("refused settings changed the types: %+v, was %+v", tc, typesBefore)
	}
	if err := e.c.SetGroupConfig(inAcme, rota.GroupConfig{Group: "acme-1", Type: "report", MaxRunning: 1}); err != nil {
		t.Errorf("acme setting its own group: %v", err)
	}
	if err := e.c.SetGroupConfig(inMail, rota.GroupConfig{Group: "beta", Type: "mail.send", MaxRunning: 2}); err != nil {
		t.Errorf("mail.* setting beta's mail.send: %v", err)
	}
	if g, err := e.c.GroupConfigs(inAcme); err != nil || len(g) != 1 || g[0].Group != "acme-1" {
		t.Errorf("acme's group settings: %+v, %v; want acme-1's alone", g, err)
	}
	if g, err := e.c.GroupConfigs(inMail); err != nil || len(g) != 1 || g[0].Type != "mail.send" {
		t.Errorf("mail.*'s group settings: %+v, %v; want mail.send's alone", g, err)
	}
	if tc, err := e.c.TypeConfigs(inMail); err != nil || len(tc) != 1 || tc[0].Type != "mail.send" {
		t.Errorf("mail.*'s types: %+v, %v; want mail.send alone", tc, err)
	}
}

// TestTokenGoAPIRename: with a scoped reach, the Go API renames a job (a
// resubmit's or a snooze's rename) only to a type in reach, as the HTTP
// API's snooze does: a rename would put a job among another tenant's types.
func TestTokenGoAPIRename(t *testing.T) {
	e := newTokenEnv(t)
	ctx := t.Context()
	mail, _ := rota.NewReach(nil, []string{"mail.*"})
	inMail := rota.WithReach(ctx, mail)
	res, err := e.c.Add(inMail, rota.AddParams{Type: "mail.send"})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Job.ID
	if _, err := e.c.Resubmit(inMail, rota.ResubmitParams{ID: id, Rename: "billing"}); !errors.Is(err, rota.ErrUnauthorized) {
		t.Errorf("a resubmit renaming mail.send to billing: %v; want ErrUnauthorized", err)
	}
	acc, err := e.c.Accept(inMail, rota.AcceptParams{Types: []string{"mail.send"}, Limit: 1})
	if err != nil || len(acc) != 1 {
		t.Fatalf("Accept = %v, %v", acc, err)
	}
	err = e.c.Finish(inMail, rota.FinishParams{Lease: acc[0].Lease(), As: rota.Snooze, Rename: "billing"})
	if !errors.Is(err, rota.ErrUnauthorized) {
		t.Errorf("a snooze renaming mail.send to billing: %v; want ErrUnauthorized", err)
	}
	if j, err := e.c.Get(ctx, id); err != nil || j.Type != "mail.send" || j.State != rota.Running {
		t.Errorf("after the refused renames the job is %s %s, %v; want mail.send, running", j.Type, j.State, err)
	}
	if err := e.c.Finish(inMail, rota.FinishParams{Lease: acc[0].Lease(), As: rota.Snooze, Rename: "mail.digest"}); err != nil {
		t.Errorf("a snooze renaming within reach: %v", err)
	}
	if j, err := e.c.Get(ctx, id); err != nil || j.Type != "mail.digest" {
		t.Errorf("after a rename within reach the job is %s, %v; want mail.digest", j.Type, err)
	}
}
