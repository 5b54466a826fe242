package plan

import (
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/result"
)

// SyncAssumeNames are the parts plan sync takes by hand.
var SyncAssumeNames = []string{"commit", "local-flush", "rtt", "remote-flush", "remote-write", "ack-flush", "ack-write", "throughput"}

// ApplySync sets the parts the assumptions give over what was measured
// or read.
func ApplySync(ps *result.SyncParts, as []Assumption) error {
	for _, a := range as {
		if a.Name == "throughput" {
			bps, err := a.Rate()
			if err != nil {
				return errext.Userf(nil, "%v", err)
			}
			ps.Throughput = &result.Rate{BytesPerSecond: bps, Source: "assumed"}
			continue
		}
		d, err := a.Duration(false)
		if err != nil {
			return errext.Userf(nil, "%v", err)
		}
		*syncPart(ps, a.Name) = &result.Figure{Seconds: result.Seconds(d), Source: "assumed"}
	}
	return nil
}

// syncPart is the figure of a part plan sync takes by hand as a time
// (throughput, the one rate, is set apart).
func syncPart(ps *result.SyncParts, name string) **result.Figure {
	switch name {
	case "commit":
		return &ps.CommitNow
	case "local-flush":
		return &ps.LocalFlush
	case "rtt":
		return &ps.RTT
	case "remote-flush":
		return &ps.RemoteFlush
	case "remote-write":
		return &ps.RemoteWrite
	case "ack-flush":
		return &ps.RemoteCommit
	}
	return &ps.RemoteReceipt // ack-write: ParseAssume let no other name through
}
