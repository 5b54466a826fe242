package words

import (
	"net"
	"net/url"
	"strings"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// About is what one measurement's findings are about, in a few words a
// DBA and a network team both read the same way (issue 27: two verdicts
// of doctor read alike for the 500 B and the 64 B round trips, and the
// local database's round trip read like the WAN's): the path by its
// hosts and direction, the sizes, the disk's directory, the database's
// host, "this host" when it is this one; a chatty plan by the database it
// was measured on. "" for the other plans and a watch, whose findings say
// what they plan.
func About(rep *result.Report) string {
	here, there := Ends(rep.Target, rep.Facts, rep.AgentFacts)
	both := here + " ⇄ " + there
	switch {
	case rep.Stream != nil:
		// Its findings say one stream or N.
		return Way(rep.Stream.Config.Direction, here, there)
	case rep.Loaded != nil:
		return "round trips under load, " + both
	case rep.RR != nil:
		c := rep.RR.Config
		size := metric.FormatBytes(c.RequestBytes)
		if c.ResponseBytes != c.RequestBytes {
			size += " / " + metric.FormatBytes(c.ResponseBytes)
		}
		return size + " round trips, " + both
	case rep.MTU != nil:
		return "path MTU, " + both
	case rep.Host != nil:
		if rep.Host.Agent == nil || rep.Host.SameHost {
			return "CPU wake-ups, " + here
		}
		return "CPU wake-ups, " + here + " and " + there
	case rep.Commit != nil:
		return metric.FormatBytes(rep.Commit.Config.BlockBytes) + " commits to " + there
	case rep.Disk != nil:
		d := rep.Disk
		where := "disk " + d.Path
		if d.Agent != "" {
			where += " on " + there
		}
		if ps := d.Config.Profiles; len(ps) > 0 {
			where += " (" + strings.Join(ps, ", ") + ")"
		}
		return where
	case rep.DBPing != nil:
		return "queries to " + dbHost(rep.Target)
	case rep.Repl != nil:
		return "replication seen from " + dbHost(rep.Target)
	case rep.DBLoad != nil:
		return "log generated on " + dbHost(rep.Target)
	case rep.ChattyPlan != nil:
		// The plan's figures' own end, not its target (a saved run's file):
		// which database a chatty session was planned for.
		switch m := rep.ChattyPlan.Figures.Measured; {
		case strings.Contains(m, "://") || strings.Contains(m, "="):
			return "a session's queries to " + dbHost(m)
		case m != "":
			return "round trips to " + m
		}
	}
	return ""
}

// dbHost is a database's host from its (redacted) DSN, "the database on
// this host (127.0.0.1)" when it is a loopback address.
func dbHost(dsn string) string {
	host := dsn
	if u, err := url.Parse(dsn); err == nil && u.Host != "" {
		host = u.Hostname()
	} else if h, _, err := net.SplitHostPort(dsn); err == nil {
		host = h
	}
	if host == "" {
		return "the database"
	}
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() || strings.HasPrefix(host, "/") {
		return "the database on this host (" + host + ")"
	}
	return host
}

// Said is a finding as a line among the findings of many measurements:
// what it is about, then its summary.
func Said(f result.Finding) string {
	if f.About == "" {
		return f.Summary
	}
	return f.About + ": " + f.Summary
}
