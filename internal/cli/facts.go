package cli

import (
	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/result"
)

// hostFacts are this host's facts, its interface the one routing to peer.
func hostFacts(peer string) *result.Facts { return command.HostFacts(tool(), peer) }

// fromAgent notes who measured with us (command.FromAgent).
func fromAgent(rep *result.Report, sess *client.Session) { command.FromAgent(tool(), rep, sess) }

// targetPeer is the address a report's target names (command.TargetPeer).
func targetPeer(host string) string { return command.TargetPeer(host) }

// connect dials the agent (command.Connect).
var connect = command.Connect
