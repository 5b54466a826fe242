package plan

import (
	"strings"
	"testing"
	"time"
)

// TestOneGrammar: every plan reads its --assume the same way: NAME=VALUE,
// a list in one flag, the flag repeated, names without regard to case,
// the order kept (a later value over an earlier one).
func TestOneGrammar(t *testing.T) {
	known := []string{"rtt", "stream", "network@N", "CODEC.ratio"}
	as, err := ParseAssume([]string{"RTT=2ms, stream = 2MB/s", "network@4=450MB/s", "zstd-3.ratio=4x", "rtt=3ms"}, known, "rtt=2ms")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range as {
		names = append(names, a.Name+"="+a.Value)
	}
	if got, want := strings.Join(names, " "), "rtt=2ms stream=2MB/s network@4=450MB/s zstd-3.ratio=4x rtt=3ms"; got != want {
		t.Fatalf("read %q, want %q", got, want)
	}
	if d, err := as[4].Duration(false); err != nil || d != 3*time.Millisecond {
		t.Errorf("rtt=3ms read as %v, %v", d, err)
	}
	if r, err := as[1].Rate(); err != nil || r != 2e6 {
		t.Errorf("stream=2MB/s read as %v, %v", r, err)
	}
	if r, err := as[3].Ratio(1); err != nil || r != 4 {
		t.Errorf("zstd-3.ratio=4x read as %v, %v", r, err)
	}
}

func TestAssumeRefusals(t *testing.T) {
	known := []string{"rtt", "network@N", "CODEC.ratio"}
	for _, c := range []struct {
		flag, want string
	}{
		{"rtt", `use NAME=VALUE, several separated by commas, e.g. rtt=2ms`},
		{"rtt=", `use NAME=VALUE`},
		{"=2ms", `use NAME=VALUE`},
		{"rtt=2ms,", `use NAME=VALUE`},
		{"jitter=1ms", `unknown name "jitter": use rtt, network@N, CODEC.ratio (e.g. rtt=2ms)`},
		{"network@=1MB/s", `unknown name "network@"`},
		{".ratio=4", `unknown name ".ratio"`},
		{"zstd-3=compress:400MB/s,ratio:4", `write a codec's figures as zstd-3.compress=400MB/s,zstd-3.ratio=4`},
	} {
		if _, err := ParseAssume([]string{c.flag}, known, "rtt=2ms"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--assume %q: %v, want an error containing %q", c.flag, err, c.want)
		}
	}
	// Each value reader says what was wrong with which figure, and what to
	// type instead.
	one := func(s string) Assumption {
		as, err := ParseAssume([]string{s}, []string{"x"}, "x=1")
		if err != nil {
			t.Fatal(err)
		}
		return as[0]
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{func() error { _, err := one("x=fast").Rate(); return err }(), `x=fast: give a rate, e.g. x=117MB/s`},
		{func() error { _, err := one("x=10").Duration(false); return err }(), `x=10: give a time`},
		{func() error { _, err := one("x=0s").Duration(false); return err }(), `x=0s: give a time above zero`},
		{func() error { _, err := one("x=2h").Duration(false); return err }(), `at most an hour`},
		{func() error { _, err := one("x=0").Size(1, 1<<30); return err }(), `x=0: give bytes from 1 to 1 GiB`},
		{func() error { _, err := one("x=8.5").Count(1, 64); return err }(), `x=8.5: give a whole number from 1 to 64`},
		{func() error { _, err := one("x=100%").Share(); return err }(), `give a share below 100%`},
		{func() error { _, err := one("x=0.5").Ratio(1); return err }(), `give a ratio of at least 1`},
		{func() error { _, err := one("x=moon").Word("window", "link"); return err }(), `x=moon: use window, link`},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) || !strings.HasPrefix(c.err.Error(), `--assume "x=`) {
			t.Errorf("%v, want an error naming the flag and containing %q", c.err, c.want)
		}
	}
	if d, err := one("x=0").Duration(true); err != nil || d != 0 {
		t.Errorf("x=0 where zero is allowed: %v, %v", d, err)
	}
	if p, err := one("x=0.1%").Share(); err != nil || p != 0.001 {
		t.Errorf("x=0.1%%: %v, %v", p, err)
	}
}
