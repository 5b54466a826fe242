package command

import (
	"context"
	"fmt"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/probe/pmtu"
	"github.com/narrows/narrows/internal/result"
)

// NetMTU is `narrows net mtu`: the packet size the path carries each way
// MTU.Directions names (none: both).
type NetMTU struct {
	Agent client.Options
	MTU   pmtu.Config
}

// DefaultNetMTU is net mtu to the agent at agent with the flags'
// defaults: both ways, searching the largest size that passes when
// full-size packets vanish.
func DefaultNetMTU(agent client.Options) NetMTU {
	return NetMTU{Agent: agent, MTU: pmtu.Config{Directions: result.Directions}}
}

// Run measures each direction in turn.
func (c NetMTU) Run(ctx context.Context, env Env) (*result.Report, error) {
	cfg := c.MTU
	if len(cfg.Directions) == 0 {
		cfg.Directions = result.Directions
	}
	sess, err := Connect(ctx, c.Agent)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	rep := env.agentReport("net mtu", c.Agent.Addr, sess)
	env.say(fmt.Sprintf("narrows net mtu → %s: full-size packets %s, on test connections of the agent's own", c.Agent.Addr, directionWords(cfg.Directions)))
	res, runErr := pmtu.Run(ctx, sess, cfg)
	rep.MTU = res
	return Finish(ctx, env.Tool, rep, runErr)
}

// directionWords say which ways dirs (result.DirUp and/or DirDown) go,
// for the banner.
func directionWords(dirs []string) string {
	if len(dirs) == 2 {
		return "each way"
	}
	if dirs[0] == result.DirUp {
		return "toward the agent"
	}
	return "from the agent"
}
