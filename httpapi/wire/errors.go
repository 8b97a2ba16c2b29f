package wire

import (
	"errors"
	"net/http"

	"github.com/rotajobs/rota/store"
)

// Error codes. They are part of the API: clients match on them.
const (
	CodeInvalid        = "invalid_input"
	CodeNotFound       = "not_found"
	CodeWorkerConflict = "worker_conflict"
	CodeCanceled       = "canceled"
	CodeFinished       = "finished"
	CodeTooLarge       = "too_large"
	CodeUnauthorized   = "unauthorized"
	CodeForbidden      = "forbidden"
	CodeMethod         = "method_not_allowed"
	CodeMediaType      = "unsupported_media_type"
	CodeUnavailable    = "unavailable"
	CodeInternal       = "internal"
	CodeTooMany        = "too_many_requests"
)

// ErrForbidden is a request the token may not make: a read-only token's
// change, a scoped token's add outside its groups or types, an
// administrator's route. It matches on both sides of the API.
var ErrForbidden = errors.New("forbidden")

// ErrTooManyRequests is a request refused because its token has as many
// requests in flight as one token may (httpapi.Config.MaxTokenRequests).
// It passes when one of them ends: on the client's side it matches
// store.ErrUnavailable too, which callers try again.
var ErrTooManyRequests = errors.New("too many requests")

// ErrUnsupportedMediaType is a request body that is not labelled
// "Content-Type: application/json".
var ErrUnsupportedMediaType = errors.New("unsupported media type")

var codeErrors = []struct {
	code   string
	err    error
	status int
}{
	{CodeTooLarge, store.ErrTooLarge, http.StatusRequestEntityTooLarge},
	{CodeInvalid, store.ErrInvalid, http.StatusBadRequest},
	{CodeNotFound, store.ErrNotFound, http.StatusNotFound},
	{CodeWorkerConflict, store.ErrWorkerConflict, http.StatusConflict},
	{CodeCanceled, store.ErrCanceled, http.StatusConflict},
	{CodeFinished, store.ErrFinished, http.StatusConflict},
	{CodeUnavailable, store.ErrUnavailable, http.StatusServiceUnavailable},
	{CodeUnavailable, store.ErrClosed, http.StatusServiceUnavailable},
	{CodeForbidden, ErrForbidden, http.StatusForbidden},
	// What a caller's reach does not allow (rota.WithReach, a scoped
	// token's requests): the same refusal, decided by the engine.
	{CodeForbidden, store.ErrUnauthorized, http.StatusForbidden},
	{CodeMediaType, ErrUnsupportedMediaType, http.StatusUnsupportedMediaType},
	{CodeTooMany, ErrTooManyRequests, http.StatusTooManyRequests},
}

// CodeOf maps an error to its code and HTTP status.
func CodeOf(err error) (code string, status int) {
	for _, c := range codeErrors {
		if errors.Is(err, c.err) {
			return c.code, c.status
		}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return CodeTooLarge, http.StatusRequestEntityTooLarge
	}
	return CodeInternal, http.StatusInternalServerError
}

// ErrorOf is an error's body, nil for nil.
func ErrorOf(err error) *Error {
	if err == nil {
		return nil
	}
	code, _ := CodeOf(err)
	return &Error{Code: code, Message: err.Error()}
}

// AsError turns a wire error back into an error that matches the store's
// sentinel errors with errors.Is, so that remote callers match the same
// errors as in-process ones.
func AsError(e *Error) error {
	if e == nil {
		return nil
	}
	for _, c := range codeErrors {
		if c.code == e.Code {
			switch c.code {
			case CodeForbidden:
				// A permission the token lacks: no retry will have it.
				return &remoteError{msg: e.Message, sentinels: []error{c.err, store.ErrUnauthorized}}
			case CodeTooMany:
				// Passes as the token's other requests end.
				return &remoteError{msg: e.Message, sentinels: []error{c.err, store.ErrUnavailable}}
			}
			return &remoteError{msg: e.Message, sentinels: []error{c.err}}
		}
	}
	if e.Code == CodeUnauthorized {
		return &remoteError{msg: e.Code + ": " + e.Message, sentinels: []error{store.ErrUnauthorized}}
	}
	return &remoteError{msg: e.Code + ": " + e.Message}
}

type remoteError struct {
	msg       string
	sentinels []error
}

func (e *remoteError) Error() string   { return e.msg }
func (e *remoteError) Unwrap() []error { return e.sentinels }

// StatusOf is the HTTP status the server answers an error code with.
func StatusOf(code string) int {
	for _, c := range codeErrors {
		if c.code == code {
			return c.status
		}
	}
	return map[string]int{
		CodeTooLarge:     http.StatusRequestEntityTooLarge,
		CodeUnauthorized: http.StatusUnauthorized,
		CodeForbidden:    http.StatusForbidden,
		CodeMethod:       http.StatusMethodNotAllowed,
		CodeInternal:     http.StatusInternalServerError,
	}[code]
}
