package history

import (
	"context"
	"fmt"
)

// SetVersionForTest stamps a store with another schema version.
func SetVersionForTest(s *Store, v int) {
	s.db.ExecContext(context.Background(), fmt.Sprintf("PRAGMA user_version = %d", v))
}
