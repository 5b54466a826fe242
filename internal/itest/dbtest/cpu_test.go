package dbtest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// The machine these tests run on may be shared: a comparison of two tools
// is only fair when nothing else took the CPU from them. These read what
// the whole machine, the servers and the tools used, from /proc (Linux).

const hz = 100 // USER_HZ on every Linux this runs on

func procStatFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+2:])
}

func atoi(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }

// busyTicks is the machine's busy CPU time so far.
func busyTicks() int64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
	if len(f) < 9 {
		return 0
	}
	// user + nice + system: irq and softirq are left out, because
	// loopback's softirq work is charged there or to the task that caused
	// it depending on the kernel's accounting (see bench/net.sh).
	return atoi(f[1]) + atoi(f[2]) + atoi(f[3])
}

// treeTicks is a server's CPU time: the process, its reaped children, and
// its live children (PostgreSQL's backends).
func treeTicks(pid int) int64 {
	if pid == 0 {
		return 0
	}
	f := procStatFields(pid)
	if len(f) < 15 {
		return 0
	}
	total := atoi(f[11]) + atoi(f[12]) + atoi(f[13]) + atoi(f[14])
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g := procStatFields(c); len(g) > 13 && atoi(g[1]) == int64(pid) {
			total += atoi(g[11]) + atoi(g[12])
		}
	}
	return total
}

// otherCores runs cmd and returns how many cores everything but cmd and
// the server (pid) used meanwhile.
func otherCores(cmd *exec.Cmd, serverPid int) (float64, error) {
	b0, s0, t0 := busyTicks(), treeTicks(serverPid), time.Now()
	err := cmd.Run()
	wall := time.Since(t0).Seconds()
	b1, s1 := busyTicks(), treeTicks(serverPid)
	if cmd.ProcessState == nil || wall <= 0 {
		return 0, err
	}
	own := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	other := float64(b1-b0)/hz - float64(s1-s0)/hz - own
	return max(other, 0) / wall, err
}
