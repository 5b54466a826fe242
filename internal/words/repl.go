package words

import "github.com/narrows/narrows/internal/result"

// Repl are an engine's own names for the stages of db repl, used
// alike by the table's columns and the verdicts' words.
type Repl struct {
	Unsent, Unflushed, Unreplayed string // the queues ("" where the engine has no such stage)
	Send, Replay                  string // the stages' verbs
	Lag                           string // the engine's own lag column
}

// replWords are the words of each engine.
var replWords = map[string]Repl{
	"postgres":  {Unsent: "unsent", Unflushed: "unflushed", Unreplayed: "unreplayed", Send: "send", Replay: "replay", Lag: "replay lag"},
	"mysql":     {Unsent: "unfetched", Unreplayed: "unapplied", Send: "fetch", Replay: "apply", Lag: "behind src"},
	"sqlserver": {Unsent: "send queue", Unreplayed: "redo queue", Send: "send", Replay: "redo", Lag: "sec. lag"},
}

// ReplOf returns engine's words (PostgreSQL's for an unknown engine).
func ReplOf(engine string) Repl {
	if w, ok := replWords[engine]; ok {
		return w
	}
	return replWords["postgres"]
}

// Stage names a queue by its stage label (send, write, flush, replay).
func (w Repl) Stage(stage string) string {
	switch stage {
	case "send":
		return w.Unsent
	case "write":
		return "unwritten"
	case "flush":
		return "unflushed"
	}
	return w.Unreplayed
}

// Verdict names a verdict code, short, in the engine's words.
func (w Repl) Verdict(code string) string {
	switch code {
	case result.VerdictKeepingUp:
		return "keeping up"
	case result.VerdictCatchingUp:
		return "catching up"
	case result.VerdictSendQueue:
		return w.Send + " queue growing"
	case result.VerdictDisk:
		return "standby disk bottleneck"
	case result.VerdictReplay:
		return w.Replay + " bottleneck"
	}
	return code
}

// limitWords name what held a stream (result.Limit*) in a DBA's words.
var limitWords = map[string]string{result.LimitWindow: "its window", result.LimitLink: "the link", result.LimitLoss: "loss",
	result.LimitCPU: "CPU", result.LimitCore: "one core's packet work", result.LimitHost: "this machine (no network crossed)",
	result.LimitPerStream: "a per-stream limit on the path", result.LimitUnknown: "nothing known (no TCP figures)"}

// Limit names what held a stream, as the table and the HTML report say
// it (an unknown limit as it is).
func Limit(l string) string {
	if w, ok := limitWords[l]; ok {
		return w
	}
	return l
}
