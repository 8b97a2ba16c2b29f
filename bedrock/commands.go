package bedrock

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/internal/rules/glob"
	"github.com/rotajobs/rota/internal/rules/lifecycle"
	"github.com/rotajobs/rota/internal/rules/schedule"
	"github.com/rotajobs/rota/store"
)

// This file is the commands (§3): each checks its headers in Bedrock's
// order with Bedrock's exact errors, then translates to the engine's
// operations. The job rules (what a finish does to a recurring job or a
// parent, what a unique add matches) are the engine's; what is checked
// here is the command's contract, such as Bedrock refusing to delete a
// running job.

// call is one command being run.
type call struct {
	*Request
	local  bool   // the client is on a loopback address
	worker string // who accepts jobs, for people reading them
}

// reply is a response with no body.
func reply(status string) *Response { return &Response{Status: status} }

// success is an answer of 200 OK with no body (a new one each time: the
// server adds headers to it).
func success() *Response { return reply("200 OK") }

// MetaRetryAfter is the job metadata key that keeps a job's retryAfter as
// its producer wrote it ("+5 MINUTES"), to be shown back; the engine
// keeps the duration.
const MetaRetryAfter = "bedrock.retryAfter"

// MockGroup is the group of Bedrock's mocked jobs (added with
// mockRequest, or children of mocked parents): a GetJob without
// mockRequest or getMockedJobs passes it over, so that only mock requests
// take them, as in Bedrock.
const MockGroup = "bedrock-mocked"

func (s *Server) command(ctx context.Context, req *Request, local bool) *Response {
	c := &call{Request: req, local: local, worker: "bedrock"}
	switch strings.ToLower(req.Verb) {
	case "createjob":
		return s.createJob(ctx, c)
	case "createjobs":
		return s.createJobs(ctx, c)
	case "getjob", "getjobs":
		return s.getJobs(ctx, c, strings.EqualFold(req.Verb, "GetJobs"))
	case "queryjob":
		return s.queryJob(ctx, c)
	case "updatejob":
		return s.updateJob(ctx, c)
	case "finishjob":
		return s.finishJob(ctx, c, false)
	case "retryjob":
		return s.finishJob(ctx, c, true)
	case "failjob":
		return s.failJob(ctx, c)
	case "canceljob":
		return s.cancelJob(ctx, c)
	case "deletejob":
		return s.deleteJob(ctx, c)
	case "requeuejobs":
		return s.requeueJobs(ctx, c)
	case "crashbedrockjob", "clearcrashedbedrockjobs":
		return s.crash(c)
	}
	return reply("430 Unrecognized command")
}

// engineError translates an engine error: refused is the answer to a
// job in a state the command cannot act on.
func (s *Server) engineError(err error, refused string) *Response {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return reply("404 No job with this jobID")
	case errors.Is(err, store.ErrWorkerConflict), errors.Is(err, store.ErrCanceled), errors.Is(err, store.ErrFinished):
		return reply(refused)
	case errors.Is(err, store.ErrInvalid):
		return reply("402 " + oneLine(err.Error()))
	case errors.Is(err, store.ErrUnavailable):
		return reply("503 Store unavailable")
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return reply("555 Timeout")
	}
	s.log.Error("bedrock: command failed", "err", err)
	return reply("500 Internal Server Error")
}

// oneLine makes an error text fit a status line.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 {
			return ' '
		}
		return r
	}, s)
	if len(s) > 500 {
		s = s[:500]
	}
	return s
}

// ---- CreateJob, CreateJobs (§3.1, §3.2)

// newJob is one job of a CreateJob or CreateJobs, as its headers or
// members give it.
type newJob struct {
	fields    map[string]string
	present   map[string]bool
	p         rota.AddParams
	parentBID int64
	parentJob rota.Job
	mocked    bool
}

func (n *newJob) get(k string) string { return n.fields[k] }
func (n *newJob) has(k string) bool   { return n.present[k] }

// peek is the first phase of Bedrock's checks (name, jobPriority, data,
// retryAfter, parent, unique's parent); batch says the job is one of a
// CreateJobs, which does not bound the name's length.
func (s *Server) peekJob(ctx context.Context, n *newJob, batch, mocked bool) *Response {
	name := n.get("name")
	switch {
	case name == "":
		return reply("402 Missing name")
	case len(name) > store.MaxNameLen && !batch:
		return reply("402 Malformed name")
	}
	if n.has("jobpriority") && !validPriority(atoi(n.get("jobpriority"))) {
		return reply("402 Invalid priority value")
	}
	data := n.get("data")
	if n.has("data") {
		if !isObject(data) {
			return reply("402 Data is not a valid JSON Object")
		}
	} else {
		data = "{}"
	}
	n.p.Data = json.RawMessage(data)
	if ra := n.get("retryafter"); ra != "" {
		d, err := retryAfter(ra)
		if err != nil {
			return reply("402 Malformed retryAfter")
		}
		n.p.RetryAfter = d
		n.p.Meta = map[string]string{MetaRetryAfter: ra}
		if strings.HasPrefix(name, "manual") {
			// Bedrock counts no runs of manual* jobs: they retry for ever.
			n.p.MaxAttempts = math.MaxInt32
		}
	}
	n.mocked = mocked
	if pid := atoi(n.get("parentjobid")); pid != 0 {
		n.parentBID = pid
		parent, err := s.byBedrockID(ctx, pid)
		if err != nil {
			return s.engineError(err, "")
		}
		if parent.ID == 0 {
			return reply("404 parentJobID does not exist")
		}
		if parent.State != rota.Running && parent.State != rota.Paused {
			return reply("405 Can only create child job when parent is RUNNING, RUNQUEUED or PAUSED")
		}
		n.parentJob = parent
		n.p.Parent = parent.ID
		// A child is mocked when its parent is, and only then.
		n.mocked = isMocked(parent.Data)
	}
	if n.get("unique") == "true" {
		n.p.Unique = true
		ov, ok := n.fields["overwrite"], n.has("overwrite")
		n.p.Overwrite = !ok || ov == "true" || ov == ""
		group := ""
		if n.mocked {
			group = MockGroup
		}
		existing, err := s.uniqueMatch(ctx, name, group)
		if err != nil {
			return s.engineError(err, "")
		}
		if existing.ID != 0 && existing.Parent != 0 && existing.Parent != n.p.Parent {
			return reply("404 Trying to create a child that already exists, but it is tied to a different parent")
		}
	}
	return nil
}

// process is the second phase: the mock flag, the repeat, the priority,
// the parent's own parent.
func (s *Server) processJob(n *newJob) *Response {
	n.p.Type = n.get("name")
	if err := check.Type(n.p.Type); err != nil {
		return reply("402 Malformed name")
	}
	repeat := n.get("repeat")
	if n.mocked {
		n.p.Data = withMember(n.p.Data, "mockRequest", []byte("true"))
		n.p.Group = MockGroup
		repeat = ""
	}
	if repeat != "" {
		sched, err := schedule.ParseRepeat(repeat)
		if err != nil {
			return reply("402 Malformed repeat")
		}
		n.p.Schedule = sched.String()
		n.p.Missed = rota.MissedAll
	}
	prio := int64(500)
	switch {
	case n.has("jobpriority"):
		prio = atoi(n.get("jobpriority"))
	case n.has("priority"):
		prio = atoi(n.get("priority"))
	}
	if !validPriority(prio) {
		return reply("402 Invalid priority value")
	}
	n.p.Priority = int(prio)
	if n.p.Parent != 0 {
		if n.parentJob.Parent != 0 {
			return reply("405 Cannot create grandchildren")
		}
	}
	if fr := n.get("firstrun"); fr != "" {
		t, err := parseTime(fr)
		if err != nil {
			return reply("402 Malformed firstRun")
		}
		n.p.RunAt = t
	}
	return nil
}

// uniqueMatch is the job a unique add of this name would find (the
// engine's rule: the lowest id not completed, in the add's group: the
// default one, or MockGroup for a mocked add, so that mocked and real
// jobs never match, as in Bedrock), to check its parent.
func (s *Server) uniqueMatch(ctx context.Context, name, group string) (rota.Job, error) {
	if check.Type(name) != nil {
		return rota.Job{}, nil
	}
	res, err := s.c.List(ctx, rota.ListParams{Types: []string{name}, Groups: []string{group}, Limit: 1,
		States: []rota.State{rota.Pending, rota.Running, rota.Paused, rota.Failed, rota.Cancelled}})
	if err != nil || len(res.Jobs) == 0 {
		return rota.Job{}, err
	}
	return res.Jobs[0], nil
}

func (s *Server) createJob(ctx context.Context, c *call) *Response {
	n := &newJob{fields: c.Headers, present: presence(c.Headers)}
	_, mocked := c.Header("mockrequest")
	if r := s.peekJob(ctx, n, false, mocked); r != nil {
		return r
	}
	if r := s.processJob(n); r != nil {
		return r
	}
	bids, r := s.add(ctx, []*newJob{n})
	if r != nil {
		return r
	}
	o := object{}
	o.num("jobID", bids[0])
	return &Response{Status: "200 OK", Body: o.encode()}
}

func (s *Server) createJobs(ctx context.Context, c *call) *Response {
	var elems []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(c.Get("jobs")), &elems); err != nil || len(elems) == 0 {
		return reply("401 Invalid JSON")
	}
	if len(elems) > store.MaxAddBatch {
		return reply("413 More than " + strconv.Itoa(store.MaxAddBatch) + " jobs in one CreateJobs")
	}
	jobs := make([]*newJob, len(elems))
	for i, e := range elems {
		if len(e) == 0 {
			return reply("401 Invalid JSON")
		}
		n := &newJob{fields: map[string]string{}, present: map[string]bool{}}
		for k, v := range e {
			k = strings.ToLower(k)
			n.fields[k] = memberText(v)
			n.present[k] = true
		}
		if !n.has("name") {
			return reply("402 Missing name")
		}
		jobs[i] = n
	}
	_, mocked := c.Header("mockrequest")
	// Bedrock checks every job's first phase before any job's second.
	for _, n := range jobs {
		if r := s.peekJob(ctx, n, true, mocked); r != nil {
			return r
		}
	}
	for _, n := range jobs {
		if r := s.processJob(n); r != nil {
			return r
		}
	}
	bids, r := s.add(ctx, jobs)
	if r != nil {
		return r
	}
	b := []byte(`{"jobIDs":[`)
	for i, id := range bids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return &Response{Status: "200 OK", Body: append(b, "]}"...)}
}

// add adds the jobs in one store call, one transaction (all or none),
// which gives them their Bedrock ids.
func (s *Server) add(ctx context.Context, jobs []*newJob) ([]int64, *Response) {
	ps := make([]rota.AddParams, len(jobs))
	for i, n := range jobs {
		ps[i] = n.p
		ps[i].BedrockID = true // in the add's transaction
	}
	res, err := s.c.AddMany(ctx, ps)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, reply("404 parentJobID does not exist")
		}
		if errors.Is(err, store.ErrInvalid) && len(jobs) == 1 && jobs[0].p.Parent != 0 && strings.Contains(err.Error(), "children cannot have children") {
			return nil, reply("405 Cannot create grandchildren")
		}
		if errors.Is(err, store.ErrInvalid) && strings.Contains(err.Error(), "a child can be added") {
			return nil, reply("405 Can only create child job when parent is RUNNING, RUNQUEUED or PAUSED")
		}
		return nil, s.engineError(err, "")
	}
	out := make([]int64, len(res))
	for i, r := range res {
		out[i] = r.Job.BedrockID
	}
	return out, nil
}

// ---- GetJob, GetJobs (§3.3)

func (s *Server) getJobs(ctx context.Context, c *call, many bool) *Response {
	name := c.Get("name")
	switch {
	case name == "":
		return reply("402 Missing name")
	case len(name) > 255*50:
		return reply("402 Malformed name")
	}
	_, hasN := c.Header("numresults")
	switch {
	case many && !hasN:
		return reply("402 Missing numResults")
	case !many && hasN:
		return reply("402 Cannot use numResults with GetJob; try GetJobs")
	}
	p := rota.AcceptParams{Limit: 1, Worker: c.worker, LeaseTimeout: s.cfg.Lease}
	_, mock := c.Header("mockrequest")
	if _, getMocked := c.Header("getmockedjobs"); !mock && !getMocked {
		p.SkipGroups = []string{MockGroup}
	}
	if v, ok := c.Header("jobpriority"); ok {
		prio := calc64(v)
		if !validPriority(prio) {
			return reply("402 Invalid priority value")
		}
		p.Priority = new(int)
		*p.Priority = int(prio)
	}
	if many {
		p.Limit = int(min(max(calc(c.Get("numresults")), 1), store.MaxAcceptLimit))
	}
	// A list of names is matched exactly, each quoted as a pattern of
	// its own name ("a?b" as "a[?]b"); a single name is a GLOB pattern,
	// the whole header (Bedrock's "foo," is the pattern "foo,"), which
	// rota's patterns read as SQLite's GLOB does (internal/rules/glob). A name
	// that cannot be a job's (a control character) matches nothing.
	if names := splitList(name); len(names) > 1 {
		for _, n := range names {
			if check.Type(n) == nil {
				p.Types = append(p.Types, glob.Quote(n))
			}
		}
	} else {
		p.Types = []string{name}
	}
	if len(p.Types) == 0 {
		return reply("404 No job found")
	}
	jobs, err := s.accept(ctx, p)
	if err == nil && len(jobs) == 0 && strings.EqualFold(c.Get("connection"), "wait") {
		// Connection: wait, as Bedrock documents it (and no longer does):
		// wait for a job until the request's deadline (its timeout
		// header), woken by the engine's change feed, not by polling.
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) > 50*time.Millisecond {
			p.Wait = time.Until(deadline) - 25*time.Millisecond
			jobs, err = s.c.Accept(ctx, p)
		}
	}
	if errors.Is(err, store.ErrInvalid) {
		return reply("404 No job found") // a name that is no pattern matches nothing
	}
	if err != nil && len(jobs) == 0 {
		return s.engineError(err, "")
	}
	if len(jobs) == 0 {
		return reply("404 No job found")
	}
	jobs = s.dropCrashed(ctx, jobs)
	objs, err := s.render(ctx, jobs, true)
	if err != nil {
		s.releaseAll(jobs)
		return s.engineError(err, "")
	}
	if !many {
		if len(objs) == 0 {
			return &Response{Status: "200 OK", Body: []byte("{}")}
		}
		return &Response{Status: "200 OK", Body: objs[0], handedOut: jobs}
	}
	b := []byte(`{"jobs":[`)
	for i, o := range objs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, o...)
	}
	return &Response{Status: "200 OK", Body: append(b, "]}"...), handedOut: jobs}
}

// priorities are Bedrock's, highest first.
var priorities = []int{1000, 850, 750, 500, 250, 0}

// accept takes jobs in Bedrock's order, priority first. The engine's
// order is that too, except that due retries come first within a group:
// so one accept does, unless it hands out a retry, which may have passed
// a higher priority; then the jobs go back and Bedrock's priorities are
// taken from the highest down, and last, jobs added over rota's API with
// other priorities (which Bedrock would never hand out). An accept with
// jobPriority keeps to the one asked for.
func (s *Server) accept(ctx context.Context, p rota.AcceptParams) ([]rota.Job, error) {
	jobs, err := s.c.Accept(ctx, p)
	if err != nil || p.Priority != nil || !slices.ContainsFunc(jobs, func(j rota.Job) bool { return j.Attempt > 1 }) {
		return jobs, err
	}
	s.releaseAll(jobs)
	jobs = nil
	for _, prio := range append(priorities, -1) {
		q := p
		q.Limit = p.Limit - len(jobs)
		if q.Limit == 0 {
			break
		}
		if prio >= 0 {
			q.Priority = &prio
		}
		got, err := s.c.Accept(ctx, q)
		if err != nil {
			if len(jobs) > 0 {
				// The earlier rounds' jobs are leased: hand them out
				// rather than leave them to their leases.
				return jobs, nil
			}
			return nil, err
		}
		jobs = append(jobs, got...)
	}
	return jobs, nil
}

// releaseAll hands back jobs that were accepted but cannot be answered.
func (s *Server) releaseAll(jobs []rota.Job) {
	ps := make([]rota.FinishParams, len(jobs))
	for i, j := range jobs {
		ps[i] = rota.FinishParams{Lease: j.Lease(), As: rota.Release}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.c.FinishMany(ctx, ps); err != nil {
		s.log.Warn("bedrock: could not hand back jobs; their lease will end", "err", err)
	}
}

// dropCrashed fails the jobs whose names CrashBedrockJob listed, and
// returns the others.
func (s *Server) dropCrashed(ctx context.Context, jobs []rota.Job) []rota.Job {
	s.mu.Lock()
	crashed := slices.Clone(s.crashed)
	s.mu.Unlock()
	if len(crashed) == 0 {
		return jobs
	}
	keep := jobs[:0]
	var fail []rota.FinishParams
	for _, j := range jobs {
		if slices.ContainsFunc(crashed, func(p glob.Pattern) bool { return p.Match(j.Type) }) {
			fail = append(fail, rota.FinishParams{Lease: j.Lease(), As: rota.Fail, Permanent: true,
				Error: "CrashBedrockJob: jobs of this name crash the server"})
			continue
		}
		keep = append(keep, j)
	}
	if len(fail) > 0 {
		if _, err := s.c.FinishMany(ctx, fail); err != nil {
			s.log.Warn("bedrock: could not fail blacklisted jobs", "err", err)
		}
	}
	return keep
}

func (s *Server) crash(c *call) *Response {
	if !c.local {
		return reply("401 Unauthorized")
	}
	if strings.EqualFold(c.Verb, "ClearCrashedBedrockJobs") {
		s.mu.Lock()
		s.crashed = nil
		s.mu.Unlock()
		return success()
	}
	var pats []glob.Pattern
	for _, n := range splitList(c.Get("names")) {
		p, err := check.CompilePattern(n)
		if err != nil {
			return reply("402 Malformed names")
		}
		pats = append(pats, p)
	}
	s.mu.Lock()
	s.crashed = append(s.crashed, pats...)
	s.mu.Unlock()
	return success()
}

// ---- QueryJob (§3.4)

// lookup finds the job a command's jobID header names, or the response
// that ends the command.
func (s *Server) lookup(ctx context.Context, c *call, header string) (rota.Job, int64, *Response) {
	bid, r := verifyInt64(c.Request, header)
	if r != nil {
		return rota.Job{}, 0, r
	}
	j, err := s.byBedrockID(ctx, bid)
	if err != nil {
		return rota.Job{}, 0, s.engineError(err, "")
	}
	if j.ID == 0 {
		return rota.Job{}, 0, reply("404 No job with this jobID")
	}
	return j, bid, nil
}

// byBedrockID returns the job with this Bedrock id, or a Job with ID 0.
// A standalone job that completed is gone, as Bedrock deletes it (rota
// keeps it for its retention, for the HTTP API and the dashboard).
func (s *Server) byBedrockID(ctx context.Context, bid int64) (rota.Job, error) {
	if bid <= 0 {
		return rota.Job{}, nil
	}
	m, err := s.ids.ByBedrockID(ctx, []int64{bid})
	if err != nil || m[bid] == 0 {
		return rota.Job{}, err
	}
	j, err := s.c.Get(ctx, m[bid])
	if errors.Is(err, store.ErrNotFound) || (err == nil && j.State == rota.Completed && j.Parent == 0) {
		return rota.Job{}, nil
	}
	return j, err
}

// byBedrockIDs is byBedrockID for several jobs, in two reads whatever
// their number: each job in order, with ID 0 for one that is missing.
func (s *Server) byBedrockIDs(ctx context.Context, bids []int64) ([]rota.Job, error) {
	known := slices.DeleteFunc(slices.Clone(bids), func(b int64) bool { return b <= 0 })
	if len(known) == 0 {
		return make([]rota.Job, len(bids)), nil
	}
	m, err := s.ids.ByBedrockID(ctx, known)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(bids))
	for i, b := range bids {
		ids[i] = m[b]
	}
	var jobs []rota.Job
	if slices.ContainsFunc(ids, func(id int64) bool { return id != 0 }) {
		if jobs, err = s.c.GetMany(ctx, slices.DeleteFunc(slices.Clone(ids), func(id int64) bool { return id == 0 })); err != nil {
			return nil, err
		}
	}
	byID := make(map[int64]rota.Job, len(jobs))
	for _, j := range jobs {
		if j.ID != 0 && (j.State != rota.Completed || j.Parent != 0) {
			byID[j.ID] = j
		}
	}
	out := make([]rota.Job, len(bids))
	for i, id := range ids {
		out[i] = byID[id]
	}
	return out, nil
}

func (s *Server) queryJob(ctx context.Context, c *call) *Response {
	j, _, r := s.lookup(ctx, c, "jobID")
	if r != nil {
		return r
	}
	objs, err := s.render(ctx, []rota.Job{j}, false)
	if err != nil {
		return s.engineError(err, "")
	}
	return &Response{Status: "200 OK", Body: objs[0]}
}

// ---- UpdateJob (§3.5)

func (s *Server) updateJob(ctx context.Context, c *call) *Response {
	bid, r := verifyInt64(c.Request, "jobID")
	if r != nil {
		return r
	}
	data := c.Get("data")
	switch {
	case data == "":
		return reply("402 Missing data")
	case len(data) > store.MaxDataSize:
		return reply("402 Malformed data")
	}
	repeat := c.Get("repeat")
	var sched schedule.Schedule
	if repeat != "" {
		var err error
		if sched, err = schedule.ParseRepeat(repeat); err != nil {
			return reply("402 Malformed repeat")
		}
	}
	p := rota.UpdateParams{}
	if v, ok := c.Header("jobpriority"); ok {
		prio := calc64(v)
		if !validPriority(prio) {
			return reply("402 Invalid priority value")
		}
		p.Priority = new(int)
		*p.Priority = int(prio)
	}
	j, err := s.byBedrockID(ctx, bid)
	if err != nil {
		return s.engineError(err, "")
	}
	if j.ID == 0 {
		return reply("404 No job with this jobID")
	}
	p.ID = j.ID
	// Bedrock stores what is not JSON as {}, losing the data; rota
	// refuses it instead. The mock flag stays as the job has it.
	if !json.Valid([]byte(data)) || !isObject(data) {
		return reply("402 Malformed data")
	}
	d := withoutMember(json.RawMessage(data), "mockRequest")
	if isMocked(j.Data) {
		d = withMember(d, "mockRequest", []byte("true"))
	}
	p.Data = d
	movable := j.State == rota.Pending || j.State == rota.Paused
	switch {
	case atoi(c.Get("shouldclearrepeat")) != 0:
		p.Schedule = new(string)
	case repeat != "":
		text := sched.String()
		p.Schedule = &text
		all := rota.MissedAll
		p.Missed = &all
		// A pending or paused job moves to the new repeat's next run from
		// its run time, by the store's clock (lifecycle.Update).
		p.NextSlot = true
	}
	if nr := c.Get("nextrun"); nr != "" {
		t, err := parseTime(nr)
		if err != nil {
			return reply("402 Malformed nextRun")
		}
		if !movable {
			// Bedrock writes the nextRun of a job in any state; rota
			// decides a handed-out job's next run when its worker
			// finishes or retries it, and an ended job's when it is
			// requeued, so it says so rather than drop the value.
			if j.State == rota.Running {
				return reply("405 Cannot set the nextRun of a " + state(&j) + " job; RetryJob with nextRun sets when it runs again")
			}
			return reply("405 Cannot set the nextRun of a " + state(&j) + " job; RequeueJobs runs it again")
		}
		p.RunAt = t
	}
	if _, err := s.c.Update(ctx, p); err != nil {
		return s.engineError(err, "405 Cannot update this job")
	}
	return success()
}

// ---- FinishJob, RetryJob (§3.6), FailJob (§3.7)

// heldJob is a running job the protocol acts on for a worker: Bedrock's
// commands name a job by id alone, so the lease is the job's current one.
func (s *Server) heldJob(ctx context.Context, c *call, refused string) (rota.Job, *Response) {
	j, _, r := s.lookup(ctx, c, "jobID")
	if r != nil {
		return j, r
	}
	if j.State != rota.Running {
		return j, reply(refused)
	}
	return j, nil
}

const refusedFinish = "405 Can only retry/finish RUNNING and RUNQUEUED jobs"

func (s *Server) finishJob(ctx context.Context, c *call, retry bool) *Response {
	j, _, r := s.lookup(ctx, c, "jobID")
	if r != nil {
		return r
	}
	if overdue(&j) || (isMocked(j.Data) && j.State != rota.Running) {
		// A mocked job may be finished or retried in any state, as in
		// Bedrock (its tests do so).
		return s.finishOverdue(ctx, c, j, retry)
	}
	if j.State != rota.Running {
		return reply(refusedFinish)
	}
	if j.Parent != 0 {
		parent, err := s.c.Get(ctx, j.Parent)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return s.engineError(err, "")
		}
		if parent.State != rota.Paused {
			return reply("405 Can only retry/finish child job when parent is PAUSED")
		}
	}
	data := c.Get("data")
	noRepeat := test(c.Get("ignorerepeat"))
	if data != "" {
		if !isObject(data) {
			return reply("402 Malformed data")
		}
		if isMocked(json.RawMessage(data)) != isMocked(j.Data) {
			return reply("500 Mock Mismatch")
		}
		if v, ok := member(json.RawMessage(data), "delete"); ok && (string(v) == "true" || string(v) == `"true"`) {
			noRepeat = true
		}
	}
	fp := rota.FinishParams{Lease: j.Lease(), As: rota.Complete, Data: dataOrNil(data)}
	if retry {
		fp.As = rota.Snooze
		if name := c.Get("name"); name != "" {
			if check.Type(name) != nil {
				return reply("402 Malformed name")
			}
			fp.Rename = name
		}
		if v, ok := c.Header("jobpriority"); ok {
			p := calc64(v)
			if !validPriority(p) {
				return reply("402 Invalid priority value")
			}
			fp.Priority = new(int)
			*fp.Priority = int(p)
		}
		if r := nextRun(c, &j, noRepeat, &fp.AtNextSlot, &fp.RunAt, &fp.RunIn); r != nil {
			return r
		}
		// Bedrock's RetryJob, like its FinishJob, deletes the children
		// the run has seen end; the engine deletes them when a parent's
		// run completes, and on a snooze when asked.
		fp.DropEndedChildren = j.HasChildren
	} else {
		// Without its schedule, completing the run ends the job.
		fp.EndSchedule = noRepeat && j.Schedule != ""
	}
	// One fenced finish: the data, priority, schedule, next run and the
	// children go with it in its transaction, or nothing does.
	if err := s.c.Finish(ctx, fp); err != nil {
		return s.engineError(err, refusedFinish)
	}
	return success()
}

// nextRun reads when a retried job runs again, in Bedrock's order: a
// repeating job (unless ignoreRepeat) at its next slot, else at nextRun,
// else delay seconds after now. The store resolves the relative times
// with its own clock: it sets exactly one of atSlot, at and in.
func nextRun(c *call, j *rota.Job, noRepeat bool, atSlot *bool, at *time.Time, in *time.Duration) *Response {
	switch {
	case j.Schedule != "" && !noRepeat:
		*atSlot = true
	case c.Get("nextrun") != "":
		t, err := parseTime(c.Get("nextrun"))
		if err != nil {
			return reply("402 Malformed nextRun")
		}
		*at = t
	default:
		delay := calc64(c.Get("delay"))
		switch {
		case delay < 0:
			return reply("402 Must specify a non-negative delay when retrying")
		case delay > maxDelay:
			return reply("402 Malformed delay")
		}
		*in = time.Duration(delay) * time.Second
	}
	return nil
}

// maxDelay bounds a RetryJob's delay, in seconds (about three years).
const maxDelay = 99999999

// dataOrNil is a data header as a finish carries it: nil when absent.
func dataOrNil(data string) json.RawMessage {
	if data == "" {
		return nil
	}
	return json.RawMessage(data)
}

// overdue reports whether j is a retryAfter job whose run outlasted its
// fixed lease and which waits to run again: Bedrock's RUNQUEUED job past
// its nextRun, which its worker may still finish or retry.
func overdue(j *rota.Job) bool {
	return j.State == rota.Pending && j.RetryAfter > 0 && j.Attempt > 0 &&
		strings.HasPrefix(j.LastError, lifecycle.RetryAfterElapsed(j.RetryAfter))
}

// finishOverdue finishes or retries an overdue job (overdue), or a mocked
// job that is not running: no lease holds it, so the engine's finish does
// not apply; the job ends as Bedrock ends it: a finished job without a repeat is deleted,
// one with a repeat moves to its next slot, a retried one to the time
// asked for. Its count of runs (retryAfterCount) is kept, where Bedrock
// resets it.
func (s *Server) finishOverdue(ctx context.Context, c *call, j rota.Job, retry bool) *Response {
	noRepeat := test(c.Get("ignorerepeat"))
	p := rota.UpdateParams{ID: j.ID}
	if data := c.Get("data"); data != "" {
		if !isObject(data) {
			return reply("402 Malformed data")
		}
		if v, ok := member(json.RawMessage(data), "delete"); ok && (string(v) == "true" || string(v) == `"true"`) {
			noRepeat = true
		}
		p.Data = json.RawMessage(data)
	}
	if !retry && (j.Schedule == "" || noRepeat) {
		if err := s.c.Remove(ctx, j.ID); err != nil {
			return s.engineError(err, refusedFinish)
		}
		return success()
	}
	if r := nextRun(c, &j, noRepeat, &p.NextSlot, &p.RunAt, &p.RunIn); r != nil {
		return r
	}
	if v, ok := c.Header("jobpriority"); ok && retry {
		prio := calc64(v)
		if !validPriority(prio) {
			return reply("402 Invalid priority value")
		}
		p.Priority = new(int)
		*p.Priority = int(prio)
	}
	// One update: the data, priority and next run together.
	if _, err := s.c.Update(ctx, p); err != nil {
		return s.engineError(err, refusedFinish)
	}
	return success()
}

func (s *Server) failJob(ctx context.Context, c *call) *Response {
	const refused = "405 Can only fail RUNNING or RUNQUEUED jobs"
	j, r := s.heldJob(ctx, c, refused)
	if r != nil {
		return r
	}
	data := c.Get("data")
	if data != "" && !isObject(data) {
		return reply("402 Malformed data")
	}
	err := s.c.Finish(ctx, rota.FinishParams{Lease: j.Lease(), As: rota.Fail, Permanent: true, Error: "FailJob", Data: dataOrNil(data)})
	if err != nil {
		return s.engineError(err, refused)
	}
	return success()
}

// ---- CancelJob (§3.8), DeleteJob (§3.9), RequeueJobs (§3.10)

func (s *Server) cancelJob(ctx context.Context, c *call) *Response {
	j, _, r := s.lookup(ctx, c, "jobID")
	if r != nil {
		return r
	}
	switch {
	case j.HasChildren:
		return reply("404 Invalid jobID - Cannot cancel a job with children")
	case j.Parent == 0:
		return reply("404 Invalid jobID - Cannot cancel a job without a parent")
	case j.State == rota.Completed, j.State == rota.Running && j.RetryAfter == 0, j.State == rota.Paused:
		// Bedrock's answer to a FINISHED, RUNNING or PAUSED child: 200,
		// and no change.
		return success()
	case j.State == rota.Failed:
		// Bedrock turns a FAILED child into a CANCELLED one, to resume
		// its parent; in rota the failure has resumed the parent already,
		// and an ended job stays as it ended.
		return reply("405 Can't cancel a FAILED job: it has ended, and its parent has resumed")
	}
	// QUEUED, RUNQUEUED (its run is cancelled, as Bedrock does), or
	// CANCELLED again.
	if err := s.c.Cancel(ctx, j.ID); err != nil {
		return s.engineError(err, "405 Can't cancel a "+state(&j)+" job")
	}
	return success()
}

func (s *Server) deleteJob(ctx context.Context, c *call) *Response {
	j, _, r := s.lookup(ctx, c, "jobID")
	if r != nil {
		return r
	}
	switch {
	case j.State == rota.Running && j.RetryAfter == 0:
		return reply("405 Can't delete a RUNNING job")
	case j.State == rota.Paused:
		return reply("405 Can't delete a parent jobs with children running")
	}
	if err := s.c.Remove(ctx, j.ID); err != nil {
		return s.engineError(err, "")
	}
	return success()
}

// requeueJobs makes the listed jobs due again at their created time as
// Bedrock shows it (whole seconds), so that they keep their place, and
// gives each the new name when there is one: a running job is handed back
// by its lease, a pending one moved, an ended one run again (its count of
// runs starts again). decrementFailures gives back the run a handed-out
// job's count holds (Bedrock's retryAfterCount), which stays otherwise.
// Like Bedrock it answers 200 whatever the ids; unlike Bedrock it leaves a
// paused job (a family's) to the family's rules.
func (s *Server) requeueJobs(ctx context.Context, c *call) *Response {
	name := c.Get("name")
	if name != "" && check.Type(name) != nil {
		return reply("402 Malformed name")
	}
	keep := !test(c.Get("decrementfailures"))
	var bids []int64
	for _, item := range splitList(c.Get("jobids")) {
		bids = append(bids, atoi(item))
	}
	jobs, err := s.byBedrockIDs(ctx, bids)
	if err != nil {
		return s.engineError(err, "")
	}
	var ps []rota.ResubmitParams
	for _, j := range jobs {
		if j.ID != 0 {
			ps = append(ps, rota.ResubmitParams{ID: j.ID, RunAt: j.CreatedAt.Truncate(time.Second), Rename: name,
				HandBack: true, KeepAttempt: keep})
		}
	}
	if len(ps) == 0 {
		return success()
	}
	// One call, one transaction: a running job is handed back, a pending
	// one moved, an ended one run again, a paused one left to its family.
	_, errs, err := s.c.ResubmitMany(ctx, ps)
	if err != nil {
		return s.engineError(err, "")
	}
	for _, err := range errs {
		if err != nil && !errors.Is(err, store.ErrWorkerConflict) && !errors.Is(err, store.ErrNotFound) {
			return s.engineError(err, "")
		}
	}
	return success()
}
