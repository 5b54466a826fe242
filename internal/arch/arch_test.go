// Package arch holds the house's rules (docs/architecture.md) against the
// code: which package may depend on which. Data flows one way, cli →
// probe → result → advisor → output; a rule broken here is an arrow that
// runs back up.
package arch

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/narrows/narrows/"

// deps is every package of the module with the module's packages it
// depends on, directly or not (go list -deps), tests left out.
func deps(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Deps", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	all := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(p.ImportPath, module)
		for _, d := range p.Deps {
			if strings.HasPrefix(d, module) {
				all[name] = append(all[name], strings.TrimPrefix(d, module))
			}
		}
		if _, ok := all[name]; !ok {
			all[name] = nil
		}
	}
	return all
}

func under(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }

// TestOneWay: each rule is a set of packages and what none of them may
// depend on.
func TestOneWay(t *testing.T) {
	all := deps(t)
	if len(all) < 30 {
		t.Fatalf("go list gave %d packages of the module", len(all))
	}
	rules := []struct {
		who    []string // packages (and those below them)
		never  []string
		reason string
	}{
		{[]string{"internal/output"}, []string{"internal/advisor", "internal/probe", "internal/cli", "internal/agent", "internal/client", "internal/dbconn"},
			"an output renders a Report: it never measures and never advises"},
		{[]string{"internal/advisor"}, []string{"internal/output", "internal/probe", "internal/cli", "internal/agent", "internal/client", "internal/dbconn", "internal/netio", "internal/history"},
			"the advisor is a pure model: a Report in, findings out, no I/O"},
		{[]string{"internal/result", "internal/metric", "internal/words", "internal/errext", "internal/plan"},
			[]string{"internal/advisor", "internal/output", "internal/probe", "internal/cli", "internal/agent", "internal/client", "internal/dbconn", "internal/doctor"},
			"data, units, words and the error shape sit below everything that uses them"},
		{[]string{"internal/probe"}, []string{"internal/advisor", "internal/output", "internal/cli", "internal/doctor"},
			"a probe measures and returns data: it never prints and never advises"},
		{[]string{"internal/command"}, []string{"internal/cli", "internal/output", "internal/doctor", "internal/history"},
			"a command's core measures and returns its Report: the command line and doctor call it, it prints nothing"},
		{[]string{"internal/doctor"}, []string{"internal/cli", "internal/output", "internal/history"},
			"doctor runs the commands' cores in memory: it never goes back through the command line"},
		{[]string{"internal/agent", "internal/client", "internal/wire"}, []string{"internal/cli", "internal/advisor", "internal/output"},
			"the protocol's two sides know nothing of the command line or the words"},
	}
	for _, r := range rules {
		for pkg, ds := range all {
			in := false
			for _, w := range r.who {
				in = in || under(pkg, w)
			}
			if !in {
				continue
			}
			for _, d := range ds {
				for _, n := range r.never {
					if under(d, n) {
						t.Errorf("%s depends on %s: %s", pkg, d, r.reason)
					}
				}
			}
		}
	}
	// Nothing but the command imports the command line.
	for pkg, ds := range all {
		for _, d := range ds {
			if d == "internal/cli" && pkg != "cmd/narrows" {
				t.Errorf("%s depends on internal/cli: only cmd/narrows may", pkg)
			}
		}
	}
}
