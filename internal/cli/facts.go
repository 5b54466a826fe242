package cli

import (
	"github.com/narrows/narrows/internal/command"
)

// connect dials the agent (command.Connect).
var connect = command.Connect
