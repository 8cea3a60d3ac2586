package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"
)

// certCommand is `blobgw cert dev`: a self-signed certificate for
// development, so that SDKs can talk https to a local gateway (they trust
// it once told to: SSL_CERT_FILE, the OS trust store, or the client's root
// pool).
func certCommand() *cli.Command {
	return &cli.Command{
		Name:  "cert",
		Usage: "certificates for serving TLS",
		Subcommands: []*cli.Command{{
			Name:  "dev",
			Usage: "write a self-signed certificate for 127.0.0.1, ::1 and localhost (cert.pem, key.pem)",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "out", Value: ".", Usage: "directory for cert.pem and key.pem (replaced if present)"},
				&cli.DurationFlag{Name: "valid", Value: 365 * 24 * time.Hour, Usage: "validity"},
			},
			Action: func(c *cli.Context) error {
				certPath, keyPath, err := writeDevCert(c.String("out"), c.Duration("valid"))
				if err != nil {
					return cli.Exit("cert dev: "+err.Error(), 1)
				}
				fmt.Fprintf(c.App.Writer, "wrote %s and %s\nserve with: blobgw serve --tls-cert %s --tls-key %s\n",
					certPath, keyPath, certPath, keyPath)
				return nil
			},
		}},
	}
}

// writeDevCert writes a new ECDSA P-256 key and a self-signed certificate
// for the loopback names. The certificate is its own CA, so a client can
// trust exactly it as a root.
func writeDevCert(dir string, valid time.Duration) (certPath, keyPath string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return "", "", err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "blobgw development", Organization: []string{"blobgw"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(valid),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", "", err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", err
	}
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	// Key first, then the certificate, each replaced whole (rename): a
	// serving gateway that reloads in between sees a pair that does not
	// match, keeps its old one and looks again.
	if err := writeFileAtomic(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", err
	}
	if err := writeFileAtomic(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
