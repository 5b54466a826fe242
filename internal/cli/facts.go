package cli

import (
	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/result"
)

// fromAgent notes who measured with us (command.FromAgent).
func fromAgent(rep *result.Report, sess *client.Session) { command.FromAgent(tool(), rep, sess) }

// connect dials the agent (command.Connect).
var connect = command.Connect
