package leasedb

import (
	"encoding/json"
	"fmt"
	"time"
)

// MaxSignedIdentifiers is how many stored access policies a container may
// hold (Azure's limit).
const MaxSignedIdentifiers = 5

// SignedIdentifier is one container stored access policy (Set Container
// ACL). Zero Start/Expiry and an empty Permission mean the policy leaves
// that field to the SAS that names it.
type SignedIdentifier struct {
	ID         string    `json:"id"`
	Start      time.Time `json:"start,omitzero"`
	Expiry     time.Time `json:"expiry,omitzero"`
	Permission string    `json:"permission,omitempty"`
}

// EncodeACL is the column text drivers store for a container's stored
// access policies: "" (stored as NULL) when there are none, else JSON with
// the times in UTC.
func EncodeACL(acl []SignedIdentifier) (string, error) {
	if len(acl) == 0 {
		return "", nil
	}
	out := make([]SignedIdentifier, len(acl))
	for i, si := range acl {
		out[i] = si.inUTC()
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", fmt.Errorf("leasedb: encode acl: %w", err)
	}
	return string(b), nil
}

// DecodeACL reads what EncodeACL wrote; "" (NULL) and an empty list read
// back as nil. Times come back in UTC.
func DecodeACL(s string) ([]SignedIdentifier, error) {
	if s == "" {
		return nil, nil
	}
	var acl []SignedIdentifier
	if err := json.Unmarshal([]byte(s), &acl); err != nil {
		return nil, fmt.Errorf("decode acl: %w", err)
	}
	if len(acl) == 0 {
		return nil, nil
	}
	for i := range acl {
		acl[i] = acl[i].inUTC()
	}
	return acl, nil
}

// inUTC is si with its set times in UTC, as EncodeACL stores them and
// DecodeACL returns them.
func (si SignedIdentifier) inUTC() SignedIdentifier {
	if !si.Start.IsZero() {
		si.Start = si.Start.UTC()
	}
	if !si.Expiry.IsZero() {
		si.Expiry = si.Expiry.UTC()
	}
	return si
}
