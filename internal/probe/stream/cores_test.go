package stream

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/untrusted"
	"github.com/narrows/narrows/internal/wire"
)

// TestReadCores: the agent's busiest core is kept when a machine could
// have given it, and otherwise left out with one printable line saying
// why; this end's is kept as read.
func TestReadCores(t *testing.T) {
	good := result.CoreLoad{OS: "linux", Cores: 4, Core: 2, Busy: 0.99, User: 0.1, System: 0.2, SoftIRQ: 0.6, IRQ: 0.05, OthersBusy: 0.2,
		NIC: "eth0", NICInterrupts: []result.CoreIRQ{{IRQ: 38, Name: "virtio2-input.0", PerSecond: 41200}},
		NUMA: &result.CoreNUMA{Nodes: 2, CoreNode: 1, NICNode: 0}}
	here := &result.CoreLoad{OS: "linux", Cores: 2, Busy: 0.5, User: 0.5}
	c := readCores(here, &wire.Done{Cores: &good})
	if c == nil || c.Local != here || c.Remote == nil || !reflect.DeepEqual(*c.Remote, good) || c.RemoteMissing != "" {
		t.Fatalf("a true load: %+v", c)
	}
	if readCores(nil, &wire.Done{}) != nil {
		t.Error("neither end's cores, and still a Cores")
	}
	bad := map[string]func(l *result.CoreLoad){
		"a share past 1":                     func(l *result.CoreLoad) { l.SoftIRQ = 2 },
		"NaN":                                func(l *result.CoreLoad) { l.Busy = math.NaN() },
		"a negative share":                   func(l *result.CoreLoad) { l.User = -0.1 },
		"parts past the busy":                func(l *result.CoreLoad) { l.Busy = 0.5 },
		"a core past any machine":            func(l *result.CoreLoad) { l.Core = 1 << 20 },
		"no cores":                           func(l *result.CoreLoad) { l.Cores = 0 },
		"a billion cores":                    func(l *result.CoreLoad) { l.Cores = 1e9 },
		"an interrupt at a billion a second": func(l *result.CoreLoad) { l.NICInterrupts = []result.CoreIRQ{{IRQ: 38, Name: "q", PerSecond: 1e9}} },
		"a hundred interrupts named":         func(l *result.CoreLoad) { l.NICInterrupts = make([]result.CoreIRQ, 100) },
		"an interrupt's name of a megabyte": func(l *result.CoreLoad) {
			l.NICInterrupts = []result.CoreIRQ{{IRQ: 38, Name: strings.Repeat("x", 1<<20), PerSecond: 1}}
		},
		"one NUMA node":                  func(l *result.CoreLoad) { l.NUMA = &result.CoreNUMA{Nodes: 1} },
		"a NUMA node past any":           func(l *result.CoreLoad) { l.NUMA = &result.CoreNUMA{Nodes: 2, CoreNode: 1 << 40} },
		"a NIC's node below -1":          func(l *result.CoreLoad) { l.NUMA = &result.CoreNUMA{Nodes: 2, NICNode: -5} },
		"an OS with a terminal's escape": func(l *result.CoreLoad) { l.OS = "linux\x1b]0;pwned\x07" + strings.Repeat("x", 10000) },
	}
	for name, spoil := range bad {
		l := good
		spoil(&l)
		c := readCores(nil, &wire.Done{Cores: &l})
		if c == nil || c.Remote != nil || c.RemoteMissing == "" {
			t.Errorf("%s: kept (%+v)", name, c)
			continue
		}
		if untrusted.Text(c.RemoteMissing) != c.RemoteMissing || len(c.RemoteMissing) > 200 {
			t.Errorf("%s: %q is not one short printable line", name, c.RemoteMissing)
		}
	}
}
