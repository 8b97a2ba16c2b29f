package bedrock_test

import (
	"bufio"
	"io"
	"net"
	"regexp"
	"testing"
	"time"

	"github.com/rotajobs/rota/bedrock"
)

var statusRE = regexp.MustCompile(`^[1-5][0-9][0-9] [^\r\n]+$`)

// FuzzCommands sends any bytes to a server on a real SQLite store: every
// response is well framed (a status line with a code and a reason,
// Content-Length last, as readResponse checks), and the server neither
// panics nor hangs.
func FuzzCommands(f *testing.F) {
	for _, s := range []string{
		"CreateJob\r\nname: a\r\ndata: {\"x\":[1,{\"y\":null}]}\r\nrepeat: SCHEDULED, +1 HOUR\r\n\r\nGetJob\r\nname: *\r\n\r\n",
		"CreateJobs\r\njobs: [{\"name\":\"b\",\"unique\":true},{\"name\":\"c\",\"parentJobID\":5}]\r\n\r\n",
		"GetJobs\r\nname: a,b,c\r\nnumResults: 3\r\njobPriority: 500\r\n\r\nFinishJob\r\njobID: 1\r\n\r\n",
		"RetryJob\r\njobID: 9\r\ndelay: 5\r\nname: z\r\n\r\nRequeueJobs\r\njobIDs: 1,2,x\r\n\r\n",
		"UpdateJob\r\njobID: 1\r\ndata: {}\r\nrepeat: daily\r\nnextRun: 2042-01-01\r\n\r\n",
		"CancelJob\r\njobID: -1\r\n\r\nDeleteJob\r\njobID: 99999999999999999999\r\n\r\n",
		"CrashBedrockJob\r\nnames: a*,[\r\n\r\nGetJob\r\nname: a\r\ntimeout: 1\r\n\r\n",
		"QueryJob\r\njobID: 1\r\nConnection: forget\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	tr := sqliteServer(f, bedrock.Config{})
	f.Fuzz(func(t *testing.T, in []byte) {
		conn, err := net.Dial("tcp", tr.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(20 * time.Second))
		go func() {
			conn.Write(in)
			conn.(*net.TCPConn).CloseWrite()
		}()
		br := bufio.NewReader(conn)
		for {
			r, err := readResponse(br)
			if err == io.EOF {
				return
			}
			if err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Fatalf("the server hung on %q", in)
				}
				// A reset: the server closed with input unread.
				return
			}
			if !statusRE.MatchString(r.Status) {
				t.Fatalf("status line %q", r.Status)
			}
		}
	})
}
