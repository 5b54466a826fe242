//go:build !linux

package hostchange

import (
	"errors"

	"github.com/narrows/narrows/internal/result"
)

func steerRPS(string, int) (*result.Steering, func(*result.Steering), error) {
	return nil, nil, errors.New("moving a receive's protocol work between cores (RPS) is Linux's; on Windows, RSS chooses the cores (Get-NetAdapterRss)")
}
