package agent

// SetAttachGap makes attach run f between taking a data connection's
// token and handing the connection to its test, to widen that race.
func SetAttachGap(f func()) (restore func()) {
	old := attachGap
	attachGap = f
	return func() { attachGap = old }
}

// AsOlderRelease makes agents started until restore behave as a release
// from before far-side tests: they announce no test kinds and refuse a
// disk test as a kind they do not know, as that release did.
func AsOlderRelease() (restore func()) {
	old := farKinds
	farKinds = map[string]farKind{}
	return func() { farKinds = old }
}
