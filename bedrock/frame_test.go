package bedrock

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

func read(t *testing.T, wire string) []*Request {
	t.Helper()
	br := bufio.NewReader(strings.NewReader(wire))
	var out []*Request
	for {
		r, err := ReadRequest(br)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("ReadRequest(%q): %v", wire, err)
		}
		out = append(out, r)
	}
}

func TestReadRequest(t *testing.T) {
	rs := read(t, "\r\n\r\nCreateJob / HTTP/1.1\r\nName: foo\r\nDATA: {\"a\\\\\"b\":1}\r\nrepeat:  finished, +1 minute \r\nempty:\r\nContent-Length: 3\r\n\r\nabc"+
		"GetJob\nname: foo\n\n"+
		"QueryJob\r\njobID: 7\r\nlong: first\r\n  second\r\nname: a\r\nname: b\r\n\r\n")
	if len(rs) != 3 {
		t.Fatalf("read %d requests from three pipelined ones, want all of them", len(rs))
	}
	r := rs[0]
	if r.Verb != "CreateJob" || r.Method != "CreateJob / HTTP/1.1" {
		t.Errorf("verb %q method %q", r.Verb, r.Method)
	}
	if r.Get("name") != "foo" || r.Get("data") != `{"a\"b":1}` || r.Get("Repeat") != "finished, +1 minute" {
		t.Errorf("headers %q", r.Headers)
	}
	if v, ok := r.Header("empty"); !ok || v != "" {
		t.Errorf("an empty header is present with \"\": %q %v", v, ok)
	}
	if string(r.Body) != "abc" {
		t.Errorf("body %q", r.Body)
	}
	if rs[1].Verb != "GetJob" || rs[1].Get("name") != "foo" || rs[1].Body != nil {
		t.Errorf("second request %+v: a request without Content-Length has no body", rs[1])
	}
	if rs[2].Get("long") != "firstsecond" || rs[2].Get("name") != "b" {
		t.Errorf("continuation and last-wins: %q", rs[2].Headers)
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`a\nb`: "a\nb", `\t\r\b\f`: "\t\r\b\f", `\\`: `\`, `\"x\"`: `"x"`, `\u00e9`: "é", `\q`: "q", `trailing\`: `trailing\`, `\u12`: "u12",
	} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReadRequestErrors(t *testing.T) {
	for _, c := range []struct{ wire, status string }{
		{"GetJob\r\nContent-Length: ten\r\n\r\n", "400 Malformed Content-Length"},
		{"GetJob\r\nContent-Length: -1\r\n\r\n", "400 Malformed Content-Length"},
		{"GetJob\r\nContent-Length: 99999999\r\n\r\n", "413 Content-Length"},
		{"GetJob\r\nno colon here\r\n\r\n", "400 Malformed header line"},
		{"GetJob\r\n: empty name\r\n\r\n", "400 Malformed header line"},
		{"GetJob\r\nname: x\r\n", "400 Malformed request: the connection ended inside its headers"},
		{"GetJob\r\nContent-Length: 5\r\n\r\nab", "400 Malformed request: the connection ended inside its body"},
		{"GetJob\r\n" + strings.Repeat("h: v\r\n", MaxHeaders+1) + "\r\n", "431 Too many headers"},
		{"GetJob\r\nname: " + strings.Repeat("x", MaxLine) + "\r\n\r\n", "431 Line too long"},
		{"Get\xffJob\r\n\r\n", "400 Malformed method line"},
	} {
		_, err := ReadRequest(bufio.NewReader(strings.NewReader(c.wire)))
		var fe *FrameError
		if !errors.As(err, &fe) || !strings.HasPrefix(fe.Status, c.status) {
			t.Errorf("%.40q: %v, want %q", c.wire, err, c.status)
		}
	}
}

func TestWriteResponse(t *testing.T) {
	var b bytes.Buffer
	(&Response{Status: "200 OK", Headers: map[string]string{"nodeName": "rota", "commitCount": "7", "Content-Length": "99", "a": "x\ny"},
		Body: []byte(`{"jobID":5}`)}).WriteTo(&b)
	want := "200 OK\r\na: x\\ny\r\ncommitCount: 7\r\nnodeName: rota\r\nContent-Length: 11\r\n\r\n{\"jobID\":5}"
	if b.String() != want {
		t.Errorf("response\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	(&Response{Status: "404 No job found"}).WriteTo(&b)
	if b.String() != "404 No job found\r\nContent-Length: 0\r\n\r\n" {
		t.Errorf("error response %q", b.String())
	}
}

func TestObject(t *testing.T) {
	o := object{}
	o.num("jobID", 42)
	o.str("name", "www-prod/Foo")
	o.raw("data", []byte(`{"b":1,"a":2}`))
	o.str("lastRun", "")
	o.str("created", "2026-11-24 15:00:00")
	o.str("Zeta", "z")
	got := string(o.encode())
	want := `{"created":"2026-11-24 15:00:00","data":{"b":1,"a":2},"jobID":42,"lastRun":"","name":"www-prod\/Foo","Zeta":"z"}`
	if got != want {
		t.Errorf("encode\n%s\nwant\n%s", got, want)
	}
	if !json.Valid([]byte(got)) {
		t.Error("not valid JSON")
	}
}
