package result

// RR is the summary of `narrows net rr`.
type RR struct {
	Config RRConfig `json:"config"`
	// Connect is the TCP handshake of the measuring connection.
	Connect    Seconds `json:"connect_seconds"`
	RoundTrips int64   `json:"round_trips"`
	Duration   Seconds `json:"duration_seconds"`
	Rate       float64 `json:"round_trips_per_second"`
	Latency
	// KernelRTT is the kernel's smoothed RTT for the connection
	// (TCP_INFO), beside the application's full round trip: the
	// difference is what the two ends' stacks and programs add.
	KernelRTT      Seconds `json:"kernel_rtt_seconds,omitempty"`
	KernelMinRTT   Seconds `json:"kernel_min_rtt_seconds,omitempty"`
	Retransmits    int64   `json:"retransmits"`
	TCPUnavailable string  `json:"tcp_unavailable,omitempty"`
	CPU            CPU     `json:"cpu"`
	Stopped        string  `json:"stopped,omitempty"`
}

// RRConfig is what was asked for.
type RRConfig struct {
	RequestBytes  int64   `json:"request_bytes"`
	ResponseBytes int64   `json:"response_bytes"`
	Duration      Seconds `json:"duration_seconds,omitempty"`
	Count         int64   `json:"count,omitempty"`
	Rate          float64 `json:"rate_per_second,omitempty"`
	Interval      Seconds `json:"interval_seconds"`
	Queries       int64   `json:"queries"` // for the wire-time arithmetic
}
