package history

import (
	"context"
	"sync"
	"testing"
)

// TestOpenNewStoreAtOnce: narrows processes that end at the same moment
// open a new store together; every one of them keeps its run. (Before the
// WAL switch waited out the others, 1-6 of 240 such opens failed with
// "database is locked".)
func TestOpenNewStoreAtOnce(t *testing.T) {
	for range 60 {
		dir := t.TempDir()
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := Open(context.Background(), dir)
				if err != nil {
					t.Error(err)
					return
				}
				s.Close()
			}()
		}
		wg.Wait()
	}
}
