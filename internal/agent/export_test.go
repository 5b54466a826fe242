package agent

// SetAttachGap makes attach run f between taking a data connection's
// token and handing the connection to its test, to widen that race.
func SetAttachGap(f func()) (restore func()) {
	old := attachGap
	attachGap = f
	return func() { attachGap = old }
}
