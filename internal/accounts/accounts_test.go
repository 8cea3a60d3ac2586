package accounts

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/dbopen"
)

func testKEK(b byte) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32)) }

func TestSealer(t *testing.T) {
	key, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(key)
	s, err := NewSealer(testKEK(1))
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := s.Seal("alpha", key)
	if err != nil {
		t.Fatal(err)
	}
	if !Sealed(sealed) || strings.Contains(sealed, key) {
		t.Fatalf("sealed form %q is not sealed or holds the key", sealed)
	}
	again, _ := s.Seal("alpha", key)
	if again == sealed {
		t.Fatal("two seals of one key are equal (nonce reused)")
	}
	got, err := s.Open("alpha", sealed)
	if err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("open: %v", err)
	}
	other, _ := NewSealer(testKEK(2))
	var nilSealer *Sealer
	for _, tc := range []struct {
		name   string
		s      *Sealer
		acct   string
		stored string
		want   string
	}{
		{"wrong key", other, "alpha", sealed, "does not open"},
		{"no key", nilSealer, "alpha", sealed, "are encrypted"},
		{"other account", s, "bravo", sealed, "does not open"},
		{"damaged", s, "alpha", sealedPrefix + "!!", "damaged"},
		{"plain not base64", s, "alpha", "not base64!", "base64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.s.Open(tc.acct, tc.stored)
			if !errors.Is(err, ErrKeys) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want ErrKeys with %q", err, tc.want)
			}
			if strings.Contains(err.Error(), key) {
				t.Fatal("error holds the key")
			}
		})
	}
	// Plain keys stay readable with or without an encryption key.
	plain, err := nilSealer.Seal("alpha", key)
	if err != nil || plain != key {
		t.Fatalf("plain seal %q %v", plain, err)
	}
	for _, x := range []*Sealer{nilSealer, s} {
		if got, err := x.Open("alpha", plain); err != nil || !bytes.Equal(got, raw) {
			t.Fatalf("open plain: %v", err)
		}
	}
	for _, bad := range []string{"short", base64.StdEncoding.EncodeToString(make([]byte, 16))} {
		if _, err := NewSealer(bad); err == nil || strings.Contains(err.Error(), bad) {
			t.Fatalf("NewSealer(%q): %v", bad, err)
		}
	}
}

// TestTableRefresh: a change in the store shows after Refresh, and with
// the store gone the last table keeps serving.
func TestTableRefresh(t *testing.T) {
	ctx := context.Background()
	store, err := dbopen.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	db := &leasedb.DB{Store: store}
	k1, _ := NewKey()
	if _, err := db.AddAccountKeys(ctx, "alpha", k1, ""); err != nil {
		t.Fatal(err)
	}
	tab, err := Load(ctx, db, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := tab.Lookup("alpha"); !ok || len(a.Keys) != 1 {
		t.Fatalf("alpha: %v %v", a, ok)
	}
	k2, _ := NewKey()
	if _, err := db.SetAccountKey(ctx, "alpha", 2, k2); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AddAccountKeys(ctx, "bravo", k1, ""); err != nil {
		t.Fatal(err)
	}
	if a, _ := tab.Lookup("alpha"); len(a.Keys) != 1 {
		t.Fatal("table changed before Refresh")
	}
	if err := tab.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if a, _ := tab.Lookup("alpha"); len(a.Keys) != 2 || base64.StdEncoding.EncodeToString(a.Keys[1]) != k2 {
		t.Fatalf("after refresh alpha has %d keys", len(a.Keys))
	}
	if _, ok := tab.Lookup("bravo"); !ok {
		t.Fatal("bravo not seen")
	}
	if err := db.RemoveAccountKeys(ctx, "bravo", false); err != nil {
		t.Fatal(err)
	}
	if err := tab.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := tab.Lookup("bravo"); ok {
		t.Fatal("removed bravo still served")
	}
	store.Close()
	if err := tab.Refresh(ctx); err == nil {
		t.Fatal("refresh on a closed store succeeded")
	}
	if _, ok := tab.Lookup("alpha"); !ok {
		t.Fatal("a store outage emptied the table")
	}
}

// TestRefreshUnreadableKey: an account whose key this serve cannot open
// (sealed with an encryption key it lacks) is not served, and never holds
// back another account's change: a key rotated out of alpha stops working
// at the next Refresh.
func TestRefreshUnreadableKey(t *testing.T) {
	ctx := context.Background()
	store, err := dbopen.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	db := &leasedb.DB{Store: store}
	k1, _ := NewKey()
	k2, _ := NewKey()
	if _, err := db.AddAccountKeys(ctx, "alpha", k1, k2); err != nil {
		t.Fatal(err)
	}
	tab, err := Load(ctx, db, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	// Another machine, holding an encryption key, adds bravo sealed and
	// seals charlie's second key; alpha's key 2 is rotated in plain.
	s, _ := NewSealer(testKEK(3))
	sealed, _ := s.Seal("bravo", k1)
	if _, err := db.AddAccountKeys(ctx, "bravo", sealed, ""); err != nil {
		t.Fatal(err)
	}
	sealedC, _ := s.Seal("charlie", k2)
	if _, err := db.AddAccountKeys(ctx, "charlie", k1, sealedC); err != nil {
		t.Fatal(err)
	}
	k3, _ := NewKey()
	if _, err := db.SetAccountKey(ctx, "alpha", 2, k3); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ {
		err := tab.Refresh(ctx)
		if !errors.Is(err, ErrKeys) || !strings.Contains(err.Error(), "bravo") || !strings.Contains(err.Error(), "charlie") {
			t.Fatalf("refresh %d: %v, want ErrKeys naming bravo and charlie", round, err)
		}
		if strings.Contains(err.Error(), k1) || strings.Contains(err.Error(), sealed) {
			t.Fatal("error holds a key")
		}
		a, ok := tab.Lookup("alpha")
		if !ok || len(a.Keys) != 2 || base64.StdEncoding.EncodeToString(a.Keys[1]) != k3 {
			t.Fatalf("alpha after refresh: %v %v; want key 2 rotated", a, ok)
		}
		if _, ok := tab.Lookup("bravo"); ok {
			t.Fatal("bravo, whose key does not open, is served")
		}
		if c, ok := tab.Lookup("charlie"); !ok || len(c.Keys) != 1 || base64.StdEncoding.EncodeToString(c.Keys[0]) != k1 {
			t.Fatalf("charlie: %v %v; want its plain key 1 alone", c, ok)
		}
	}
}
