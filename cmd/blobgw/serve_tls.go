package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/blobgw/blobgw/internal/config"
)

// certReloader serves the certificate in tls_cert / tls_key and loads it
// again when either file changes (modification time or size), so a renewed
// certificate (certbot, cert-manager) takes effect on the next handshake
// without a restart. The files are looked at no more than once a second; a
// pair that does not load (a renewal half written) keeps the previous
// certificate and is tried again on the next look.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   [2]fileStamp
	checked time.Time
}

type fileStamp struct {
	mod  time.Time
	size int64
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{fi.ModTime(), fi.Size()}, nil
}

func newCertReloader(certFile, keyFile string, log *slog.Logger) (*certReloader, error) {
	c := &certReloader{certFile: certFile, keyFile: keyFile, log: log}
	if err := c.load(); err != nil {
		return nil, err
	}
	c.checked = time.Now()
	return c, nil
}

func (c *certReloader) load() error {
	cs, err := stampOf(c.certFile)
	if err != nil {
		return err
	}
	ks, err := stampOf(c.keyFile)
	if err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return err
	}
	c.cert, c.stamp = &cert, [2]fileStamp{cs, ks}
	return nil
}

// GetCertificate is the tls.Config hook.
func (c *certReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); now.Sub(c.checked) >= time.Second {
		c.checked = now
		cs, err1 := stampOf(c.certFile)
		ks, err2 := stampOf(c.keyFile)
		if err1 == nil && err2 == nil && [2]fileStamp{cs, ks} != c.stamp {
			if err := c.load(); err != nil {
				c.log.Warn("tls: the changed certificate does not load; serving the previous one", "cert", c.certFile, "err", err)
			} else {
				c.log.Info("tls: certificate reloaded", "cert", c.certFile)
			}
		}
	}
	return c.cert, nil
}

// setupTLS makes hs serve TLS (HTTP/2 and HTTP/1.1) with the configured
// certificate; nothing when none is configured.
func setupTLS(hs *http.Server, cfg config.Config, log *slog.Logger) error {
	if cfg.TLSCert == "" {
		return nil
	}
	cr, err := newCertReloader(cfg.TLSCert, cfg.TLSKey, log)
	if err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	hs.TLSConfig = &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: cr.GetCertificate,
		NextProtos:     []string{"h2", "http/1.1"},
	}
	return nil
}
