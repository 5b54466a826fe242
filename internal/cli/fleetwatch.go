package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/output/prom"
	"github.com/narrows/narrows/internal/probe/watch"
)

// fleetWatch is `narrows fleet watch`: many links watched by one process,
// one Prometheus endpoint with a link label, the targets read again on
// SIGHUP.
func fleetWatch(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "fleet watch")
	targets := fs.String("targets", "", "the links: @FILE (one a line: NAME=HOST[:PORT] or HOST[:PORT], # comments; read again on SIGHUP) or a comma list of the same")
	var af agentFlags
	af.register(fs)
	var wf watchFlags
	// One round trip a second a link: 200 links are 200 a second for this
	// host; streams are load, asked for by name.
	wf.register(fs, 1, "0")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, sc, mtuStep, err := wf.config()
	if err != nil {
		return err
	}
	base := client.Options{Software: Version, Insecure: af.insecure}
	if base.Timeout, err = positiveDuration("--timeout", af.timeout); err != nil {
		return err
	}
	ts, err := watchTargets(*targets, base, sc)
	if err != nil {
		return err
	}
	if base.Secret, err = clientSecret(env, af.secretFile, af.insecure); err != nil {
		return err
	}
	for i := range ts {
		ts[i].Agent.Secret = base.Secret
	}
	asJSON := *wf.asJSON
	exp := prom.NewFleetWatch(Version, time.Now())
	out := output(env, asJSON)
	reload := make(chan command.WatchReload)
	// The report names where the links came from: the file, or the list
	// when it is short (10,000 links are not a report's target).
	source := *targets
	if !strings.HasPrefix(source, "@") && len(source) > 80 {
		source = fmt.Sprintf("a list of %d links", len(ts))
	}
	c := command.FleetWatch{Targets: ts, Source: source, Watch: cfg, Stream: sc, StreamDir: *wf.streamDir, MTUEvery: mtuStep,
		Reload: reload, Started: exp.Add, Polled: exp.Update, Stopped: exp.Remove, Ended: ctrlC}
	stopMetrics := func() {}
	if listen := *wf.promListen; listen != "" {
		c.Ready = serveWhenReady(env, listen, exp.Registry(), asJSON, &stopMetrics)
	}
	defer func() { stopMetrics() }()

	// SIGHUP: the targets read again and checked here, handed to the core
	// (which keeps the links watched when they were refused, and says so
	// in one line).
	hup := make(chan struct{}, 1)
	stopHup, _ := onReload(func() {
		select {
		case hup <- struct{}{}:
		default: // one reload pending is as good as two
		}
	})
	defer stopHup()
	rctx, endReloads := context.WithCancel(ctx)
	defer endReloads()
	go func() {
		for {
			select {
			case <-rctx.Done():
				return
			case <-hup:
			}
			next, err := watchTargets(*targets, base, sc)
			exp.Reloaded(err == nil, time.Now())
			select {
			case reload <- command.WatchReload{Targets: next, Err: err}:
			case <-rctx.Done():
				return
			}
		}
	}()
	rep, err := c.Run(ctx, coreEnv(env, out, asJSON))
	endReloads()
	if err == nil && ctrlC(ctx) {
		ctx = context.WithoutCancel(ctx)
	}
	return written(ctx, out, rep, err)
}

// watchTargets reads fleet watch's --targets, v: @FILE or a comma list,
// each entry NAME=HOST[:PORT] or HOST[:PORT] (the name then the host's),
// each name a label value (watchName) given once, 1 to
// command.MaxFleetWatch of them; base is every agent's options but its
// address. sc is the streams asked for: the fleet's, one link's at a
// time, must leave half the time free.
func watchTargets(v string, base client.Options, sc watch.StreamConfig) ([]command.WatchTarget, error) {
	if v == "" {
		return nil, usagef("--targets is required: the links, @FILE (one NAME=HOST[:PORT] a line) or NAME=HOST,NAME=HOST...")
	}
	var ts []command.WatchTarget
	seen := map[string]string{}
	// A long list is named by its start in a message, not copied whole.
	label := v
	if !strings.HasPrefix(v, "@") && len(v) > 80 {
		label = fmt.Sprintf("%.60q... (%d bytes)", v, len(v))
	}
	add := func(where, entry string) error {
		if len(ts) >= command.MaxFleetWatch {
			return usagef("--targets %s: more than %d links: a fleet watch takes at most %d", label, command.MaxFleetWatch, command.MaxFleetWatch)
		}
		name, host, named := strings.Cut(entry, "=")
		name, host = strings.TrimSpace(name), strings.TrimSpace(host)
		if !named {
			host = name
			name = host
			if h, _, err := net.SplitHostPort(host); err == nil {
				name = h
			}
		}
		addr, err := agentAddr("--targets "+where, host)
		if err != nil {
			return err
		}
		if !watchName.MatchString(name) {
			what := "the name"
			if !named {
				what = "the name (the host's, as none was given)"
			}
			return usagef("--targets %s: %s %q: use letters, digits, '.', '_' and '-' (at most 63, starting with a letter or digit), as NAME=HOST[:PORT]", where, what, name)
		}
		if at, ok := seen[name]; ok {
			return usagef("--targets %s: the name %s again (first %s): give each link its own, as NAME=HOST[:PORT]", where, name, at)
		}
		seen[name] = where
		o := base
		o.Addr = addr
		ts = append(ts, command.WatchTarget{Name: name, Agent: o})
		return nil
	}
	if file, ok := strings.CutPrefix(v, "@"); ok {
		f, err := os.Open(file)
		if err != nil {
			return nil, usagef("--targets %s: %v", v, err)
		}
		defer f.Close()
		sc := bufio.NewScanner(io.LimitReader(f, 16<<20))
		for n := 1; sc.Scan(); n++ {
			line, _, _ := strings.Cut(sc.Text(), "#")
			if line = strings.TrimSpace(line); line == "" {
				continue
			}
			if err := add(fmt.Sprintf("%s line %d", v, n), line); err != nil {
				return nil, err
			}
		}
		if err := sc.Err(); err != nil {
			return nil, usagef("--targets %s: %v", v, err)
		}
	} else {
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				if err := add(fmt.Sprintf("%q", e), e); err != nil {
					return nil, err
				}
			}
		}
	}
	if len(ts) == 0 {
		return nil, usagef("--targets %s names no link: give 1 to %d, one NAME=HOST[:PORT] a line", label, command.MaxFleetWatch)
	}
	if busy := time.Duration(len(ts)) * streamBusy(sc); sc.Every > 0 && sc.Every < 2*busy {
		return nil, usagef("--stream-every %s for %s: their streams, one link's at a time, would fill half the time or more; use --stream-every %s or more, or 0",
			metric.FlagDuration(sc.Every), metric.Plural(int64(len(ts)), "link"), metric.FlagDuration(2*busy))
	}
	return ts, nil
}
