package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// container_delete_retention_days: read per account from the file, 0 (off)
// or 1-365, and handed to the gateway as a duration per account that has
// it on.
func TestContainerDeleteRetention(t *testing.T) {
	tests := []struct {
		days    string
		want    time.Duration
		wantErr bool
	}{
		{"", 0, false},
		{"0", 0, false},
		{"1", 24 * time.Hour, false},
		{"365", 365 * 24 * time.Hour, false},
		{"366", 0, true},
		{"-1", 0, true},
		{"seven", 0, true},
	}
	for _, tc := range tests {
		t.Run("days="+tc.days, func(t *testing.T) {
			doc := "accounts:\n  - name: acct1\n    keys: [" + DevAccountKey + "]\n"
			if tc.days != "" {
				doc += "    container_delete_retention_days: " + tc.days + "\n"
			}
			doc += "  - name: acct2\n    keys: [" + DevAccountKey + "]\n"
			path := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			c := Default()
			err := c.LoadFile(path)
			if err == nil {
				err = c.Validate()
			}
			if tc.wantErr {
				if err == nil {
					t.Fatalf("accepted %s days", tc.days)
				}
				if !strings.Contains(err.Error(), "container_delete_retention_days") && !strings.Contains(err.Error(), "seven") {
					t.Errorf("error does not name the setting: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := c.ContainerDeleteRetention()
			if got["acct1"] != tc.want {
				t.Errorf("acct1 retention %v, want %v", got["acct1"], tc.want)
			}
			if _, ok := got["acct2"]; ok {
				t.Errorf("acct2 has a retention: %v", got)
			}
		})
	}
}
