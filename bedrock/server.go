package bedrock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/internal/rules/glob"
	"github.com/rotajobs/rota/store"
)

// Config tunes a Server. The zero value is ready to use: clients from
// loopback addresses only, Bedrock's lease (none: a job runs until a
// command ends it), and the limits below.
type Config struct {
	// Allow lists the client networks that may connect; others are
	// closed at once. Empty means loopback only (127.0.0.0/8 and ::1):
	// the protocol has no authentication.
	Allow []netip.Prefix
	// Lease is how long a job handed out by GetJob(s) may run before it
	// is taken back and runs again. Bedrock's workers send no heartbeat,
	// and Bedrock never takes a running job back, so zero means the same:
	// NoLease. A job with a retryAfter has that fixed lease regardless.
	Lease time.Duration
	// MaxConns bounds the connections served at once; more are closed.
	// Zero means 1024.
	MaxConns int
	// IdleTimeout closes a connection that sends nothing this long between
	// requests; a request must also arrive whole within it. Zero means 5
	// minutes.
	IdleTimeout time.Duration
	// MaxDeferred bounds the commands waiting to run later (Connection:
	// forget, or a commandExecuteTime in the future); more are refused
	// with 503. Zero means 10,000.
	MaxDeferred int
	// NodeName is sent in every response's nodeName header; empty means
	// the host name.
	NodeName string
	// Logger receives connection errors; nil means slog.Default().
	Logger *slog.Logger
}

// NoLease is the lease of a job handed out by GetJob(s) under the zero
// Config: a hundred years, which is never for a job.
const NoLease = 100 * 365 * 24 * time.Hour

// DefaultTimeout is a command's deadline when its request has no timeout
// header (Bedrock's, 110 s).
const DefaultTimeout = 110 * time.Second

// Server serves Bedrock::Jobs' protocol on a rota.Client. Create it with
// New and call Serve with a listener; Close stops it.
type Server struct {
	c   *rota.Client
	ids store.BedrockIDs
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	conns    map[net.Conn]*connState
	closed   bool
	draining atomic.Bool     // Shutdown: answer what is under way, then close
	open     sync.WaitGroup  // connections being served
	crashed  []glob.Pattern  // CrashBedrockJob's blacklist
	deferred int             // commands waiting to run later
	bg       sync.WaitGroup  // deferred commands
	ctx      context.Context // ends when the server closes
	stop     context.CancelFunc
}

// New returns a server for c, whose store must give Bedrock ids (both of
// rota's stores do).
func New(c *rota.Client, cfg Config) (*Server, error) {
	ids, ok := c.Store().(store.BedrockIDs)
	if !ok {
		return nil, fmt.Errorf("bedrock: the store (%T) does not keep Bedrock ids", c.Store())
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 1024
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 5 * time.Minute
	}
	if cfg.MaxDeferred <= 0 {
		cfg.MaxDeferred = 10000
	}
	if cfg.Lease <= 0 {
		cfg.Lease = NoLease
	}
	if cfg.NodeName == "" {
		cfg.NodeName = hostname()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Server{c: c, ids: ids, cfg: cfg, log: cfg.Logger, conns: map[net.Conn]*connState{}, ctx: ctx, stop: stop}, nil
}

// connState is what Shutdown needs to know of a connection: whether a
// request of it is under way.
type connState struct {
	busy atomic.Bool
}

// Loopback is the allow-list of the zero Config.
var Loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// allowed reports whether a client at addr may connect.
func (s *Server) allowed(addr net.Addr) bool {
	ip, ok := addrIP(addr)
	if !ok {
		return false
	}
	allow := s.cfg.Allow
	if len(allow) == 0 {
		allow = Loopback
	}
	for _, p := range allow {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

func addrIP(addr net.Addr) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap(), true
}

// Serve accepts connections on l until Close, and serves each on its own
// goroutine. It returns nil after Close.
func (s *Server) Serve(l net.Listener) error {
	go func() {
		<-s.ctx.Done()
		l.Close()
	}()
	var delay time.Duration
	for {
		conn, err := l.Accept()
		if err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return fmt.Errorf("bedrock: accept: %w", err)
		}
		delay = 0
		if !s.allowed(conn.RemoteAddr()) {
			s.log.Warn("bedrock: connection refused: not in the allowed networks", "from", conn.RemoteAddr().String())
			conn.Close()
			continue
		}
		st := s.track(conn)
		if st == nil {
			conn.Close()
			continue
		}
		go s.serveConn(conn, st)
	}
}

// track registers a connection; nil when the server is closed or full.
func (s *Server) track(conn net.Conn) *connState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.draining.Load() {
		return nil
	}
	if len(s.conns) >= s.cfg.MaxConns {
		s.log.Warn("bedrock: connection refused: too many connections", "from", conn.RemoteAddr().String(), "max", s.cfg.MaxConns)
		return nil
	}
	st := &connState{}
	s.conns[conn] = st
	s.open.Add(1)
	return st
}

func (s *Server) untrack(conn net.Conn) {
	s.mu.Lock()
	if _, ok := s.conns[conn]; ok {
		delete(s.conns, conn)
		s.open.Done()
	}
	s.mu.Unlock()
	conn.Close()
}

// aLongTimeAgo is a deadline in the past: set on a connection, it wakes
// a read blocked on it at once (net/http's idiom).
var aLongTimeAgo = time.Unix(1, 0)

// Shutdown stops accepting connections and closes the idle ones; a
// connection with a request under way is closed once its answer is
// written. It returns when every connection is closed, or when ctx ends,
// and then closes the server (Close).
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	s.mu.Lock()
	for c, st := range s.conns {
		if !st.busy.Load() {
			c.SetReadDeadline(aLongTimeAgo) // wakes its read; it sees draining
		}
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.open.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("bedrock: shutdown: %w", ctx.Err())
	}
	s.Close()
	return err
}

// Close stops accepting, closes every connection (a command under way is
// cancelled) and waits for the commands deferred by Connection: forget.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.stop()
	s.bg.Wait()
	return nil
}

// serveConn answers the requests of one connection in order. Requests are
// read through a buffer, so requests pipelined in one packet are all
// answered (Bedrock's server leaves the second one waiting).
func (s *Server) serveConn(conn net.Conn, st *connState) {
	defer s.untrack(conn)
	br := bufio.NewReaderSize(conn, 64<<10)
	bw := bufio.NewWriterSize(conn, 64<<10)
	local := false
	if ip, ok := addrIP(conn.RemoteAddr()); ok {
		local = ip.IsLoopback()
	}
	// Bedrock's protocol names no user: the changes a connection makes
	// are recorded with its peer's address.
	actor := "bedrock " + conn.RemoteAddr().String()
	for {
		st.busy.Store(false)
		if s.draining.Load() && br.Buffered() == 0 {
			return
		}
		conn.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout))
		req, err := ReadRequest(br)
		if err != nil {
			if s.draining.Load() {
				return
			}
			var fe *FrameError
			if errors.As(err, &fe) {
				s.write(conn, bw, &Response{Status: fe.Status, Headers: map[string]string{"Connection": "close"}})
			} else if !errors.Is(err, io.EOF) && !isClosed(err) {
				s.log.Debug("bedrock: read", "from", conn.RemoteAddr().String(), "err", err)
			}
			return
		}
		received := time.Now()
		st.busy.Store(true)
		closing := strings.EqualFold(req.Get("connection"), "close") || s.draining.Load()
		if s.deferIfAsked(conn, bw, req, local, received) {
			return
		}
		// A long poll is cancelled when its client hangs up, so that it
		// hands no job to nobody; a request already pipelined behind it
		// means the client is there. Other commands are short and run to
		// their end, so that a client that closes its side after sending
		// (nc -N) still gets its answers.
		ctx, cancel := context.WithCancel(store.WithActor(s.ctx, actor))
		stopWatch := func() {}
		if br.Buffered() == 0 && strings.EqualFold(req.Get("connection"), "wait") {
			var gone <-chan struct{}
			gone, stopWatch = watchHangup(conn)
			go func() {
				select {
				case <-gone:
					cancel()
				case <-ctx.Done():
				}
			}()
		}
		resp := s.run(ctx, req, local, received)
		stopWatch()
		hungUp := ctx.Err() != nil && s.ctx.Err() == nil
		cancel()
		if hungUp {
			if resp.handedOut != nil {
				s.releaseAll(resp.handedOut)
			}
			return
		}
		if closing = closing || s.draining.Load(); closing {
			resp.Headers["Connection"] = "close"
		}
		if resp.handedOut != nil {
			// Jobs handed out go back when the answer cannot be written.
			conn.SetWriteDeadline(time.Now().Add(s.cfg.IdleTimeout))
			if _, err := resp.WriteTo(bw); err != nil || bw.Flush() != nil {
				s.releaseAll(resp.handedOut)
				return
			}
			if closing {
				return
			}
			continue
		}
		// Answer at once when nothing else has arrived; otherwise the
		// next request's answer goes out in the same write.
		if !s.bufferOrWrite(conn, bw, br, resp) || closing {
			return
		}
	}
}

// bufferOrWrite adds resp to the connection's output and flushes it
// unless another request is already waiting to be read. It reports
// whether the connection is still good.
func (s *Server) bufferOrWrite(conn net.Conn, bw *bufio.Writer, br *bufio.Reader, resp *Response) bool {
	conn.SetWriteDeadline(time.Now().Add(s.cfg.IdleTimeout))
	if _, err := resp.WriteTo(bw); err != nil {
		return false
	}
	if br.Buffered() > 0 {
		return true
	}
	return bw.Flush() == nil
}

func (s *Server) write(conn net.Conn, bw *bufio.Writer, resp *Response) {
	conn.SetWriteDeadline(time.Now().Add(s.cfg.IdleTimeout))
	if _, err := resp.WriteTo(bw); err == nil {
		bw.Flush()
	}
}

// deferIfAsked handles Connection: forget and a commandExecuteTime in the
// future (§1.6): the client gets 202 at once and the connection closes;
// the command runs later (at commandExecuteTime) and its answer is
// dropped. A GetJob or GetJobs whose answer nobody reads hands out
// nothing, which is what Bedrock's requeue of its jobs comes to, so those
// are not run at all.
func (s *Server) deferIfAsked(conn net.Conn, bw *bufio.Writer, req *Request, local bool, received time.Time) bool {
	forget := strings.EqualFold(req.Get("connection"), "forget")
	var at time.Time
	if v, ok := req.Header("commandexecutetime"); ok {
		if us, err := strconv.ParseInt(v, 10, 64); err == nil && us > received.UnixMicro() {
			at = time.UnixMicro(us)
		}
	}
	if !forget && at.IsZero() {
		return false
	}
	verb := strings.ToLower(req.Verb)
	if verb != "getjob" && verb != "getjobs" {
		s.mu.Lock()
		full := s.deferred >= s.cfg.MaxDeferred
		if !full {
			s.deferred++
			s.bg.Add(1)
		}
		s.mu.Unlock()
		if full {
			s.write(conn, bw, &Response{Status: "503 Too many queued commands", Headers: map[string]string{"Connection": "close"}})
			return true
		}
		go func() {
			defer s.bg.Done()
			defer func() { s.mu.Lock(); s.deferred--; s.mu.Unlock() }()
			if !at.IsZero() {
				t := time.NewTimer(time.Until(at))
				defer t.Stop()
				select {
				case <-t.C:
				case <-s.ctx.Done():
					return
				}
			}
			// A forgotten command has Bedrock's deadline of an hour.
			req.Headers["timeout"] = strconv.Itoa(int(time.Hour / time.Millisecond))
			resp := s.run(s.ctx, req, local, time.Now())
			if !strings.HasPrefix(resp.Status, "200") {
				s.log.Warn("bedrock: a forgotten command failed", "command", req.Verb, "status", resp.Status)
			}
		}()
	}
	s.write(conn, bw, &Response{Status: "202 Successfully queued", Headers: map[string]string{"Connection": "close"}})
	return true
}

// run runs one command under its deadline and returns its response, with
// the headers every response carries.
func (s *Server) run(ctx context.Context, req *Request, local bool, received time.Time) *Response {
	timeout := DefaultTimeout
	if v, ok := req.Header("timeout"); ok {
		ms := calc64(v)
		if ms <= 0 {
			return s.finish(&Response{Status: "555 Timeout"}, received)
		}
		timeout = time.Duration(min(ms, int64(24*time.Hour/time.Millisecond))) * time.Millisecond
	}
	ctx, cancel := context.WithDeadline(ctx, received.Add(timeout))
	defer cancel()
	resp := s.command(ctx, req, local)
	if resp.Status == "" || (ctx.Err() != nil && !strings.HasPrefix(resp.Status, "2")) {
		resp = &Response{Status: "555 Timeout"}
	}
	return s.finish(resp, received)
}

func (s *Server) finish(resp *Response, received time.Time) *Response {
	if resp.Headers == nil {
		resp.Headers = map[string]string{}
	}
	resp.Headers["nodeName"] = s.cfg.NodeName
	resp.Headers["totalTime"] = strconv.FormatInt(max(time.Since(received).Microseconds(), 1), 10)
	return resp
}

func isClosed(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "connection reset")
}
