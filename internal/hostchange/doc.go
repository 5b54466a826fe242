// Package hostchange is a setting of this host changed for one run and
// put back, whatever ends the process: what `narrows net stream
// --try-rps` changes to measure a stream with its cause removed (the
// receive's protocol work moved off a full core). A change is made only
// where its operator asked for it (the client's flag, the agent's
// --allow-try), one at a time, and a guardian process started first
// writes the settings back should this process die before it does.
package hostchange
