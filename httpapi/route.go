package httpapi

import (
	"net/http"
)

// This file is the one adapter between net/http and a route's work: every
// route of the API is a function from its decoded request to its answer
// or an error, and handle does the rest, in the same order for every
// route, so that refusals read alike and come before the work:
//
//  1. allow: the route's own refusal that needs no body (a server that
//     keeps no named tokens); the body is not read.
//  2. the job id in the path ({id}), a positive integer.
//  3. the body, strictly decoded (decode), when the route takes one.
//  4. check: what the body asks that the token or the route refuses
//     (a rename out of reach, a wait out of range), before the job is
//     read, so that a job out of reach and a missing one are answered
//     alike whatever the body.
//  5. the token's reach to the job in the path: a job out of reach is
//     answered as a missing one (notFound, or noLease for worker calls).
//  6. the work, whose answer is encoded, or whose error writeError maps
//     to its status, code and message.
//
// Route-wide needs (admin, write) are checked before all this, by guard.

// route describes how a route's request is read before its work runs.
type route[Req any] struct {
	allow  func(r *http.Request) error
	job    jobIn
	body   bodyIn
	decode func(body []byte, req *Req) error // nil: decodeBody
	check  func(r *http.Request, req *Req) error
}

// jobIn says whether a route's path names a job, and how a job out of the
// token's reach is answered.
type jobIn uint8

const (
	noJob       jobIn = iota
	producerJob       // {id}; out of reach: notFound
	workerJob         // {id}; out of reach: noLease
	// storeJob is {id} whose reach the store checks in the work: a
	// removed job's history has no row here to check.
	storeJob
)

// bodyIn says whether a route reads a JSON body.
type bodyIn uint8

const (
	noBody   bodyIn = iota
	needBody        // an empty body is refused
	mayBody         // an empty body leaves the request's zero value
)

// none is the request of a route without a body.
type none struct{}

// answer is a route's successful reply.
type answer struct {
	status int // zero: 200
	// body is encoded as JSON; nil sends no body.
	body any
	// write, when set, writes the whole answer instead (streams, and
	// bodies encoded without reflection).
	write func(w http.ResponseWriter)
}

func ok(body any) answer { return answer{status: http.StatusOK, body: body} }

var noContent = answer{status: http.StatusNoContent}

// rawJSON answers with a body already encoded as JSON (one line).
func rawJSON(body []byte) answer {
	return answer{write: func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write(append(body, '\n'))
	}}
}

// handle adapts a route's work to net/http (see the top of this file).
func handle[Req any](s *Server, rt route[Req], work func(r *http.Request, id int64, req *Req) (answer, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a, err := rt.serve(s, w, r, work)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		switch {
		case a.write != nil:
			a.write(w)
		case a.body == nil:
			w.WriteHeader(a.status)
		default:
			writeJSON(w, a.status, a.body)
		}
	}
}

func (rt route[Req]) serve(s *Server, w http.ResponseWriter, r *http.Request, work func(*http.Request, int64, *Req) (answer, error)) (answer, error) {
	if rt.allow != nil {
		if err := rt.allow(r); err != nil {
			return answer{}, err
		}
	}
	var id int64
	if rt.job != noJob {
		var err error
		if id, err = pathID(r); err != nil {
			return answer{}, err
		}
	}
	var req Req
	if rt.body != noBody {
		body, err := s.readBody(w, r)
		if err == nil {
			if rt.decode != nil {
				err = rt.decode(body, &req)
			} else {
				err = decodeBody(body, &req, rt.body == mayBody)
			}
		}
		if err != nil {
			return answer{}, err
		}
	}
	if rt.check != nil {
		if err := rt.check(r, &req); err != nil {
			return answer{}, err
		}
	}
	switch rt.job {
	case producerJob:
		if err := s.reach(r, id); err != nil {
			return answer{}, err
		}
	case workerJob:
		if err := s.reachLease(r, id); err != nil {
			return answer{}, err
		}
	}
	return work(r, id, &req)
}
