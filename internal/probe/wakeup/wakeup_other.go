//go:build !linux && !windows

package wakeup

func canHold() (string, error) { return "", ErrUnsupported }

func hold() (func(), error) { return nil, ErrUnsupported }

func cpus() ([]int, error) { return nil, ErrUnsupported }

func pin(int) error { return ErrUnsupported }

func loopback() (client, echo end, err error) { return nil, nil, ErrUnsupported }

func queriesHere() error { return errQueriesLinux }
