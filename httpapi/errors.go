package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/internal/rules/check"
)

// writeError sends err as {"error": {...}}.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return // the client went away
	}
	code, status := wire.CodeOf(err)
	msg := err.Error()
	switch status {
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1") // seconds: the store reconnects by itself
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", "1") // seconds: long polls and streams end or go on; a client cannot know which
	}
	if status == http.StatusInternalServerError {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		msg = "internal error; the server log has the details"
	}
	writeJSON(w, status, wire.ErrorResponse{Error: wire.Error{Code: code, Message: msg}})
}

func writeErrorCode(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, wire.ErrorResponse{Error: wire.Error{Code: code, Message: msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.Encode(v)
}

// decodeBody decodes a request body (see readBody) into v strictly: one
// JSON value, no unknown fields, no wrong types. Its errors say what is
// wrong and match store.ErrInvalid. An empty body is refused unless
// optional.
func decodeBody(body []byte, v any, optional bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		if optional {
			return nil
		}
		return check.Invalidf("the request body is empty; want a JSON object")
	}
	return decodeStrict(body, v)
}

// readBody reads the request's JSON body, up to the server's limit; a
// body of another type is refused unread.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if err := jsonBody(r); err != nil {
		return nil, err
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, fmt.Errorf("request body is larger than %d bytes: %w", s.cfg.MaxBodyBytes, err)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, check.Invalidf("the request body did not arrive within %v", s.cfg.BodyTimeout)
		}
		return nil, check.Invalidf("reading the body: %v", err)
	}
	return body, nil
}

func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return check.Invalidf("%s", describeJSONError(err))
	}
	if _, err := dec.Token(); err != io.EOF { // anything after the value, even a stray } or ]
		return check.Invalidf("the body holds more than one JSON value")
	}
	return nil
}

func describeJSONError(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tpe *time.ParseError
	switch {
	case errors.As(err, &tpe):
		return fmt.Sprintf("time %s is not an RFC 3339 time such as \"2026-01-02T15:04:05Z\"", tpe.Value)
	case errors.As(err, &syn):
		return fmt.Sprintf("malformed JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Sprintf("field %q: want %s, got JSON %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
		}
		return fmt.Sprintf("want %s, got JSON %s", jsonKind(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return "malformed JSON: the body ends too early"
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	return msg
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "int", "int64", "int32", "uint", "uint64", "float64":
		return "a number"
	case "bool":
		return "true or false"
	case "slice", "array":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	}
	return goKind
}
