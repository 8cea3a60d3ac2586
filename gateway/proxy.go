package gateway

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// A TLS-terminating load balancer in front of the gateway makes every
// request arrive over plain HTTP from the balancer's address. The SAS
// checks need what the client itself used: spr=https (signed protocol)
// must accept a request the client sent over https, and sip (signed IP)
// must see the client's address, not the balancer's. Proxies say so in
// X-Forwarded-Proto / X-Forwarded-For or in RFC 7239 Forwarded, but any
// client can send those headers too, so they are believed only from the
// peers named in Options.TrustedProxies and ignored from anyone else.

// peer is what the gateway believes about the client of one request.
type peer struct {
	https bool
	ip    netip.Addr // invalid when the address does not parse
	addr  string     // for the access log: the client address as believed
}

// clientIP is the client's address for the SAS checks (sip): nil when it
// did not parse. Only a SAS asks, so it is made here, not per request.
func (p peer) clientIP() net.IP {
	if !p.ip.IsValid() {
		return nil
	}
	return net.IP(p.ip.AsSlice())
}

// effectivePeer decides, once per request, the scheme and client address
// the SAS checks and the access log use.
func effectivePeer(r *http.Request, trusted []netip.Prefix) peer {
	host := r.RemoteAddr
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	p := peer{https: r.TLS != nil, addr: host}
	remote, err := netip.ParseAddr(host)
	if err != nil {
		// What netip refuses net.ParseIP refuses too.
		return p
	}
	remote = remote.Unmap()
	p.ip = remote
	if strings.IndexByte(host, ':') >= 0 {
		// An IPv4 literal netip accepts is in its one form already (no
		// leading zeros): only a mapped or IPv6 address is spelled again.
		p.addr = remote.String()
	}
	if !isTrusted(remote, trusted) {
		return p
	}
	var hops []hop
	if fwd := r.Header.Values("Forwarded"); len(fwd) > 0 {
		hops = parseForwarded(fwd)
	} else {
		hops = parseXForwarded(r.Header.Values("X-Forwarded-For"), r.Header.Values("X-Forwarded-Proto"))
	}
	if len(hops) == 0 {
		return p
	}
	// Walk from the nearest hop outwards while the hops are trusted
	// proxies: the first one that is not is the client. An address that
	// does not parse stops the walk there (nothing before it is believed).
	client := -1
	for i := len(hops) - 1; i >= 0; i-- {
		if !hops[i].addr.IsValid() {
			break
		}
		client = i
		if !isTrusted(hops[i].addr, trusted) {
			break
		}
	}
	if client >= 0 {
		a := hops[client].addr
		p.ip, p.addr = a, a.String()
	}
	// The scheme the client used on the hop it spoke: the proto recorded
	// with that hop, else the one the nearest proxy recorded.
	proto := ""
	if client >= 0 {
		proto = hops[client].proto
	}
	if proto == "" {
		proto = hops[len(hops)-1].proto
	}
	if proto != "" {
		p.https = strings.EqualFold(proto, "https")
	}
	return p
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	a = a.Unmap()
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// hop is one proxy hop: the address it received from and the scheme.
type hop struct {
	addr  netip.Addr // invalid when absent or unparsable
	proto string
}

// parseXForwarded pairs X-Forwarded-For addresses with X-Forwarded-Proto
// values: one proto for all hops, or one per hop when the lists match.
func parseXForwarded(xff, xfp []string) []hop {
	var hops []hop
	for _, v := range xff {
		for _, a := range strings.Split(v, ",") {
			hops = append(hops, hop{addr: parseHopAddr(a)})
		}
	}
	var protos []string
	for _, v := range xfp {
		for _, p := range strings.Split(v, ",") {
			protos = append(protos, strings.TrimSpace(p))
		}
	}
	switch {
	case len(protos) == 0:
	case len(hops) == 0:
		hops = []hop{{proto: protos[len(protos)-1]}}
	case len(protos) == len(hops):
		for i := range hops {
			hops[i].proto = protos[i]
		}
	default:
		hops[len(hops)-1].proto = protos[len(protos)-1]
	}
	return hops
}

// parseForwarded reads RFC 7239 Forwarded elements ("for=1.2.3.4;proto=https,
// for=\"[::1]:80\"").
func parseForwarded(values []string) []hop {
	var hops []hop
	for _, v := range values {
		for _, elem := range strings.Split(v, ",") {
			var h hop
			for _, pair := range strings.Split(elem, ";") {
				k, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
				if !ok {
					continue
				}
				val = strings.Trim(strings.TrimSpace(val), `"`)
				switch strings.ToLower(strings.TrimSpace(k)) {
				case "for":
					h.addr = parseHopAddr(val)
				case "proto":
					h.proto = val
				}
			}
			hops = append(hops, h)
		}
	}
	return hops
}

// parseHopAddr reads "1.2.3.4", "1.2.3.4:80", "[::1]" or "[::1]:80".
func parseHopAddr(s string) netip.Addr {
	s = strings.TrimSpace(s)
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return a.Unmap()
	}
	return netip.Addr{}
}
