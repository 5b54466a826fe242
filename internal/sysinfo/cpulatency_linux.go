//go:build linux

package sysinfo

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// CPULatencyDev is the kernel's CPU latency (PM QoS) request file: while
// a process holds it open with 0 written, a cpuidle governor picks only
// states of exit latency 0 (polling), as tuned's latency-performance
// profile and cyclictest hold it; read, it gives the latency every CPU
// is held to now (2,000,000,000 µs: no request). Only root may open it.
const CPULatencyDev = "/dev/cpu_dma_latency"

const cpuidleDir = "/sys/devices/system/cpu/cpuidle"

// HoldCPULatency asks the kernel to keep every CPU's wake-up latency at
// 0 µs until release (closing the file, or the process's end, withdraws
// the request).
func HoldCPULatency() (release func(), err error) {
	fd, err := unix.Open(CPULatencyDev, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if _, err := unix.Write(fd, binary.NativeEndian.AppendUint32(nil, 0)); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return func() { unix.Close(fd) }, nil
}

// CPULatencyHeld is the CPU latency every CPU is held to by the requests
// open now, in µs, -1 when none is held; ok is false when the file cannot
// be read (not root).
func CPULatencyHeld() (us int64, ok bool) {
	b, err := os.ReadFile(CPULatencyDev)
	if err != nil || len(b) < 4 {
		return 0, false
	}
	v := int64(int32(binary.NativeEndian.Uint32(b)))
	if v >= 2_000_000_000 {
		v = -1
	}
	return v, true
}

// CPUIdleDriver is Linux's cpuidle driver: "none" where the kernel has
// cpuidle but no driver registered (an idle CPU simply halts, and no
// latency request is read: some VMs of this project's kind), "" where it
// has no cpuidle at all. Only a driver's governor honours a CPU latency
// request.
func CPUIdleDriver() string {
	if d := readTrim(filepath.Join(cpuidleDir, "current_driver")); d != "" {
		return d
	}
	if _, err := os.Stat(cpuidleDir); err == nil {
		return "none"
	}
	return ""
}

// CPUIdleGoverned says whether a cpuidle driver would honour a CPU
// latency request here.
func CPUIdleGoverned() bool {
	d := CPUIdleDriver()
	return d != "" && d != "none"
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
