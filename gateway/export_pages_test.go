package gateway

import "context"

// WaitCompactions waits for the background page blob compactions.
func (s *Server) WaitCompactions(ctx context.Context) error { return s.pages.wait(ctx, false) }
