//go:build linux

package experiments

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/advisor"
)

// notYet are the codes the matrix does not yet hold both ways, each with
// why. TestMatrixCoversEveryCode fails on a code missing from both the
// matrix and this list, and on a code listed here that the matrix now
// covers: the list only shrinks.
// Empty since stream/cpu-quota, stream/windows-client-no-tcp-info and
// rr/cpu-quota-tail: every code is held both ways.
var notYet = map[string]string{}

// coverage counts, for each code, the scenarios that must say it and the
// ones that must not, among those ci selects.
func coverage(ci bool) (say, notSay map[string]int) {
	say, notSay = map[string]int{}, map[string]int{}
	for _, s := range matrix() {
		if ci && !s.CI {
			continue
		}
		for _, c := range s.Say {
			say[c]++
		}
		for _, c := range s.NotSay {
			notSay[c]++
		}
	}
	return say, notSay
}

// TestMatrixCoversEveryCode: every code advisor.Codes lists is said in a
// scenario where it is true and forbidden in one where it is false, in
// the whole matrix and in its CI subset; every code a scenario names is
// one narrows can emit; scenario names are unique.
func TestMatrixCoversEveryCode(t *testing.T) {
	known := map[string]bool{}
	for _, c := range advisor.Codes {
		known[c.Name] = true
	}
	names := map[string]bool{}
	for _, s := range matrix() {
		if names[s.Name] {
			t.Errorf("two scenarios are named %s", s.Name)
		}
		names[s.Name] = true
		for _, c := range slices.Concat(s.Say, s.NotSay) {
			if !known[c] {
				t.Errorf("scenario %s names %s, which is not a code narrows can emit (advisor.Codes)", s.Name, c)
			}
		}
		for _, c := range s.Say {
			if slices.Contains(s.NotSay, c) {
				t.Errorf("scenario %s both wants and forbids %s", s.Name, c)
			}
		}
	}
	for _, ci := range []bool{false, true} {
		say, notSay := coverage(ci)
		var missing []string
		for _, c := range advisor.Codes {
			why, listed := notYet[c.Name]
			covered := say[c.Name] > 0 && notSay[c.Name] > 0
			switch {
			case covered && listed && !ci:
				t.Errorf("%s is covered both ways now: take it off notYet (%s)", c.Name, why)
			case !covered && !listed:
				missing = append(missing, c.Name+"("+which(say[c.Name], notSay[c.Name])+")")
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			where := "the matrix"
			if ci {
				where = "the CI subset"
			}
			t.Errorf("%s does not hold %d codes both ways: %s", where, len(missing), strings.Join(missing, " "))
		}
	}
}

func which(say, notSay int) string {
	switch {
	case say == 0 && notSay == 0:
		return "neither"
	case say == 0:
		return "never true"
	default:
		return "never false"
	}
}
