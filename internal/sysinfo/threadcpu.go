package sysinfo

import "time"

// ThreadCPUTime is the user plus system CPU the calling OS thread has
// used. It means something only to a goroutine that holds its thread
// (runtime.LockOSThread) from one reading to the next: a rate over it is a
// rate per busy core, whatever else the machine was running meanwhile.
func ThreadCPUTime() (time.Duration, error) { return threadCPUTime() }
