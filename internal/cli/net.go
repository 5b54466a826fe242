package cli

import (
	"context"
	"flag"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/output/jsonl"
	"github.com/narrows/narrows/internal/output/table"
	"github.com/narrows/narrows/internal/probe/rr"
	"github.com/narrows/narrows/internal/probe/stream"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// sink is where records go: a table for people or JSON lines.
type sink interface {
	Interval(result.Interval) error
	Report(*result.Report) error
}

// output is the sink --json asks for: JSON lines, else the table; for a
// command that measures, through keeping, which stores the run in the
// history at its report.
func output(env Env, asJSON bool) sink {
	var out sink = table.New(env.Stdout)
	if asJSON {
		out = jsonl.New(env.Stdout)
	}
	if env.rec != nil {
		out = &keeping{sink: out, env: env}
	}
	return withCheck(env, out)
}

// minInterval is the shortest --interval any probe reports at.
const minInterval = 10 * time.Millisecond

// intervalFlag reads --interval: a duration of at least minInterval.
func intervalFlag(v string) (time.Duration, error) {
	d, err := positiveDuration("--interval", v)
	if err == nil && d < minInterval {
		err = usagef("--interval %s: must be at least %s", v, minInterval)
	}
	return d, err
}

// agentFlags are the flags of every command that reaches an agent (the
// net probes', disk's and db ping's --to): how to prove the secret, how long to wait.
type agentFlags struct {
	secretFile, timeout string
	insecure            bool
}

func (a *agentFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.secretFile, "secret-file", "", "file holding the shared secret (or set NARROWS_SECRET)")
	fs.StringVar(&a.timeout, "timeout", "10s", "how long to wait for the agent to connect and answer")
	fs.BoolVar(&a.insecure, "insecure", false, insecureUsage)
}

// options are the client's options for the agent that flag names at addr.
func (a *agentFlags) options(env Env, flag, addr string) (client.Options, error) {
	o := client.Options{Software: Version, Insecure: a.insecure}
	var err error
	if o.Addr, err = agentAddr(flag, addr); err != nil {
		return o, err
	}
	if o.Timeout, err = positiveDuration("--timeout", a.timeout); err != nil {
		return o, err
	}
	o.Secret, err = clientSecret(env, a.secretFile, a.insecure)
	return o, err
}

// to is options for the agent --to names, which every command that
// reaches an agent by --to requires.
func (a *agentFlags) to(env Env, addr string) (client.Options, error) {
	if addr == "" {
		return client.Options{}, usagef("--to is required: the address of a running `narrows serve`, e.g. --to db2.example.com")
	}
	return a.options(env, "--to", addr)
}

// netFlags are the flags every net probe shares.
type netFlags struct {
	to, duration, interval string
	json                   bool
	html                   string
	agent                  agentFlags
}

func (n *netFlags) register(fs *flag.FlagSet, defDuration string) {
	fs.StringVar(&n.to, "to", "", "the agent: HOST or HOST:PORT (default port 7447)")
	n.agent.register(fs)
	fs.StringVar(&n.duration, "duration", defDuration, "how long to measure, e.g. 10s, 1m")
	fs.StringVar(&n.interval, "interval", "1s", "how often to report while measuring")
	fs.BoolVar(&n.json, "json", false, "write JSON lines (intervals as they happen, then the summary) instead of a table")
	htmlFlag(fs, &n.html)
}

type netSetup struct {
	opts     client.Options
	duration time.Duration
	interval time.Duration
	out      sink
}

func (n *netFlags) setup(env Env) (*netSetup, error) {
	s := &netSetup{}
	var err error
	if s.opts, err = n.agent.to(env, n.to); err != nil {
		return nil, err
	}
	if s.duration, err = positiveDuration("--duration", n.duration); err != nil {
		return nil, err
	}
	if s.interval, err = intervalFlag(n.interval); err != nil {
		return nil, err
	}
	s.out = withHTML(output(env, n.json), n.html)
	return s, nil
}

func positiveDuration(flagName, v string) (time.Duration, error) {
	d, err := metric.ParseDuration(v)
	if err != nil {
		return 0, usagef("%s: %v", flagName, err)
	}
	if d <= 0 {
		return 0, usagef("%s %s: must be more than zero", flagName, v)
	}
	return d, nil
}

// agentAddr reads flag's HOST, HOST:PORT, [V6]:PORT or a bare IPv6 address.
func agentAddr(flag, s string) (string, error) {
	host, port := s, strconv.Itoa(wire.DefaultPort)
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
	} else if strings.Count(s, ":") == 1 {
		return "", usagef("%s %q: use HOST or HOST:PORT, e.g. db2:7447", flag, s)
	}
	host = strings.Trim(host, "[]")
	if host == "" {
		return "", usagef("%s %q: the host is missing: use HOST or HOST:PORT", flag, s)
	}
	p, err := parsePort(port)
	if err != nil || p == 0 {
		return "", usagef("%s %q: invalid port %q: use a number from 1 to 65535", flag, s, port)
	}
	return net.JoinHostPort(host, port), nil
}

const insecureUsage = "accept an agent that runs without a secret (its figures are then marked unauthenticated)"

// clientSecret reads the secret a client proves, or none with --insecure:
// a client never lets the agent decide that authentication is off.
func clientSecret(env Env, file string, insecure bool) ([]byte, error) {
	sec, err := secret(env, file)
	if err == nil && insecure && len(sec) > 0 {
		err = usagef("both a secret (--secret-file or NARROWS_SECRET) and --insecure given: choose one")
	}
	return sec, err
}

// written writes a core's Report (none when it refused before measuring)
// and gives the run's outcome.
func written(ctx context.Context, out sink, rep *result.Report, err error) error {
	if rep == nil {
		return err
	}
	// A run that standard output closing stopped cannot write its report:
	// Main says why it stopped.
	if werr := out.Report(rep); werr != nil && ctx.Err() == nil {
		return fmt.Errorf("writing the report: %w", werr)
	}
	return err
}

// coreEnv is a core's Env on the command line: its intervals to out, its
// banner on standard output above the table (none with --json), its notes
// on standard error.
func coreEnv(env Env, out sink, asJSON bool) command.Env {
	e := command.Env{Now: env.Now, Tool: tool(), Emit: emitter(out),
		Note: func(line string) { fmt.Fprintln(env.Stderr, line) }}
	if !asJSON {
		e.Say = func(line string) { fmt.Fprintln(env.Stdout, line) }
	}
	return e
}

func emitter(out sink) func(result.Interval) { return func(iv result.Interval) { out.Interval(iv) } }

func netStream(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "net stream")
	var nf netFlags
	nf.register(fs, "10s")
	streams := fs.Int("streams", 1, "with N > 1, run one stream and then N streams, and compare them")
	reverse := fs.Bool("reverse", false, "the agent sends (as a primary sends to this machine)")
	bidir := fs.Bool("bidir", false, "both directions at once")
	block := fs.String("block", "128K", "size of each write, e.g. 128K (binary units)")
	window := fs.String("window", "", "socket buffer size (SO_SNDBUF/SO_RCVBUF) at both ends, e.g. 256K; default: the OS's autotuning")
	tryRPS := fs.Bool("try-rps", false, "then single streams as is and with the receiving end's packet work moved off its busiest core (RPS, put back after each), in turn, until the gain is told from noise (3-8 pairs of --duration each): the agent's when it receives (it needs --allow-try), this host's with --reverse (Linux, root)")
	tryOffloads := fs.Bool("try-offloads", false, "then single streams as is and with the offloads each end's part uses turned on where off (the sender's tso and gso, the receiver's gro; off again after each), in turn, until the gain is told from noise (3-8 pairs of --duration each): this host's (Linux, root) and the agent's (it needs --allow-try)")
	if err := parse(fs, args); err != nil {
		return err
	}
	s, err := nf.setup(env)
	if err != nil {
		return err
	}
	cfg := stream.Config{Direction: wire.Forward, Streams: *streams, Duration: s.duration, Interval: s.interval, TryRPS: *tryRPS, TryOffloads: *tryOffloads}
	switch {
	case *reverse && *bidir:
		return usagef("--reverse and --bidir: choose one")
	case *bidir && *tryRPS:
		return usagef("--try-rps steers the receiving end of one direction: use it without --bidir")
	case *bidir && *tryOffloads:
		return usagef("--try-offloads turns on one direction's offloads: use it without --bidir")
	case *reverse:
		cfg.Direction = wire.Reverse
	case *bidir:
		cfg.Direction = wire.Bidir
	}
	if *streams < 1 || *streams > 128 {
		return usagef("--streams %d: use 1 to 128", *streams)
	}
	if cfg.Block, cfg.Window, err = blockWindow(*block, *window); err != nil {
		return err
	}
	rep, err := command.NetStream{Agent: s.opts, Stream: cfg}.Run(ctx, coreEnv(env, s.out, nf.json))
	return written(ctx, s.out, rep, err)
}

// blockWindow reads a stream's --block and --window ("": the OS's
// autotuning, 0).
func blockWindow(block, window string) (b, w int64, err error) {
	if b, err = metric.ParseSize(block); err != nil {
		return 0, 0, usagef("--block: %v", err)
	}
	if b < 1 || b > 16<<20 {
		return 0, 0, usagef("--block %s: use 1 byte to 16M", block)
	}
	if window != "" {
		if w, err = metric.ParseSize(window); err != nil {
			return 0, 0, usagef("--window: %v", err)
		}
		if w < 4096 || w > 1<<30 {
			return 0, 0, usagef("--window %s: use 4K to 1G", window)
		}
	}
	return b, w, nil
}

func netRR(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "net rr")
	var nf netFlags
	nf.register(fs, "10s")
	def := command.DefaultNetRR(client.Options{}).RR
	request := fs.String("request", "64B", "request size; 500B mirrors the classic SELECT '<500 chars>' test")
	response := fs.String("response", "64B", "response size")
	count := fs.Int64("count", def.Count, "stop after this many round trips instead of after --duration")
	rate := fs.Float64("rate", def.Rate, "pace to this many round trips per second (default: back to back)")
	queries := fs.Int64("queries", def.Queries, "for the arithmetic: how many queries a report issues")
	tryCoalescing := fs.Bool("try-coalescing", false, "then what the agent's receive interrupt coalescing adds to a round trip: blocks with it as it is and at its least (rx-usecs 0, rx-frames 1, adaptive-rx off), put back after each (the agent needs --allow-try; Linux, as root)")
	var ul underLoadFlags
	ul.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	s, err := nf.setup(env)
	if err != nil {
		return err
	}
	cfg := command.NetRR{Agent: s.opts, RR: rr.Config{Duration: s.duration, Interval: s.interval, Count: *count, Rate: *rate, Queries: *queries}, TryCoalescing: *tryCoalescing}
	if cfg.RR.Request, err = metric.ParseSize(*request); err != nil {
		return usagef("--request: %v", err)
	}
	if cfg.RR.Response, err = metric.ParseSize(*response); err != nil {
		return usagef("--response: %v", err)
	}
	for _, v := range []struct {
		name string
		n    int64
	}{{"--request", cfg.RR.Request}, {"--response", cfg.RR.Response}} {
		if v.n < 1 || v.n > 16<<20 {
			return usagef("%s: use 1 byte to 16M", v.name)
		}
	}
	if *count < 0 || *rate < 0 || *queries < 1 {
		return usagef("--count and --rate must not be negative, --queries must be at least 1")
	}
	if *tryCoalescing && (ul.on || *rate > 0) {
		return usagef("--try-coalescing times round trips back to back on an idle path: drop --under-load and --rate")
	}
	if ul.on {
		if cfg.RR.Count > 0 || cfg.RR.Rate > 0 {
			return usagef("--under-load runs for --duration, back to back: drop --count and --rate")
		}
		if cfg.UnderLoad, err = ul.config(s.duration); err != nil {
			return err
		}
	}
	rep, err := cfg.Run(ctx, coreEnv(env, s.out, nf.json))
	return written(ctx, s.out, rep, err)
}
