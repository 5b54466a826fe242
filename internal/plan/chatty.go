package plan

import (
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/result"
)

// ChattyAssumeNames are the figures plan chatty takes by hand.
var ChattyAssumeNames = []string{"rtt", "server", "floor", "request", "response"}

// ApplyChatty sets the figures the assumptions give: the network's round
// trip replaced (what the server and drivers take is kept), or the rest,
// the floor, the sizes. A figure given by hand ends the bounds a db ping
// measured: the query's time no longer splits between them.
func ApplyChatty(f *result.ChattyFigures, as []Assumption) error {
	for _, a := range as {
		switch a.Name {
		case "rtt", "server", "floor":
			d, err := a.Duration(a.Name == "server")
			if err != nil {
				return errext.Userf(nil, "%v", err)
			}
			s := result.Seconds(d)
			switch a.Name {
			case "rtt":
				f.NetworkRTT, f.NetworkFrom = s, "assumed"
				f.QueryRTT, f.QueryRTTMean = nil, nil
			case "server":
				f.ServerAndClient, f.ServerAndClientFrom = &s, "assumed"
				f.QueryRTT, f.QueryRTTMean = nil, nil
			case "floor":
				f.Floor, f.FloorFrom = s, "assumed"
			}
			if a.Name != "floor" {
				f.NetworkRTTLow, f.NetworkRTTHigh = nil, nil
			}
		case "request", "response":
			n, err := a.Size(1, 1<<30)
			if err != nil {
				return errext.Userf(nil, "%v", err)
			}
			if a.Name == "request" {
				f.RequestBytes = n
			} else {
				f.ResponseBytes = n
			}
		}
	}
	return nil
}
