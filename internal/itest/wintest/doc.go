// Package wintest runs the Windows build of narrows, narrows.exe, under
// Wine on Linux: the agent on "Windows" measured by the Linux client, the
// Windows client against the Linux agent, the disk profiles on Windows'
// file interfaces, db ping to a real PostgreSQL, and the agent as a
// service under Wine's Service Control Manager. What Wine does not
// emulate (SIO_TCP_INFO, the I/O completion port's timing, a real Event
// Log) is unit-tested beside the code with recorded structures.
// Tests only.
package wintest
