package plan

import (
	"slices"
	"time"

	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// ReplicaAssumeNames are the figures plan replica takes by hand.
var ReplicaAssumeNames = []string{"stream", "rtt", "window", "limit", "loss", "mss", "link", "rmem", "wmem", "log", "peak"}

// ReplicaAssumed are plan replica's figures given by hand, read and
// checked; the plan sets them over what was measured or read.
type ReplicaAssumed struct {
	Keys  []string                 // the names given, in order
	Rates map[string]float64       // stream, link, log, peak (B/s)
	Durs  map[string]time.Duration // rtt
	Sizes map[string]int64         // window, rmem, wmem, mss
	Limit string                   // result.Limit*, "" when not given
	Loss  *float64                 // the share of bytes sent again
}

// Has says whether the figure named k was given.
func (a ReplicaAssumed) Has(k string) bool { return slices.Contains(a.Keys, k) }

// replicaLimits are the limits a stream can be given.
var replicaLimits = []string{result.LimitWindow, result.LimitLink, result.LimitLoss, result.LimitCPU}

// ReadReplica reads plan replica's assumptions: each value by its kind,
// and a peak only with its mean, at least as high.
func ReadReplica(as []Assumption) (ReplicaAssumed, error) {
	a := ReplicaAssumed{Rates: map[string]float64{}, Durs: map[string]time.Duration{}, Sizes: map[string]int64{}}
	for _, v := range as {
		var err error
		switch v.Name {
		case "stream", "link", "log", "peak":
			a.Rates[v.Name], err = v.Rate()
		case "rtt":
			a.Durs[v.Name], err = v.Duration(false)
		case "window", "rmem", "wmem":
			a.Sizes[v.Name], err = v.Size(1, 1<<40)
		case "mss":
			var n int
			n, err = v.Count(88, 65535)
			a.Sizes[v.Name] = int64(n)
		case "limit":
			a.Limit, err = v.Word(replicaLimits...)
		case "loss":
			var p float64
			p, err = v.Share()
			a.Loss = &p
		}
		if err != nil {
			return a, errext.Userf(nil, "%v", err)
		}
		a.Keys = append(a.Keys, v.Name)
	}
	if a.Has("peak") && !a.Has("log") {
		return a, errext.Userf(nil, "--assume: peak=RATE goes with log=RATE (the mean)")
	}
	if a.Has("log") && a.Has("peak") && a.Rates["peak"] < a.Rates["log"] {
		return a, errext.Userf(nil, "--assume: the peak %s is below the mean %s", metric.FormatByteRate(a.Rates["peak"]), metric.FormatByteRate(a.Rates["log"]))
	}
	return a, nil
}
