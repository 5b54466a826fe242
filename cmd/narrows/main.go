// Command narrows measures the network and storage the way a database uses
// them. Everything lives in internal/cli; main only wires the process in.
package main

import (
	"context"
	"os"

	"github.com/narrows/narrows/internal/cli"
)

func main() {
	ctx, stop := cli.Signals(context.Background())
	code := cli.Main(ctx, cli.OSEnv(), os.Args[1:])
	stop()
	os.Exit(code)
}
