package sysinfo

// CPULimit is the CPU bandwidth limit this process runs under (a
// container's CPU limit: Kubernetes' limits.cpu, docker --cpus, systemd's
// CPUQuota, all of them a cgroup's quota per period) and its enforcement
// counters: how many periods have passed under it and in how many the
// group used up its quota and was held off the CPU until the next.
// Cumulative; callers difference two readings.
type CPULimit struct {
	// Cores is the quota ÷ the period: 0.5 is half of one core. 0: no
	// limit (or none could be read).
	Cores float64
	// Periods and Throttled are the enforcement periods elapsed and those
	// in which the group was throttled, at the level that sets Cores.
	Periods, Throttled int64
}

// ThrottledShare is the share of the periods between two readings in
// which the group was held off the CPU for want of quota, or 0.
func (b CPULimit) ThrottledShare(a CPULimit) float64 {
	if b.Cores == 0 || a.Cores != b.Cores || b.Periods <= a.Periods {
		return 0
	}
	return float64(b.Throttled-a.Throttled) / float64(b.Periods-a.Periods)
}

// ReadCPULimit reads this process's CPU limit: the tightest quota of its
// cgroup and the cgroups above it. ErrUnavailable where there are none
// (not Linux).
func ReadCPULimit() (CPULimit, error) { return readCPULimit() }

// CPULimitSince reads the CPU limit now and returns a function that, at
// the end of a span, gives the limit in cores and the share of its periods
// since then in which the group was held off the CPU: both 0 with no
// limit, or where either reading failed.
func CPULimitSince() func() (cores, throttled float64) {
	a, errA := ReadCPULimit()
	return func() (float64, float64) {
		b, errB := ReadCPULimit()
		if errA != nil || errB != nil || b.Cores == 0 {
			return 0, 0
		}
		return b.Cores, b.ThrottledShare(a)
	}
}
