package prom

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// exported are the metric names the exporters serve, with a histogram's
// _bucket, _sum and _count series.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, c := range []prometheus.Collector{New(false), New(true), NewWatch("test", ""), NewFleetWatch("test", time.Time{})} {
		ch := make(chan *prometheus.Desc, 64)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			m := fq.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("no name in %s", d)
			}
			names[m[1]] = true
		}
	}
	for _, h := range []string{wns + "round_trip_seconds"} {
		for _, s := range []string{"_bucket", "_sum", "_count"} {
			names[h+s] = true
		}
	}
	return names
}

// queries walks a dashboard for every PromQL text it holds: panel
// targets' expr, template variables' query and definition.
func queries(v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && (k == "expr" || k == "definition" || (k == "query" && strings.Contains(s, "narrows_"))) {
				*out = append(*out, s)
			}
			queries(e, out)
		}
	case []any:
		for _, e := range x {
			queries(e, out)
		}
	}
}

// TestDashboards: the Grafana dashboards in docs/grafana parse, ask for
// their Prometheus through the ${DS_PROMETHEUS} input as an import does,
// and query only metrics the exporters serve.
func TestDashboards(t *testing.T) {
	names := exported(t)
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "docs", "grafana", "*.json"))
	if len(files) < 3 {
		t.Fatalf("dashboards: %v, want watch, fleet watch and db repl", files)
	}
	metric := regexp.MustCompile(`\bnarrows_[a-z0-9_]+`)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var d struct {
				Inputs []struct{ Name, Type, PluginID string } `json:"__inputs"`
				UID    string                                  `json:"uid"`
				Title  string                                  `json:"title"`
				Panels []struct {
					Title      string `json:"title"`
					Datasource struct{ UID string }
					Targets    []struct{ Expr string }
				} `json:"panels"`
			}
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatalf("not JSON: %v", err)
			}
			if len(d.Inputs) != 1 || d.Inputs[0].Name != "DS_PROMETHEUS" || d.Inputs[0].Type != "datasource" || d.Inputs[0].PluginID != "prometheus" {
				t.Errorf("__inputs %+v: want the one DS_PROMETHEUS datasource", d.Inputs)
			}
			if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
				t.Errorf("uid %q, title %q, %d panels", d.UID, d.Title, len(d.Panels))
			}
			for _, p := range d.Panels {
				if p.Datasource.UID != "${DS_PROMETHEUS}" || len(p.Targets) == 0 {
					t.Errorf("panel %q: datasource %q, %d queries", p.Title, p.Datasource.UID, len(p.Targets))
				}
			}
			var all any
			json.Unmarshal(b, &all)
			var qs []string
			queries(all, &qs)
			used := 0
			for _, q := range qs {
				for _, pair := range []string{"()", "{}", "[]"} {
					if strings.Count(q, pair[:1]) != strings.Count(q, pair[1:]) {
						t.Errorf("unbalanced %s in %s", pair, q)
					}
				}
				for _, m := range metric.FindAllString(q, -1) {
					used++
					if !names[m] {
						t.Errorf("queries %s, which no exporter serves (in %s)", m, q)
					}
				}
			}
			if used == 0 {
				t.Error("queries no narrows metric")
			}
		})
	}
}
