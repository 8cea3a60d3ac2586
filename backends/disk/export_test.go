package disk

// EarlyWriteback lets the benchmarks switch early writeback.
var EarlyWriteback = &earlyWritebackOn
