package bedrock_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rotajobs/rota/bedrock"
	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/store/sqlite"
)

// The protocol's round trips beside the same work over the HTTP API, on
// one SQLite store each, with the server in this process:
//
//	go test ./bedrock -run X -bench Protocol -benchtime 5000x
//
// CreateJob: one job per request, from C connections at once (and, for
// the protocol, also 32 requests pipelined per write); GetJob+FinishJob:
// each connection takes a job and finishes it. jobs/s is the metric.
func BenchmarkProtocol(b *testing.B) {
	for _, conns := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("bedrock/create/conns=%d", conns), func(b *testing.B) {
			tr := sqliteServer(b, bedrock.Config{})
			parallel(b, conns, func(c *benchConn, i int) {
				c.do(b, "CreateJob\r\nname: bench\r\ndata: {\"i\":1}\r\n\r\n")
			}, tr.addr)
		})
		b.Run(fmt.Sprintf("bedrock/getjob+finishjob/conns=%d", conns), func(b *testing.B) {
			tr := sqliteServer(b, bedrock.Config{})
			fill(b, tr.addr, b.N)
			b.ResetTimer()
			parallel(b, conns, func(c *benchConn, i int) {
				body := c.do(b, "GetJob\r\nname: bench\r\n\r\n")
				var j struct {
					JobID json.Number `json:"jobID"`
				}
				json.Unmarshal([]byte(body), &j)
				c.do(b, "FinishJob\r\njobID: "+j.JobID.String()+"\r\n\r\n")
			}, tr.addr)
		})
		b.Run(fmt.Sprintf("http/add/conns=%d", conns), func(b *testing.B) {
			url := httpServer(b)
			httpParallel(b, conns, func(cl *http.Client) {
				post(b, cl, url+"/v1/jobs", `{"type":"bench","data":{"i":1}}`)
			})
		})
		b.Run(fmt.Sprintf("http/accept+finish/conns=%d", conns), func(b *testing.B) {
			url := httpServer(b)
			var batch strings.Builder
			for i := 0; i < b.N; i += 1000 {
				batch.Reset()
				batch.WriteString(`{"jobs":[`)
				for k := 0; k < min(1000, b.N-i); k++ {
					if k > 0 {
						batch.WriteByte(',')
					}
					batch.WriteString(`{"type":"bench"}`)
				}
				batch.WriteString(`]}`)
				post(b, http.DefaultClient, url+"/v1/jobs", batch.String())
			}
			b.ResetTimer()
			httpParallel(b, conns, func(cl *http.Client) {
				var res struct {
					Jobs []struct {
						ID    int64  `json:"id"`
						Token string `json:"token"`
					} `json:"jobs"`
				}
				json.Unmarshal(post(b, cl, url+"/v1/accept", `{"types":["bench"]}`), &res)
				if len(res.Jobs) == 1 {
					post(b, cl, fmt.Sprintf("%s/v1/jobs/%d/finish", url, res.Jobs[0].ID), `{"token":"`+res.Jobs[0].Token+`"}`)
				}
			})
		})
	}
	b.Run("bedrock/create/pipelined=32/conns=8", func(b *testing.B) {
		tr := sqliteServer(b, bedrock.Config{})
		parallelBatches(b, 8, 32, tr.addr)
	})
}

type benchConn struct {
	conn net.Conn
	br   *bufio.Reader
}

func (c *benchConn) do(b *testing.B, req string) string {
	if _, err := io.WriteString(c.conn, req); err != nil {
		b.Fatal(err)
	}
	r, err := readResponse(c.br)
	if err != nil || !strings.HasPrefix(r.Status, "200") {
		b.Fatalf("%.20q: %v %s", req, err, r.Status)
	}
	return r.Body
}

// parallel runs b.N calls of fn spread over conns connections.
func parallel(b *testing.B, conns int, fn func(c *benchConn, i int), addr string) {
	var wg sync.WaitGroup
	next := make(chan int, b.N)
	for i := range b.N {
		next <- i
	}
	close(next)
	start := time.Now()
	for range conns {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		c := &benchConn{conn: conn, br: bufio.NewReader(conn)}
		wg.Go(func() {
			defer conn.Close()
			for i := range next {
				fn(c, i)
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
}

// parallelBatches sends CreateJobs requests pipelined per write.
func parallelBatches(b *testing.B, conns, depth int, addr string) {
	var wg sync.WaitGroup
	per := (b.N + conns - 1) / conns
	start := time.Now()
	for range conns {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		br := bufio.NewReader(conn)
		wg.Go(func() {
			defer conn.Close()
			for done := 0; done < per; done += depth {
				n := min(depth, per-done)
				var w bytes.Buffer
				for range n {
					w.WriteString("CreateJob\r\nname: bench\r\ndata: {\"i\":1}\r\n\r\n")
				}
				conn.Write(w.Bytes())
				for range n {
					if r, err := readResponse(br); err != nil || r.Status != "200 OK" {
						b.Errorf("pipelined CreateJob: %v %s", err, r.Status)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(per*conns)/time.Since(start).Seconds(), "jobs/s")
}

func fill(b *testing.B, addr string, n int) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	c := &benchConn{conn: conn, br: bufio.NewReader(conn)}
	for i := 0; i < n; i += 1000 {
		var jobs []string
		for range min(1000, n-i) {
			jobs = append(jobs, `{"name":"bench"}`)
		}
		c.do(b, "CreateJobs\r\njobs: ["+strings.Join(jobs, ",")+"]\r\n\r\n")
	}
}

func httpServer(b *testing.B) string {
	st, err := sqlite.Open(filepath.Join(b.TempDir(), "rota.db"), sqlite.Config{})
	if err != nil {
		b.Fatal(err)
	}
	tr := start(b, st, bedrock.Config{})
	api := httpapi.New(tr.c, httpapi.Config{})
	ts := httptest.NewServer(api)
	b.Cleanup(func() { ts.Close(); api.Close() })
	return ts.URL
}

func httpParallel(b *testing.B, conns int, fn func(cl *http.Client)) {
	var wg sync.WaitGroup
	next := make(chan struct{}, b.N)
	for range b.N {
		next <- struct{}{}
	}
	close(next)
	start := time.Now()
	for range conns {
		cl := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
		wg.Go(func() {
			for range next {
				fn(cl)
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
}

func post(b *testing.B, cl *http.Client, url, body string) []byte {
	resp, err := cl.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		b.Fatalf("POST %s: %d %s", url, resp.StatusCode, out)
	}
	return out
}
