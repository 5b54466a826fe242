package cli

import (
	"context"

	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/result"
)

// netMTU is `narrows net mtu`: the packet size the path carries each way.
func netMTU(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "net mtu")
	to := fs.String("to", "", "the agent: HOST or HOST:PORT (default port 7447)")
	var af agentFlags
	af.register(fs)
	direction := fs.String("direction", "both", "up (this host sends), down (the agent sends) or both")
	quick := fs.Bool("quick", false, "only send full-size packets; do not search the largest size that passes when they vanish")
	asJSON := fs.Bool("json", false, "write the summary as JSON instead of a table")
	var html string
	htmlFlag(fs, &html)
	if err := parse(fs, args); err != nil {
		return err
	}
	opts, err := af.to(env, *to)
	if err != nil {
		return err
	}
	cfg := command.DefaultNetMTU(opts)
	cfg.MTU.Quick = *quick
	switch *direction {
	case "both":
		cfg.MTU.Directions = result.Directions
	case result.DirUp, result.DirDown:
		cfg.MTU.Directions = []string{*direction}
	default:
		return usagef("--direction %q: use up, down or both", *direction)
	}
	out := withHTML(output(env, *asJSON), html)
	rep, err := cfg.Run(ctx, coreEnv(env, out, *asJSON))
	return written(ctx, out, rep, err)
}
