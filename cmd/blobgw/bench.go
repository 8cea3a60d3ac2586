package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/blobgw/blobgw/internal/bench"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/urfave/cli/v2"
)

// benchCommand is `blobgw bench`: drive one or two sets of Blob endpoints
// with the Azure SDK and print throughput, latency and errors per workload
// (internal/bench), with ratios when a second set is given.
func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "benchmark Blob REST endpoints (blobgw, Azurite, Azure) with the Azure SDK",
		Description: "Workloads: " + strings.Join(bench.Workloads, ", ") + ".\n" +
			"Clients are spread round robin over the --endpoint URLs (replicas of one account). --compare\n" +
			"names a second set; each workload then runs on both, one after the other in alternating order,\n" +
			"and the ratios (first set / second) are printed. Credentials default to the dev account.",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "endpoint", Usage: "service URL, e.g. http://127.0.0.1:10000/devstoreaccount1 (repeatable)"},
			&cli.StringSliceFlag{Name: "connection-string", Usage: "connection string instead of --endpoint (repeatable)"},
			&cli.StringFlag{Name: "account", Value: config.DevAccountName, Usage: "account name for --endpoint"},
			&cli.StringFlag{Name: "key", Value: config.DevAccountKey, Usage: "account key (base64) for --endpoint"},
			&cli.StringSliceFlag{Name: "compare", Usage: "service URL of the second set (repeatable)"},
			&cli.StringSliceFlag{Name: "compare-connection-string", Usage: "connection string of the second set (repeatable)"},
			&cli.StringFlag{Name: "compare-account", Usage: "account name for --compare (default: --account)"},
			&cli.StringFlag{Name: "compare-key", Usage: "account key for --compare (default: --key)"},
			&cli.StringFlag{Name: "name", Value: "A", Usage: "label of the first set"},
			&cli.StringFlag{Name: "compare-name", Value: "B", Usage: "label of the second set"},
			&cli.StringSliceFlag{Name: "workload", Value: cli.NewStringSlice("put-small"), Usage: "workload, or a comma-separated list, or all (repeatable)"},
			&cli.IntFlag{Name: "clients", Value: 8, Usage: "concurrent clients per set"},
			&cli.DurationFlag{Name: "duration", Value: 10e9, Usage: "timed phase of each workload on each set"},
			&cli.IntFlag{Name: "rounds", Value: 1, Usage: "repeat each workload this often per set, alternating the order"},
			&cli.StringFlag{Name: "size", Value: "4KiB", Usage: "body of put-small, put-small-ifmatch, get-small and rmw-hot"},
			&cli.StringFlag{Name: "large-size", Value: "64MiB", Usage: "body of put-large, get-large and staged"},
			&cli.StringFlag{Name: "block-size", Value: "4MiB", Usage: "block size of staged"},
			&cli.IntFlag{Name: "list-blobs", Value: 5000, Usage: "blobs the list workload prepares"},
			&cli.IntFlag{Name: "page-size", Value: 1000, Usage: "maxresults of each List Blobs page"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON"},
			&cli.BoolFlag{Name: "keep", Usage: "keep the bench containers"},
		},
		Action: runBench,
	}
}

func runBench(c *cli.Context) error {
	usage := func(format string, a ...any) error { return cli.Exit("bench: "+fmt.Sprintf(format, a...), 2) }
	first := endpointSet(c.String("name"), c.StringSlice("endpoint"), c.StringSlice("connection-string"), c.String("account"), c.String("key"))
	if len(first.Endpoints) == 0 {
		return usage("--endpoint or --connection-string is required")
	}
	sets := []bench.Set{first}
	acct, key := c.String("account"), c.String("key")
	if c.IsSet("compare-account") {
		acct = c.String("compare-account")
	}
	if c.IsSet("compare-key") {
		key = c.String("compare-key")
	}
	if second := endpointSet(c.String("compare-name"), c.StringSlice("compare"), c.StringSlice("compare-connection-string"), acct, key); len(second.Endpoints) > 0 {
		if second.Name == first.Name {
			return usage("--name and --compare-name must differ")
		}
		sets = append(sets, second)
	}
	var workloads []string
	for _, v := range c.StringSlice("workload") {
		for _, w := range strings.Split(v, ",") {
			if w = strings.TrimSpace(w); w == "all" {
				workloads = append(workloads, bench.Workloads...)
			} else if w != "" {
				workloads = append(workloads, w)
			}
		}
	}
	if err := bench.Validate(workloads); err != nil {
		return usage("%v", err)
	}
	cfg := bench.Config{
		Clients: c.Int("clients"), Duration: c.Duration("duration"), Rounds: c.Int("rounds"),
		ListBlobs: c.Int("list-blobs"), PageSize: c.Int("page-size"), Keep: c.Bool("keep"),
		Progress: c.App.ErrWriter, Terminal: isTerminal(c.App.ErrWriter),
	}
	if cfg.Clients < 1 || cfg.Duration <= 0 || cfg.Rounds < 1 || cfg.ListBlobs < 1 || cfg.PageSize < 1 || cfg.PageSize > 5000 {
		return usage("--clients, --duration, --rounds, --list-blobs must be positive and --page-size within 1..5000")
	}
	for flag, dst := range map[string]*int64{"size": &cfg.SmallSize, "large-size": &cfg.LargeSize, "block-size": &cfg.BlockSize} {
		n, err := parseSize(c.String(flag))
		if err != nil || n < 1 {
			return usage("--%s: %q is not a size (bytes, or with KiB, MiB, GiB)", flag, c.String(flag))
		}
		*dst = n
	}
	if cfg.BlockSize > 4000<<20 {
		return usage("--block-size: at most 4000MiB (Put Block)")
	}
	rep, err := bench.Run(c.Context, cfg, workloads, sets)
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	if c.Bool("json") {
		err = rep.WriteJSON(c.App.Writer)
	} else {
		err = rep.WriteTable(c.App.Writer)
	}
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	return nil
}

func endpointSet(name string, urls, connStrings []string, account, key string) bench.Set {
	s := bench.Set{Name: name}
	for _, u := range urls {
		s.Endpoints = append(s.Endpoints, bench.Endpoint{URL: u, Account: account, Key: key})
	}
	for _, cs := range connStrings {
		s.Endpoints = append(s.Endpoints, bench.Endpoint{ConnectionString: cs})
	}
	return s
}

// parseSize reads a byte count with an optional K, KiB, M, MiB, G or GiB
// suffix (all binary).
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = rest, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}

// isTerminal reports whether w is a character device (a terminal), where
// the progress line is rewritten in place.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
