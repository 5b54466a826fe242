package words

// nicKinds are the drivers of interfaces that are not a physical NIC's
// own port, and what each means for a stream's figures.
var nicKinds = map[string]string{
	"virtio_net":   "a paravirtual NIC (virtio: KVM, QEMU, Proxmox, most clouds' older instances): each packet also crosses the hypervisor's virtual switch, in host threads (vhost) these counters do not see, and a busy host or neighbour shows as steal time",
	"vmxnet3":      "a paravirtual NIC (VMware's vmxnet3): each packet also crosses the ESXi virtual switch, in host work these counters do not see; its interrupt coalescing is the VM's advanced setting (ethernetX.coalescingScheme)",
	"hv_netvsc":    "a paravirtual NIC (Hyper-V's netvsc): each packet also crosses the Hyper-V switch in the parent partition, unless Accelerated Networking (SR-IOV) gives the VM a virtual function beside it",
	"netvsc":       "a paravirtual NIC (Hyper-V's netvsc): each packet also crosses the Hyper-V switch in the parent partition, unless Accelerated Networking (SR-IOV) gives the VM a virtual function beside it",
	"xen_netfront": "a paravirtual NIC (Xen's netfront): each packet also crosses dom0's backend, in work these counters do not see",
	"vif":          "a paravirtual NIC (Xen's netfront): each packet also crosses dom0's backend, in work these counters do not see",
	"ena":          "a cloud NIC (AWS ENA, an SR-IOV device the instance drives itself): close to a physical NIC's figures, within the instance type's per-flow and bandwidth allowances",
	"gve":          "a cloud NIC (Google's gVNIC): within the machine type's per-flow and egress allowances",
	"iavf":         "an SR-IOV virtual function (Intel): the NIC's own queues given to this VM, close to a physical NIC's figures",
	"ixgbevf":      "an SR-IOV virtual function (Intel): the NIC's own queues given to this VM, close to a physical NIC's figures",
	"veth":         "a virtual interface inside this host (a container's or a namespace's): its packets never reach a NIC, so both ends' packet work is this machine's CPUs'",
	"bridge":       "a bridge inside this host: the NIC beneath it carries the packets",
	"tun":          "a TUN/TAP device (a VPN or a VM's tap): a program, not a NIC, moves its packets",
	"bonding":      "a bond of NICs: one stream hashes to one member, so its rate is one member's",
	"team":         "a team of NICs: one stream hashes to one member, so its rate is one member's",
}

// NICKind says what kind of interface driver drives, and what that
// means for a stream's figures; "" for a physical NIC's driver or one
// not known.
func NICKind(driver string) string { return nicKinds[driver] }
