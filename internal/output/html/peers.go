package html

import (
	"fmt"
	"math"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/words"
)

// netView is "for the network team": what one step measured, between
// which hosts, how, and the commands of the usual tools that reproduce
// each figure.
type netView struct {
	Anchor, Step, What, Between, How string
	Commands                         []peerCommand
}

type peerCommand struct {
	Figure, Where, Command string
}

func netOf(anchor, step string, rep *result.Report, facts, agentFacts *result.Facts) []netView {
	host := hostOf(rep.Target)
	here := "this host"
	if facts != nil && facts.Hostname != "" {
		here += " (" + facts.Hostname + ")"
	}
	there := "the agent at " + rep.Target
	if agentFacts != nil && agentFacts.Hostname != "" {
		there += " (" + agentFacts.Hostname + ")"
	}
	between := here + " → " + there
	if s := rep.Stream; s != nil && len(s.Runs) > 0 && !slices.ContainsFunc(s.Runs, func(r result.StreamRun) bool { return r.Direction != "reverse" }) {
		between = there + " → " + here // the agent sends
	}
	hereName, thereName := words.Ends(rep.Target, facts, agentFacts)
	v := netView{Anchor: anchor, Step: step, Between: between}
	switch rep.Part().(type) {
	case *result.Stream:
		s := rep.Stream
		c := s.Config
		v.What = "bulk TCP throughput, one stream as replication uses it" + map[bool]string{true: ", then " + strconv.Itoa(c.Streams) + " in parallel"}[c.Streams > 1]
		win := "the OS default window (autotuning)"
		if c.WindowBytes > 0 {
			win = "a " + metric.FormatBytes(c.WindowBytes) + " socket buffer"
		}
		v.How = fmt.Sprintf("%s per run, %s writes, %s; throughput counted by the receiver; the sender's TCP state read from TCP_INFO every %s",
			dur(c.Duration), metric.FormatBytes(c.BlockBytes), win, dur(c.Interval))
		seen := map[string]bool{}
		for _, r := range s.Runs {
			cmd := fmt.Sprintf("iperf3 -c %s -t %s -l %d", host, secondsArg(c.Duration), c.BlockBytes)
			if r.Direction == "reverse" {
				cmd += " -R"
			}
			if r.Streams > 1 {
				cmd += " -P " + strconv.Itoa(r.Streams)
			}
			if c.WindowBytes > 0 {
				cmd += " -w " + strconv.FormatInt(c.WindowBytes, 10)
			}
			if seen[cmd] {
				continue
			}
			seen[cmd] = true
			fig := phaseWords(r, hereName, thereName) + ": " + metric.FormatBitRate(r.Throughput)
			v.Commands = append(v.Commands, peerCommand{Figure: fig, Where: "here (with iperf3 -s on " + host + ")", Command: cmd})
		}
	case *result.RR:
		r := rep.RR
		v.What = "request/response round trips on one TCP connection, one outstanding"
		v.How = fmt.Sprintf("%s requests, %s responses, for %s; each round trip timed by the client, the kernel's RTT from TCP_INFO beside it",
			metric.FormatBytes(r.Config.RequestBytes), metric.FormatBytes(r.Config.ResponseBytes), dur(r.Duration))
		length := r.Config.Duration
		if length == 0 {
			length = r.Duration
		}
		fig := "round trip p50 " + metric.FormatDuration(r.P50.D()) + ", p99 " + metric.FormatDuration(r.P99.D())
		v.Commands = append(v.Commands,
			peerCommand{Figure: fig, Where: "here (with sockperf server --tcp on " + host + ")",
				Command: fmt.Sprintf("sockperf ping-pong -i %s --tcp -m %d -t %s --full-rtt", host, r.Config.RequestBytes, secondsArg(length))},
			peerCommand{Figure: fig, Where: "here (with netserver on " + host + ")",
				Command: fmt.Sprintf("netperf -H %s -t TCP_RR -l %s -- -r %d,%d", host, secondsArg(length), r.Config.RequestBytes, r.Config.ResponseBytes)})
	case *result.Commit:
		c := rep.Commit
		v.What = "synchronous log shipping: a block sent, written (and flushed) by the agent, then acknowledged"
		v.How = fmt.Sprintf("%s blocks, %d in flight, acknowledged at %s, for %s", metric.FormatBytes(c.Config.BlockBytes), c.Config.InFlight, c.Config.Ack, dur(c.Duration))
		fio := fmt.Sprintf("fio --name=commit --directory=%s --rw=write --bs=%d --size=64m --ioengine=sync --time_based --runtime=%s",
			orDot(c.Config.Path), c.Config.BlockBytes, secondsArg(c.Config.Duration))
		switch c.Config.Flush {
		case result.FlushDsync:
			fio += " --sync=dsync"
		default:
			fio += " --fdatasync=1"
		}
		if c.Config.Ack == result.AckFlush && c.AgentFlush != nil {
			v.Commands = append(v.Commands, peerCommand{Figure: "agent flush p50 " + metric.FormatDuration(c.AgentFlush.P50.D()), Where: "on " + host, Command: fio})
		}
		v.Commands = append(v.Commands, peerCommand{Figure: "the network's part of a commit", Where: "here (with sockperf server --tcp on " + host + ")",
			Command: fmt.Sprintf("sockperf ping-pong -i %s --tcp -m %d -t %s --full-rtt", host, c.Config.BlockBytes, secondsArg(c.Config.Duration))})
	case *result.Disk:
		d := rep.Disk
		where := "here"
		if d.Agent != "" {
			where = "on the agent's host (" + d.Agent + ")"
		}
		v.Between = where + ", " + d.Path
		v.What = "storage as a database uses it: data pages, log flushes, backup streams"
		v.How = fmt.Sprintf("engine %s, %s %v, a %s test file on %s, %s per pattern", d.Engine, d.DirectWord(), d.Direct, metric.FormatBytes(d.FileBytes), orWord(d.Filesystem, "an unknown filesystem"), dur(d.Config.Duration))
		for _, p := range d.Patterns {
			fig := p.Name + ": " + metric.FormatCount(int64(p.IOPS+0.5)) + " IOPS, p50 " + metric.FormatDuration(p.P50.D())
			v.Commands = append(v.Commands, peerCommand{Figure: fig, Where: where, Command: fioCommand(d, p)})
			if c := diskspdCommand(d, p); c != "" {
				v.Commands = append(v.Commands, peerCommand{Figure: fig, Where: where, Command: c})
			}
		}
	case *result.DBPing:
		d := rep.DBPing
		v.What = "query round trips in one session through the real driver"
		v.How = fmt.Sprintf("%q, %s queries", d.Config.Query, metric.FormatCount(d.Queries))
		v.Between = here + " → the " + d.Engine + " server at " + rep.Target
		if d.Engine == "postgres" {
			v.Commands = append(v.Commands, peerCommand{Figure: "query p50 " + metric.FormatDuration(d.P50.D()), Where: "here",
				Command: "echo 'SELECT 1' > q.sql; pgbench -n -c 1 -f q.sql -T 10 -r DSN"})
		}
	case *result.BackupPlan:
		v.What = "a backup and a restore modelled from the rates of each stage"
		v.How = "each stage measured on its own (or given by hand); the slowest sets the pace"
		st := rep.BackupPlan.Stages
		for _, sr := range st.NetworkOut {
			v.Commands = append(v.Commands, peerCommand{Figure: fmt.Sprintf("network out, %d stream(s): %s (%s)", sr.Streams, metric.FormatByteRate(sr.BytesPerSecond), sr.Source),
				Where: "here (with iperf3 -s on " + host + ")", Command: fmt.Sprintf("iperf3 -c %s -t 10 -P %d", host, sr.Streams)})
		}
		for _, sr := range st.NetworkIn {
			v.Commands = append(v.Commands, peerCommand{Figure: fmt.Sprintf("network in, %d stream(s): %s (%s)", sr.Streams, metric.FormatByteRate(sr.BytesPerSecond), sr.Source),
				Where: "here (with iperf3 -s on " + host + ")", Command: fmt.Sprintf("iperf3 -c %s -t 10 -P %d -R", host, sr.Streams)})
		}
		for _, s := range []struct {
			name, rw, where string
			r               *result.Rate
		}{{"source read", "read", "here", st.SourceRead}, {"source write", "write", "here", st.SourceWrite},
			{"target write", "write", "on " + host, st.TargetWrite}, {"target read", "read", "on " + host, st.TargetRead}} {
			if s.r == nil {
				continue
			}
			v.Commands = append(v.Commands, peerCommand{Figure: s.name + ": " + metric.FormatByteRate(s.r.BytesPerSecond) + " (" + s.r.Source + ", " + s.r.What + ")", Where: s.where,
				Command: "fio --name=" + strings.ReplaceAll(s.name, " ", "-") + " --directory=DIR --rw=" + s.rw + " --bs=1m --iodepth=8 --ioengine=io_uring --direct=1 --size=1g --time_based --runtime=5"})
		}
	case *result.ReplicaPlan:
		s := rep.ReplicaPlan.Stream
		v.What = "whether one stream per database carries the primary's log to the replica"
		v.How = fmt.Sprintf("one stream's capacity %s, limited by %s, at %s RTT", metric.FormatByteRate(s.Capacity), words.Limit(s.LimitedBy), dur(s.RTT))
		v.Commands = append(v.Commands, peerCommand{Figure: "one stream: " + metric.FormatByteRate(s.Capacity), Where: "here (with iperf3 -s on " + host + ")",
			Command: fmt.Sprintf("iperf3 -c %s -t 10", host)})
		if s.LinkStreams > 1 {
			v.Commands = append(v.Commands, peerCommand{Figure: fmt.Sprintf("%d streams: %s", s.LinkStreams, metric.FormatByteRate(s.Link)), Where: "here (with iperf3 -s on " + host + ")",
				Command: fmt.Sprintf("iperf3 -c %s -t 10 -P %d", host, s.LinkStreams)})
		}
	case *result.FleetNet:
		f := rep.FleetNet
		c := f.Config
		v.What = fmt.Sprintf("bulk TCP throughput from this host to every replica at once, %s to each, started together, as a primary ships its log", metric.Plural(int64(c.StreamsPerHost), "stream"))
		v.Between = fmt.Sprintf("%s → %s", here, metric.Plural(int64(len(f.Hosts)), "replica"))
		win := "the OS default window (autotuning)"
		if c.WindowBytes > 0 {
			win = "a " + metric.FormatBytes(c.WindowBytes) + " socket buffer"
		}
		v.How = fmt.Sprintf("%s, %s writes, %s; each replica's rate counted by its agent, the sum on the wire against this host's link", dur(c.Duration), metric.FormatBytes(c.BlockBytes), win)
		for i, h := range f.Hosts {
			if h.Stream == nil {
				continue
			}
			if i == maxPeerCommands {
				v.Commands = append(v.Commands, peerCommand{Figure: fmt.Sprintf("and %d more replicas", len(f.Hosts)-i), Where: "the same, at once"})
				break
			}
			cmd := fmt.Sprintf("iperf3 -c %s -t %s -l %d", text(hostOf(h.Name)), secondsArg(c.Duration), c.BlockBytes)
			if c.StreamsPerHost > 1 {
				cmd += " -P " + strconv.Itoa(c.StreamsPerHost)
			}
			if c.WindowBytes > 0 {
				cmd += " -w " + strconv.FormatInt(c.WindowBytes, 10)
			}
			v.Commands = append(v.Commands, peerCommand{Figure: text(h.Name) + ": " + metric.FormatBitRate(h.Stream.Throughput),
				Where: "here, every replica's at once (with iperf3 -s on each)", Command: cmd})
		}
	default:
		return nil // a database's own views, a model given by hand: no network figure to reproduce
	}
	return []netView{v}
}

// fioCommand is fio's job for one disk pattern, as bench/disk.sh maps
// them.
func fioCommand(d *result.Disk, p result.DiskPattern) string {
	rw := p.RW
	extra := ""
	if rw == "mix" {
		rw, extra = "randrw", fmt.Sprintf(" --rwmixread=%d", p.ReadPercent)
	}
	engine := "psync"
	switch d.Engine {
	case "io_uring":
		engine = "io_uring"
	case "iocp":
		engine = "windowsaio" // fio's overlapped I/O on a completion port
	}
	direct := 0
	if d.Direct {
		direct = 1
	}
	path := d.Path
	if d.Engine == "iocp" {
		path = strings.ReplaceAll(path, ":", `\:`) // fio on Windows: a colon separates names
	}
	target := "--filename=" + path
	if !d.Device {
		target = "--directory=" + path
	}
	cmd := fmt.Sprintf("fio --name=%s %s --size=%d --rw=%s%s --bs=%d --iodepth=%d --numjobs=%d --ioengine=%s --direct=%d --time_based --runtime=%s",
		slug(p.Name), target, d.FileBytes, rw, extra, p.BlockBytes, p.QueueDepth, max(p.Threads, 1), engine, direct, secondsArg(d.Config.Duration))
	if p.Threads > 1 {
		cmd += " --group_reporting"
	}
	switch p.Sync {
	case result.SyncFdatasync:
		cmd += " --fdatasync=1"
	case result.SyncDsync:
		cmd += " --sync=dsync"
	}
	if strings.Contains(p.RW, "write") && p.Sync != result.SyncNone {
		cmd += " --overwrite=1"
	}
	return cmd
}

// diskspdCommand is DiskSpd's run of one disk pattern measured by the
// iocp engine (Windows), "" for the rest: -o outstanding per thread on a
// completion port, -Su for FILE_FLAG_NO_BUFFERING, -Sh for it with
// FILE_FLAG_WRITE_THROUGH (dsync), -Sw for write-through alone. DiskSpd
// has no flush after each write, so a fdatasync pattern has fio's only.
func diskspdCommand(d *result.Disk, p result.DiskPattern) string {
	if d.Engine != "iocp" || d.Device || p.Sync == result.SyncFdatasync {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "diskspd -c%d -d%s -b%d -o%d -t%d", d.FileBytes, secondsArg(d.Config.Duration), p.BlockBytes, p.QueueDepth, max(p.Threads, 1))
	switch p.RW {
	case "randread", "randwrite", "mix":
		b.WriteString(" -r")
	default:
		b.WriteString(" -s") // -s: sequential, each thread its own stream
	}
	switch p.RW {
	case "write", "randwrite":
		b.WriteString(" -w100")
	case "mix":
		fmt.Fprintf(&b, " -w%d", 100-p.ReadPercent)
	}
	switch {
	case d.Direct && p.Sync == result.SyncDsync:
		b.WriteString(" -Sh")
	case d.Direct:
		b.WriteString(" -Su")
	case p.Sync == result.SyncDsync:
		b.WriteString(" -Sw")
	}
	fmt.Fprintf(&b, " -L -Zr %s", strings.TrimRight(d.Path, `\`)+`\diskspd.dat`)
	return b.String()
}

func phaseWords(r result.StreamRun, here, there string) string {
	s := "1 stream"
	if r.Streams > 1 {
		s = strconv.Itoa(r.Streams) + " streams"
	}
	return s + " " + words.Way(r.Direction, here, there)
}

// maxPeerCommands bounds the commands of a fleet's replicas: the rest
// are the same with another host.
const maxPeerCommands = 10

func hostOf(target string) string {
	if h, _, err := net.SplitHostPort(target); err == nil {
		return h
	}
	if target == "" {
		return "HOST"
	}
	return target
}

// secondsArg is a duration as the tools take it: whole seconds (iperf3's
// -t, netperf's -l, fio's --runtime), at least 1; 10 when not known.
func secondsArg(s result.Seconds) string {
	v := s.D().Seconds()
	if v <= 0 {
		return "10"
	}
	return strconv.Itoa(max(1, int(math.Ceil(v-0.05))))
}

func orDot(s string) string { return orWord(s, "DIR") }

func orWord(s, w string) string {
	if s == "" {
		return w
	}
	return s
}

// factsView is one end's machine facts.
type factsView struct {
	Side  string
	Rows  [][2]string
	NICs  []nicView
	Notes []string
}

type nicView struct {
	Name, Driver, Firmware, MTU, Speed, Addresses, Offloads, Coalescing string
}

func factsOf(rep *result.Report, here, agent *result.Facts) []factsView {
	out := []factsView{oneEnd("this host (where narrows ran)", here, toolString(rep.Narrows))}
	if agent != nil || rep.Agent != "" {
		out = append(out, oneEnd("the agent's host ("+rep.Target+")", agent, rep.Agent))
	}
	return out
}

func oneEnd(side string, f *result.Facts, version string) factsView {
	v := factsView{Side: side}
	add := func(k, val string) {
		if val != "" {
			v.Rows = append(v.Rows, [2]string{k, val})
		}
	}
	if f == nil {
		add("narrows", version)
		v.Notes = append(v.Notes, "no facts recorded")
		return v
	}
	if f.Narrows != "" {
		version = f.Narrows
	}
	add("hostname", f.Hostname)
	add("OS", f.OS)
	add("kernel", f.Kernel)
	cpu := f.CPU
	if f.Cores > 0 {
		cpu += fmt.Sprintf(" (%d logical cores)", f.Cores)
	}
	add("CPU", strings.TrimSpace(cpu))
	if f.MemoryBytes > 0 {
		add("memory", metric.FormatBytes(f.MemoryBytes))
	}
	if t := f.TCP; t != nil {
		add("TCP congestion control", t.CongestionControl)
		if t.RmemMax > 0 {
			add("tcp_rmem max", metric.FormatBytes(t.RmemMax))
		}
		if t.WmemMax > 0 {
			add("tcp_wmem max", metric.FormatBytes(t.WmemMax))
		}
		add("receive window auto-tuning", t.AutoTuning)
	}
	add("narrows", version)
	for _, n := range f.Interfaces {
		nv := nicView{Name: n.Name, Driver: strings.TrimSpace(n.Driver + " " + n.DriverVersion), Firmware: n.Firmware, Addresses: strings.Join(n.Addresses, ", ")}
		if n.MTU > 0 {
			nv.MTU = strconv.Itoa(n.MTU)
		}
		if n.SpeedMbps > 0 {
			nv.Speed = metric.FormatBitRate(float64(n.SpeedMbps) * 1e6)
		}
		var on, off []string
		for k, b := range n.Offloads {
			if b {
				on = append(on, k)
			} else {
				off = append(off, k)
			}
		}
		sort.Strings(on)
		sort.Strings(off)
		if len(on) > 0 {
			nv.Offloads = "on: " + strings.Join(on, ", ")
		}
		if len(off) > 0 {
			nv.Offloads = strings.TrimPrefix(nv.Offloads+"; off: "+strings.Join(off, ", "), "; ")
		}
		keys := make([]string, 0, len(n.Coalescing))
		for k := range n.Coalescing {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var co []string
		for _, k := range keys {
			co = append(co, k+"="+strconv.FormatInt(n.Coalescing[k], 10))
		}
		nv.Coalescing = strings.Join(co, ", ")
		v.NICs = append(v.NICs, nv)
	}
	for _, m := range f.Missing {
		v.Notes = append(v.Notes, "not known: "+m)
	}
	return v
}
