package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/untrusted"
	"github.com/narrows/narrows/internal/wire"
)

// Version and Commit are set at build time with -ldflags -X.
var (
	Version = "0.1.0-dev"
	Commit  = ""
)

// Env is everything a command takes from the process: streams, the
// environment, files and the clock. Tests hand in their own.
type Env struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	ReadFile       func(string) ([]byte, error) // a secret file (OSEnv: readSecretFile)
	Now            func() time.Time

	rec *recorder // keeps the run in the history (dispatch sets it for commands that measure)
	// rawStderr is standard error as given, without Main's escaping: for
	// doctor's progress line alone, whose \r redraws it on a terminal.
	rawStderr io.Writer
	// warned holds the warnings said in this process, each said once: doctor
	// runs its steps in it, and every step reads the secret file again.
	// nil: every warning is said.
	warned *onceLines
}

// OSEnv is the real process's Env.
func OSEnv() Env {
	e := Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Now: time.Now, warned: &onceLines{}}
	e.ReadFile = func(path string) ([]byte, error) { return readSecretFile(e, path) }
	return e
}

// onceLines are lines said at most once each.
type onceLines struct {
	mu   sync.Mutex
	said map[string]bool
}

// warn writes line to env's stderr unless env's process said it already.
func (env Env) warn(line string) {
	if o := env.warned; o != nil {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.said[line] {
			return
		}
		if o.said == nil {
			o.said = map[string]bool{}
		}
		o.said[line] = true
	}
	fmt.Fprintln(env.Stderr, line)
}

// Exit codes.
const (
	ExitOK          = errext.ExitOK
	ExitFailed      = errext.ExitFailed // the run failed or stopped part way
	ExitUsage       = errext.ExitUsage  // bad input: the message says what to change
	ExitInterrupted = 130               // SIGINT; another signal gives 128 + its number (SIGTERM 143, SIGHUP 129, a closed stdout 141)
)

// usagef is bad input (errext.User): one line, exit code 2.
func usagef(format string, a ...any) error { return errext.Userf(nil, format, a...) }

// userError makes err, a mistake a person fixes, one line with exit code
// 2, its message as it is.
func userError(err error) error { return errext.Userf(err, "%s", err.Error()) }

// interrupted marks a run the user stopped; its partial results are out.
var errInterrupted = command.ErrInterrupted

type verb struct {
	name, summary string
	run           func(ctx context.Context, env Env, args []string) error
}

func commands() []verb {
	return []verb{
		// doctor first: where a newcomer starts (the help lists them in this order).
		{"doctor", "every probe and plan that applies here, within a budget: the verdicts first, a report to hand on", doctorCmd},
		{"serve", "run the agent on the far side (the replica, the database server)", serve},
		{"service", "run the agent as a Windows service: service install [serve flags], uninstall, start, stop, status", serviceCmd},
		{"net stream", "bulk throughput, one stream as replication uses it (then N with --streams)", netStream},
		{"net rr", "request/response round trips on one connection, as a chatty application waits", netRR},
		{"net mtu", "the packet size the path really carries each way: jumbo-frame mismatches and black holes", netMTU},
		{"host", "what each end's own machine adds to a round trip, by experiment: CPUs waking from idle, and what to change", hostCmd},
		{"net commit", "synchronous log shipping: commit latency and log throughput with a synchronous replica", netCommit},
		{"db ping", "query round trips in one session through the real driver, network vs server", dbPing},
		{"db repl", "replication stage by stage: unsent, unflushed, unreplayed, RPO, verdict (live)", dbRepl},
		{"db load", "generate log at a steady rate into a scratch table, to load a replica link", dbLoad},
		{"watch", "watch one link for as long as it runs, at little cost: round trips, a short stream now and then, Prometheus", watchCmd},
		{"disk", "storage as a database uses it: data pages, log flushes, backup streams", diskCmd},
		{"fleet disk", "one disk profile on every agent of a fleet at once, started together: each host's figures and the fleet's", fleetDisk},
		{"fleet net", "a stream from this host to every agent at once, as a primary ships its log to each replica: each replica's rate, the weak path, this host's link", fleetNet},
		{"fleet watch", "watch many links from one process, one Prometheus endpoint with a link label; the targets file read again on SIGHUP", fleetWatch},
		{"plan backup", "how long a backup and a restore take here, for each size and compression, and what limits each", planBackup},
		{"plan sync", "what a synchronous replica costs each commit and a maintenance operation, by engine", planSync},
		{"plan replica", "will a replica keep up with the log over one stream, with what margin, and at a farther site", planReplica},
		{"plan chatty", "how long a chatty report's queries wait on the wire, and what another network or fewer round trips would make of it", planChatty},
		{"history", "list the runs kept in the local history", historyCmd},
		{"compare", "compare two runs figure by figure, and say whether each change is more than noise", compareCmd},
		{"report", "render a saved run (its JSON lines) as one self-contained HTML file: narrows report RUN.jsonl --html out.html", report},
		{"version", "print the version, commit and protocol version", version},
	}
}

// Main runs the command in args (without the program name) and returns the
// exit code. The run stops early when ctx is done (Signals) or when a
// write to env.Stdout fails (a closed pipe): either way the command ends
// as on SIGINT, removing what it created.
//
// Everything written to standard output and standard error goes through
// untrusted.Writer: an agent, a database server, a driver or a saved run
// can put any bytes in a string narrows prints, and the terminal would act
// on the control sequences among them (write the clipboard, retitle the
// window, clear the screen). Escaping at the stream, not only where such a
// string is read, means no call site can forget; JSON passes through it
// still valid.
func Main(ctx context.Context, env Env, args []string) int {
	code, _ := run(ctx, env, args)
	return code
}

// run is Main, with the command's error too (doctor reads it of its steps).
func run(ctx context.Context, env Env, args []string) (int, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stdout := untrusted.NewWriter(&stdoutGuard{w: env.Stdout, cancel: cancel})
	stderr := untrusted.NewWriter(env.Stderr)
	defer stdout.Flush()
	defer stderr.Flush()
	env.rawStderr = env.Stderr
	env.Stdout, env.Stderr = stdout, stderr
	err := dispatch(ctx, env, args)
	switch {
	case err == nil:
		return ExitOK, nil
	case errors.Is(err, flag.ErrHelp):
		return ExitOK, nil
	case errors.Is(err, errInterrupted):
		code, line := stopped(ctx)
		fmt.Fprintf(env.Stderr, "narrows: %s\n", line)
		return code, err
	default:
		// The one place an error becomes an exit code: a mistake a person
		// fixes says so itself (errext.HasExitCode: narrows' own, an
		// agent's refusal, a database's "wrong password"), however deep
		// it was wrapped.
		fmt.Fprintf(env.Stderr, "narrows: %s\n", untrusted.OneLine(err.Error()))
		return errext.ExitCode(err), err
	}
}

func dispatch(ctx context.Context, env Env, args []string) error {
	if len(args) == 0 {
		return usagef("no command given: start with `narrows doctor --to HOST` (narrows serve on the replica's host), or `narrows help` for the recipe and the list")
	}
	switch {
	case args[0] == "--version" || args[0] == "-version":
		return dispatch(ctx, env, append([]string{"version"}, args[1:]...))
	case isHelp(args[0]) && len(args) > 1 && !isHelp(args[1]):
		// narrows help doctor, narrows help net stream: the command's own
		// help, as narrows doctor --help prints it.
		return dispatch(ctx, env, append(slices.Clone(args[1:]), "--help"))
	case isHelp(args[0]):
		usage(env.Stdout)
		return nil
	}
	for _, c := range commands() {
		words := strings.Fields(c.name)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == c.name {
			if !unrecorded[c.name] {
				env.rec = &recorder{}
			}
			return c.run(ctx, env, args[len(words):])
		}
	}
	if group := groupOf(args[0]); group != nil {
		list := "`narrows " + strings.Join(group, "`, `narrows ") + "`"
		switch {
		case len(args) == 1:
			return usagef("%s: name what to do: %s (--help for each)", args[0], list)
		case isHelp(args[1]):
			groupUsage(env.Stdout, args[0])
			return nil
		}
		return usagef("unknown %s command %q: use %s", args[0], strings.Join(args[1:], " "), list)
	}
	return usagef("unknown command %q: run `narrows help` for the list", args[0])
}

func isHelp(arg string) bool {
	return arg == "help" || arg == "-h" || arg == "--help" || arg == "-help"
}

// groupOf lists the commands under a first word that is not a command
// itself ("net", "db"), or nil.
func groupOf(word string) []string {
	var names []string
	for _, c := range commands() {
		if first, _, ok := strings.Cut(c.name, " "); ok && first == word {
			names = append(names, c.name)
		}
	}
	return names
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "narrows: the network and storage as a database uses them")
	fmt.Fprint(w, recipe)
	fmt.Fprintln(w, "\nUsage: narrows COMMAND [flags]   (narrows help COMMAND, or narrows COMMAND --help, for its flags)")
	list(w, "")
}

// recipe is where a newcomer starts: the README's four commands.
const recipe = `
Start here, with a primary and a standby:
  1. on the standby's host, the agent:   narrows serve --secret-file narrows.secret --disk-path /backup
  2. on the primary, everything that applies, verdicts first, within a budget:
       narrows doctor --to STANDBY --secret-file narrows.secret --dsn postgres://narrows@localhost/postgres \
           --data-path DATADIR --log-path WALDIR --backup-path /backup
  3. the report for the network team:    narrows report narrows-doctor-DATE-TIME.jsonl --html report.html
  4. after a change, doctor again, then: narrows history; narrows compare BEFORE AFTER
`

// list writes the commands whose name starts with prefix.
func list(w io.Writer, prefix string) {
	for _, c := range commands() {
		if strings.HasPrefix(c.name, prefix) {
			fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
		}
	}
}

// groupUsage is `narrows net --help`: the group's commands.
func groupUsage(w io.Writer, group string) {
	fmt.Fprintf(w, "Usage: narrows %s COMMAND [flags]   (narrows %s COMMAND --help for its flags)\n", group, group)
	list(w, group+" ")
}

// newFlags returns a flag set whose errors are usage errors.
func newFlags(env Env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("narrows "+name, flag.ContinueOnError)
	// Mistakes get one line (see parse); the flag list only on --help.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(env.Stdout, "Usage: narrows %s [flags]\n", name)
		printFlags(env.Stdout, fs)
	}
	if env.rec != nil {
		env.rec.register(fs)
	}
	return fs
}

// printFlags lists fs's flags as the README writes them (--to, not
// flag.PrintDefaults' -to), each with its default when it has one. A flag
// with older names (stringFlag) is one entry, under its one name, that
// mentions them.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		if v, ok := f.Value.(*nameOf); ok {
			if v.isOlder() {
				return
			}
			if kind == "value" {
				kind = "string"
			}
			usage += " " + v.alsoOlder()
		}
		line := "  --" + f.Name
		if kind != "" {
			line += " " + kind
		}
		switch f.DefValue {
		case "", "0", "false", "[]", "0s":
		default:
			if kind == "string" {
				usage += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				usage += " (default " + f.DefValue + ")"
			}
		}
		fmt.Fprintf(w, "%s\n      %s\n", line, strings.ReplaceAll(usage, "\n", "\n      "))
	})
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", strings.TrimPrefix(fs.Name(), "narrows "), fs.Arg(0))
	}
	return nil
}

// parseFlags parses args, printing the usage only when asked for
// (--help): the flag package prints it on every mistake too, which would
// put the whole flag list on standard output, in the middle of a --json
// run's records. A mistake is one line, and says where the list is.
func parseFlags(fs *flag.FlagSet, args []string) error {
	usage := fs.Usage
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage()
		return err
	case err != nil:
		cmd := strings.TrimPrefix(fs.Name(), "narrows ")
		return usagef("%s: %v (narrows %s --help lists its flags)", cmd, err, cmd)
	}
	if c := clash(fs); c != "" {
		return usagef("%s: %s", strings.TrimPrefix(fs.Name(), "narrows "), c)
	}
	return nil
}

func tool() result.Tool {
	return result.Tool{Version: Version, Commit: commit(), Protocol: wire.Version}
}

func commit() string {
	if Commit != "" {
		return Commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}

func version(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "version")
	if err := parse(fs, args); err != nil {
		return err
	}
	t := tool()
	fmt.Fprintf(env.Stdout, "narrows %s (commit %s, protocol %d, json schema %s)\n", t.Version, t.Commit, t.Protocol, result.Schema)
	return nil
}

// maxSecretFile bounds what is read of a secret file: a secret is one
// line, and a path such as /dev/zero must not fill memory.
const maxSecretFile = 4 << 10

// readSecretFile reads a secret file, as Env.ReadFile: only a regular file
// (a FIFO would block the read for ever, a device such as /dev/zero never
// end it), at most maxSecretFile bytes. It warns, as ssh does, when others
// may read the file: by its mode bits, or on Windows by its DACL; once a
// run, however many times the run reads it.
func readSecretFile(env Env, path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s): put the secret in a file of its own", path, fileKind(fi.Mode()))
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		env.warn(fmt.Sprintf("narrows: warning: the secret file %s can be read by other users (mode %04o): chmod 600 %s", path, fi.Mode().Perm(), path))
	}
	if w := secretACLWarning(path); w != "" {
		env.warn(w)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSecretFile {
		return nil, fmt.Errorf("%s is larger than %d KiB: a secret is one line, e.g. (umask 077; openssl rand -hex 32 > %s)", path, maxSecretFile>>10, path)
	}
	return b, nil
}

func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "not a plain file"
}

// secret reads the shared secret from --secret-file or NARROWS_SECRET,
// trimmed of white space at both ends either way.
func secret(env Env, file string) ([]byte, error) {
	var s, from string
	switch {
	case file != "":
		b, err := env.ReadFile(file)
		if err != nil {
			return nil, usagef("cannot read the secret file: %v", unwrapPath(err))
		}
		s, from = strings.TrimSpace(string(b)), "the secret file "+file
		if s == "" {
			return nil, usagef("the secret file %s is empty: put a secret in it, e.g. (umask 077; openssl rand -hex 32 > %s)", file, file)
		}
	case strings.TrimSpace(env.Getenv("NARROWS_SECRET")) != "":
		s, from = strings.TrimSpace(env.Getenv("NARROWS_SECRET")), "NARROWS_SECRET"
	default:
		return nil, nil
	}
	if strings.Count(s, s[:1]) == len(s) {
		return nil, usagef("%s holds one character repeated: use a random secret, e.g. openssl rand -hex 32", from)
	}
	return []byte(s), nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", pe.Path, pe.Err)
	}
	return err
}

// given is the flags fs was given on the command line, by name (what
// the defaults alone do not tell apart from a value typed).
func given(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}
