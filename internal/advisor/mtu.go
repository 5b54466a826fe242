package advisor

import (
	"fmt"

	"github.com/narrows/narrows/internal/result"
)

// mtu turns `narrows net mtu` into findings: a black hole each way it was
// found, a mismatch between the two ends' interfaces, or a clean path.
func mtu(m *result.MTU) []result.Finding {
	var out []result.Finding
	toward := map[string]string{result.DirUp: "toward the agent", result.DirDown: "from the agent to this host"}
	sender := map[string]string{result.DirUp: "this host", result.DirDown: "the agent's host"}
	clean := 0
	for _, d := range m.Directions {
		switch {
		case d.FullSize:
			clean++
		case d.PathMTU > 0:
			out = append(out, result.Finding{Code: "mtu.black_hole", Severity: "warning",
				Summary: fmt.Sprintf("Packets over %d bytes vanish %s, with no word back: a path-MTU black hole.", d.PathMTU, toward[d.Direction]),
				Detail: fmt.Sprintf("Packets of %d bytes pass and %d-byte ones are dropped somewhere on the way, and no ICMP \"packet too big\" tells %s to send smaller: "+
					"a device in between (a switch, a tunnel, a VPN or a firewall) has a smaller MTU than the ends, or filters ICMP. "+
					"A connection that sends a full-size packet stalls: a replica's stream, a backup or a large result set hangs while a ping and small queries work. "+
					"Set the MTU to %d on the interfaces at both ends, or raise it on the device in between, or let ICMP \"fragmentation needed\" through. "+
					"On Linux, net.ipv4.tcp_mtu_probing=1 makes TCP recover by itself, after seconds of stall (this host: %s).",
					d.PathMTU, d.SmallestFailed, sender[d.Direction], d.PathMTU, probingWords(m.MTUProbing)),
				Values: map[string]float64{"path_mtu_bytes": float64(d.PathMTU), "smallest_failed_bytes": float64(d.SmallestFailed)}})
		case d.SmallestFailed > 0:
			out = append(out, result.Finding{Code: "mtu.nothing_passes", Severity: "warning",
				Summary: fmt.Sprintf("Not even %d-byte packets arrive %s on a test connection, while its handshake does.", d.SmallestFailed, toward[d.Direction]),
				Detail:  "Something on the path drops data packets of every size it was offered: a firewall, or heavy loss. Look at the path before its MTU."})
		default:
			why := "the search was not run (--quick)"
			if m.SearchUnavailable != "" {
				why = m.SearchUnavailable
			}
			out = append(out, result.Finding{Code: "mtu.black_hole", Severity: "warning",
				Summary: fmt.Sprintf("Full-size packets vanish %s while the handshake's small ones pass: a path-MTU black hole.", toward[d.Direction]),
				Detail:  "The largest size that passes is not known: " + why + "."})
		}
	}
	here, agent := m.Here.MTU, m.Agent.MTU
	if here > 0 && agent > 0 && here != agent {
		hi, lo, big := here, agent, "this host"
		if agent > here {
			hi, lo, big = agent, here, "the agent's host"
		}
		out = append(out, result.Finding{Code: "mtu.mismatch", Severity: "warning",
			Summary: fmt.Sprintf("The two ends' interfaces disagree: MTU %d here (%s), %d on the agent's host (%s).", here, m.Here.Name, agent, m.Agent.Name),
			Detail: fmt.Sprintf("Jumbo frames are set on %s only. TCP hides it (each end announces an MSS from its own MTU, so both send at most %d-byte packets), "+
				"but anything that does not negotiate — UDP, a cluster interconnect, a storage protocol — sends %d-byte frames the other side drops. "+
				"Set the same MTU on both ends and on every switch port between them (%d where all of them take it, else %d).", big, lo, hi, hi, lo),
			Values: map[string]float64{"here_mtu_bytes": float64(here), "agent_mtu_bytes": float64(agent)}})
	}
	if len(out) == 0 && clean > 0 {
		sizes := ""
		for i, d := range m.Directions {
			if i > 0 {
				sizes += ", "
			}
			sizes += fmt.Sprintf("%s %d", d.Direction, d.PathMTU)
		}
		out = append(out, result.Finding{Code: "mtu.ok", Severity: "info",
			Summary: fmt.Sprintf("Full-size packets pass each way tested (path MTU %s bytes), and the two ends' interfaces agree.", sizes)})
	}
	return out
}

func probingWords(v int) string {
	switch v {
	case 0:
		return "off"
	case 1:
		return "1, on after a black hole is detected"
	case 2:
		return "2, always on"
	}
	return "not known"
}
