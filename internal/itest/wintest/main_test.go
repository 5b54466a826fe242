//go:build linux

package wintest

import (
	"os"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	itest.CloseWine()
	os.Exit(code)
}

// TestVersion: narrows.exe starts under Wine and says what it is.
func TestVersion(t *testing.T) {
	w := itest.NewWine(t)
	r := w.Run(t, time.Minute, nil, "version")
	if r.Code != 0 || !regexpVersion.MatchString(r.Stdout) {
		t.Fatalf("narrows.exe version: exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
}
