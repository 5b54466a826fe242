package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/narrows/narrows/internal/invariants"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/output/html"
	"github.com/narrows/narrows/internal/output/jsonl"
	"github.com/narrows/narrows/internal/result"
)

// report is `narrows report RUN.jsonl [--html out.html]`: a saved run of
// any command (its JSON lines), rendered offline.
func report(_ context.Context, env Env, args []string) error {
	fs := newFlags(env, "report")
	out := fs.String("html", "", "write the HTML report to this file (default: the run's file with .html)")
	check := fs.Bool("check", false, "check the run against the report invariants instead (docs/commands.md#narrows-report): one line per one broken, exit 1 when any is")
	var run string
	// The run's file may come before the flags, as in `narrows report
	// run.jsonl --html out.html`: flag stops at it, so parse what follows.
	for rest := args; ; {
		if err := parseFlags(fs, rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		if run != "" {
			return usagef("report: unexpected argument %q: give one saved run", fs.Arg(0))
		}
		run, rest = fs.Arg(0), fs.Args()[1:]
	}
	if run == "" {
		return usagef("report: name a saved run: narrows report RUN.jsonl --html out.html (save one with --json > RUN.jsonl)")
	}
	rep, ivs, err := readRun(run)
	if err != nil {
		return err
	}
	if *check {
		if *out != "" {
			return usagef("report: --check writes no HTML: give --check or --html")
		}
		return checkRun(env, rep, ivs)
	}
	path := *out
	if path == "" {
		path = strings.TrimSuffix(strings.TrimSuffix(run, ".jsonl"), ".json") + ".html"
	}
	if err := writeHTML(path, rep, ivs); err != nil {
		return err
	}
	if st, err := os.Stat(path); err == nil {
		fmt.Fprintf(env.Stdout, "wrote %s (%s)\n", path, metric.FormatBytes(st.Size()))
	}
	return nil
}

// checkRun holds a saved run to the report invariants: each one broken
// in a line, and exit 1 when any is.
func checkRun(env Env, rep *result.Report, ivs []result.Interval) error {
	vs := invariants.Check(rep, ivs, invariants.Path{})
	for _, v := range vs {
		fmt.Fprintln(env.Stdout, v)
	}
	if len(vs) > 0 {
		return fmt.Errorf("report: %s broken", metric.Plural(int64(len(vs)), "invariant"))
	}
	fmt.Fprintf(env.Stdout, "no invariant broken: %s, %s\n", metric.Plural(int64(len(rep.Findings)), "finding"), metric.Plural(int64(len(ivs)), "interval"))
	return nil
}

// readRun reads a saved run: the last summary record in it, with the
// interval records since the summary before it. A file that is not
// narrows' JSON lines, or has no summary, is a usage error.
func readRun(path string) (*result.Report, []result.Interval, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, usagef("report: %v", err)
	}
	defer f.Close()
	rep, ivs, err := jsonl.Last(f, path)
	if err != nil {
		return nil, nil, usagef("report %v", err)
	}
	return rep, ivs, nil
}

// writeHTML writes the HTML report of a run to path, whole or not at all
// (a temporary file beside it, renamed). The report names hosts,
// addresses and users: it is made as the user's other files are, 0666
// less their umask, and one it replaces keeps its mode, as a shell's >
// would (os.CreateTemp's 0600, chmod-ed to 0644, was 0644 even under a
// umask of 077).
func writeHTML(path string, rep *result.Report, ivs []result.Interval) error {
	var b bytes.Buffer
	if err := html.Render(&b, rep, ivs); err != nil {
		return err
	}
	tmp, err := createBeside(path)
	if err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	var merr error
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		merr = tmp.Chmod(st.Mode().Perm())
	}
	_, werr := tmp.Write(b.Bytes())
	cerr := tmp.Close()
	if err := errors.Join(merr, werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("html report: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("html report: %w", err)
	}
	return nil
}

// createBeside creates a new, hidden file in path's directory, for path's
// content. Unlike os.CreateTemp, which makes 0600, it asks for 0666: the
// system takes the umask off it, as for any file the user makes (Windows
// has no umask, and 0666 is a writable file there).
func createBeside(path string) (*os.File, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	for try := 0; ; try++ {
		name := filepath.Join(dir, "."+base+"."+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		return f, err
	}
}

// htmlFlag registers --html on a command that measures or plans.
func htmlFlag(fs *flag.FlagSet, path *string) {
	fs.StringVar(path, "html", "", "also write the run's self-contained HTML report to this file (narrows report makes one later from --json output)")
}

// withHTML passes records on to out and, given a path, keeps the
// intervals and writes the HTML report when the summary comes.
func withHTML(out sink, path string) sink {
	if path == "" {
		return out
	}
	return &keepSink{out: out, then: func(r *result.Report, ivs []result.Interval) error { return writeHTML(path, r, ivs) }}
}

// keepSink passes records on to out, keeps the intervals, and gives them
// with the summary to then once out has it.
type keepSink struct {
	out  sink
	ivs  []result.Interval
	then func(*result.Report, []result.Interval) error
}

func (k *keepSink) Interval(iv result.Interval) error {
	k.ivs = append(k.ivs, iv)
	return k.out.Interval(iv)
}

func (k *keepSink) Report(r *result.Report) error {
	err := k.out.Report(r)
	return errors.Join(err, k.then(r, k.ivs))
}

// checkEnv, set (to 1) in the environment, makes every command hold each
// Report it emits to the report invariants and say each one broken on
// standard error, "narrows: invariant broken: RULE: …": internal/itest
// sets it for every run a test makes, and fails the test on such a line.
// checkRateEnv, a rate in bits per second, is the path's, when the test
// knows it (a delay line's): the interfaces' speed otherwise.
const (
	checkEnv     = "NARROWS_CHECK_INVARIANTS"
	checkRateEnv = "NARROWS_CHECK_PATH_BITS_PER_SECOND"
)

// withCheck passes records on to out and, when the environment asks,
// checks each Report against the invariants once it is written.
func withCheck(env Env, out sink) sink {
	if !isTrue(env.Getenv(checkEnv)) {
		return out
	}
	return &keepSink{out: out, then: func(r *result.Report, ivs []result.Interval) error { reportBroken(env, r, ivs); return nil }}
}

// reportBroken writes each invariant r breaks to standard error.
func reportBroken(env Env, r *result.Report, ivs []result.Interval) {
	var path invariants.Path
	if v := env.Getenv(checkRateEnv); v != "" {
		rate, err := strconv.ParseFloat(v, 64)
		if err != nil || rate <= 0 {
			fmt.Fprintf(env.Stderr, "narrows: invariant broken: %s: %s=%q is not a rate in bits per second\n", "setup", checkRateEnv, v)
			return
		}
		path.RateBitsPerSecond = rate
	}
	for _, v := range invariants.Check(r, ivs, path) {
		fmt.Fprintf(env.Stderr, "narrows: invariant broken: %s\n", v)
	}
}
