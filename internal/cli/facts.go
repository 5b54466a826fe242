package cli

import (
	"net"
	"strings"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
)

// hostFacts are this host's facts, its interface the one routing to peer
// (an IP, or "" for every interface that is up): a few file reads and
// ioctls, bounded by sysinfo.
func hostFacts(peer string) *result.Facts {
	f := sysinfo.ReadFacts(peer)
	f.Narrows = Version
	return f
}

// fromAgent notes who measured with us: the agent's release, whether it
// proved itself, its host's facts (nil from an agent before them), and
// this host's routed to it.
func fromAgent(rep *result.Report, sess *client.Session) {
	rep.Agent, rep.Unauthenticated = sess.Software, !sess.Authenticated
	rep.AgentFacts = sess.Facts
	rep.Facts = hostFacts(sess.PeerIP())
}

// targetPeer is the address a report's target names, when it names one
// (HOST:PORT, or a database's host); "" for a path or a Unix socket.
func targetPeer(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "" || strings.ContainsAny(host, "/\\ =") {
		return ""
	}
	return sysinfo.PeerIP(host)
}
