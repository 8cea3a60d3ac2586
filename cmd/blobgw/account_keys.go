package main

// The account key commands: list, add, remove and rotate-key the storage
// accounts the metadata store keeps. They talk to the store directly with
// the same configuration as serve; every serve on the store picks a change
// up within a few seconds (internal/accounts.Table). Key values are
// printed once, by add and rotate-key, and never by list.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"text/tabwriter"
	"time"

	"github.com/blobgw/blobgw/internal/accounts"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/dbopen"
	"github.com/urfave/cli/v2"
)

// accountKeyCommands are the `blobgw account` subcommands that manage
// accounts and keys.
func accountKeyCommands() []*cli.Command {
	return []*cli.Command{accountListCommand(), accountAddCommand(), accountRemoveCommand(), accountRotateKeyCommand()}
}

func accountListCommand() *cli.Command {
	return &cli.Command{
		Name:      "list",
		Usage:     "list the accounts in the metadata store (never their keys)",
		ArgsUsage: " ",
		Flags:     append(configFlags(), &cli.BoolFlag{Name: "json", Usage: "print a JSON array instead of a table"}),
		Action: accountAction(0, false, func(c *cli.Context, db *leasedb.DB, _ *accounts.Sealer, args []string) error {
			rows, _, err := db.ListAccountKeys(c.Context)
			if err != nil {
				return cli.Exit("account list: "+err.Error(), 1)
			}
			type listed struct {
				Name      string    `json:"name"`
				Keys      int       `json:"keys"`
				Sealed    bool      `json:"sealed"`
				CreatedAt time.Time `json:"created_at"`
				UpdatedAt time.Time `json:"updated_at"`
			}
			out := []listed{}
			for _, r := range rows {
				l := listed{Name: r.Name, Keys: 1, Sealed: accounts.Sealed(r.Key1), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
				if r.Key2 != "" {
					l.Keys = 2
					l.Sealed = l.Sealed && accounts.Sealed(r.Key2)
				}
				out = append(out, l)
			}
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ACCOUNT\tKEYS\tAT REST\tCREATED\tUPDATED")
			for _, l := range out {
				rest := "plain"
				if l.Sealed {
					rest = "encrypted"
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", l.Name, l.Keys, rest, l.CreatedAt.Format(time.RFC3339), l.UpdatedAt.Format(time.RFC3339))
			}
			return tw.Flush()
		}),
	}
}

func accountAddCommand() *cli.Command {
	return &cli.Command{
		Name:      "add",
		Usage:     "add an account with two new random keys, printed once",
		ArgsUsage: "ACCOUNT",
		Flags:     configFlags(),
		Action: accountAction(1, true, func(c *cli.Context, db *leasedb.DB, sealer *accounts.Sealer, args []string) error {
			name := args[0]
			if !config.ValidAccountName(name) {
				return cli.Exit(fmt.Sprintf("account add: %q is not a valid account name (3-24 lowercase letters and digits)", name), 2)
			}
			keys := make([]string, 2)
			sealed := make([]string, 2)
			for i := range keys {
				k, err := accounts.NewKey()
				if err != nil {
					return cli.Exit("account add: "+err.Error(), 1)
				}
				if sealed[i], err = sealer.Seal(name, k); err != nil {
					return cli.Exit("account add: "+err.Error(), 1)
				}
				keys[i] = k
			}
			if _, err := db.AddAccountKeys(c.Context, name, sealed[0], sealed[1]); err != nil {
				if errors.Is(err, leasedb.ErrExists) {
					return cli.Exit(fmt.Sprintf("account add: account %s exists (rotate-key changes its keys)", name), 1)
				}
				return cli.Exit("account add: "+err.Error(), 1)
			}
			fmt.Fprintf(c.App.Writer, "added account %s; its keys are shown only now:\nkey1: %s\nkey2: %s\n", name, keys[0], keys[1])
			return nil
		}),
	}
}

func accountRemoveCommand() *cli.Command {
	return &cli.Command{
		Name:  "remove",
		Usage: "remove an account and its keys (refused while it has containers, unless --force)",
		Description: "With --force the account's containers and blobs stay in the metadata store and the\n" +
			"backend, unreachable until an account of the same name is added again.",
		ArgsUsage: "ACCOUNT",
		Flags:     append(configFlags(), &cli.BoolFlag{Name: "force", Usage: "remove the account even though it has containers (they are kept)"}),
		Action: accountAction(1, false, func(c *cli.Context, db *leasedb.DB, _ *accounts.Sealer, args []string) error {
			name := args[0]
			err := db.RemoveAccountKeys(c.Context, name, c.Bool("force"))
			switch {
			case errors.Is(err, leasedb.ErrNotFound):
				return cli.Exit(fmt.Sprintf("account remove: no account %s", name), 1)
			case errors.Is(err, leasedb.ErrAccountHasContainers):
				return cli.Exit(fmt.Sprintf("account remove: account %s still has containers; delete them first or pass --force", name), 1)
			case err != nil:
				return cli.Exit("account remove: "+err.Error(), 1)
			}
			fmt.Fprintf(c.App.Writer, "removed account %s\n", name)
			return nil
		}),
	}
}

func accountRotateKeyCommand() *cli.Command {
	return &cli.Command{
		Name:  "rotate-key",
		Usage: "replace key 1 or key 2 of an account with a new random key, printed once",
		Description: "Both keys of an account always work, so a rotation without downtime is: rotate key 2,\n" +
			"move the clients to key 2, rotate key 1 (and back). Every serve on the store honours\n" +
			"the new key, and stops honouring the replaced one, within a few seconds.",
		ArgsUsage: "ACCOUNT",
		Flags: append(configFlags(), &cli.IntFlag{Name: "key",
			Usage: "which key to replace: `1` or 2 (required: replacing the key clients use locks them out)"}),
		Action: accountAction(1, false, func(c *cli.Context, db *leasedb.DB, sealer *accounts.Sealer, args []string) error {
			name, slot := args[0], c.Int("key")
			if !c.IsSet("key") {
				return cli.Exit("account rotate-key: --key 1 or --key 2 is required", 2)
			}
			if slot != 1 && slot != 2 {
				return cli.Exit(fmt.Sprintf("account rotate-key: --key %d (want 1 or 2)", slot), 2)
			}
			k, err := accounts.NewKey()
			if err != nil {
				return cli.Exit("account rotate-key: "+err.Error(), 1)
			}
			s, err := sealer.Seal(name, k)
			if err != nil {
				return cli.Exit("account rotate-key: "+err.Error(), 1)
			}
			if _, err := db.SetAccountKey(c.Context, name, slot, s); err != nil {
				if errors.Is(err, leasedb.ErrNotFound) {
					return cli.Exit(fmt.Sprintf("account rotate-key: no account %s", name), 1)
				}
				return cli.Exit("account rotate-key: "+err.Error(), 1)
			}
			fmt.Fprintf(c.App.Writer, "replaced key%d of account %s; the new key is shown only now:\nkey%d: %s\n", slot, name, slot, k)
			return nil
		}),
	}
}

// accountAction takes the flags given after ACCOUNT too, opens the store
// (create: add may make a new store, as serve would; the other commands
// refuse a database without blobgw's schema, see openLeaseDB) and the
// sealer, checks that the sealer opens every key already stored (so that
// keys sealed with two different encryption keys never mix), and runs fn.
// The arguments are parsed as the lease commands' (leaseAction).
func accountAction(nargs int, create bool, fn func(c *cli.Context, db *leasedb.DB, sealer *accounts.Sealer, args []string) error) cli.ActionFunc {
	return leaseAction(nargs, nargs, func(c *cli.Context, args []string) error {
		cfg, err := loadConfig(c)
		if err != nil {
			return err
		}
		sealer, err := accounts.NewSealer(os.Getenv(accounts.EncryptionKeyEnv))
		if err != nil {
			return cli.Exit("config: "+err.Error(), 2)
		}
		var db *leasedb.DB
		if create {
			if err := ensureDataDir(cfg); err != nil {
				return err
			}
			store, err := dbopen.Open(c.Context, cfg.Metadata)
			if err != nil {
				return cli.Exit("metadata: "+err.Error(), 1)
			}
			defer store.Close()
			db = &leasedb.DB{Store: store}
		} else {
			var done func()
			if db, done, err = openLeaseDB(c, cfg); err != nil {
				return err
			}
			defer done()
		}
		rows, _, err := db.ListAccountKeys(c.Context)
		if err != nil {
			return cli.Exit("metadata: "+err.Error(), 1)
		}
		if _, err := sealer.Build(rows); err != nil {
			return cli.Exit(err.Error(), 2)
		}
		return fn(c, db, sealer, args)
	})
}

// startAccounts seeds the store's accounts from the configuration (an
// account absent from the store is added, one present is never
// overwritten; the built-in development account only seeds a store that
// never held one: none now and none ever removed), loads them (warning
// when there is none) and keeps them fresh every
// accounts.RefreshInterval until ctx ends. Keys that do not open with
// BLOBGW_KEY_ENCRYPTION_KEY refuse the start.
func startAccounts(ctx context.Context, cfg config.Config, store leasedb.Store, log *slog.Logger) (*accounts.Table, error) {
	sealer, err := accounts.NewSealer(os.Getenv(accounts.EncryptionKeyEnv))
	if err != nil {
		return nil, cli.Exit("config: "+err.Error(), 2)
	}
	db := &leasedb.DB{Store: store}
	var seed []leasedb.AccountKeys
	for _, a := range cfg.Accounts {
		row := leasedb.AccountKeys{Name: a.Name}
		for i, k := range a.Keys {
			s, err := sealer.Seal(a.Name, k)
			if err != nil {
				return nil, cli.Exit(fmt.Sprintf("config: account %s key %d: %v", a.Name, i+1, err), 2)
			}
			if i == 0 {
				row.Key1 = s
			} else {
				row.Key2 = s
			}
		}
		seed = append(seed, row)
	}
	// Seeding is idempotent, so a start while the store is briefly
	// unavailable (a Postgres restart) retries rather than exits, as the
	// migration in dbopen.Open does.
	var added []string
	var table *accounts.Table
	err = retryUnavailable(ctx, func() error {
		added, err = db.SeedAccountKeys(ctx, seed, cfg.AccountsDefaulted)
		return err
	})
	if err != nil {
		return nil, cli.Exit("metadata: seeding accounts: "+err.Error(), 1)
	}
	if len(added) > 0 {
		log.Info("accounts added to the metadata store from the configuration", "accounts", added)
	}
	err = retryUnavailable(ctx, func() error {
		table, err = accounts.Load(ctx, db, sealer, log)
		return err
	})
	if errors.Is(err, accounts.ErrKeys) {
		return nil, cli.Exit(err.Error(), 2)
	}
	if err != nil {
		return nil, cli.Exit("metadata: loading accounts: "+err.Error(), 1)
	}
	if len(table.Names()) == 0 {
		// The development account seeds only a database that never held
		// an account; one whose accounts were all removed stays empty.
		log.Warn("no storage account exists in the metadata store: every request is refused until one is added (blobgw account add ACCOUNT); the development account is seeded only into a new database, never into one whose accounts were removed")
	}
	go table.Run(ctx, accounts.RefreshInterval)
	return table, nil
}

// retryUnavailable runs fn again while it fails with
// leasedb.ErrUnavailable, for up to 30 s.
func retryUnavailable(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(30 * time.Second)
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || !errors.Is(err, leasedb.ErrUnavailable) || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(min(time.Duration(attempt)*100*time.Millisecond, time.Second)):
		}
	}
}
