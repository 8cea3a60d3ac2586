package gateway

// PooledKeys returns the keys whose intents are recorded and waiting in the
// Server's key pool: queue entries that belong to no upload yet.
func (s *Server) PooledKeys() []string { return s.keys.pooled() }
