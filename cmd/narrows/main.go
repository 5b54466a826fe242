// Command narrows measures the network and storage the way a database uses
// them. Everything lives in internal/cli; main only wires the process in.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/narrows/narrows/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, cli.OSEnv(), os.Args[1:])
	stop()
	os.Exit(code)
}
