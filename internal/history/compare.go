package history

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/words"
)

// Change is one figure before and after.
type Change struct {
	Name           string  `json:"name"`
	Unit           string  `json:"unit"`
	HigherIsBetter bool    `json:"higher_is_better"`
	Before         float64 `json:"before"`
	After          float64 `json:"after"`
	// Delta is (after - before) / before; absent when before is 0.
	Delta *float64 `json:"delta_ratio,omitempty"`
	// P is the two-sided Mann-Whitney U p-value of the interval samples
	// (NBefore and NAfter of them); absent with too few samples.
	P       *float64 `json:"p_value,omitempty"`
	NBefore int      `json:"samples_before"`
	NAfter  int      `json:"samples_after"`
	// Significant is P < Alpha: false is benchstat's "~".
	Significant bool `json:"significant"`
	// Note says why there is no test (too few samples).
	Note string `json:"note,omitempty"`
}

// Comparison is `narrows compare A B`.
type Comparison struct {
	// Warnings are what differs between the runs beyond the change
	// measured: the settings, the versions, the hosts' facts.
	Warnings []string `json:"warnings"`
	// Verdicts are the verdicts one run said and the other did not, or
	// said with another severity: what changed in the answers, said
	// before the figures.
	Verdicts []VerdictChange `json:"verdicts"`
	Figures  []Change        `json:"figures"`
}

// VerdictChange is a verdict (a finding's code) said by one run only, or
// by both with another severity. Before and After are its summary and
// severity in each run; empty where that run did not say it.
type VerdictChange struct {
	Code           string `json:"code"`
	Before         string `json:"before,omitempty"`
	BeforeSeverity string `json:"before_severity,omitempty"`
	After          string `json:"after,omitempty"`
	AfterSeverity  string `json:"after_severity,omitempty"`
}

// verdictsOf are a run's verdicts: doctor's, or a command's findings; the
// first of each code.
func verdictsOf(r *result.Report) (map[string]result.Finding, []string) {
	fs := r.Findings
	if r.Doctor != nil {
		fs = r.Doctor.Verdicts
	}
	by, order := map[string]result.Finding{}, []string{}
	for _, f := range fs {
		// A code and what it is about: doctor's two round trips' sizes,
		// or two disks, are two verdicts of one code.
		k := f.Code + "\x00" + f.About
		if _, ok := by[k]; !ok {
			by[k] = f
			order = append(order, k)
		}
	}
	return by, order
}

// verdictChanges are the codes said in one run and not the other, or
// with another severity: the after run's first (new, or changed), in its
// order, then those only the before run said.
func verdictChanges(a, b *result.Report) []VerdictChange {
	before, aOrder := verdictsOf(a)
	after, bOrder := verdictsOf(b)
	out := []VerdictChange{}
	for _, code := range bOrder {
		fb := after[code]
		fa, ok := before[code]
		if ok && fa.Severity == fb.Severity {
			continue
		}
		v := VerdictChange{Code: fb.Code, After: words.Said(fb), AfterSeverity: fb.Severity}
		if ok {
			v.Before, v.BeforeSeverity = words.Said(fa), fa.Severity
		}
		out = append(out, v)
	}
	for _, code := range aOrder {
		if _, ok := after[code]; !ok {
			fa := before[code]
			out = append(out, VerdictChange{Code: fa.Code, Before: words.Said(fa), BeforeSeverity: fa.Severity})
		}
	}
	return out
}

// Compare sets run b (after) against run a (before), figure by figure.
func Compare(aRep *result.Report, aIvs []result.Interval, bRep *result.Report, bIvs []result.Interval) *Comparison {
	c := &Comparison{Warnings: Differences(aRep, bRep), Verdicts: verdictChanges(aRep, bRep), Figures: []Change{}}
	after := map[string]Figure{}
	for _, f := range Figures(bRep, bIvs) {
		after[f.Name] = f
	}
	for _, fa := range Figures(aRep, aIvs) {
		fb, ok := after[fa.Name]
		if !ok {
			continue
		}
		c.Figures = append(c.Figures, change(fa, fb))
	}
	return c
}

func change(a, b Figure) Change {
	ch := Change{Name: a.Name, Unit: a.Unit, HigherIsBetter: a.HigherIsBetter, Before: a.Value, After: b.Value,
		NBefore: len(finite(a.Samples)), NAfter: len(finite(b.Samples))}
	if a.Value != 0 {
		d := (b.Value - a.Value) / a.Value
		ch.Delta = &d
	}
	if ch.NBefore < MinSamples || ch.NAfter < MinSamples {
		ch.Note = fmt.Sprintf("too few samples (%d and %d): a test needs at least %d intervals on each side (a longer --duration or a shorter --interval)",
			ch.NBefore, ch.NAfter, MinSamples)
		return ch
	}
	_, p := MannWhitney(a.Samples, b.Samples)
	ch.P = &p
	ch.Significant = p < Alpha
	return ch
}

// Differences are what makes two runs not like for like: the command,
// target and settings, the narrows and agent versions, and each fact of
// either host that changed, as "name: before → after".
func Differences(a, b *result.Report) []string {
	var w []string
	diff := func(what, x, y string) {
		if x != y {
			w = append(w, fmt.Sprintf("%s: %s → %s", what, orNone(x), orNone(y)))
		}
	}
	diff("command", a.Command, b.Command)
	diff("target", a.Target, b.Target)
	diff("narrows version", a.Narrows.Version, b.Narrows.Version)
	diff("agent", a.Agent, b.Agent)
	if a.Unauthenticated != b.Unauthenticated {
		w = append(w, fmt.Sprintf("unauthenticated: %t → %t", a.Unauthenticated, b.Unauthenticated))
	}
	if a.Partial || b.Partial {
		w = append(w, fmt.Sprintf("partial run: %t → %t (a run that stopped early)", a.Partial, b.Partial))
	}
	w = append(w, flatDiff("settings", settings(a), settings(b))...)
	w = append(w, factsDiff("this host", a.Facts, b.Facts)...)
	w = append(w, factsDiff("agent host", a.AgentFacts, b.AgentFacts)...)
	return w
}

// factsDiff is flatDiff of two hosts' facts, or one line when only one
// run has them (an older narrows, or an agent that does not tell).
func factsDiff(what string, a, b *result.Facts) []string {
	switch {
	case a == nil && b == nil:
		return nil
	case a == nil:
		return []string{what + ": its facts are known only for the after run"}
	case b == nil:
		return []string{what + ": its facts are known only for the before run"}
	}
	return flatDiff(what, a, b)
}

// settings are what a run was asked for: each section's "config".
func settings(r *result.Report) any {
	m := map[string]any{}
	b, _ := json.Marshal(r)
	var all map[string]any
	json.Unmarshal(b, &all)
	for k, v := range all {
		if sec, ok := v.(map[string]any); ok {
			if cfg, ok := sec["config"]; ok {
				m[k] = cfg
			}
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// flatDiff lists the leaves of a and b (as JSON) that differ.
func flatDiff(what string, a, b any) []string {
	fa, fb := map[string]string{}, map[string]string{}
	flatten(fa, "", toJSON(a))
	flatten(fb, "", toJSON(b))
	keys := map[string]bool{}
	for k := range fa {
		keys[k] = true
	}
	for k := range fb {
		keys[k] = true
	}
	var out []string
	for k := range keys {
		if fa[k] != fb[k] {
			out = append(out, fmt.Sprintf("%s %s: %s → %s", what, k, orNone(fa[k]), orNone(fb[k])))
		}
	}
	sort.Strings(out)
	return out
}

func toJSON(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	json.Unmarshal(b, &out)
	return out
}

// flatten writes v's leaves as path → value; a list of objects with a
// "name" (the NICs) is keyed by the names, so a reordering is no change.
func flatten(m map[string]string, path string, v any) {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch t := v.(type) {
	case nil:
	case map[string]any:
		for k, x := range t {
			if k == "missing" || k == "addresses" {
				continue // why a fact is absent, and addresses: not what makes runs comparable
			}
			flatten(m, join(k), x)
		}
	case []any:
		if len(t) == 0 {
			return
		}
		for i, x := range t {
			key := fmt.Sprint(i)
			if o, ok := x.(map[string]any); ok {
				if n, ok := o["name"].(string); ok {
					key = n
				}
			}
			if key != fmt.Sprint(i) {
				o := x.(map[string]any)
				delete(o, "name")
			}
			flatten(m, join(key), x)
		}
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1e15 {
			m[path] = fmt.Sprintf("%d", int64(t))
		} else {
			m[path] = fmt.Sprint(t)
		}
	default:
		m[path] = strings.TrimSpace(fmt.Sprint(t))
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
