package result

// Loaded is `narrows net rr --under-load`: round trips on a connection of
// their own, idle and then while streams fill the path, and the kernel's
// round-trip time on the loaded connections themselves.
type Loaded struct {
	Config LoadedConfig `json:"config"`
	// Idle and Loaded are the round trips on their own connection,
	// nothing else running and then under the load (after its warm-up).
	Idle   LoadedPhase `json:"idle"`
	Loaded LoadedPhase `json:"loaded"`
	// Rise is what the load added to the median round trip: the queue
	// that built up on the way (loaded p50 − idle p50).
	Rise Seconds `json:"rise_seconds"`
	// Handshake is the TCP handshake of the loaded phase's connection,
	// opened while the load ran (the responsiveness draft's tcp_f).
	Handshake Seconds `json:"handshake_seconds"`
	// Self is the smoothed RTT the senders' kernels held on the loaded
	// connections (TCP_INFO, sampled each interval after the warm-up):
	// what a replication stream's own acknowledgements wait. The draft
	// allows it in place of requests on the load-generating connections.
	Self        Seconds `json:"self_rtt_seconds"`
	SelfSamples int     `json:"self_samples"`
	// Throughput is the load's, all its streams together, after its
	// warm-up; Retransmits its senders' retransmitted segments.
	Throughput  float64 `json:"load_throughput_bits_per_second"`
	Retransmits int64   `json:"load_retransmits"`
	// Responsiveness is round trips per minute as the IETF draft
	// "Responsiveness under Working Conditions" defines it (TCP-only, the
	// slowest 5% of each probe kind trimmed): under the load, and idle
	// (the same formula on the idle round trips, for contrast).
	Responsiveness     float64 `json:"responsiveness_rpm"`
	IdleResponsiveness float64 `json:"idle_responsiveness_rpm"`
	// CPULimitCores is the CPU limit this end ran under (its cgroup's
	// quota ÷ period: a container's or a service's), absent with none;
	// IdleThrottledShare and LoadedThrottledShare are the shares of the
	// limit's periods in which it used up its quota and was held off the
	// CPU, during the idle round trips and the loaded ones.
	CPULimitCores        float64 `json:"cpu_limit_cores,omitempty"`
	IdleThrottledShare   float64 `json:"idle_cpu_throttled_share,omitempty"`
	LoadedThrottledShare float64 `json:"loaded_cpu_throttled_share,omitempty"`
	Stopped              string  `json:"stopped,omitempty"`
}

// LoadedConfig is what was asked for.
type LoadedConfig struct {
	Streams       int     `json:"load_streams"`
	Direction     string  `json:"load_direction"` // DirUp, DirDown or "both"
	RequestBytes  int64   `json:"request_bytes"`
	ResponseBytes int64   `json:"response_bytes"`
	Idle          Seconds `json:"idle_seconds"`
	Warmup        Seconds `json:"warmup_seconds"`
	Loaded        Seconds `json:"loaded_seconds"`
	Queries       int64   `json:"queries"`
}

// LoadedPhase is one phase's round trips.
type LoadedPhase struct {
	RoundTrips int64 `json:"round_trips"`
	Latency
	// Trimmed is the mean of the fastest 95% (the draft's trimmed mean).
	Trimmed Seconds `json:"trimmed_mean_seconds"`
}

// DirBoth is a load in both directions at once.
const DirBoth = "both"
