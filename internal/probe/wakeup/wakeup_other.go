//go:build !linux && !windows

package wakeup

import (
	"context"
	"time"
)

func canHold() (string, error) { return "", ErrUnsupported }

func hold() (func(), error) { return nil, ErrUnsupported }

func newPair() (pair, error) { return nil, ErrUnsupported }

var _ = func(context.Context, time.Duration) {}
