package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/net/netutil"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/bedrock"
	"github.com/rotajobs/rota/dashboard"
	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

func serveCommand() *cobra.Command {
	var (
		dataDir, storeSpec, addr string
		token, tokenFile         string
		allowOpen                bool
		maxBody                  int64
		maxConns                 int
		maxTokenRequests         int
		idleTimeout, bodyTimeout time.Duration
		writeTimeout             time.Duration
		allowHosts               []string
		logLevel                 string
		configFile               string
		tlsCert, tlsKey          string
		bedrockAddr              string
		bedrockAllow             []string
		bedrockLease             time.Duration
		ui                       bool
		trustedProxies           []string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the rota server (HTTP API on 127.0.0.1:7700)",
		Long: `serve runs the rota server: the HTTP/JSON API under /v1, Server-Sent
Events, /healthz and Prometheus /metrics. Jobs live in an embedded SQLite
database in --data unless --store names another store. One process at a
time serves a SQLite database: a second rota serve on it refuses to start
and names the first one's pid.

It binds to loopback by default. With --auth-token-file (or --auth-token),
every request needs "Authorization: Bearer <token>". Prefer
--auth-token-file: a token given as --auth-token is visible to every user of
the machine in the process list. It refuses to bind a non-loopback address
without a token unless --allow-unauthenticated is given. Without a token it
answers only to the Host names localhost and IP addresses (and --allow-host
names), so that no web page reaches it by DNS rebinding. SIGINT or SIGTERM
shuts it down gracefully.

The data directory is created readable by its owner only (0700), and a new
rota.db is 0600.

The dashboard at / keeps sign-ins in this process's memory (a restart signs
everyone out). Its cookie is marked Secure over HTTPS; behind a reverse proxy
that terminates TLS, list the proxy's addresses with --trusted-proxy so that
its X-Forwarded-Proto: https is believed (from any other address it is
ignored).

A request's body must arrive within --body-timeout, and each write of an
answer must be taken within --write-timeout; a request answered without
reading its body (one without a valid token, say) closes its connection, so
that slow or unauthenticated clients cannot hold --max-conns.

With --tls-cert and --tls-key it serves HTTPS (TLS 1.2 and later); SIGHUP
reloads the two files, for a renewed certificate. Clients trust a private
certificate authority with --ca.

--config names a JSON file of type and group settings, applied at start (the
same shapes as PUT /v1/types/{type} and PUT /v1/groups):

  {"types":  [{"type": "email.send", "lease_timeout": "1m", "bands": "2,1",
               "group_max_running": 5, "failed_retention": "720h"}],
   "groups": [{"group": "acme", "weight": 2},
              {"group": "free-tier", "max_running": 3}]}

With --bedrock ADDR it also speaks Bedrock::Jobs' line protocol on ADDR
(Bedrock's port is 8888), on the same store, so Bedrock's clients and
workers run unchanged (docs/bedrock.md). That protocol has no
authentication: only loopback clients may connect unless --bedrock-allow
lists the client networks, and a non-loopback ADDR needs that list.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f := cmd.Flags().Lookup("token"); f != nil && f.Changed {
				// --token is what clients send; taking it for the server's
				// would leave the server open while its owner thinks it closed.
				return usageErrorf("--token is the token a client sends; the server's token is --auth-token (or --auth-token-file)")
			}
			level := slog.LevelInfo
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level %q: want debug, info, warn or error", logLevel)
			}
			logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			slog.SetDefault(logger) // stores log through the default logger
			if tokenFile != "" {
				if token != "" {
					return errors.New("give --auth-token or --auth-token-file, not both")
				}
				b, err := os.ReadFile(tokenFile)
				if err != nil {
					return fmt.Errorf("--auth-token-file: %w", err)
				}
				token = strings.TrimSpace(string(b))
				if token == "" {
					return fmt.Errorf("--auth-token-file %s is empty", tokenFile)
				}
			}
			var settings *serverSettings
			if configFile != "" {
				var err error
				if settings, err = readSettings(configFile); err != nil {
					return err
				}
			}
			if (tlsCert == "") != (tlsKey == "") {
				return usageErrorf("give both --tls-cert and --tls-key, or neither")
			}
			var cert *certificate
			if tlsCert != "" {
				var err error
				if cert, err = loadCertificate(tlsCert, tlsKey); err != nil {
					return usageError{err}
				}
			}
			bedrock, err := bedrockOptions(bedrockAddr, bedrockAllow, bedrockLease)
			if err != nil {
				return err
			}
			proxies, err := parseNetworks("--trusted-proxy", trustedProxies)
			if err != nil {
				return err
			}
			return serve(cmd.Context(), logger, serveOptions{
				bedrock: bedrock, ui: ui,
				dataDir: dataDir, storeSpec: storeSpec, addr: addr, token: token,
				allowOpen: allowOpen, maxBody: maxBody, settings: settings,
				maxConns: maxConns, maxTokenRequests: maxTokenRequests, idleTimeout: idleTimeout, cert: cert,
				trustedProxies: proxies,
				bodyTimeout:    bodyTimeout, writeTimeout: writeTimeout, allowHosts: allowHosts,
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data", "rota-data", "directory of the embedded SQLite database")
	f.StringVar(&storeSpec, "store", "", "store to use instead: a SQLite file path, sqlite:PATH, or postgres://…")
	f.StringVar(&addr, "http", "127.0.0.1:7700", "address to serve the HTTP API on")
	f.StringVar(&token, "auth-token", "", "require this bearer token on every request (visible in the process list: prefer --auth-token-file)")
	f.StringVar(&tokenFile, "auth-token-file", "", "read the bearer token from this file (preferred over --auth-token)")
	f.BoolVar(&allowOpen, "allow-unauthenticated", false, "allow a non-loopback address without a token")
	f.Int64Var(&maxBody, "max-body", 8<<20, "largest request body in bytes")
	f.IntVar(&maxConns, "max-conns", 1024, "most connections served at once; more wait to be accepted")
	f.IntVar(&maxTokenRequests, "max-token-requests", httpapi.DefaultMaxTokenRequests, "most requests one named token may have in flight (long polls, event streams, any other); more are answered 429; 0 for no bound")
	f.DurationVar(&idleTimeout, "idle-timeout", time.Minute, "close a keep-alive connection idle this long")
	f.DurationVar(&bodyTimeout, "body-timeout", httpapi.DefaultBodyTimeout, "longest a request's body may take to arrive (--max-body at 8 MiB needs about 560 kbit/s in 2m)")
	f.DurationVar(&writeTimeout, "write-timeout", httpapi.DefaultWriteTimeout, "longest one write of an answer may wait for the client to take it (streams and long polls last longer)")
	f.StringSliceVar(&allowHosts, "allow-host", nil, "without a token, also answer to these host names (besides localhost and IP addresses; comma-separated; * for any name)")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&configFile, "config", "", "JSON file of type and group settings to apply at start")
	f.StringVar(&tlsCert, "tls-cert", "", "serve HTTPS with this PEM certificate (chain); SIGHUP reloads it")
	f.StringVar(&tlsKey, "tls-key", "", "the PEM private key of --tls-cert")
	f.BoolVar(&ui, "ui", true, "serve the web dashboard at / (--ui=false turns it off)")
	f.StringSliceVar(&trustedProxies, "trusted-proxy", nil, "reverse proxies (CIDR or IP, comma-separated) whose X-Forwarded-Proto is believed, for the dashboard's Secure cookie")
	f.StringVar(&bedrockAddr, "bedrock", "", "also serve Bedrock::Jobs' protocol on this address (e.g. 127.0.0.1:8888)")
	f.StringSliceVar(&bedrockAllow, "bedrock-allow", nil, "client networks (CIDR or IP, comma-separated) allowed on --bedrock; default loopback only")
	f.DurationVar(&bedrockLease, "bedrock-lease", 0, "take back a job handed out by GetJob after this long without a finish (default: never, as Bedrock)")
	return cmd
}

type serveOptions struct {
	dataDir, storeSpec, addr, token string
	allowOpen                       bool
	maxBody                         int64
	maxConns                        int
	maxTokenRequests                int // 0: no bound
	idleTimeout, bodyTimeout        time.Duration
	writeTimeout                    time.Duration
	allowHosts                      []string
	settings                        *serverSettings
	cert                            *certificate     // nil: plain HTTP
	bedrock                         *bedrockListener // nil: none
	ui                              bool             // the dashboard at /
	trustedProxies                  []netip.Prefix   // --trusted-proxy
}

// bedrockListener is what --bedrock asks for.
type bedrockListener struct {
	addr string
	cfg  bedrock.Config
}

// bedrockOptions checks the --bedrock flags: the protocol has no
// authentication, so an address other than loopback needs the list of
// client networks allowed.
func bedrockOptions(addr string, allow []string, lease time.Duration) (*bedrockListener, error) {
	if addr == "" {
		if len(allow) > 0 || lease != 0 {
			return nil, usageErrorf("--bedrock-allow and --bedrock-lease need --bedrock")
		}
		return nil, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usageErrorf("--bedrock %q: want host:port: %v", addr, err)
	}
	if lease < 0 {
		return nil, usageErrorf("--bedrock-lease %v must not be negative", lease)
	}
	b := &bedrockListener{addr: addr, cfg: bedrock.Config{Lease: lease}}
	if b.cfg.Allow, err = parseNetworks("--bedrock-allow", allow); err != nil {
		return nil, err
	}
	if !isLoopback(host) && len(b.cfg.Allow) == 0 {
		return nil, usageErrorf("--bedrock %s is not a loopback address and Bedrock's protocol has no authentication: list the client networks allowed with --bedrock-allow", addr)
	}
	return b, nil
}

// parseNetworks reads a flag's networks: CIDRs, or single addresses.
func parseNetworks(flag string, list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, a := range list {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			ip, ierr := netip.ParseAddr(a)
			if ierr != nil {
				return nil, usageErrorf("%s %q: want a network such as 10.0.0.0/8 or an address", flag, a)
			}
			p = netip.PrefixFrom(ip, ip.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// serverSettings is the --config file.
type serverSettings struct {
	Types  []wire.TypeConfig  `json:"types"`
	Groups []wire.GroupConfig `json:"groups"`
}

// readSettings reads and checks a --config file, so that a mistake stops
// the server before it starts.
func readSettings(path string) (*serverSettings, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s serverSettings
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	for _, t := range s.Types {
		tc, err := t.Params()
		if err == nil {
			err = check.TypeConfig(tc)
		}
		if err != nil {
			return nil, fmt.Errorf("--config %s: type %q: %w", path, t.Type, err)
		}
	}
	for _, g := range s.Groups {
		gc, err := g.Params()
		if err == nil {
			err = check.GroupConfig(gc)
		}
		if err != nil {
			return nil, fmt.Errorf("--config %s: group %q: %w", path, g.Group, err)
		}
	}
	return &s, nil
}

// apply stores the settings; what they change is recorded in the audit
// trail as made by the file.
func (s *serverSettings) apply(ctx context.Context, c *rota.Client) error {
	ctx = rota.WithActor(ctx, "rota serve --config")
	for _, t := range s.Types {
		tc, _ := t.Params()
		if err := c.SetTypeConfig(ctx, tc); err != nil {
			return fmt.Errorf("--config: type %q: %w", t.Type, err)
		}
	}
	for _, g := range s.Groups {
		gc, _ := g.Params() // checked when read
		if err := c.SetGroupConfig(ctx, gc); err != nil {
			return fmt.Errorf("--config: group %q: %w", g.Group, err)
		}
	}
	return nil
}

func serve(ctx context.Context, logger *slog.Logger, o serveOptions) error {
	if o.maxBody <= 0 {
		return fmt.Errorf("--max-body must be positive")
	}
	if o.bodyTimeout <= 0 {
		return usageErrorf("--body-timeout %v must be positive", o.bodyTimeout)
	}
	if o.maxTokenRequests < 0 {
		return usageErrorf("--max-token-requests %d must not be negative (0 for no bound)", o.maxTokenRequests)
	}
	if o.writeTimeout <= 0 {
		return usageErrorf("--write-timeout %v must be positive", o.writeTimeout)
	}
	if len(o.allowHosts) > 0 && o.token != "" {
		return usageErrorf("--allow-host is for a server without a token, which answers only to the names it knows; with a token every name is answered")
	}
	host, _, err := net.SplitHostPort(o.addr)
	if err != nil {
		return fmt.Errorf("--http %q: want host:port: %w", o.addr, err)
	}
	if !isLoopback(host) && o.token == "" && !o.allowOpen {
		return fmt.Errorf("--http %s is not a loopback address: set --auth-token (or --auth-token-file), or pass --allow-unauthenticated to serve without one", o.addr)
	}
	if path := sqlitePath(o.storeSpec, o.dataDir); path != "" {
		if o.storeSpec == "" {
			if err := os.MkdirAll(o.dataDir, 0o700); err != nil {
				return fmt.Errorf("--data: %w", err)
			}
		}
		lock, err := lockDatabase(path)
		if err != nil {
			return err
		}
		defer lock.release()
	}
	st, desc, err := openStore(ctx, o.storeSpec, o.dataDir)
	if err != nil {
		return err
	}
	defer st.Close()
	client, err := rota.NewClient(st, rota.Config{Logger: logger})
	if err != nil {
		return err
	}
	defer client.Close()
	if o.settings != nil {
		if err := o.settings.apply(ctx, client); err != nil {
			return err
		}
		logger.Info("applied settings", "types", len(o.settings.Types), "groups", len(o.settings.Groups))
	}
	maxTokenRequests := o.maxTokenRequests
	if maxTokenRequests == 0 {
		maxTokenRequests = -1 // httpapi's no bound
	}
	api := httpapi.New(client, httpapi.Config{AuthToken: o.token, MaxBodyBytes: o.maxBody, Logger: logger,
		BodyTimeout: o.bodyTimeout, WriteTimeout: o.writeTimeout, Hosts: o.allowHosts, MaxTokenRequests: maxTokenRequests})
	defer api.Close()
	var handler http.Handler = api
	if o.ui {
		// The API keeps /v1/, /healthz and /metrics; the dashboard has the
		// rest, with the API's tokens.
		dash, err := dashboard.New(client, api, dashboard.Config{Logger: logger, TrustedProxies: o.trustedProxies})
		if err != nil {
			return err
		}
		defer dash.Close()
		mux := http.NewServeMux()
		mux.Handle("/v1/", api)
		mux.Handle("/healthz", api)
		mux.Handle("/metrics", api)
		mux.Handle("/", api.Wrap(dash)) // the API's connection rules
		handler = mux
	}

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.addr, err)
	}
	if o.maxConns > 0 {
		// Past the cap, connections wait in the kernel's backlog rather
		// than take file descriptors; idle and slow ones are closed by the
		// timeouts below and the API's deadlines (--body-timeout,
		// --write-timeout), and a request refused before its body is read
		// closes its connection (httpapi's conn.go), so the cap cannot be
		// held by clients doing nothing.
		ln = netutil.LimitListener(ln, o.maxConns)
	}
	// Long polls and event streams end when the server shuts down.
	base, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       o.idleTimeout,
		MaxHeaderBytes:    64 << 10,
		// No ReadTimeout or WriteTimeout: a long poll or an event stream
		// lasts long, and net/http would cancel it at either deadline;
		// they end on shutdown (BaseContext) or when the client goes.
		BaseContext: func(net.Listener) context.Context { return base },
		ErrorLog:    slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(cancelBase)
	scheme := "http"
	if o.cert != nil {
		scheme = "https"
		srv.TLSConfig = o.cert.config()
		ln = tls.NewListener(ln, srv.TLSConfig)
		defer o.cert.reloadOnHUP(logger)()
	}
	served := make(chan error, 2)
	go func() { served <- srv.Serve(ln) }()
	if o.bedrock != nil {
		o.bedrock.cfg.Logger = logger
		bs, err := bedrock.New(client, o.bedrock.cfg)
		if err != nil {
			return err
		}
		bl, err := net.Listen("tcp", o.bedrock.addr)
		if err != nil {
			return fmt.Errorf("--bedrock: listen on %s: %w", o.bedrock.addr, err)
		}
		defer func() {
			// Answer the requests under way, as the HTTP server does.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := bs.Shutdown(ctx); err != nil {
				logger.Warn("Bedrock shutdown did not finish in time", "err", err)
			}
		}()
		go func() {
			if err := bs.Serve(bl); err != nil {
				served <- err
			}
		}()
		allowed := "loopback"
		if len(o.bedrock.cfg.Allow) > 0 {
			allowed = fmt.Sprint(o.bedrock.cfg.Allow)
		}
		logger.Info("rota serving Bedrock::Jobs", "bedrock", bl.Addr().String(), "clients", allowed)
	}
	auth := "no auth token (loopback only)"
	if o.token != "" {
		auth = "bearer token required"
	} else if !isLoopback(host) {
		auth = "NO auth token on a non-loopback address"
	}
	ui := "off"
	if o.ui {
		ui = scheme + "://" + ln.Addr().String() + "/"
	}
	logger.Info("rota serving", "http", scheme+"://"+ln.Addr().String(), "store", desc, "auth", auth, "dashboard", ui)

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("shutdown did not finish in time", "err", err)
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// openStore opens the store a --store flag names (any data source name
// store.Open takes), or the embedded SQLite database in dataDir. It returns
// the store and a description for logs, without the password.
func openStore(ctx context.Context, spec, dataDir string) (store.Store, string, error) {
	if spec == "" {
		// The owner's alone: the database holds every job's data.
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return nil, "", fmt.Errorf("--data: %w", err)
		}
		spec = filepath.Join(dataDir, "rota.db")
	}
	st, err := store.Open(ctx, spec)
	if err != nil {
		return nil, "", fmt.Errorf("--store %q: %w", spec, err)
	}
	desc := store.SchemeOf(spec) + " " + strings.TrimPrefix(spec, "sqlite:")
	if u, err := url.Parse(spec); err == nil && u.Scheme != "" && u.Host != "" {
		u.User, u.RawQuery = nil, ""
		desc = u.Scheme + " " + u.String()
	}
	return st, desc, nil
}
