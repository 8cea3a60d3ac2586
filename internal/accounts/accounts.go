// Package accounts serves the storage accounts the metadata store keeps
// (leasedb.AccountKeys) to the request verifier: a Table that every
// replica refreshes from the store every couple of seconds, so that an
// account added, removed or re-keyed with `blobgw account` on any machine
// is honoured everywhere without a restart. It also seals the keys before
// they go into the store when an encryption key is configured.
//
// Keys are never logged, and no error of this package contains one.
package accounts

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blobgw/blobgw/gateway/auth"
	"github.com/blobgw/blobgw/leasedb"
)

// EncryptionKeyEnv names the environment variable holding the key that
// seals account keys at rest: 32 bytes, base64.
const EncryptionKeyEnv = "BLOBGW_KEY_ENCRYPTION_KEY"

// sealedPrefix marks a sealed key in the store. A plain key is base64
// text, which never holds ':'.
const sealedPrefix = "aesgcm1:"

// ErrKeys marks an error opening the stored keys (a missing or wrong
// encryption key, a damaged row), as opposed to the store failing.
var ErrKeys = errors.New("accounts: stored keys do not open")

// Sealer turns account keys into what the store holds and back. The zero
// (nil) Sealer stores keys as their base64 text.
type Sealer struct {
	aead cipher.AEAD
}

// NewSealer reads the encryption key (base64 of 32 bytes); "" gives the
// nil Sealer, which stores keys in plain. The error never holds the key.
func NewSealer(b64 string) (*Sealer, error) {
	b64 = strings.TrimSpace(b64)
	if b64 == "" {
		return nil, nil
	}
	k, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(k) != 32 {
		return nil, fmt.Errorf("%s must be the base64 of 32 bytes (e.g. openssl rand -base64 32)", EncryptionKeyEnv)
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Seal returns what the store keeps for key (its base64 text) of account
// name: with an encryption key, AES-GCM with a random nonce and the
// account name as associated data (a sealed key copied to another
// account's row does not open).
func (s *Sealer) Seal(name, key string) (string, error) {
	raw, err := auth.DecodeKey(key)
	if err != nil {
		return "", err
	}
	if s == nil {
		return base64.StdEncoding.EncodeToString(raw), nil
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := s.aead.Seal(nonce, nonce, raw, []byte(name))
	return sealedPrefix + base64.StdEncoding.EncodeToString(out), nil
}

// Open returns the raw key the store's text holds.
func (s *Sealer) Open(name, stored string) ([]byte, error) {
	body, sealed := strings.CutPrefix(stored, sealedPrefix)
	if !sealed {
		raw, err := auth.DecodeKey(stored)
		if err != nil {
			return nil, fmt.Errorf("%w: account %s: %v", ErrKeys, name, err)
		}
		return raw, nil
	}
	if s == nil {
		return nil, fmt.Errorf("%w: account %s: its keys in the metadata store are encrypted; set %s to the key that sealed them", ErrKeys, name, EncryptionKeyEnv)
	}
	b, err := base64.StdEncoding.DecodeString(body)
	if err != nil || len(b) < s.aead.NonceSize() {
		return nil, fmt.Errorf("%w: account %s: a sealed key in the metadata store is damaged", ErrKeys, name)
	}
	n := s.aead.NonceSize()
	raw, err := s.aead.Open(nil, b[:n], b[n:], []byte(name))
	if err != nil {
		return nil, fmt.Errorf("%w: account %s: %s does not open its keys in the metadata store (they were sealed with a different key)", ErrKeys, name, EncryptionKeyEnv)
	}
	return raw, nil
}

// Sealed reports whether the stored text is a sealed key.
func Sealed(stored string) bool { return strings.HasPrefix(stored, sealedPrefix) }

// Build opens every stored account into the verifier's table.
func (s *Sealer) Build(rows []leasedb.AccountKeys) (auth.MapAccounts, error) {
	m, err := s.build(rows)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// build opens every stored key it can: a key that does not open is left
// out of the table (an account with none is not served) and reported in
// the error, so that one account's unreadable key never keeps another
// account's removed key working.
func (s *Sealer) build(rows []leasedb.AccountKeys) (auth.MapAccounts, error) {
	m := auth.MapAccounts{}
	var errs []error
	for _, r := range rows {
		a := &auth.Account{Name: r.Name}
		for _, k := range []string{r.Key1, r.Key2} {
			if k == "" {
				continue
			}
			raw, err := s.Open(r.Name, k)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			a.Keys = append(a.Keys, raw)
		}
		if len(a.Keys) > 0 {
			m[r.Name] = a
		}
	}
	return m, errors.Join(errs...)
}

// NewKey returns a fresh random account key (64 bytes, base64, as Azure's).
func NewKey() (string, error) {
	b := make([]byte, 64)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// RefreshInterval is how often a Table checks the store's generation.
const RefreshInterval = 2 * time.Second

// Table implements auth.Accounts over the accounts in the store: Lookup
// reads an in-memory map that Refresh swaps when the store's generation
// moved. When the store cannot be read the last good map stays, so an
// outage of the metadata store does not lock every client out.
type Table struct {
	db     *leasedb.DB
	sealer *Sealer
	log    *slog.Logger

	cur atomic.Pointer[auth.MapAccounts]
	mu  sync.Mutex // serializes Refresh
	gen int64
	// keysErr is the keys of generation gen that did not open, reported
	// by every Refresh until the generation moves.
	keysErr error
}

var _ auth.Accounts = (*Table)(nil)

// Load reads every account from the store and opens its keys: a key that
// does not open (a wrong or missing encryption key) fails here, so serve
// refuses to start instead of refusing every client.
func Load(ctx context.Context, db *leasedb.DB, sealer *Sealer, log *slog.Logger) (*Table, error) {
	t := &Table{db: db, sealer: sealer, log: log}
	rows, gen, err := db.ListAccountKeys(ctx)
	if err != nil {
		return nil, err
	}
	m, err := sealer.Build(rows)
	if err != nil {
		return nil, err
	}
	t.cur.Store(&m)
	t.gen = gen
	return t, nil
}

// Lookup implements auth.Accounts.
func (t *Table) Lookup(name string) (*auth.Account, bool) {
	return (*t.cur.Load()).Lookup(name)
}

// Names lists the accounts served now.
func (t *Table) Names() []string {
	m := *t.cur.Load()
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	return out
}

// Refresh rereads the accounts when the store's generation moved. When
// the store cannot be read the current table stays. A key that does not
// open (ErrKeys: sealed with an encryption key this serve lacks, a damaged
// row) is not served, and the error says so, while every other account's
// change (a key removed or rotated) applies.
func (t *Table) Refresh(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	gen, err := t.db.AccountKeysGeneration(ctx)
	if err != nil {
		return err
	}
	if gen == t.gen {
		return t.keysErr
	}
	rows, gen, err := t.db.ListAccountKeys(ctx)
	if err != nil {
		return err
	}
	m, err := t.sealer.build(rows)
	t.cur.Store(&m)
	t.gen, t.keysErr = gen, err
	return err
}

// Run refreshes every interval until ctx ends, logging (never a key) the
// failures while the last good table keeps serving.
func (t *Table) Run(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := t.Refresh(rctx)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			failing = true
			t.log.Warn("refreshing accounts from the metadata store failed; serving the last accounts read", "err", err)
		case err == nil && failing:
			failing = false
			t.log.Info("accounts refreshed from the metadata store again")
		}
	}
}
