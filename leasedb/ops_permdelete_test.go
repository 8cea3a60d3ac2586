package leasedb

import "testing"

func TestAllowsPermanentDelete(t *testing.T) {
	tests := []struct {
		doc  string
		want bool
	}{
		{"", false},
		{"not xml", false},
		{`<StorageServiceProperties><Cors/></StorageServiceProperties>`, false},
		{`<StorageServiceProperties><DeleteRetentionPolicy><Enabled>true</Enabled><Days>3</Days></DeleteRetentionPolicy></StorageServiceProperties>`, false},
		{`<StorageServiceProperties><DeleteRetentionPolicy><Enabled>true</Enabled><Days>3</Days><AllowPermanentDelete>false</AllowPermanentDelete></DeleteRetentionPolicy></StorageServiceProperties>`, false},
		{`<StorageServiceProperties><DeleteRetentionPolicy><Enabled>false</Enabled><AllowPermanentDelete>true</AllowPermanentDelete></DeleteRetentionPolicy></StorageServiceProperties>`, false},
		{`<StorageServiceProperties><DeleteRetentionPolicy><Enabled>true</Enabled><Days>3</Days><AllowPermanentDelete>true</AllowPermanentDelete></DeleteRetentionPolicy></StorageServiceProperties>`, true},
		{`<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><DeleteRetentionPolicy><Enabled> True </Enabled><Days>3</Days><AllowPermanentDelete>1</AllowPermanentDelete></DeleteRetentionPolicy></StorageServiceProperties>`, true},
	}
	for _, tt := range tests {
		if got := AllowsPermanentDelete(tt.doc); got != tt.want {
			t.Errorf("AllowsPermanentDelete(%q) = %v, want %v", tt.doc, got, tt.want)
		}
	}
}
