//go:build !unix

package compress

import "os"

// openRead opens a file to sample, read only. Windows has no O_NOFOLLOW:
// readFile checks after opening that the handle is the file the walk
// found, not the target of a link put in its place.
var openRead = os.Open
