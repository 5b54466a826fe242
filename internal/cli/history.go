package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/narrows/narrows/internal/history"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/untrusted"
)

// unrecorded are the commands whose runs are not kept: they measure
// nothing, or (watch) they run for days and feed Prometheus instead.
var unrecorded = map[string]bool{"serve": true, "service": true, "version": true, "history": true, "compare": true, "report": true, "watch": true, "fleet watch": true}

// recorder keeps a command's run in the history: output() tees its sink
// through it, and --no-history (newFlags) turns it off.
type recorder struct{ off bool }

func (r *recorder) register(fs *flag.FlagSet) {
	fs.BoolVar(&r.off, "no-history", false, "do not keep this run in the local history (or set NARROWS_NO_HISTORY=1)")
}

// keeping is a sink that passes records on and keeps the run at its report.
type keeping struct {
	sink
	env Env
	ivs []result.Interval
}

func (k *keeping) Interval(iv result.Interval) error {
	if len(k.ivs) <= history.MaxIntervals {
		k.ivs = append(k.ivs, iv)
	}
	return k.sink.Interval(iv)
}

func (k *keeping) Report(rep *result.Report) error {
	err := k.sink.Report(rep)
	keepRun(k.env, rep, k.ivs)
	k.ivs = nil
	return err
}

// keepRun stores a run. A history that cannot be written never fails the
// run: one line on stderr says why.
func keepRun(env Env, rep *result.Report, ivs []result.Interval) {
	keepRunFrom(env, rep, ivs, "")
}

// keepRunFrom is keepRun for a run also written to file (an absolute
// path, which the history shows beside the run's id); it returns the id,
// 0 when the run was not kept.
func keepRunFrom(env Env, rep *result.Report, ivs []result.Interval, file string) int64 {
	if env.rec == nil || env.rec.off || isTrue(env.Getenv("NARROWS_NO_HISTORY")) {
		return 0
	}
	// Not the run's context: an interrupted run's partial figures are kept too.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := addRun(ctx, env, rep, ivs, file)
	if err != nil {
		fmt.Fprintf(env.Stderr, "narrows: history not kept: %s\n", untrusted.OneLine(err.Error()))
	}
	return id
}

func addRun(ctx context.Context, env Env, rep *result.Report, ivs []result.Interval, file string) (int64, error) {
	st, err := openHistory(ctx, env)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	if v := env.Getenv("NARROWS_HISTORY_TEST_STALL"); v != "" {
		d, _ := time.ParseDuration(v)
		st.Stall = func() {
			fmt.Fprintf(env.Stderr, "narrows: history: stalling %s inside the transaction\n", d)
			time.Sleep(d)
		}
	}
	return st.AddFrom(ctx, rep, ivs, file)
}

func openHistory(ctx context.Context, env Env) (*history.Store, error) {
	dir, err := history.Dir(env.Getenv, runtime.GOOS)
	if err != nil {
		return nil, err
	}
	return history.Open(ctx, dir)
}

func isTrue(v string) bool {
	b, err := strconv.ParseBool(v)
	return err == nil && b || v == "yes"
}

// storeError makes the store's errors a person's: exit 2, one line.
func storeError(err error) error {
	var ce *history.CorruptError
	var ne *history.NewerError
	var te *history.TooLargeError
	if errors.As(err, &ce) || errors.As(err, &ne) || errors.As(err, &te) || errors.Is(err, history.ErrNotFound) {
		return userError(err)
	}
	return err
}

func historyCmd(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "history")
	limit := fs.Int("limit", 20, "list the most recent N runs (0: all)")
	command := fs.String("command", "", `only runs of this command, e.g. "net stream"`)
	asJSON := fs.Bool("json", false, "write one JSON object per run")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *limit < 0 {
		return usagef("--limit %d: use 0 (all) or more", *limit)
	}
	st, err := openHistory(ctx, env)
	if err != nil {
		return storeError(err)
	}
	defer st.Close()
	runs, err := st.List(ctx, history.Filter{Command: *command, Limit: *limit})
	if err != nil {
		return storeError(err)
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetEscapeHTML(false)
		for _, r := range runs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(runs) == 0 {
		fmt.Fprintf(env.Stdout, "No runs kept yet in %s.\n", st.Path())
		return nil
	}
	// A FILE column when a run was also written to one (doctor's run):
	// the id and the file it maps to, on one line.
	files := slices.ContainsFunc(runs, func(r history.Run) bool { return r.File != "" })
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	if files {
		fmt.Fprintln(tw, "ID\tWHEN\tCOMMAND\tTARGET\tHEADLINE\tFILE")
	} else {
		fmt.Fprintln(tw, "ID\tWHEN\tCOMMAND\tTARGET\tHEADLINE")
	}
	for _, r := range runs {
		head := "-"
		if r.HeadlineName != "" {
			head = formatFigure(r.Headline, r.HeadlineUnit) + " " + r.HeadlineName
		}
		if r.Partial {
			head += " (partial)"
		}
		line := fmt.Sprintf("%d\t%s\t%s\t%s\t%s", r.ID, r.StartedAt.Local().Format("2006-01-02 15:04:05"), r.Command, r.Target, head)
		if files {
			file := r.File
			if file == "" {
				file = "-"
			}
			line += "\t" + file
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// side is one run of a comparison.
type side struct {
	Name      string `json:"run"` // the id or the file
	rep       *result.Report
	ivs       []result.Interval
	Command   string    `json:"command"`
	Target    string    `json:"target"`
	StartedAt time.Time `json:"started_at"`
}

func compareCmd(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "compare")
	asJSON := fs.Bool("json", false, "write the comparison as one JSON object")
	fs.Usage = func() {
		fmt.Fprintln(env.Stdout, "Usage: narrows compare [flags] BEFORE AFTER   (each a run id from `narrows history`, or a file saved with --json)")
		printFlags(env.Stdout, fs)
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usagef("compare takes two runs, BEFORE and AFTER: run ids from `narrows history`, or files saved with --json")
	}
	var st *history.Store
	defer func() {
		if st != nil {
			st.Close()
		}
	}()
	var sides [2]side
	for i, arg := range fs.Args()[:2] {
		s := side{Name: arg}
		id, idErr := strconv.ParseInt(arg, 10, 64)
		if _, statErr := os.Stat(arg); idErr == nil && statErr != nil {
			if st == nil {
				var err error
				if st, err = openHistory(ctx, env); err != nil {
					return storeError(err)
				}
			}
			r, err := st.Get(ctx, id)
			if err != nil {
				return storeError(err)
			}
			s.rep, s.ivs = r.Report, r.Intervals
		} else {
			var err error
			if s.rep, s.ivs, err = history.ReadFile(arg); err != nil {
				return usagef("compare: %v", unwrapPath(err))
			}
		}
		s.Command, s.Target, s.StartedAt = s.rep.Command, s.rep.Target, s.rep.StartedAt
		sides[i] = s
	}
	c := history.Compare(sides[0].rep, sides[0].ivs, sides[1].rep, sides[1].ivs)
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(struct {
			Before side `json:"before"`
			After  side `json:"after"`
			*history.Comparison
		}{sides[0], sides[1], c})
	}
	w := env.Stdout
	for i, s := range sides {
		label := [2]string{"before", "after "}[i]
		fmt.Fprintf(w, "%s: %s  %s → %s, %s (narrows %s)\n", label, s.Name, s.Command, s.Target,
			s.StartedAt.Local().Format("2006-01-02 15:04:05"), s.rep.Narrows.Version)
	}
	if len(c.Warnings) > 0 {
		fmt.Fprintln(w, "\nwarning: the runs differ in more than the change measured:")
		for _, x := range c.Warnings {
			fmt.Fprintf(w, "  %s\n", x)
		}
	}
	fmt.Fprintln(w)
	if len(c.Verdicts) > 0 {
		// What changed in the answers first: a verdict new, gone, or
		// now of another severity.
		fmt.Fprintln(w, "Verdicts that changed:")
		for _, v := range c.Verdicts {
			switch {
			case v.Before == "":
				fmt.Fprintf(w, "  new   %s %s\n", mark(v.AfterSeverity), v.After)
			case v.After == "":
				fmt.Fprintf(w, "  gone  %s %s\n", mark(v.BeforeSeverity), v.Before)
			default:
				fmt.Fprintf(w, "  now a %s (was %s): %s\n", v.AfterSeverity, v.BeforeSeverity, v.After)
			}
		}
		fmt.Fprintln(w)
	}
	if len(c.Figures) == 0 {
		fmt.Fprintln(w, "No figures to compare: the two runs have none in common (plans and db repl keep none).")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "FIGURE\tBEFORE\tAFTER\tCHANGE\t\t")
	for _, f := range c.Figures {
		change, test := "~", ""
		switch {
		case f.P == nil:
			// Not tested, so not called noise: the change as it reads,
			// marked untested.
			test = fmt.Sprintf("(n=%d+%d: too few samples to test, need %d+%d)", f.NBefore, f.NAfter, history.MinSamples, history.MinSamples)
			change = "?"
			if f.Delta != nil {
				change = fmt.Sprintf("%+.1f%%?", 100**f.Delta)
			}
		default:
			test = fmt.Sprintf("(p=%.3f n=%d+%d)", *f.P, f.NBefore, f.NAfter)
			if f.Significant && f.Delta != nil {
				change = fmt.Sprintf("%+.1f%%", 100**f.Delta)
			} else if f.Significant {
				change = "changed"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", f.Name, formatFigure(f.Before, f.Unit), formatFigure(f.After, f.Unit), change, test)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n~: within noise (two-sided Mann-Whitney U on the interval samples, p ≥ %.2f); ?: too few samples to test, the change as it reads, untested\n", history.Alpha)
	return nil
}

func formatFigure(v float64, unit string) string {
	if math.IsNaN(v) {
		return "-"
	}
	switch unit {
	case history.UnitBits:
		return metric.FormatBitRate(v)
	case history.UnitBytes:
		return metric.FormatByteRate(v)
	case history.UnitSeconds:
		return metric.FormatDuration(time.Duration(v * float64(time.Second)))
	case history.UnitRate:
		return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0") + "/s"
	}
	return strconv.FormatFloat(v, 'g', 4, 64) + " " + unit
}
