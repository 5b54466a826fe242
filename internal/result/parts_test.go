package result

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestPartsAreTheReportsFields: every optional pointer field of the Report
// (but the hosts' facts) is a kind of part, Part finds it, and With puts it back; no two kinds
// share a name.
func TestPartsAreTheReportsFields(t *testing.T) {
	kinds := map[string]bool{}
	fields := map[reflect.Type]bool{}
	rt := reflect.TypeOf(Report{})
	partType := reflect.TypeOf((*Part)(nil)).Elem()
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		if f.Type.Kind() != reflect.Pointer || f.Name == "Facts" || f.Name == "AgentFacts" {
			continue
		}
		if !f.Type.Implements(partType) {
			t.Errorf("the Report's field %s (%s) is not a Part: give it a Kind", f.Name, f.Type)
		}
		fields[f.Type] = true
	}
	for _, p := range Parts() {
		if kinds[p.Kind()] {
			t.Errorf("two parts are called %q", p.Kind())
		}
		kinds[p.Kind()] = true
		delete(fields, reflect.TypeOf(p))
		r := With(p)
		if got := r.Part(); got != p {
			t.Errorf("%s: Part() = %v after With", p.Kind(), got)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Errorf("%s: %v", p.Kind(), err)
		}
	}
	for f := range fields {
		t.Errorf("the Report's field of %s is not in Parts()", f)
	}
	if (&Report{}).Part() != nil {
		t.Error("an empty Report has a part")
	}
}

// With is a Report holding p as its part.
func With(p Part) *Report {
	r := &Report{}
	switch p := p.(type) {
	case *Stream:
		r.Stream = p
	case *RR:
		r.RR = p
	case *Loaded:
		r.Loaded = p
	case *MTU:
		r.MTU = p
	case *Host:
		r.Host = p
	case *Commit:
		r.Commit = p
	case *Disk:
		r.Disk = p
	case *DBPing:
		r.DBPing = p
	case *Repl:
		r.Repl = p
	case *DBLoad:
		r.DBLoad = p
	case *BackupPlan:
		r.BackupPlan = p
	case *SyncPlan:
		r.SyncPlan = p
	case *ReplicaPlan:
		r.ReplicaPlan = p
	case *ChattyPlan:
		r.ChattyPlan = p
	case *Fleet:
		r.Fleet = p
	case *FleetNet:
		r.FleetNet = p
	case *FleetWatch:
		r.FleetWatch = p
	case *Watch:
		r.Watch = p
	case *Doctor:
		r.Doctor = p
	}
	return r
}
