package bedrock

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzReadRequest: any bytes give requests, io.EOF or a FrameError with a
// 4xx status, never a panic; what is read is bounded.
func FuzzReadRequest(f *testing.F) {
	for _, s := range []string{
		"CreateJob\r\nname: foo\r\ndata: {\"a\":1}\r\nContent-Length: 0\r\n\r\n",
		"GetJob / HTTP/1.1\nname: a*\n\nGetJobs\nname: b\nnumResults: 3\n\n",
		"QueryJob\r\njobID: 1\r\n x\r\nContent-Length: 2\r\n\r\nab",
		"\r\n\r\n", "X\r\nContent-Length: 9999999999\r\n\r\n", "Y\r\nh: \\u00e9\\\\\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		br := bufio.NewReader(bytes.NewReader(in))
		for range 100 {
			r, err := ReadRequest(br)
			if errors.Is(err, io.EOF) {
				return
			}
			var fe *FrameError
			if errors.As(err, &fe) {
				if !strings.HasPrefix(fe.Status, "4") {
					t.Fatalf("frame error %q is not a 4xx", fe.Status)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if r.Verb == "" || len(r.Body) > MaxBody || len(r.Headers) > MaxHeaders {
				t.Fatalf("request %+v out of bounds", r)
			}
			var b bytes.Buffer
			if _, err := (&Response{Status: "200 OK", Headers: map[string]string{"x": r.Get("name")}, Body: r.Body}).WriteTo(&b); err != nil {
				t.Fatal(err)
			}
		}
	})
}
