package result

// Part is what a Report measured or planned: a probe's or a plan's
// result, exactly one of the Report's optional fields. Kind names it in
// the vocabulary (words.Area files it under the report's areas); the
// consumers (the advisor, the renderers, the history) switch on its
// type, each switch held to Kinds by a test, so that a new part that a
// consumer forgets fails a test instead of vanishing from the output.
type Part interface{ Kind() string }

// The kinds of part, one per optional field of the Report.
const (
	KindStream      = "stream"
	KindRR          = "rr"
	KindLoaded      = "rr under load"
	KindMTU         = "mtu"
	KindHost        = "host"
	KindCommit      = "commit"
	KindDisk        = "disk"
	KindDBPing      = "db ping"
	KindRepl        = "repl"
	KindDBLoad      = "db load"
	KindBackupPlan  = "backup plan"
	KindSyncPlan    = "sync plan"
	KindReplicaPlan = "replica plan"
	KindChattyPlan  = "chatty plan"
	KindWatch       = "watch"
	KindDoctor      = "doctor"
	KindFleet       = "fleet"
	KindFleetNet    = "fleet net"
	KindFleetWatch  = "fleet watch"
)

func (*Stream) Kind() string      { return KindStream }
func (*RR) Kind() string          { return KindRR }
func (*Loaded) Kind() string      { return KindLoaded }
func (*MTU) Kind() string         { return KindMTU }
func (*Host) Kind() string        { return KindHost }
func (*Commit) Kind() string      { return KindCommit }
func (*Disk) Kind() string        { return KindDisk }
func (*DBPing) Kind() string      { return KindDBPing }
func (*Repl) Kind() string        { return KindRepl }
func (*DBLoad) Kind() string      { return KindDBLoad }
func (*BackupPlan) Kind() string  { return KindBackupPlan }
func (*SyncPlan) Kind() string    { return KindSyncPlan }
func (*ReplicaPlan) Kind() string { return KindReplicaPlan }
func (*ChattyPlan) Kind() string  { return KindChattyPlan }
func (*Watch) Kind() string       { return KindWatch }
func (*Doctor) Kind() string      { return KindDoctor }
func (*Fleet) Kind() string       { return KindFleet }
func (*FleetNet) Kind() string    { return KindFleetNet }
func (*FleetWatch) Kind() string  { return KindFleetWatch }

// Part is the Report's part, nil when it has none (a run refused before
// it measured). This is the one list of the Report's optional fields.
func (r *Report) Part() Part {
	switch {
	case r.Stream != nil:
		return r.Stream
	case r.RR != nil:
		return r.RR
	case r.Loaded != nil:
		return r.Loaded
	case r.MTU != nil:
		return r.MTU
	case r.Host != nil:
		return r.Host
	case r.Commit != nil:
		return r.Commit
	case r.Disk != nil:
		return r.Disk
	case r.DBPing != nil:
		return r.DBPing
	case r.Repl != nil:
		return r.Repl
	case r.DBLoad != nil:
		return r.DBLoad
	case r.BackupPlan != nil:
		return r.BackupPlan
	case r.SyncPlan != nil:
		return r.SyncPlan
	case r.ReplicaPlan != nil:
		return r.ReplicaPlan
	case r.ChattyPlan != nil:
		return r.ChattyPlan
	case r.Watch != nil:
		return r.Watch
	case r.Doctor != nil:
		return r.Doctor
	case r.Fleet != nil:
		return r.Fleet
	case r.FleetNet != nil:
		return r.FleetNet
	case r.FleetWatch != nil:
		return r.FleetWatch
	}
	return nil
}

// Parts are an empty value of each kind of part, for the tests that hold
// every consumer to every kind.
func Parts() []Part {
	return []Part{&Stream{}, &RR{}, &Loaded{}, &MTU{}, &Host{}, &Commit{}, &Disk{}, &DBPing{}, &Repl{}, &DBLoad{},
		&BackupPlan{}, &SyncPlan{}, &ReplicaPlan{}, &ChattyPlan{}, &Watch{}, &Doctor{}, &Fleet{}, &FleetNet{}, &FleetWatch{}}
}
