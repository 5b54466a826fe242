package result

// Facts are what makes two runs comparable on one host: the machine, its
// OS, and the network interface the test's traffic used. Anything the OS
// does not tell is left empty (and Missing may say why).
type Facts struct {
	Hostname    string `json:"hostname,omitempty"`
	OS          string `json:"os"`               // linux, windows, darwin
	Kernel      string `json:"kernel,omitempty"` // e.g. 6.1.0-18-amd64, or Windows' build
	CPU         string `json:"cpu,omitempty"`    // model name
	Cores       int    `json:"cores,omitempty"`  // logical
	MemoryBytes int64  `json:"memory_bytes,omitempty"`
	// Interfaces are the network interfaces that carried the run's
	// traffic (the route to the peer), or every interface that is up
	// when that is not known.
	Interfaces []NIC `json:"interfaces,omitempty"`
	// TCP is the host's TCP settings that shape one stream.
	TCP     *TCPSettings `json:"tcp,omitempty"`
	Narrows string       `json:"narrows_version,omitempty"`
	Missing []string     `json:"missing,omitempty"`
}

// NIC is one network interface.
type NIC struct {
	Name          string   `json:"name"`
	Driver        string   `json:"driver,omitempty"`
	DriverVersion string   `json:"driver_version,omitempty"`
	Firmware      string   `json:"firmware,omitempty"`
	MTU           int      `json:"mtu,omitempty"`
	SpeedMbps     int64    `json:"speed_mbps,omitempty"`
	Addresses     []string `json:"addresses,omitempty"`
	// Offloads are the features the OS reports on or off (tso, gso, gro,
	// lro, rx-checksum, tx-checksum, ...).
	Offloads map[string]bool `json:"offloads,omitempty"`
	// Coalescing is interrupt coalescing as the driver reports it
	// (rx-usecs, rx-frames, adaptive-rx, ...).
	Coalescing map[string]int64 `json:"coalescing,omitempty"`
}

// SpeedIsLimit says the NIC's speed, as its driver reports it, is a rate
// its traffic can reach and not pass: a physical port's. A virtual
// interface's is a number its driver makes up (one stream ran 11-14
// Gbit/s over a veth pair that says 10 Gbit/s; a TUN device says 10
// Gbit/s on any line), and a paravirtual NIC's (virtio, vmxnet3, netvsc)
// is the hypervisor's word, not its switch's or the cloud's allowance.
func (n NIC) SpeedIsLimit() bool { return n.SpeedMbps > 0 && !madeUpSpeed[n.Driver] }

// madeUpSpeed are the drivers whose interfaces' speed is no limit.
var madeUpSpeed = map[string]bool{"veth": true, "tun": true, "bridge": true, "dummy": true, "vxlan": true, "macvlan": true,
	"ipvlan": true, "virtio_net": true, "vmxnet3": true, "hv_netvsc": true, "netvsc": true, "xen-netfront": true, "xen_netfront": true, "vif": true,
	"wireguard": true, "openvswitch": true}

// TCPSettings are the host's TCP knobs that matter to one stream.
type TCPSettings struct {
	CongestionControl string `json:"congestion_control,omitempty"`
	RmemMax           int64  `json:"rmem_max_bytes,omitempty"` // net.ipv4.tcp_rmem's maximum
	WmemMax           int64  `json:"wmem_max_bytes,omitempty"`
	// AutoTuning is Windows' receive window auto-tuning level.
	AutoTuning string `json:"autotuning_level,omitempty"`
}
