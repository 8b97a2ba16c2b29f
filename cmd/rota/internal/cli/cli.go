// Package cli holds the rota command's subcommands.
package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"
)

// Main runs the rota command with args and returns its exit status.
func Main(args []string) int {
	root := newRoot()
	root.SetArgs(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := root.ExecuteContext(ctx); err != nil {
		return report(os.Stderr, err)
	}
	return 0
}

// newRoot builds the command tree (docs/cli.md has a heading for each).
func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "rota",
		Short:         "rota is a durable, fair background-job system",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(serveCommand(), migrateCommand(), backupCommand(), copyCommand(), importCommand(), benchCommand(), demoCommand(), versionCommand(), guardCommand())
	g := &globals{}
	addGlobalFlags(root, g)
	root.AddCommand(addCommand(g), getCommand(g), lsCommand(g), cancelCommand(g), retryCommand(g),
		rmCommand(g), statsCommand(g), watchCommand(g), waitCommand(g), workCommand(g),
		updateCommand(g), historyCommand(g), pauseCommand(g, true), pauseCommand(g, false), limitCommand(g), tokenCommand(g), logsCommand(g), batchCommand(g))
	return root
}

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print rota's version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			v := "(devel)"
			if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
				v = bi.Main.Version
			}
			fmt.Fprintln(cmd.OutOrStdout(), "rota", v)
		},
	}
}
