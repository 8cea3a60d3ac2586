package pgtest

// StartServerArgs is StartServer with more postgres arguments after the
// defaults, e.g. "-c", "shared_preload_libraries=pg_stat_statements" for a
// benchmark that counts statements on the server.
func StartServerArgs(args ...string) (*Server, error) {
	return startServer(args, (*Server).initdb)
}

// Pid is the postmaster's process id (0 when it is not running): a
// benchmark reads the CPU time of it and its children from /proc.
func (s *Server) Pid() int {
	if s.proc == nil || s.proc.Cmd.Process == nil {
		return 0
	}
	return s.proc.Cmd.Process.Pid
}
