package leasedb

// WriteRefuser is an optional Store method: a store that refuses every
// write says why (the SQLite store after a failed WAL flush, until the
// process restarts: no later commit could be known durable; the Postgres
// store while its server is a standby in recovery). The gateway's /readyz reports it, so that a load balancer
// stops sending writes to a replica that can only answer 503 to them.
type WriteRefuser interface {
	// WritesRefused returns nil while writes are accepted.
	WritesRefused() error
}

// WritesRefused is why s, or a store s wraps (Unwrapper), refuses every
// write; nil when it does not, or cannot say.
func WritesRefused(s Store) error {
	if w, ok := optional[WriteRefuser](s); ok {
		return w.WritesRefused()
	}
	return nil
}
