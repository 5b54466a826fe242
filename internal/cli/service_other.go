//go:build !windows

package cli

import "context"

// serve runs the agent until ctx is done; a supervisor such as systemd
// keeps it running here.
func serve(ctx context.Context, env Env, args []string) error {
	return serveWith(ctx, env, args, serveHooks{})
}

// serviceCmd is Windows' service installer; elsewhere it says what to use.
func serviceCmd(ctx context.Context, env Env, args []string) error {
	return usagef("service: installs narrows serve as a Windows service, on Windows only; here run narrows serve under systemd (a unit is in docs/windows-service.md)")
}
