//go:build linux

package testbed

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestShareCountsSlots: two tests of two shares each hold the machine
// together; a third asking for one waits until one of them ends, and
// then gets it.
func TestShareCountsSlots(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // slots of this test's own
	var (
		mu    sync.Mutex
		order []string
	)
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	release := make(chan struct{})
	held := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(name, func(t *testing.T) {
				Share(t, 2)
				note(name + " holds")
				held <- struct{}{}
				<-release
				note(name + " ends")
			})
		}()
	}
	<-held
	<-held
	third := make(chan struct{})
	go func() {
		t.Run("c", func(t *testing.T) {
			Share(t, 1)
			note("c holds")
		})
		close(third)
	}()
	select {
	case <-third:
		t.Fatalf("a fifth share was given while four were held: %v", order)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	wg.Wait()
	<-third
	if i, j := slices.Index(order, "c holds"), slices.IndexFunc(order, func(s string) bool { return strings.HasSuffix(s, " ends") }); j < 0 || i < j {
		t.Errorf("c got its share before a or b let go: %v", order)
	}
}

// TestShareSubtestUsesItsParents: a subtest of a test holding shares
// takes none of its own; asking for every slot while its parent holds
// two, it would wait for ever.
func TestShareSubtestUsesItsParents(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // slots of this test's own
	Share(t, 2)
	done := make(chan struct{})
	go func() {
		t.Run("sub", func(t *testing.T) { Share(t, Slots) })
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("a subtest asking for every slot waited for the two its parent holds")
	}
}
