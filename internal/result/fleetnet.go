package result

// FleetNet is `narrows fleet net`: this host sends a stream (or
// Config.StreamsPerHost of them) to every agent of a fleet at once, as a
// primary ships its log to each replica over one connection per database
// (an availability group, a PostgreSQL primary's walsenders), all started
// together: what each replica receives while all do, and whether this
// host's link or a replica's path held them.
type FleetNet struct {
	Config FleetNetConfig `json:"config"`
	// Hosts are the replicas, in the order given: each its own figures,
	// or why it has none.
	Hosts []FleetNetHost `json:"hosts"`
	// Start is how together the streams began: each host's Start sent
	// after the instant they were released at, by this host's clock
	// (this host sends, so its clock is the only one that matters).
	// Absent when none began.
	Start *FleetStart `json:"start,omitempty"`
	// Total is the counted hosts' streams together.
	Total FleetNetTotal `json:"total"`
	// Links are this host's interfaces the streams left by (one, unless
	// the replicas are reached by different routes), each with its
	// streams' sum against its rate.
	Links []FleetNetLink `json:"links,omitempty"`
}

// FleetNetConfig is what was asked for.
type FleetNetConfig struct {
	Hosts          int `json:"hosts"`
	StreamsPerHost int `json:"streams_per_host"`
	// Direction is always forward: this host sends, as the primary does.
	Direction   string  `json:"direction"`
	Duration    Seconds `json:"duration_seconds"`
	BlockBytes  int64   `json:"block_bytes"`
	WindowBytes int64   `json:"window_bytes"` // 0: the OS's autotuning
	// AssumedNICRate is this host's link rate given by hand (--assume
	// nic=RATE), in bits per second on the wire; 0: none given.
	AssumedNICRate float64 `json:"assumed_nic_bits_per_second,omitempty"`
}

// FleetNetHost is one replica of the fleet.
type FleetNetHost struct {
	Name string `json:"name"` // as given: db7, db7:7447
	Addr string `json:"addr"`
	// Error says why the host has no figures, or why they are not
	// counted: it did not answer, refused, was not ready in time, or
	// failed mid-run.
	Error string `json:"error,omitempty"`
	// Interface is this host's interface its streams left by; SameHost:
	// the agent answered on this machine (no network crossed).
	Interface string `json:"interface,omitempty"`
	SameHost  bool   `json:"same_host,omitempty"`
	// StartedAfter is how long after the fleet's instant its Start was
	// sent, by this host's clock.
	StartedAfter *Seconds `json:"started_after_seconds,omitempty"`
	// Stream is its streams' run: the rate the replica received at, each
	// stream's, the sending TCP's round trip and retransmits.
	Stream *StreamRun `json:"stream,omitempty"`
	// Share is its rate over the median counted host's; 0 when it is
	// not counted.
	Share float64 `json:"median_share,omitempty"`
}

// Counted says the host's figures count in the fleet's: it ran to its
// end (or to the person's Ctrl-C, as every host did) without an error.
func (h FleetNetHost) Counted() bool { return h.Stream != nil && h.Error == "" }

// FleetNetTotal is the counted hosts' streams together.
type FleetNetTotal struct {
	Hosts   int `json:"hosts"`
	Streams int `json:"streams"`
	// Throughput is the payload the replicas received, summed;
	// WireThroughput the same with each segment's headers (what a NIC
	// carries: StreamRun.WireThroughput), summed over the hosts that gave
	// it.
	Throughput     float64 `json:"throughput_bits_per_second"`
	WireThroughput float64 `json:"wire_throughput_bits_per_second,omitempty"`
	// MedianHost is the median counted host's rate; Slowest and Fastest
	// the extremes.
	MedianHost float64 `json:"median_host_bits_per_second"`
	Slowest    float64 `json:"slowest_host_bits_per_second"`
	Fastest    float64 `json:"fastest_host_bits_per_second"`
}

// Where a link's rate came from.
const (
	RateFromNIC     = "nic"     // the NIC's speed, as its driver reports it, of a physical port
	RateFromAssumed = "assumed" // given by hand: --assume nic=RATE
)

// FleetNetLink is one interface of this host the streams left by, with
// the counted hosts' streams on it.
type FleetNetLink struct {
	Interface string `json:"interface"` // "" when not known
	Hosts     int    `json:"hosts"`
	// SameHost: every replica on it answered on this machine (no NIC
	// carried their streams).
	SameHost bool `json:"same_host,omitempty"`
	// Throughput and WireThroughput are its hosts' sums (FleetNetTotal).
	Throughput     float64 `json:"throughput_bits_per_second"`
	WireThroughput float64 `json:"wire_throughput_bits_per_second,omitempty"`
	// Driver and Speed are the NIC's as the OS reports them (facts).
	Driver string  `json:"driver,omitempty"`
	Speed  float64 `json:"speed_bits_per_second,omitempty"`
	// Rate is what the link carries at most, on the wire: a physical
	// NIC's speed, or as given (RateFrom); 0 when not known, and
	// RateUnknown says why (a virtual interface's speed is a number its
	// driver makes up, not a limit).
	Rate        float64 `json:"rate_bits_per_second,omitempty"`
	RateFrom    string  `json:"rate_from,omitempty"`
	RateUnknown string  `json:"rate_unknown,omitempty"`
	// Share is WireThroughput over Rate (0 when the rate is not known).
	Share float64 `json:"rate_share,omitempty"`
}
