package config

import "testing"

// TestValidAccountName: Azure's storage account name rule, which both the
// configured accounts and blobgw account add apply.
func TestValidAccountName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"abc", true},
		{"devstoreaccount1", true},
		{"abcdefghijklmnopqrstuvwx", true}, // 24
		{"ab", false},
		{"abcdefghijklmnopqrstuvwxy", false}, // 25
		{"", false},
		{"Abc", false},
		{"ab-c", false},
		{"ab_c", false},
		{"abé", false},
		{"ab c", false},
	}
	for _, tt := range tests {
		if got := ValidAccountName(tt.name); got != tt.want {
			t.Errorf("ValidAccountName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
