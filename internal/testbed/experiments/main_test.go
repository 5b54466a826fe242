//go:build linux

package experiments

import (
	"flag"
	"os"
	"testing"
)

var longFlag = flag.Bool("long", false, "run the experiments at full length, for the docs (or NARROWS_LONG=1)")

// long reports whether to run at full length.
func long() bool { return *longFlag || os.Getenv("NARROWS_LONG") == "1" }

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(m.Run())
}
