package postgres

// ContainerLockKey is the container's advisory lock key, for the tests
// that hold it as Delete Container does.
var ContainerLockKey = containerLockKey

// NoOneTrip turns s's one-round-trip Put Blob off, for the tests of the
// few-statement path's statements.
func NoOneTrip(s *Store) { s.noOneTrip.Store(true) }

// NameLockKey is a blob name's advisory lock key, for the tests that hold
// it as a writer does.
var NameLockKey = nameLockKey
