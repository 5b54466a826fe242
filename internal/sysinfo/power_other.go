//go:build !linux && !windows

package sysinfo

import "github.com/narrows/narrows/internal/result"

func readPower() *result.Power { return &result.Power{} }
