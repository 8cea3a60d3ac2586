package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// refuseArguments makes every command of cmds (and their subcommands)
// that declares no ArgsUsage, so takes no arguments, refuse any with exit
// status 2. The flag parser stops at the first argument, so a stray one
// would otherwise silently drop every flag after it (`blobgw serve ./data
// --backend s3` served the local disk).
func refuseArguments(cmds []*cli.Command) {
	for _, cmd := range cmds {
		refuseArguments(cmd.Subcommands)
		if cmd.Action == nil || cmd.ArgsUsage != "" {
			continue
		}
		action := cmd.Action
		cmd.Action = func(c *cli.Context) error {
			if c.NArg() > 0 {
				return cli.Exit(fmt.Sprintf("%s takes no arguments; got %q (flags after it would not be read)", c.Command.HelpName, c.Args().First()), 2)
			}
			return action(c)
		}
	}
}
