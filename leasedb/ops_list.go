package leasedb

import (
	"context"
	"strings"
)

// restBatch is how many entries delimitedPage reads at a time of the one
// name whose snapshots a marker stopped in the middle of.
const restBatch = 64

// delimitedPage lists one page of List Blobs with a delimiter from the
// position after: at most max items, and the marker of the next page when
// more follow. One Tx.ListDelimited reads the page, seeking past each
// prefix, so the page costs about what it returns however many names lie
// under its prefixes.
func delimitedPage(ctx context.Context, tx Tx, account, container, prefix, delimiter string, after listPos, max int, inc ListInclude) ([]ListItem, string, error) {
	var items []ListItem
	from := after.name
	if after.snapshot != "" && strings.HasPrefix(after.name, prefix) {
		// The marker stopped in the middle of after.name's snapshots:
		// its later snapshots and its blob come first, as one prefix
		// item when the name rolls up.
		rest, err := restOfName(ctx, tx, account, container, after, inc)
		if err != nil {
			return nil, "", err
		}
		if p, ok := rollup(after.name, prefix, delimiter); ok {
			if len(rest) > 0 {
				items = append(items, ListItem{Prefix: p})
				from = p + maxRune
			}
		} else {
			items = append(items, rest...)
		}
	}
	if len(items) <= max {
		rows, err := tx.ListDelimited(ctx, account, container, prefix, delimiter, from, max+1-len(items), inc)
		if err != nil {
			return nil, "", err
		}
		items = append(items, rows...)
	}
	if len(items) <= max {
		return items, "", nil
	}
	// At least one more item exists: the page is full.
	last := items[max-1]
	next := listPos{name: last.Prefix + maxRune}
	if last.Prefix == "" {
		next = listPos{name: last.Blob.Name, snapshot: last.Blob.Snapshot}
	}
	return items[:max], encodeListMarker(next), nil
}

// restOfName returns the entries of the name at p that come after p (its
// snapshots after p.snapshot, then its blob or staged entry).
func restOfName(ctx context.Context, tx Tx, account, container string, p listPos, inc ListInclude) ([]ListItem, error) {
	var out []ListItem
	for {
		rows, err := tx.ListEntries(ctx, account, container, p.name, p.name, p.snapshot, restBatch, inc)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if r.Blob.Name != p.name {
				return out, nil
			}
			out = append(out, r)
			p.snapshot = r.Blob.Snapshot
		}
		if len(rows) < restBatch || p.snapshot == "" {
			return out, nil
		}
	}
}

// rollup returns the BlobPrefix that name rolls up into under prefix with
// delimiter, and whether it does.
func rollup(name, prefix, delimiter string) (string, bool) {
	rest := name[len(prefix):]
	i := strings.Index(rest, delimiter)
	if i < 0 {
		return "", false
	}
	return prefix + rest[:i+len(delimiter)], true
}

// startBefore is the snapshot part of the position that startFrom makes:
// it sorts before every snapshot id.
const startBefore = "\x01"
