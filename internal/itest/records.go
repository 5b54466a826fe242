package itest

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
)

// Records parses narrows' --json output: the interval records, then the
// summary. Every line must be a narrows/v1 record, and a summary must end it.
func Records(t *testing.T, out string) (ivs []map[string]any, sum map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", sc.Text(), err)
		}
		if m["schema"] != "narrows/v1" {
			t.Fatalf("record without schema: %s", sc.Text())
		}
		switch m["type"] {
		case "interval":
			ivs = append(ivs, m)
		case "summary":
			sum = m
		}
	}
	if sum == nil {
		t.Fatalf("no summary in:\n%s", out)
	}
	return ivs, sum
}

// Obj follows path through nested JSON objects; nil where one is missing.
func Obj(m any, path ...string) map[string]any {
	for _, p := range path {
		mm, _ := m.(map[string]any)
		m = mm[p]
	}
	mm, _ := m.(map[string]any)
	return mm
}

// Num is a JSON number field, and whether it is there.
func Num(m map[string]any, k string) (float64, bool) {
	v, ok := m[k].(float64)
	return v, ok
}
