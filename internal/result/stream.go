package result

import (
	"fmt"
	"slices"
	"strings"
)

// Stream is the summary of `narrows net stream`.
type Stream struct {
	Config StreamConfig `json:"config"`
	// Throughput is the headline: the single-stream receiver throughput of
	// the first run (forward, unless only reverse was asked for).
	Throughput float64     `json:"throughput_bits_per_second"`
	Runs       []StreamRun `json:"runs"`
	// Comparison is present when both one stream and N streams ran.
	Comparison *Comparison `json:"comparison,omitempty"`
	// SameHost is true when the agent ran on this machine (a loopback
	// address, or the machine's own address at both ends): the streams
	// crossed no network, and their rate is the machine's, not a link's.
	SameHost bool `json:"same_host,omitempty"`
	// Buffers are the TCP buffer maxima of both ends, when known: what
	// autotuning may grow a window to, on a path where it has not yet.
	Buffers *StreamBuffers `json:"tcp_buffers,omitempty"`
	// Steering is --try-rps's change, when asked for: the steered runs
	// (PhaseSteered) ran with it, or Error says why there are none.
	Steering *Steering `json:"steering,omitempty"`
	// Offloads is --try-offloads' change, when asked for: the runs of
	// PhaseOffloads ran with it, or Why says why there are none.
	Offloads *OffloadTry `json:"offloads_try,omitempty"`
}

// StreamBuffers are the TCP buffer maxima of the two ends (Linux
// net.ipv4.tcp_rmem and tcp_wmem, their third field); 0: not known (not
// Linux, or an agent that does not tell).
type StreamBuffers struct {
	ClientRmemMax int64  `json:"client_tcp_rmem_max_bytes,omitempty"`
	ClientWmemMax int64  `json:"client_tcp_wmem_max_bytes,omitempty"`
	AgentRmemMax  int64  `json:"agent_tcp_rmem_max_bytes,omitempty"`
	AgentWmemMax  int64  `json:"agent_tcp_wmem_max_bytes,omitempty"`
	AgentOS       string `json:"agent_os,omitempty"`
	ClientOS      string `json:"client_os,omitempty"`
	// The same settings' first two fields (min, default), when known: a
	// command that raises a maximum keeps them.
	ClientRmemLow []int64 `json:"client_tcp_rmem_min_default_bytes,omitempty"`
	ClientWmemLow []int64 `json:"client_tcp_wmem_min_default_bytes,omitempty"`
	AgentRmemLow  []int64 `json:"agent_tcp_rmem_min_default_bytes,omitempty"`
	AgentWmemLow  []int64 `json:"agent_tcp_wmem_min_default_bytes,omitempty"`
}

// StreamConfig is what was asked for.
type StreamConfig struct {
	Direction  string  `json:"direction"`
	Streams    int     `json:"streams"`
	Duration   Seconds `json:"duration_seconds"`
	Interval   Seconds `json:"interval_seconds"`
	BlockBytes int64   `json:"block_bytes"`
	// WindowBytes is the requested socket buffer size; 0 is the OS default.
	WindowBytes int64 `json:"window_bytes"`
	// TryRPS asks for single streams in pairs, as is and with the
	// receiving end's protocol work steered off its busiest core, in turn
	// (--try-rps): Stream.Steering.
	TryRPS bool `json:"try_rps,omitempty"`
	// TryOffloads asks for single streams in pairs, as is and with the
	// offloads each end's part uses turned on where off, in turn
	// (--try-offloads): Stream.Offloads.
	TryOffloads bool `json:"try_offloads,omitempty"`
}

// Phases of a stream run.
const (
	PhaseSingle   = "single"
	PhaseParallel = "parallel"
	// PhaseSteered is one stream more, with the receiving end's packet
	// work moved off the core that did it (Stream.Steering).
	PhaseSteered = "steered"
	// PhaseOffloads is one stream more, with the offloads each end's part
	// uses turned on where they were off (Stream.Offloads).
	PhaseOffloads = "offloads"
	// PhaseAsIs is one stream as is between a try's runs: a try is
	// judged on pairs of runs, as is and tried, in turn (TryGain).
	PhaseAsIs = "as_is"
)

// TryGainAt is the tried stream's rate over the stream's as is at which
// a try (--try-rps, --try-offloads) is called a gain: one stream differs
// from the next by up to 5-8% on this project's machines.
const TryGainAt = 1.10

// A try's pairs of runs: at least MinTryPairs before it is judged, at
// most MaxTryPairs. On this project's 2-vCPU VMs the ratios of
// stream/packet-core's pairs of 2-second runs (eleven, 2026-11-29) lay
// at 0.98-1.19, a standard deviation of 0.066 in their logarithms, and
// stream/offloads-off's six at 1.81-2.34 (0.086): three pairs told
// offloads-off's 2.06× and 2.12× and a rate-bound line's none at all;
// packet-core's 1.10-1.11× took five and six.
const (
	MinTryPairs = 3
	MaxTryPairs = 8
)

// A try's verdicts (TryGain.Verdict).
const (
	// TryHelped: the tried runs carried more than the runs as is, the
	// difference real (its 95% interval above 1×) and TryGainAt or more.
	TryHelped = "helped"
	// TryNoGain: the gain is clearly under TryGainAt (its 95% interval's
	// top below it).
	TryNoGain = "no_gain"
	// TryUnjudged: neither, when the pairs ran out or the run ended.
	TryUnjudged = "unjudged"
)

// TryGain is a try's judgement: single streams in pairs, one as is and
// one tried, in turn (as is first in the first pair, whose run as is is
// the single stream's; then tried first, then as is first, ...), until
// the gain is told from noise or the pairs run out: never a finding
// from one pair.
type TryGain struct {
	Verdict string    `json:"verdict"`
	Pairs   []TryPair `json:"pairs"`
	// Ratio is the geometric mean of the pairs' tried / as-is rates;
	// RatioLow and RatioHigh its 95% interval (Student's t on their
	// logarithms), 0 with fewer than two pairs.
	Ratio     float64 `json:"ratio"`
	RatioLow  float64 `json:"ratio_low,omitempty"`
	RatioHigh float64 `json:"ratio_high,omitempty"`
	// Why says why it is unjudged.
	Why string `json:"why,omitempty"`
}

// TryPair is one pair of a try's runs: the receivers' rates, bit/s.
type TryPair struct {
	AsIs  float64 `json:"as_is_bits_per_second"`
	Tried float64 `json:"tried_bits_per_second"`
}

// Means are the pairs' mean rates as is and tried.
func (g *TryGain) Means() (asIs, tried float64) {
	for _, p := range g.Pairs {
		asIs += p.AsIs / float64(len(g.Pairs))
		tried += p.Tried / float64(len(g.Pairs))
	}
	return asIs, tried
}

// OffloadTry is what --try-offloads changed for its runs (PhaseOffloads),
// at each end: the sender's segmentation offloads (tso, gso) and the
// receiver's coalescing of segments (gro), each turned on where it was
// off, and put back after. Why says why nothing was tried.
type OffloadTry struct {
	Why     string          `json:"why,omitempty"`
	Changes []OffloadChange `json:"changes,omitempty"`
	// Gain is the try's pairs of runs and its verdict (nil: nothing
	// tried, or a run saved by a narrows that ran one pair).
	Gain *TryGain `json:"gain,omitempty"`
}

// OffloadChange is what a test turned on of one end's offloads for its
// length, and whether it was put back.
type OffloadChange struct {
	End       string `json:"end"`  // EndClient or EndAgent
	Role      string `json:"role"` // RoleSending or RoleReceiving
	Interface string `json:"interface,omitempty"`
	// On are the offloads turned on for the test; empty when every one
	// the role uses was on already.
	On       []string `json:"on,omitempty"`
	Restored bool     `json:"restored,omitempty"`
	// Error says what failed while putting them back, or that another
	// program turned one off while the test ran.
	Error string `json:"error,omitempty"`
}

// The parts an end plays in a stream.
const (
	RoleSending   = "sending"
	RoleReceiving = "receiving"
)

// OffloadsUsed are the offloads a try turns on for each role, as ethtool
// names them: no other name is taken from an agent.
var OffloadsUsed = map[string][]string{RoleSending: {"tso", "gso"}, RoleReceiving: {"gro"}}

// Check refuses a change from an agent that names a part a stream does
// not have, or an offload that part does not use.
func (c *OffloadChange) Check() error {
	used, ok := OffloadsUsed[c.Role]
	if !ok {
		return fmt.Errorf("offloads of a %q end: a stream's ends are sending and receiving", c.Role)
	}
	for _, n := range c.On {
		if !slices.Contains(used, n) {
			return fmt.Errorf("offload %q: a %s end's try turns on %s only", n, c.Role, strings.Join(used, ", "))
		}
	}
	return nil
}

// Changed says whether the try changed anything at any end.
func (t *OffloadTry) Changed() bool {
	for _, c := range t.Changes {
		if len(c.On) > 0 {
			return true
		}
	}
	return false
}

// Steering is what --try-rps changed at the receiving end for each
// steered run, and whether it was put back: the receive's protocol work
// (Linux's RPS, each receive queue's rps_cpus) moved off the core that
// was busiest in the single stream's run.
type Steering struct {
	End string `json:"end"` // EndClient or EndAgent: the receiving end
	// Error says why it was not tried (the agent does not allow it, not
	// root, not Linux), what failed while putting it back, or (Restored
	// too) that another program changed it while the test ran.
	Error     string `json:"error,omitempty"`
	Interface string `json:"interface,omitempty"`
	Queues    int    `json:"queues,omitempty"`   // receive queues changed
	OffCore   int    `json:"off_core"`           // the core it was moved off
	CPUs      string `json:"cpus,omitempty"`     // where it went, as the kernel lists CPUs: "1-3"
	Mask      string `json:"mask,omitempty"`     // the rps_cpus written
	Before    string `json:"before,omitempty"`   // the first queue's rps_cpus before: 0 is no steering
	Restored  bool   `json:"restored,omitempty"` // every queue's rps_cpus written back
	// Gain is the try's pairs of runs and its verdict (nil: nothing
	// tried, or a run saved by a narrows that ran one pair).
	Gain *TryGain `json:"gain,omitempty"`
}

// The ends of a run.
const (
	EndClient = "client"
	EndAgent  = "agent"
)

// StreamRun is one direction of one phase.
type StreamRun struct {
	Phase     string `json:"phase"`
	Direction string `json:"direction"` // forward: client to agent; reverse: agent to client
	Streams   int    `json:"streams"`
	// Duration is the receiver's: from start to the last byte received.
	Duration      Seconds   `json:"duration_seconds"`
	SentBytes     int64     `json:"sent_bytes"`
	ReceivedBytes int64     `json:"received_bytes"`
	Throughput    float64   `json:"throughput_bits_per_second"` // receiver's
	PerStream     []float64 `json:"per_stream_bits_per_second"`
	// WireThroughput estimates the line rate these bytes used: the payload
	// received, each segment (MSS from TCP_INFO) with its link, IP and TCP
	// headers (HeaderBytes); not what was sent again, which a full queue
	// may have dropped before the line (a lower bound, then), of which
	// LinkHeaderBytes the link's (14 on Ethernet, 0 on a TUN device).
	WireThroughput  float64 `json:"wire_throughput_bits_per_second,omitempty"`
	HeaderBytes     int64   `json:"header_bytes_per_segment,omitempty"`
	LinkHeaderBytes int64   `json:"link_header_bytes_per_segment,omitempty"`

	TCP *TCPSummary `json:"tcp,omitempty"`
	// TCPUnavailable says why there is no TCP figure (e.g. not Linux).
	TCPUnavailable string `json:"tcp_unavailable,omitempty"`

	CPU CPU `json:"cpu"`
	// Cores is how each end's cores spent the run, from the system's own
	// per-CPU counters (nil where the end cannot read them).
	Cores *Cores `json:"cores,omitempty"`
	// Stopped says why the run ended early, if it did.
	Stopped string `json:"stopped,omitempty"`
}

// TCPSummary is the sender side's TCP state over a run.
type TCPSummary struct {
	Side        string  `json:"side"` // which end sent: client or agent
	RTT         Seconds `json:"rtt_seconds"`
	MinRTT      Seconds `json:"min_rtt_seconds"`
	MSSBytes    int64   `json:"mss_bytes"`
	MaxCwnd     int64   `json:"max_cwnd_bytes"`
	SndWndBytes int64   `json:"peer_window_bytes"`
	Retransmits int64   `json:"retransmits"`
	// RetransRatio is retransmitted bytes over bytes sent.
	RetransRatio float64 `json:"retransmit_ratio"`
	// RwndLimited and SndbufLimited are shares (0..1) of the time with
	// data in flight that the sender was stalled on the receiver's window
	// or on its own send buffer.
	RwndLimited   float64 `json:"rwnd_limited_ratio"`
	SndbufLimited float64 `json:"sndbuf_limited_ratio"`
	// StallsUnknown: the sender's system does not report stall times
	// (Windows before 1809), so the two shares above are not measured.
	StallsUnknown bool `json:"stalls_unknown,omitempty"`
	// BDP is throughput × RTT: the bytes that must be in flight.
	BDPBytes int64 `json:"bdp_bytes"`

	// The run split at the end of its start-up, so that slow start
	// overflowing a queue once is not read as loss on the line: the
	// start-up is the first interval and those after it that still had
	// retransmits, up to half the run; the steady state is the rest.
	// SteadyIntervals is 0 when the run was too short to split (or was
	// saved by an older narrows).
	StartupEnd         Seconds `json:"startup_end_seconds,omitempty"`
	StartupRetransmits int64   `json:"startup_retransmits,omitempty"`
	// SteadyIntervals counts the steady state's whole intervals, and
	// SteadyLossIntervals those of them with retransmits; the ratio is
	// the steady state's bytes sent again over its bytes sent.
	SteadyIntervals     int     `json:"steady_intervals,omitempty"`
	SteadyLossIntervals int     `json:"steady_intervals_with_retransmits,omitempty"`
	SteadyRetransRatio  float64 `json:"steady_retransmit_ratio,omitempty"`
}

// CPU is the CPU each end used during a run, in percent of one core.
type CPU struct {
	Local     float64 `json:"local_percent_of_core"`
	Remote    float64 `json:"remote_percent_of_core"`
	Available bool    `json:"available"`
	// LocalLimitCores is the CPU limit this end ran under (its cgroup's
	// quota ÷ period: a container's or a service's CPU limit), in cores;
	// absent when there is none. LocalThrottledShare is the share of the
	// limit's periods during the run in which this end used up its quota
	// and was held off the CPU.
	LocalLimitCores     float64 `json:"local_cpu_limit_cores,omitempty"`
	LocalThrottledShare float64 `json:"local_cpu_throttled_share,omitempty"`
}

// Cores is each end's busiest core over a run (Local this end's, Remote
// the agent's); RemoteMissing says why the agent's is absent.
type Cores struct {
	Local         *CoreLoad `json:"local,omitempty"`
	Remote        *CoreLoad `json:"remote,omitempty"`
	RemoteMissing string    `json:"remote_missing,omitempty"`
}

// CoreLoad is how one machine's cores spent a run, as its system counts
// per CPU (Linux /proc/stat; Windows' processor performance counters):
// the whole machine's, whatever else it ran. It names the busiest core,
// split, because a stream's packets are handled on one core at a time
// (one flow hashes to one receive queue, whose interrupt, and the
// protocol work after it, land on one CPU): that core, not the link, can
// be what sets one stream's rate. Shares are of that core's time over
// the run, 0..1.
type CoreLoad struct {
	OS    string `json:"os"`    // linux or windows: what packet work is called
	Cores int    `json:"cores"` // CPUs the system counted
	Core  int    `json:"busiest_core"`
	// Busy is its share not idle (nor waiting on I/O).
	Busy   float64 `json:"busy_share"`
	User   float64 `json:"user_share"`
	System float64 `json:"system_share"`
	// IRQ is hardware interrupts; SoftIRQ is the work they defer (Linux's
	// softirqs, Windows' DPCs): receiving and sending packets, mostly.
	IRQ     float64 `json:"irq_share"`
	SoftIRQ float64 `json:"softirq_share"`
	// Steal is time a hypervisor ran something else while this virtual
	// CPU wanted to run.
	Steal float64 `json:"steal_share"`
	// OthersBusy is the other cores' mean busy share.
	OthersBusy float64 `json:"others_busy_share"`
	// NIC is the interface the run's traffic crossed at this end, and
	// NICInterrupts the interrupts of its queues the busiest core took
	// (Linux; none on a virtual interface, which has no interrupts),
	// most first: how a NIC's receive lands on this core.
	NIC           string    `json:"nic,omitempty"`
	NICInterrupts []CoreIRQ `json:"nic_interrupts,omitempty"`
	// NUMA is where the busiest core and the NIC sit, on a machine of
	// more than one NUMA node (Linux); nil on one node or where unknown.
	NUMA *CoreNUMA `json:"numa,omitempty"`
	// MHz is the busiest core's clock as its OS reported it at the run's
	// end (Linux: cpufreq's current frequency, else /proc/cpuinfo's); 0
	// where it does not say. With the bytes moved, cycles a byte.
	MHz float64 `json:"mhz,omitempty"`
}

// CoreNUMA is the busiest core's NUMA node against its NIC's.
type CoreNUMA struct {
	Nodes    int `json:"nodes"`     // NUMA nodes online
	CoreNode int `json:"core_node"` // the busiest core's
	NICNode  int `json:"nic_node"`  // the NIC's device's; -1: the device does not say (a virtual interface)
}

// CoreIRQ is one of a NIC's interrupts as one core took it.
type CoreIRQ struct {
	IRQ       int     `json:"irq"`
	Name      string  `json:"name"` // its queue, as the driver names it: "eth0-TxRx-3", "virtio2-input.0"
	PerSecond float64 `json:"per_second"`
}

// MaxCoreIRQs bounds the interrupts named for one core.
const MaxCoreIRQs = 4

// Packet is the share of the core's time spent on packets: interrupts
// and the work they defer.
func (c *CoreLoad) Packet() float64 { return c.IRQ + c.SoftIRQ }

// PacketWork names that work as the core's system does.
func (c *CoreLoad) PacketWork() string {
	if c.OS == "windows" {
		return "DPCs and interrupts"
	}
	return "softirq and interrupts"
}

// Check refuses a load no machine could have given (an agent's is
// untrusted): shares outside 0..1 or summing past the whole, a core
// outside the count, more cores than any machine has.
func (c *CoreLoad) Check() error {
	for _, s := range []float64{c.Busy, c.User, c.System, c.IRQ, c.SoftIRQ, c.Steal, c.OthersBusy} {
		if !(s >= 0 && s <= 1) { // NaN fails too
			return fmt.Errorf("a core's share of %g is outside 0..1", s)
		}
	}
	switch sum := c.User + c.System + c.Packet() + c.Steal; {
	case sum > c.Busy+0.01:
		return fmt.Errorf("the core's parts (%.3f) add to more than its busy share (%.3f)", sum, c.Busy)
	case c.Cores < 1 || c.Cores > MaxCores:
		return fmt.Errorf("%d cores: a machine has 1 to %d", c.Cores, MaxCores)
	case c.Core < 0 || c.Core >= MaxCores:
		// Its number, not its place: Linux numbers the CPUs online
		// with gaps where one is offline.
		return fmt.Errorf("a core numbered %d: a machine numbers its CPUs 0 to %d", c.Core, MaxCores-1)
	case c.OS != "linux" && c.OS != "windows":
		return fmt.Errorf("cores counted by %.16q, which narrows does not read", c.OS)
	case len(c.NICInterrupts) > MaxCoreIRQs || len(c.NIC) > 64:
		return fmt.Errorf("%d interrupts named for a core, of an interface named in %d bytes: at most %d, in 64", len(c.NICInterrupts), len(c.NIC), MaxCoreIRQs)
	}
	for _, q := range c.NICInterrupts {
		if q.IRQ < 0 || len(q.Name) > 64 || !(q.PerSecond > 0 && q.PerSecond < 1e8) {
			return fmt.Errorf("an interrupt %d of %d bytes' name at %g a second: no machine takes that", q.IRQ, len(q.Name), q.PerSecond)
		}
	}
	if !(c.MHz >= 0 && c.MHz < 1e5) {
		return fmt.Errorf("a core at %g MHz: no processor runs so", c.MHz)
	}
	if n := c.NUMA; n != nil && (n.Nodes < 2 || n.Nodes > MaxNUMANodes || n.CoreNode < 0 || n.CoreNode >= MaxNUMANodes || n.NICNode < -1 || n.NICNode >= MaxNUMANodes) {
		return fmt.Errorf("NUMA nodes %d, the core's %d, the NIC's %d: Linux numbers at most %d nodes", n.Nodes, n.CoreNode, n.NICNode, MaxNUMANodes)
	}
	return nil
}

// MaxNUMANodes bounds a machine's NUMA nodes (Linux's NODES_SHIFT is at
// most 10).
const MaxNUMANodes = 1024

// MaxCores bounds the CPUs a machine reports (Windows' and Linux's own
// limits are 2,048 and 8,192).
const MaxCores = 8192

// Comparison sets the single stream against N parallel streams.
type Comparison struct {
	Direction string  `json:"direction"`
	Single    float64 `json:"single_stream_bits_per_second"`
	Aggregate float64 `json:"aggregate_bits_per_second"`
	Streams   int     `json:"streams"`
	Ratio     float64 `json:"aggregate_to_single_ratio"`
}
