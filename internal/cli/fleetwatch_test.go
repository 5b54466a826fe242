package cli_test

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/cli"
)

// TestFleetWatchExamples: the docs' targets file is what fleet watch
// reads, each line named as the comment says; the Prometheus file_sd
// example is what Prometheus reads (a list of targets, HOST:PORT each,
// with valid label names), and sets no link label, which every fleet
// watch series carries already.
func TestFleetWatchExamples(t *testing.T) {
	docs := filepath.Join("..", "..", "docs", "prometheus")
	got, err := cli.WatchTargets("@" + filepath.Join(docs, "fleet-watch-targets.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := "pg1-dr1=dr1.example.com:7447,pg1-dr2=dr2.example.com:7447,pg2-dr1=10.20.0.11:7447,replica7.example.com=replica7.example.com:7447"
	if strings.Join(got, ",") != want {
		t.Errorf("the example targets read as %v", got)
	}
	b, err := os.ReadFile(filepath.Join(docs, "fleet-watch-file-sd.json"))
	if err != nil {
		t.Fatal(err)
	}
	var groups []struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	if err := json.Unmarshal(b, &groups); err != nil || len(groups) == 0 {
		t.Fatalf("file_sd example: %v, %d groups", err, len(groups))
	}
	label := regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	for _, g := range groups {
		if len(g.Targets) == 0 {
			t.Errorf("a group without targets: %+v", g)
		}
		for _, tg := range g.Targets {
			if _, port, err := net.SplitHostPort(tg); err != nil || port == "" {
				t.Errorf("target %q: not HOST:PORT", tg)
			}
		}
		for k := range g.Labels {
			if !label.MatchString(k) || strings.HasPrefix(k, "__") || k == "link" {
				t.Errorf("label %q: not a label a file_sd group should set", k)
			}
		}
	}
	scrape, err := os.ReadFile(filepath.Join(docs, "fleet-watch-scrape.yml"))
	if err != nil || !strings.Contains(string(scrape), "file_sd_configs") {
		t.Errorf("the scrape config: %v", err)
	}
}
