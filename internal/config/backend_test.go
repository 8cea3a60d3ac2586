package config

import (
	"strings"
	"testing"
)

// TestS3SettingsNeedBackendS3: an s3 bucket or endpoint configured while
// the backend is disk is refused, naming both settings: a deployment that
// set them and forgot backend would otherwise keep every byte on the local
// disk without a word.
func TestS3SettingsNeedBackendS3(t *testing.T) {
	for _, tc := range []struct {
		name    string
		set     func(c *Config)
		wantErr bool
	}{
		{"defaults", func(c *Config) {}, false},
		{"region alone", func(c *Config) { c.S3.Region = "us-east-1" }, false},
		{"bucket", func(c *Config) { c.S3.Bucket = "data" }, true},
		{"endpoint", func(c *Config) { c.S3.Endpoint = "http://minio:9000" }, true},
		{"bucket with backend s3", func(c *Config) { c.Backend, c.S3.Bucket = "s3", "data" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.set(&c)
			err := c.Validate()
			if !tc.wantErr {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "backend") || !strings.Contains(err.Error(), "s3.") {
				t.Fatalf("Validate: %v, want a refusal naming backend and the s3 setting", err)
			}
		})
	}
}
