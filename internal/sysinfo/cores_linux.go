package sysinfo

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of /proc/stat's times: USER_HZ, 100 on every Linux
// architecture narrows builds for (the kernel's ABI, whatever its HZ).
const userHZ = 100

// coreTimes reads /proc/stat's cpuN lines: user nice system idle iowait
// irq softirq steal (guest and guest_nice are within user and nice).
func coreTimes() ([]coreTime, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil, err
	}
	return parseProcStat(b)
}

func parseProcStat(b []byte) ([]coreTime, error) {
	var out []coreTime
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		if len(f) < 9 {
			return nil, fmt.Errorf("/proc/stat: %s has %d fields, not the 8 times of Linux 2.6.11 and later", f[0], len(f)-1)
		}
		id, err := strconv.Atoi(f[0][3:])
		if err != nil || id < 0 {
			return nil, fmt.Errorf("/proc/stat: a CPU named %.20q", f[0])
		}
		var v [8]time.Duration
		for i := range v {
			n, err := strconv.ParseUint(f[i+1], 10, 63)
			if err != nil {
				return nil, fmt.Errorf("/proc/stat: %s: %w", f[0], err)
			}
			v[i] = time.Duration(n) * (time.Second / userHZ)
		}
		out = append(out, coreTime{ID: id, User: v[0] + v[1], System: v[2], Idle: v[3] + v[4], IRQ: v[5], SoftIRQ: v[6], Steal: v[7]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("/proc/stat: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("/proc/stat lists no CPU")
	}
	return out, nil
}
