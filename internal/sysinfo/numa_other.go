//go:build !linux

package sysinfo

import "github.com/narrows/narrows/internal/result"

func coreNUMA(int, string) *result.CoreNUMA { return nil }
