//go:build linux

package sysinfo

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/narrows/narrows/internal/result"
)

func hostFacts(f *result.Facts) {
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		f.Kernel = unix.ByteSliceToString(u.Release[:])
	} else {
		f.Missing = append(f.Missing, "kernel: "+err.Error())
	}
	if m := procField("/proc/cpuinfo", "model name"); m != "" {
		f.CPU = m
	} else {
		f.Missing = append(f.Missing, "cpu model: /proc/cpuinfo names none")
	}
	if kb, err := strconv.ParseInt(strings.TrimSuffix(procField("/proc/meminfo", "MemTotal"), " kB"), 10, 64); err == nil {
		f.MemoryBytes = kb << 10
	} else {
		f.Missing = append(f.Missing, "memory: /proc/meminfo has no MemTotal")
	}
	t := &result.TCPSettings{}
	if b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control"); err == nil {
		t.CongestionControl = strings.TrimSpace(string(b))
	}
	t.RmemMax, t.WmemMax = tcpBufferMax()
	f.TCP = t
}

// procField is the value of the first "key : value" line of a /proc file.
func procField(path, key string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func nicFacts(n *result.NIC) (missing []string) {
	sys := filepath.Join("/sys/class/net", n.Name)
	if b, err := os.ReadFile(filepath.Join(sys, "speed")); err == nil {
		if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && v > 0 {
			n.SpeedMbps = v
		}
	}
	if n.SpeedMbps == 0 {
		missing = append(missing, n.Name+": speed (the driver reports none: a virtual interface, or no link)")
	}
	if l, err := os.Readlink(filepath.Join(sys, "device", "driver")); err == nil {
		n.Driver = filepath.Base(l)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return append(missing, n.Name+": ethtool: "+err.Error())
	}
	defer unix.Close(fd)
	if d, err := unix.IoctlGetEthtoolDrvinfo(fd, n.Name); err == nil {
		// A virtual interface (veth, bridge, tun) has no device link but
		// names its driver here.
		if n.Driver == "" {
			n.Driver = unix.ByteSliceToString(d.Driver[:])
		}
		n.DriverVersion = unix.ByteSliceToString(d.Version[:])
		if fw := unix.ByteSliceToString(d.Fw_version[:]); fw != "" && fw != "N/A" {
			n.Firmware = fw
		}
	} else {
		missing = append(missing, n.Name+": driver version and firmware (ethtool: "+ethtoolErr(err)+")")
	}
	if n.Driver == "" {
		missing = append(missing, n.Name+": driver")
	}
	for name, cmd := range offloadCmds {
		v := ethtoolValue{Cmd: cmd[0]}
		if err := ethtool(fd, n.Name, unsafe.Pointer(&v)); err != nil {
			continue
		}
		if n.Offloads == nil {
			n.Offloads = map[string]bool{}
		}
		n.Offloads[name] = v.Data != 0
	}
	// LRO has no legacy get of its own: it is a bit of the flags.
	if v := (ethtoolValue{Cmd: unix.ETHTOOL_GFLAGS}); ethtool(fd, n.Name, unsafe.Pointer(&v)) == nil && n.Offloads != nil {
		n.Offloads["lro"] = v.Data&ethFlagLRO != 0
	}
	if n.Offloads == nil {
		missing = append(missing, n.Name+": offloads (ethtool: not supported by the driver)")
	}
	c := Coalescing{Cmd: unix.ETHTOOL_GCOALESCE}
	if err := ethtool(fd, n.Name, unsafe.Pointer(&c)); err == nil {
		n.Coalescing = map[string]int64{
			"rx-usecs": int64(c.RxUsecs), "rx-frames": int64(c.RxFrames),
			"tx-usecs": int64(c.TxUsecs), "tx-frames": int64(c.TxFrames),
			"adaptive-rx": int64(c.AdaptiveRx), "adaptive-tx": int64(c.AdaptiveTx),
		}
	} else {
		missing = append(missing, n.Name+": interrupt coalescing (ethtool: "+ethtoolErr(err)+")")
	}
	return missing
}

func ethtoolErr(err error) string {
	if errors.Is(err, unix.EOPNOTSUPP) {
		return "not supported by the driver"
	}
	return err.Error()
}

// ethFlagLRO is ETH_FLAG_LRO of ETHTOOL_GFLAGS (linux/ethtool.h).
const ethFlagLRO = 1 << 15

// ethtoolValue is struct ethtool_value, the legacy gets' answer.
type ethtoolValue struct {
	Cmd  uint32
	Data uint32
}

// Coalescing is struct ethtool_coalesce (linux/ethtool.h): cmd and 22
// __u32 fields, a NIC's interrupt coalescing as its driver keeps it (a
// field the driver does not keep reads 0).
type Coalescing struct {
	Cmd                       uint32
	RxUsecs, RxFrames         uint32
	RxUsecsIRQ, RxFramesIRQ   uint32
	TxUsecs, TxFrames         uint32
	TxUsecsIRQ, TxFramesIRQ   uint32
	StatsBlockUsecs           uint32
	AdaptiveRx, AdaptiveTx    uint32
	PktRateLow                uint32
	RxUsecsLow, RxFramesLow   uint32
	TxUsecsLow, TxFramesLow   uint32
	PktRateHigh               uint32
	RxUsecsHigh, RxFramesHigh uint32
	TxUsecsHigh, TxFramesHigh uint32
	RateSampleInterval        uint32
}

// ifreqData is struct ifreq with ifr_data: the ethtool ioctl's argument
// (x/sys/unix's Ifreq does not expose a data pointer).
type ifreqData struct {
	Name [unix.IFNAMSIZ]byte
	Data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// ethtool runs one SIOCETHTOOL command; data is the command's struct, its
// first field the command.
func ethtool(fd int, name string, data unsafe.Pointer) error {
	var ifr ifreqData
	if len(name) >= len(ifr.Name) {
		return unix.EINVAL
	}
	copy(ifr.Name[:], name)
	ifr.Data = data
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	if errno != 0 {
		return errno
	}
	return nil
}

// ReadCoalescing is dev's interrupt coalescing (ETHTOOL_GCOALESCE).
func ReadCoalescing(dev string) (Coalescing, error) {
	c := Coalescing{Cmd: unix.ETHTOOL_GCOALESCE}
	err := ethtoolDev(dev, unsafe.Pointer(&c))
	return c, err
}

// CoalescingOn is ReadCoalescing through sock, a socket of the network
// namespace dev is in (the testbed's line reads a host's device so).
func CoalescingOn(sock int, dev string) (Coalescing, error) {
	c := Coalescing{Cmd: unix.ETHTOOL_GCOALESCE}
	err := ethtool(sock, dev, unsafe.Pointer(&c))
	return c, err
}

// WriteCoalescing sets dev's interrupt coalescing to c (ETHTOOL_SCOALESCE;
// root): c is what ReadCoalescing read with the fields to change changed,
// as the kernel refuses a field the driver does not keep.
func WriteCoalescing(dev string, c Coalescing) error {
	c.Cmd = unix.ETHTOOL_SCOALESCE
	return ethtoolDev(dev, unsafe.Pointer(&c))
}

// ethtoolDev is one ethtool ioctl on dev, through a socket of this
// namespace opened for it.
func ethtoolDev(dev string, data unsafe.Pointer) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return ethtool(fd, dev, data)
}

// offloadCmds are the legacy ethtool get and set of each offload a host's
// facts read (set 0: none here); tso, gso and gro a test may turn on for
// its length (result.OffloadsUsed).
var offloadCmds = map[string][2]uint32{
	"tso":         {unix.ETHTOOL_GTSO, unix.ETHTOOL_STSO},
	"gso":         {unix.ETHTOOL_GGSO, unix.ETHTOOL_SGSO},
	"gro":         {unix.ETHTOOL_GGRO, unix.ETHTOOL_SGRO},
	"rx-checksum": {unix.ETHTOOL_GRXCSUM}, "tx-checksum": {unix.ETHTOOL_GTXCSUM}, "scatter-gather": {unix.ETHTOOL_GSG},
}

// ReadOffload says whether dev's offload name (tso, gso or gro) is on.
func ReadOffload(dev, name string) (bool, error) {
	cmd, ok := offloadCmds[name]
	if !ok || cmd[1] == 0 {
		return false, fmt.Errorf("no offload %q a test changes", name)
	}
	v := ethtoolValue{Cmd: cmd[0]}
	err := ethtoolDev(dev, unsafe.Pointer(&v))
	return v.Data != 0, err
}

// WriteOffload turns dev's offload name (tso, gso or gro) on or off
// (root). The kernel may keep it off where a feature it needs is (TSO
// without scatter-gather): the caller reads it again.
func WriteOffload(dev, name string, on bool) error {
	cmd, ok := offloadCmds[name]
	if !ok || cmd[1] == 0 {
		return fmt.Errorf("no offload %q a test changes", name)
	}
	v := ethtoolValue{Cmd: cmd[1]}
	if on {
		v.Data = 1
	}
	return ethtoolDev(dev, unsafe.Pointer(&v))
}
