package gateway

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"
)

// Timeouts of the default copy client and of a remote source's body.
const (
	copyDialTimeout   = 30 * time.Second
	copyHeaderTimeout = 2 * time.Minute
	copyIdleTimeout   = 2 * time.Minute
)

// defaultCopyClient fetches remote copy sources. It never decompresses
// (the bytes are copied as stored), bounds connecting and waiting for the
// headers, and follows at most five redirects, none to another scheme. The
// body has no overall deadline (sources may be large); an idle read times
// out instead (idleReader).
func defaultCopyClient() *http.Client {
	dialer := &net.Dialer{Timeout: copyDialTimeout, KeepAlive: 30 * time.Second, Control: refuseLinkLocal}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   15 * time.Second,
		ResponseHeaderTimeout: copyHeaderTimeout,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   16,
		DisableCompression:    true,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(next *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("stopped after 5 redirects")
			}
			if next.URL.Scheme != via[0].URL.Scheme {
				return fmt.Errorf("redirect from %s to %s refused", via[0].URL.Scheme, next.URL.Scheme)
			}
			return nil
		},
	}
}

// refuseLinkLocal keeps copy sources off link-local, multicast and
// unspecified addresses: a caller allowed to write a blob must not be able
// to have the gateway fetch a cloud metadata endpoint (169.254.169.254,
// fe80::/10) into a blob it can read back. Loopback and private networks
// stay reachable (another gateway, an emulator); a deployment that needs a
// stricter policy sets Options.CopyClient.
func refuseLinkLocal(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = address
	}
	ip := net.ParseIP(host)
	if ip != nil && (ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified()) {
		return fmt.Errorf("copy source address %s refused", ip)
	}
	return nil
}
