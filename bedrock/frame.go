// Package bedrock speaks Bedrock::Jobs' line protocol (Expensify's
// Bedrock, as its Jobs plugin's code behaves; docs/bedrock.md) so that Bedrock's
// clients and workers can run against rota, translating each command to
// the engine's operations with no job rule of its own: Server is the
// listener of rota serve --bedrock, docs/bedrock.md its guide.
//
// This file is the framing: requests in, responses out, as Bedrock frames
// them (§1.2–§1.4), with its defects fixed where clients cannot depend on
// them: pipelined requests are all answered, in order; a request without
// Content-Length has no body instead of swallowing the next request; a
// malformed request gets a 4xx answer instead of a dropped socket; and
// every part of a request is bounded.
package bedrock

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rotajobs/rota"
)

// Limits of a request; each is answered with a 4xx naming it.
const (
	MaxLine    = 2 << 20 // a line: the method line or one header with its value
	MaxHeaders = 256     // header lines in one request
	MaxBody    = 1 << 20 // a body (Jobs commands take none, but clients may send one)
)

// Request is one request: its method line, and its headers by lower-cased
// name (Bedrock's names are case-insensitive; the last of a repeated
// header wins).
type Request struct {
	Method  string // the whole method line, trimmed: "GetJob" or "GetJob / HTTP/1.1"
	Verb    string // the method line up to its first space
	Headers map[string]string
	Body    []byte
}

// Header returns a header's value and whether it is present (a present
// header may be empty, which Bedrock tells apart from absent).
func (r *Request) Header(name string) (string, bool) {
	v, ok := r.Headers[strings.ToLower(name)]
	return v, ok
}

// Get returns a header's value, "" when absent.
func (r *Request) Get(name string) string {
	v, _ := r.Header(name)
	return v
}

// FrameError is a request that cannot be read: Status is the response
// line to answer it with before closing the connection.
type FrameError struct {
	Status string
}

func (e *FrameError) Error() string { return e.Status }

func frameErr(format string, args ...any) error {
	return &FrameError{Status: fmt.Sprintf(format, args...)}
}

// ReadRequest reads the next request from br. It returns io.EOF when the
// connection ends between requests, and a *FrameError for a request it
// cannot read.
func ReadRequest(br *bufio.Reader) (*Request, error) {
	// The method line: the first line that is not empty.
	var method string
	for {
		line, err := readLine(br)
		if err != nil {
			return nil, err
		}
		if method = strings.Trim(line, " "); method != "" {
			break
		}
	}
	if !utf8.ValidString(method) {
		return nil, frameErr("400 Malformed method line: not UTF-8")
	}
	r := &Request{Method: method, Verb: method, Headers: map[string]string{}}
	if i := strings.IndexByte(method, ' '); i >= 0 {
		r.Verb = method[:i]
	}
	last := ""
	for n := 0; ; n++ {
		line, err := readLine(br)
		if errors.Is(err, io.EOF) {
			return nil, frameErr("400 Malformed request: the connection ended inside its headers")
		}
		if err != nil {
			return nil, err
		}
		if line == "" {
			break
		}
		if n >= MaxHeaders {
			return nil, frameErr("431 Too many headers: more than %d", MaxHeaders)
		}
		if (line[0] == ' ' || line[0] == '\t') && last != "" {
			// A continuation of the previous header's value.
			r.Headers[last] += unescape(strings.Trim(line, " \t"))
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		name = strings.Trim(name, " ")
		if !ok || name == "" {
			return nil, frameErr("400 Malformed header line: want name: value")
		}
		last = strings.ToLower(name)
		r.Headers[last] = unescape(strings.Trim(value, " "))
	}
	if cl, ok := r.Headers["content-length"]; ok && cl != "" {
		n, err := strconv.ParseInt(cl, 10, 64)
		switch {
		case err != nil || n < 0:
			return nil, frameErr("400 Malformed Content-Length")
		case n > MaxBody:
			return nil, frameErr("413 Content-Length %d is more than %d", n, MaxBody)
		}
		r.Body = make([]byte, n)
		if _, err := io.ReadFull(br, r.Body); err != nil {
			return nil, frameErr("400 Malformed request: the connection ended inside its body")
		}
	}
	return r, nil
}

// readLine reads one line without its line ending (\n or \r\n), bounded
// by MaxLine.
func readLine(br *bufio.Reader) (string, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > MaxLine {
			return "", frameErr("431 Line too long: more than %d bytes", MaxLine)
		}
		switch {
		case err == nil:
			buf = buf[:len(buf)-1]
			if n := len(buf); n > 0 && buf[n-1] == '\r' {
				buf = buf[:n-1]
			}
			return string(buf), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(buf) == 0:
			return "", io.EOF
		case errors.Is(err, io.EOF):
			return "", frameErr("400 Malformed request: the connection ended inside a line")
		default:
			return "", err
		}
	}
}

// unescape is Bedrock's SUnescape of header values: \n \r \t \b \f become
// control characters, \uXXXX a UTF-8 rune, and \X becomes X for any other
// X, so that clients double their literal backslashes.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+4 < len(s) {
				if v, err := strconv.ParseUint(s[i+1:i+5], 16, 32); err == nil {
					b.WriteRune(rune(v))
					i += 4
					continue
				}
			}
			b.WriteByte('u')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// Response is one response: its status line ("200 OK", "404 No job
// found"), extra headers, and a body (empty for errors).
type Response struct {
	Status  string
	Headers map[string]string
	Body    []byte

	// handedOut are the jobs a GetJob(s) answer hands out: when the
	// answer cannot be written, they are handed back (Bedrock §3.13).
	handedOut []rota.Job
}

// WriteTo writes the response as Bedrock frames it: the status line with
// no HTTP/1.1 prefix, the headers sorted by name case-insensitively with
// their values escaped, then Content-Length, always present and always
// last, and the body.
func (r *Response) WriteTo(w io.Writer) (int64, error) {
	var b strings.Builder
	b.WriteString(r.Status)
	b.WriteString("\r\n")
	names := make([]string, 0, len(r.Headers))
	for n := range r.Headers {
		if !strings.EqualFold(n, "Content-Length") {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	for _, n := range names {
		b.WriteString(n)
		b.WriteString(": ")
		b.WriteString(escapeHeader(r.Headers[n]))
		b.WriteString("\r\n")
	}
	b.WriteString("Content-Length: ")
	b.WriteString(strconv.Itoa(len(r.Body)))
	b.WriteString("\r\n\r\n")
	b.Write(r.Body)
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

// escapeHeader is Bedrock's SEscape of header values: backslash and the
// line-breaking controls.
func escapeHeader(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\r", `\r`, "\n", `\n`, "\t", `\t`).Replace(s)
}
