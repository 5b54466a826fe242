package cli

import (
	"flag"
	"time"

	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// underLoadFlags are net rr's --under-load and its load's shape.
type underLoadFlags struct {
	on        bool
	streams   int
	direction string
	warmup    string
}

func (u *underLoadFlags) register(fs *flag.FlagSet) {
	def := command.DefaultUnderLoad()
	fs.BoolVar(&u.on, "under-load", false, "round trips idle, then while --load-streams fill the path (a backup, a replica catching up): the queue it builds, and responsiveness")
	fs.IntVar(&u.streams, "load-streams", def.Streams, "with --under-load: streams that fill the path")
	fs.StringVar(&u.direction, "load-direction", def.Direction, "with --under-load: up (this host sends, as a backup pushed from here), down (the agent sends) or both")
	fs.StringVar(&u.warmup, "warmup", "1s", "with --under-load: how long the load runs before the loaded round trips begin")
}

// config is the load --under-load asks for, for a run of d: a third of
// it idle, the rest under the load, after its warm-up.
func (u *underLoadFlags) config(d time.Duration) (*command.UnderLoad, error) {
	switch u.direction {
	case result.DirUp, result.DirDown, result.DirBoth:
	default:
		return nil, usagef("--load-direction %q: use up, down or both", u.direction)
	}
	if u.streams < 1 || u.streams > 64 {
		return nil, usagef("--load-streams %d: use 1 to 64", u.streams)
	}
	warmup, err := positiveDuration("--warmup", u.warmup)
	if err != nil {
		return nil, err
	}
	if d < time.Second {
		return nil, usagef("--duration %s: --under-load needs at least 1s (a third idle, the rest under load)", metric.FlagDuration(d))
	}
	return &command.UnderLoad{Streams: u.streams, Direction: u.direction, Warmup: warmup}, nil
}
