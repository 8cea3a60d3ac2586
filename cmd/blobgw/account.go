package main

// The account commands: per-account settings kept in the metadata store
// (shared by every replica), such as blob versioning. Like the lease
// commands they talk to the store directly with serve's configuration, so
// they work while every gateway is down, and every replica applies a
// change at its next commit (the setting is read in the commit
// transaction).

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/urfave/cli/v2"
)

// accountSub is one `blobgw account` subcommand: ACCOUNT is always its
// first argument, then nArgs more.
type accountSub struct {
	name, usage, argsUsage string
	nArgs                  int
	run                    func(c *cli.Context, db *leasedb.DB, account string, args []string) error
}

// accountSubs is the table of account subcommands; a new setting adds a
// row.
var accountSubs = []accountSub{
	{name: "show", usage: "print the account's settings", argsUsage: "ACCOUNT", run: accountShow},
	{name: "versioning", usage: "turn blob versioning of the account on or off (existing versions are kept either way)",
		argsUsage: "ACCOUNT on|off", nArgs: 1, run: accountVersioning},
}

func accountCommand() *cli.Command {
	cmd := &cli.Command{
		Name:  "account",
		Usage: "manage the storage accounts, their keys and their settings kept in the metadata store",
		Description: "The account commands read and change the metadata store directly, with the same\n" +
			"configuration as serve (--config, --metadata, --data-dir, BLOBGW_*). ACCOUNT must be\n" +
			"a configured account or one in the store. Every replica applies a settings change at its\n" +
			"next write and a key change within a few seconds.",
	}
	for _, s := range accountSubs {
		s := s
		cmd.Subcommands = append(cmd.Subcommands, &cli.Command{
			Name: s.name, Usage: s.usage, ArgsUsage: s.argsUsage,
			Flags:  leaseFlags("(unused: ACCOUNT is the first argument)"),
			Action: leaseAction(1+s.nArgs, 1+s.nArgs, func(c *cli.Context, args []string) error { return runAccountSub(c, s, args) }),
		})
	}
	cmd.Subcommands = append(cmd.Subcommands, accountKeyCommands()...)
	return cmd
}

// runAccountSub loads the configuration, checks that ACCOUNT is configured
// (a typo would otherwise set an account nobody serves), opens the store
// and runs the subcommand.
func runAccountSub(c *cli.Context, s accountSub, args []string) error {
	cfg, err := leaseConfig(c)
	if err != nil {
		return err
	}
	account := args[0]
	names := make([]string, 0, len(cfg.Accounts))
	for _, a := range cfg.Accounts {
		names = append(names, a.Name)
	}
	db, closeDB, err := openLeaseDB(c, cfg)
	if err != nil {
		return err
	}
	defer closeDB()
	if !slices.Contains(names, account) {
		// Accounts added by `blobgw account add` live in the store only.
		stored, _, err := db.ListAccountKeys(c.Context)
		if err != nil {
			return cli.Exit("account: "+oneLine(err.Error()), 1)
		}
		if !slices.ContainsFunc(stored, func(a leasedb.AccountKeys) bool { return a.Name == account }) {
			return cli.Exit(fmt.Sprintf("account %q is neither configured (%s) nor in the metadata store", account, strings.Join(names, ", ")), 2)
		}
	}
	return s.run(c, db, account, args[1:])
}

func accountShow(c *cli.Context, db *leasedb.DB, account string, _ []string) error {
	s, err := db.GetAccountSettings(c.Context, account)
	if err != nil {
		return cli.Exit("account show: "+oneLine(err.Error()), 1)
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 1, ' ', 0)
	fmt.Fprintf(tw, "account:\t%s\n", account)
	fmt.Fprintf(tw, "versioning:\t%s\n", onOff(s.Versioning))
	return tw.Flush()
}

func accountVersioning(c *cli.Context, db *leasedb.DB, account string, args []string) error {
	var on bool
	switch strings.ToLower(args[0]) {
	case "on":
		on = true
	case "off":
	default:
		return cli.Exit(fmt.Sprintf("account versioning: want on or off, not %q", args[0]), 2)
	}
	if err := db.SetVersioning(c.Context, account, on); err != nil {
		return cli.Exit("account versioning: "+oneLine(err.Error()), 1)
	}
	fmt.Fprintf(c.App.Writer, "versioning of %s is %s\n", account, onOff(on))
	return nil
}

func onOff(v bool) string {
	if v {
		return "on"
	}
	return "off"
}
