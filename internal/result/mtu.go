package result

// MTU is `narrows net mtu`: what packet size the path carries each way,
// against each end's interface MTU (mtu.go).
type MTU struct {
	// Here and Agent are the interfaces the two ends' routes to each other
	// leave by, with their MTU (0: not known).
	Here  MTUInterface `json:"here"`
	Agent MTUInterface `json:"agent"`
	// IPv6: the path is IPv6 (40-byte IP header; 60 with TCP).
	IPv6 bool `json:"ipv6,omitempty"`
	// MTUProbing is this host's net.ipv4.tcp_mtu_probing (-1: not Linux
	// or not readable): with 1 or 2 Linux recovers from a black hole by
	// itself, after seconds of stalled retransmits.
	MTUProbing int            `json:"tcp_mtu_probing"`
	Directions []MTUDirection `json:"directions"`
	// Search says why the largest size could not be searched for, when
	// it could not (this client cannot clamp its MSS).
	SearchUnavailable string `json:"search_unavailable,omitempty"`
	Stopped           string `json:"stopped,omitempty"`
}

// MTUInterface is one end's interface toward the other.
type MTUInterface struct {
	Name string `json:"name,omitempty"`
	MTU  int    `json:"mtu_bytes,omitempty"`
}

// MTUDirection is one direction of the path.
type MTUDirection struct {
	Direction string `json:"direction"` // DirUp (this host sends) or DirDown
	// FullSize: a burst of the largest segments the sender's kernel would
	// send arrived in time.
	FullSize bool `json:"full_size_passed"`
	// KernelPMTU is the path MTU the sender's kernel held after the burst
	// (from its interface, lowered by any ICMP "packet too big").
	KernelPMTU int `json:"kernel_path_mtu_bytes,omitempty"`
	// PathMTU is the largest IP packet seen to pass: when the full-size
	// burst arrived, the largest its segments made (KernelPMTU, or less
	// where the receiver's MSS held them below it), otherwise what the
	// search found (0: not found).
	PathMTU int `json:"path_mtu_bytes"`
	// BlackHole: full-size packets vanished while smaller ones passed,
	// and no ICMP lowered the sender's path MTU.
	BlackHole bool `json:"black_hole"`
	// Largest and Smallest bound the edge the search found: the largest
	// packet that passed and the smallest that vanished (bytes).
	LargestPassed  int `json:"largest_passed_bytes,omitempty"`
	SmallestFailed int `json:"smallest_failed_bytes,omitempty"`
	// Probes is how many test connections it took; Timeout each one's
	// wait for its burst.
	Probes  int     `json:"probes"`
	Timeout Seconds `json:"probe_timeout_seconds"`
}
