package plancase

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/blobgw/blobgw/leasedb"
)

// Check runs c through s (Tx.ListEntries in a View) and reports how the
// result differs from what model implies.
func (c Case) Check(ctx context.Context, s leasedb.Store, account, container string, model []Entry) error {
	got, err := list(ctx, s, func(tx leasedb.Tx) ([]leasedb.ListItem, error) {
		return tx.ListEntries(ctx, account, container, c.Prefix, c.After, c.AfterSnapshot, c.Limit, c.Inc)
	})
	if err == nil {
		err = SameEntries(got, c.Want(model))
	}
	if err != nil {
		return fmt.Errorf("ListEntries: %w", err)
	}
	return nil
}

// Check runs c through s (Tx.ListDelimited in a View) and reports how the
// result differs from what model implies.
func (c DelimCase) Check(ctx context.Context, s leasedb.Store, account, container string, model []Entry) error {
	got, err := list(ctx, s, func(tx leasedb.Tx) ([]leasedb.ListItem, error) {
		return tx.ListDelimited(ctx, account, container, c.Prefix, c.Delimiter, c.After, c.Limit, c.Inc)
	})
	if err != nil {
		return err
	}
	return SameDelimEntries(got, c.Want(model))
}

// list returns what fn lists in a View of s.
func list(ctx context.Context, s leasedb.Store, fn func(tx leasedb.Tx) ([]leasedb.ListItem, error)) ([]leasedb.ListItem, error) {
	var got []leasedb.ListItem
	err := s.View(ctx, func(tx leasedb.Tx) error {
		var err error
		got, err = fn(tx)
		return err
	})
	return got, err
}

// Worst keeps, per family of cases (what a case's name says before its
// first "/", with the plan mode and limit), the largest cost per limit
// row, for the plan tests' logs.
type Worst map[string]float64

// Note records cost (rows read or pages fetched) of case name run with
// limit under mode.
func (w Worst) Note(mode, name string, limit, cost int) {
	inc, _, _ := strings.Cut(name, "/")
	fam := fmt.Sprintf("%s, include %s, limit %d", mode, inc, limit)
	w[fam] = max(w[fam], float64(cost)/float64(limit))
}

// Lines returns one line per family, sorted: "<family>: at most
// <n>×limit <what>".
func (w Worst) Lines(what string) []string {
	fams := make([]string, 0, len(w))
	for fam := range w {
		fams = append(fams, fam)
	}
	sort.Strings(fams)
	out := make([]string, len(fams))
	for i, fam := range fams {
		out[i] = fmt.Sprintf("%s: at most %.2f×limit %s", fam, w[fam], what)
	}
	return out
}

// Check runs c through s (Tx.FindTagged in a View, account Account) and
// reports how the result differs from Want, which must not be empty.
func (c FindCase) Check(ctx context.Context, s leasedb.Store) error {
	var got []FindMatch
	if err := s.View(ctx, func(tx leasedb.Tx) error {
		rows, err := tx.FindTagged(ctx, Account, c.Container, c.R, c.AC, c.AN, c.Limit)
		for _, r := range rows {
			got = append(got, FindMatch{C: r.Container, Name: r.Name})
		}
		return err
	}); err != nil {
		return err
	}
	if want := c.Want(); !reflect.DeepEqual(got, want) || len(want) == 0 {
		return fmt.Errorf("FindTagged = %v, want %v", got, want)
	}
	return nil
}
