package main

// The operator lease commands: list, show, break and force-release blob and
// container leases. They talk to the metadata store directly with the same
// DSN and configuration as serve, so they work while every gateway is down,
// and they change leases through leasedb's locked transactions and the
// gateway's lease state machine, so a break racing a gateway renew has one
// outcome.

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/dbopen"
	"github.com/blobgw/blobgw/svcerr"
	"github.com/urfave/cli/v2"
)

func leaseCommand() *cli.Command {
	return &cli.Command{
		Name:  "lease",
		Usage: "list, show, break or force-release blob and container leases (works while gateways are down)",
		Description: "The lease commands read and change the metadata store directly, with the same\n" +
			"configuration as serve (--config, --metadata, --data-dir, BLOBGW_*). Changes take the\n" +
			"same row locks and run the same lease state machine as the gateway's Lease Blob and\n" +
			"Lease Container operations. --account names the account to act on; show, break and\n" +
			"release default to the configured account when exactly one is configured.",
		Subcommands: []*cli.Command{
			{
				Name:      "list",
				Usage:     "list leased, breaking, broken and expired leases",
				ArgsUsage: " ",
				Flags: leaseFlags("only leases in this account (default: every account)",
					&cli.StringFlag{Name: "container", Usage: "only leases on this container and the blobs in it"},
					&cli.StringFlag{Name: "state", Usage: "only leases in this effective state: leased, breaking, broken or expired"},
					&cli.DurationFlag{Name: "older-than", Usage: "only leases acquired longer ago than `DURATION` by the database clock (e.g. 1h; leases with an unknown acquisition time never match)", DefaultText: "any age"},
					&cli.BoolFlag{Name: "json", Usage: "print a JSON array instead of a table"},
				),
				Action: leaseAction(0, 0, leaseList),
			},
			{
				Name:      "show",
				Usage:     "show the lease of a blob, or of the container when BLOB is omitted",
				ArgsUsage: "CONTAINER [BLOB]",
				Flags: leaseFlags(accountUsage,
					&cli.BoolFlag{Name: "json", Usage: "print a JSON object instead of text"},
				),
				Action: leaseAction(1, 2, leaseShow),
			},
			{
				Name:  "break",
				Usage: "break the lease of a blob, or of the container when BLOB is omitted",
				Description: "Without --period the lease breaks naturally, as Lease Blob does without\n" +
					"x-ms-lease-break-period: an infinite lease is broken at once, a fixed one is\n" +
					"breaking until the end of its current term. --period 0 breaks at once.",
				ArgsUsage: "CONTAINER [BLOB]",
				Flags: leaseFlags(accountUsage,
					&cli.IntFlag{Name: "period", Usage: "break period in `SECONDS`, 0..60", DefaultText: "break naturally"},
				),
				Action: leaseAction(1, 2, leaseBreak),
			},
			{
				Name:  "release",
				Usage: "release the lease of a blob, or of the container when BLOB is omitted, without its lease id",
				Description: "A forced release leaves the resource available, as if the holder had released\n" +
					"it: the holder's next renew fails with 409 LeaseIdMismatchWithLeaseOperation and\n" +
					"its next write with its lease id with 412. It asks for confirmation on standard\n" +
					"input unless --yes is given; without an answer (no terminal, end of input) it\n" +
					"refuses.",
				ArgsUsage: "CONTAINER [BLOB] --force",
				Flags: leaseFlags(accountUsage,
					&cli.BoolFlag{Name: "force", Usage: "required: release without the lease id"},
					&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask for confirmation"},
				),
				Action: leaseAction(1, 2, leaseRelease),
			},
		},
	}
}

const accountUsage = "account of the container (default: the only configured account)"

// leaseFlags are serve's flags that say where the metadata store is
// (--config, --data-dir, --metadata and their variables; the config file
// is read and validated as for serve), --account taking the name
// of the account to act on instead of account keys (the lease commands need
// no keys; the configured accounts come from the file and BLOBGW_ACCOUNTS),
// and the command's own flags.
func leaseFlags(accountHelp string, own ...cli.Flag) []cli.Flag {
	var out []cli.Flag
	for _, f := range configFlags() {
		switch f.Names()[0] {
		case "config", "data-dir", "metadata":
			out = append(out, f)
		}
	}
	out = append(out, &cli.StringFlag{Name: "account", Usage: accountHelp})
	return append(out, own...)
}

// leaseConfig loads the configuration exactly as loadConfig does for the
// other commands. loadConfig reads account specs from the "account" flag,
// which the lease commands use for an account name, so it is given a child
// context in which "account" is the spec list from the environment
// (BLOBGW_ACCOUNTS, the variable serve's --account reads) and every other
// flag resolves to the command's own.
func leaseConfig(c *cli.Context) (config.Config, error) {
	var env []string
	for _, f := range configFlags() {
		if sf, ok := f.(*cli.StringSliceFlag); ok && sf.Name == "account" {
			env = sf.EnvVars
		}
	}
	specFlag := &cli.StringSliceFlag{Name: "account"}
	specs := cli.NewStringSlice()
	for _, name := range env {
		if v := os.Getenv(name); v != "" {
			// One value, as serve reads it (DisableSliceFlagSeparator):
			// ParseAccounts splits the accounts on ';'.
			specs = cli.NewStringSlice(v)
			specFlag.HasBeenSet = true
			break
		}
	}
	set := flag.NewFlagSet("accounts", flag.ContinueOnError)
	set.Var(specs, "account", "")
	ctx := cli.NewContext(c.App, set, c)
	ctx.Command = &cli.Command{Name: c.Command.Name, Flags: []cli.Flag{specFlag}}
	return loadConfig(ctx)
}

// leaseAction parses the positional arguments (between min and max of
// them), then runs fn; the account commands parse theirs with it too. urfave/cli v2 stops parsing flags at the first
// argument, but the lease commands are written with flags last ("lease
// release C B --force"), so flags after the arguments are applied here; "--"
// ends the flags (for blob names that begin with '-').
func leaseAction(min, max int, fn func(c *cli.Context, args []string) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		args, help, err := trailingFlags(c)
		if err != nil {
			return err
		}
		if help {
			return cli.ShowCommandHelp(c.Lineage()[1], c.Command.Name)
		}
		if len(args) < min || len(args) > max {
			usage := strings.TrimSpace(c.Command.ArgsUsage)
			if usage == "" {
				usage = "(no arguments)"
			}
			return cli.Exit(fmt.Sprintf("usage: %s %s", c.Command.HelpName, usage), 2)
		}
		return fn(c, args)
	}
}

func trailingFlags(c *cli.Context) (args []string, help bool, err error) {
	rest := c.Args().Slice()
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			return append(args, rest[i+1:]...), false, nil
		}
		if len(a) < 2 || a[0] != '-' {
			args = append(args, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		var def cli.Flag
		for _, f := range c.Command.Flags {
			for _, n := range f.Names() {
				if n == name {
					def = f
				}
			}
		}
		if def == nil {
			return nil, false, cli.Exit("flag provided but not defined: "+a, 2)
		}
		if name == "help" || name == "h" {
			return nil, true, nil
		}
		if _, isBool := def.(*cli.BoolFlag); isBool && !hasVal {
			val = "true"
		} else if !hasVal {
			if i+1 == len(rest) {
				return nil, false, cli.Exit("flag needs an argument: "+a, 2)
			}
			i++
			val = rest[i]
		}
		if err := c.Set(def.Names()[0], val); err != nil {
			return nil, false, cli.Exit(fmt.Sprintf("invalid value %q for flag %s: %v", val, a, err), 2)
		}
	}
	return args, false, nil
}

// openLeaseDB opens the metadata store the configuration names. It refuses
// a SQLite file that does not exist and a database without blobgw's schema
// rather than create an empty store: an operator pointed at the wrong place
// must see an error, not "no leases".
func openLeaseDB(c *cli.Context, cfg config.Config) (*leasedb.DB, func(), error) {
	driver, target, err := dbopen.Parse(cfg.Metadata)
	if err != nil {
		return nil, nil, cli.Exit("metadata: "+err.Error(), 2)
	}
	if driver == dbopen.SQLite {
		if _, err := os.Stat(target); errors.Is(err, fs.ErrNotExist) {
			return nil, nil, cli.Exit(fmt.Sprintf("metadata: no database at %s (check --metadata / --data-dir)", target), 1)
		}
	}
	v, err := dbopen.SchemaVersion(c.Context, cfg.Metadata)
	if err != nil {
		return nil, nil, cli.Exit("metadata: "+oneLine(err.Error()), 1)
	}
	if v == 0 {
		return nil, nil, cli.Exit(fmt.Sprintf("metadata: %s has no blobgw schema (check --metadata)", redactDSN(cfg.Metadata)), 1)
	}
	store, err := dbopen.Open(c.Context, cfg.Metadata)
	if err != nil {
		return nil, nil, cli.Exit("metadata: "+oneLine(err.Error()), 1)
	}
	return &leasedb.DB{Store: store, Grace: cfg.GCGrace}, func() { store.Close() }, nil
}

// targetAccount is --account, or the only configured account.
func targetAccount(c *cli.Context, cfg config.Config) (string, error) {
	if a := c.String("account"); a != "" {
		return a, nil
	}
	if len(cfg.Accounts) == 1 {
		return cfg.Accounts[0].Name, nil
	}
	names := make([]string, 0, len(cfg.Accounts))
	for _, a := range cfg.Accounts {
		names = append(names, a.Name)
	}
	return "", cli.Exit(fmt.Sprintf("%d accounts are configured (%s): name one with --account", len(names), strings.Join(names, ", ")), 2)
}

// leaseTarget loads the configuration, resolves the account and the
// CONTAINER [BLOB] arguments, and opens the store.
func leaseTarget(c *cli.Context, args []string) (*leasedb.DB, func(), leasedb.BlobRef, error) {
	var ref leasedb.BlobRef
	cfg, err := leaseConfig(c)
	if err != nil {
		return nil, nil, ref, err
	}
	if ref.Account, err = targetAccount(c, cfg); err != nil {
		return nil, nil, ref, err
	}
	ref.Container = args[0]
	if len(args) == 2 {
		if args[1] == "" {
			return nil, nil, ref, cli.Exit("empty blob name", 2)
		}
		ref.Name = args[1]
	}
	db, closeDB, err := openLeaseDB(c, cfg)
	return db, closeDB, ref, err
}

// refString names a blob as account/container/blob, a container as
// account/container.
func refString(r leasedb.BlobRef) string {
	if r.Name == "" {
		return r.Account + "/" + r.Container
	}
	return r.String()
}

// leaseError turns a failed lease operation into one line and a non-zero
// exit status.
func leaseError(op string, ref leasedb.BlobRef, err error) error {
	switch {
	case errors.Is(err, svcerr.New(svcerr.ContainerNotFound)):
		return cli.Exit(fmt.Sprintf("%s: container %s not found", op, ref.Account+"/"+ref.Container), 1)
	case errors.Is(err, svcerr.New(svcerr.BlobNotFound)):
		return cli.Exit(fmt.Sprintf("%s: blob %s not found", op, ref), 1)
	case errors.Is(err, svcerr.New(svcerr.LeaseNotPresentWithLeaseOperation)):
		return cli.Exit(fmt.Sprintf("%s: %s has no lease", op, refString(ref)), 1)
	case errors.Is(err, leasedb.ErrLeaseChanged):
		return cli.Exit(fmt.Sprintf("%s: the lease on %s changed since it was shown; nothing changed, run the command again", op, refString(ref)), 1)
	}
	return cli.Exit(op+": "+oneLine(err.Error()), 1)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// ---- output ----

// leaseJSON is one lease in --json output. Field names are stable.
type leaseJSON struct {
	Account   string `json:"account"`
	Container string `json:"container"`
	// Blob is "" for a container lease.
	Blob string `json:"blob"`
	// Kind is "container" or "blob".
	Kind string `json:"kind"`
	// State is the effective state at the database clock: available,
	// leased, breaking, broken or expired.
	State string `json:"state"`
	// Status is x-ms-lease-status: locked or unlocked.
	Status string `json:"status"`
	// Duration is "infinite", "fixed" or "" (no term: breaking, broken,
	// available).
	Duration string `json:"duration"`
	// DurationSeconds is -1 (infinite), 15..60 (fixed) or 0.
	DurationSeconds int        `json:"duration_seconds"`
	LeaseID         string     `json:"lease_id"`
	Acquired        *time.Time `json:"acquired"`
	Expires         *time.Time `json:"expires"`
	BreakAt         *time.Time `json:"break_at"`
}

func toJSON(r leasedb.LeaseRow, now time.Time) leaseJSON {
	status, state, _ := r.Lease.Headers(now)
	j := leaseJSON{
		Account: r.Account, Container: r.Container, Blob: r.Blob, Kind: "blob",
		State: state, Status: status, DurationSeconds: r.Lease.Duration, LeaseID: r.Lease.ID,
		Duration: durationKind(r.Lease),
		Acquired: timePtr(r.Lease.Since), Expires: timePtr(r.Lease.Expires), BreakAt: timePtr(r.Lease.BreakAt),
	}
	if r.Blob == "" {
		j.Kind = "container"
	}
	return j
}

func durationKind(l leasedb.Lease) string {
	switch {
	case l.Duration < 0:
		return "infinite"
	case l.Duration > 0:
		return "fixed"
	}
	return ""
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// durationText is the DURATION column: infinite, 60s or -.
func durationText(l leasedb.Lease) string {
	switch {
	case l.Duration < 0:
		return "infinite"
	case l.Duration > 0:
		return fmt.Sprintf("%ds", l.Duration)
	}
	return "-"
}

// when formats t with its distance from now ("2025-01-02T15:04:05Z (in
// 42s)", "... (3h2m ago)"); "-" for the zero time.
func when(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	s := t.UTC().Format(time.RFC3339)
	d := t.Sub(now)
	if d >= 0 {
		return s + " (in " + roughDuration(d) + ")"
	}
	return s + " (" + roughDuration(-d) + " ago)"
}

func roughDuration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

// deadline is the EXPIRES/BREAKS AT column: the end of a fixed term while
// leased or expired, the break time while breaking or broken.
func deadline(l leasedb.Lease, now time.Time) string {
	switch l.Effective(now) {
	case leasedb.LeaseLeased, leasedb.LeaseExpired:
		if !l.Expires.IsZero() {
			return "expires " + when(l.Expires, now)
		}
	case leasedb.LeaseBreaking, leasedb.LeaseBroken:
		if !l.BreakAt.IsZero() {
			return "breaks " + when(l.BreakAt, now)
		}
	}
	return "-"
}

// describe is a one-phrase summary of a lease at now, for "what changed"
// lines.
func describe(l leasedb.Lease, now time.Time) string {
	eff := l.Effective(now)
	var parts []string
	switch eff {
	case leasedb.LeaseAvailable:
		return "available"
	case leasedb.LeaseLeased:
		if l.Duration < 0 {
			parts = append(parts, "infinite")
		} else {
			parts = append(parts, fmt.Sprintf("fixed %ds, expires %s", l.Duration, when(l.Expires, now)))
		}
	case leasedb.LeaseExpired:
		parts = append(parts, "expired "+when(l.Expires, now))
	case leasedb.LeaseBreaking:
		parts = append(parts, "broken at "+when(l.BreakAt, now))
	}
	parts = append(parts, "id "+l.ID)
	return string(eff) + " (" + strings.Join(parts, ", ") + ")"
}

// ---- commands ----

var listStates = []leasedb.LeaseState{leasedb.LeaseLeased, leasedb.LeaseBreaking, leasedb.LeaseBroken, leasedb.LeaseExpired}

func leaseList(c *cli.Context, _ []string) error {
	var state leasedb.LeaseState
	if s := c.String("state"); s != "" {
		for _, st := range listStates {
			if strings.EqualFold(s, string(st)) {
				state = st
			}
		}
		if state == "" {
			return cli.Exit(fmt.Sprintf("--state %q: want leased, breaking, broken or expired", s), 2)
		}
	}
	olderThan := c.Duration("older-than")
	if olderThan < 0 {
		return cli.Exit("--older-than must not be negative", 2)
	}
	cfg, err := leaseConfig(c)
	if err != nil {
		return err
	}
	db, closeDB, err := openLeaseDB(c, cfg)
	if err != nil {
		return err
	}
	defer closeDB()
	rows, now, err := db.ListLeases(c.Context, leasedb.LeaseFilter{Account: c.String("account"), Container: c.String("container")})
	if err != nil {
		return cli.Exit("list: "+oneLine(err.Error()), 1)
	}
	keep := rows[:0]
	for _, r := range rows {
		if state != "" && r.Lease.Effective(now) != state {
			continue
		}
		if c.IsSet("older-than") && (r.Lease.Since.IsZero() || now.Sub(r.Lease.Since) <= olderThan) {
			continue
		}
		keep = append(keep, r)
	}
	rows = keep

	w := c.App.Writer
	if c.Bool("json") {
		out := make([]leaseJSON, 0, len(rows))
		for _, r := range rows {
			out = append(out, toJSON(r, now))
		}
		return writeJSON(w, out)
	}
	if len(rows) == 0 {
		fmt.Fprintln(w, "no leases found")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ACCOUNT\tCONTAINER\tBLOB\tSTATE\tDURATION\tLEASE ID\tACQUIRED\tEXPIRES/BREAKS AT")
	for _, r := range rows {
		blob := r.Blob
		if blob == "" {
			blob = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Account, r.Container, blob,
			r.Lease.Effective(now), durationText(r.Lease), r.Lease.ID, when(r.Lease.Since, now), deadline(r.Lease, now))
	}
	return tw.Flush()
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func leaseShow(c *cli.Context, args []string) error {
	db, closeDB, ref, err := leaseTarget(c, args)
	if err != nil {
		return err
	}
	defer closeDB()
	l, now, err := db.GetLease(c.Context, ref)
	if err != nil {
		return leaseError("show", ref, err)
	}
	row := leasedb.LeaseRow{Account: ref.Account, Container: ref.Container, Blob: ref.Name, Lease: l}
	if c.Bool("json") {
		return writeJSON(c.App.Writer, toJSON(row, now))
	}
	status, state, _ := l.Headers(now)
	tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 1, ' ', 0)
	fmt.Fprintf(tw, "account:\t%s\n", ref.Account)
	fmt.Fprintf(tw, "container:\t%s\n", ref.Container)
	if ref.Name != "" {
		fmt.Fprintf(tw, "blob:\t%s\n", ref.Name)
	}
	fmt.Fprintf(tw, "state:\t%s\n", state)
	fmt.Fprintf(tw, "status:\t%s\n", status)
	if l.ID != "" {
		fmt.Fprintf(tw, "duration:\t%s\n", durationText(l))
		fmt.Fprintf(tw, "lease id:\t%s\n", l.ID)
		fmt.Fprintf(tw, "acquired:\t%s\n", when(l.Since, now))
		if !l.Expires.IsZero() {
			fmt.Fprintf(tw, "expires:\t%s\n", when(l.Expires, now))
		}
		if !l.BreakAt.IsZero() {
			fmt.Fprintf(tw, "breaks at:\t%s\n", when(l.BreakAt, now))
		}
	}
	return tw.Flush()
}

func leaseBreak(c *cli.Context, args []string) error {
	period := -1
	if c.IsSet("period") {
		period = c.Int("period")
		if period < 0 || period > 60 {
			return cli.Exit(fmt.Sprintf("--period %d: want 0..60 seconds", period), 2)
		}
	}
	db, closeDB, ref, err := leaseTarget(c, args)
	if err != nil {
		return err
	}
	defer closeDB()
	out, err := db.BreakLease(c.Context, ref, period)
	if err != nil {
		return leaseError("break", ref, err)
	}
	before, after := describe(out.Before, out.Now), describe(out.After, out.Now)
	if before == after {
		fmt.Fprintf(c.App.Writer, "%s: %s; unchanged\n", refString(ref), before)
		return nil
	}
	fmt.Fprintf(c.App.Writer, "%s: %s -> %s\n", refString(ref), before, after)
	return nil
}

func leaseRelease(c *cli.Context, args []string) error {
	if !c.Bool("force") {
		return cli.Exit("release: --force is required: it frees the lease without its id, and the holder's next write fails", 2)
	}
	db, closeDB, ref, err := leaseTarget(c, args)
	if err != nil {
		return err
	}
	defer closeDB()
	expect := ""
	if !c.Bool("yes") {
		l, now, err := db.GetLease(c.Context, ref)
		if err != nil {
			return leaseError("release", ref, err)
		}
		if l.ID == "" && l.Effective(now) == leasedb.LeaseAvailable {
			fmt.Fprintf(c.App.Writer, "%s: available; nothing to release\n", refString(ref))
			return nil
		}
		fmt.Fprintf(c.App.ErrWriter, "release lease on %s, %s? [y/N] ", refString(ref), describe(l, now))
		answer, err := bufio.NewReader(c.App.Reader).ReadString('\n')
		if err != nil && answer == "" {
			fmt.Fprintln(c.App.ErrWriter)
		}
		switch strings.ToLower(strings.TrimSpace(answer)) {
		case "y", "yes":
		default:
			return cli.Exit("release: not confirmed; nothing changed (pass --yes to release without asking)", 1)
		}
		expect = l.ID
	}
	out, err := db.ForceReleaseLease(c.Context, ref, expect)
	if err != nil {
		return leaseError("release", ref, err)
	}
	if !out.Changed {
		fmt.Fprintf(c.App.Writer, "%s: available; nothing to release\n", refString(ref))
		return nil
	}
	fmt.Fprintf(c.App.Writer, "%s: %s -> available (released by force)\n", refString(ref), describe(out.Before, out.Now))
	return nil
}
