package disk

// EarlyWriteback lets the benchmarks switch early writeback.
var EarlyWriteback = &earlyWritebackOn

// DirectWrites lets tests and benchmarks switch O_DIRECT body writes.
var DirectWrites = &directWritesOn

// DirectMin lets tests write small bodies with O_DIRECT too.
var DirectMin = &directMinBytes

// SyncDir lets tests watch (and disturb) the directory fsyncs.
var SyncDir = &syncDir
