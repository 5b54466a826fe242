package disk

import (
	"encoding/json"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// TestSpecRoundTrip: a configuration sent to an agent (Spec, through the
// wire's JSON) is the configuration the agent runs (ConfigOf), pattern
// for pattern: the far side measures what the near side asked.
func TestSpecRoundTrip(t *testing.T) {
	cfg := Config{Dir: "/backup", Size: 64 << 20, Profiles: []string{result.ProfileData, result.ProfileLog, result.ProfileCustom},
		Duration: 3 * time.Second, Interval: time.Second, Buffered: true, Engine: EnginePortable, Seed: 7}
	cfg.Patterns = append(append(dataProfile(), logProfile()...),
		Pattern{Profile: result.ProfileCustom, RW: Mix, ReadPercent: 60, Block: 16 << 10, QD: 4, Threads: 2, Sync: result.SyncNone})
	b, err := json.Marshal(Spec(cfg))
	if err != nil {
		t.Fatal(err)
	}
	var spec wire.TestSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	if spec.Kind != wire.KindDisk {
		t.Fatalf("kind %q", spec.Kind)
	}
	if got := ConfigOf(spec); !reflect.DeepEqual(got, cfg) {
		t.Fatalf("sent %+v\nran  %+v", cfg, got)
	}
	if err := cfg.Check(); err != nil {
		t.Fatalf("a configuration the command builds is refused: %v", err)
	}
}

// TestConfigCheck: what an agent refuses of a configuration a client
// sent, in the words of the command's flags.
func TestConfigCheck(t *testing.T) {
	ok := Config{Size: 8 << 20, Profiles: []string{result.ProfileCustom}, Duration: time.Second, Interval: time.Second, Engine: EngineAuto,
		Patterns: []Pattern{{Profile: result.ProfileCustom, RW: RandRead, Block: 8 << 10, QD: 1, Threads: 1, Sync: result.SyncNone}}}
	cases := []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"as built", func(c *Config) {}, ""},
		{"unknown engine", func(c *Config) { c.Engine = "aio" }, `--engine "aio"`},
		{"small file", func(c *Config) { c.Size = 4096 }, "--size 4 KiB: use at least 1M"},
		{"no patterns", func(c *Config) { c.Patterns = nil }, "no pattern to run"},
		{"unknown profile", func(c *Config) { c.Profiles = []string{"oltp"} }, `--profile "oltp"`},
		{"a pattern of no profile", func(c *Config) { c.Patterns[0].Profile = strings.Repeat("x", 4096) }, "the profiles are"},
		{"block", func(c *Config) { c.Patterns[0].Block = 6000 }, words.direct + " needs a multiple of 4K"},
		{"threads outrun the file", func(c *Config) { c.Patterns[0].Block, c.Patterns[0].Threads = 4<<20, 4 }, "--size 8 MiB is too small"},
		{"no time", func(c *Config) { c.Interval = time.Millisecond }, "--interval at least 10ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := ok
			cfg.Patterns = append([]Pattern(nil), ok.Patterns...)
			c.edit(&cfg)
			err := cfg.Check()
			if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("Check = %v, want %q", err, c.want)
			}
		})
	}
}

// TestHoldProcs: patterns running at once in one process (an agent
// measuring two filesystems) each raise GOMAXPROCS for their rings'
// threads, and once the last ends, whichever order they end in, it is
// back where it was; the earlier code restored its own starting value
// and could leave the other pattern's rings without a P, or the process
// with more Ps for good.
func TestHoldProcs(t *testing.T) {
	base := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(base)
	a := holdProcs(3)
	if got := runtime.GOMAXPROCS(0); got < max(base, 5) {
		t.Fatalf("one pattern of 3 threads: GOMAXPROCS %d", got)
	}
	b := holdProcs(4)
	if got := runtime.GOMAXPROCS(0); got < max(base, 9) {
		t.Fatalf("two patterns of 3 and 4 threads: GOMAXPROCS %d", got)
	}
	a() // the first to start ends first
	if got := runtime.GOMAXPROCS(0); got < max(base, 6) {
		t.Fatalf("the pattern of 4 threads still running: GOMAXPROCS %d", got)
	}
	b()
	if got := runtime.GOMAXPROCS(0); got != base {
		t.Fatalf("both ended: GOMAXPROCS %d, was %d", got, base)
	}
}
