package postgres

// ContainerLockKey is the container's advisory lock key, for the tests
// that hold it as Delete Container does.
var ContainerLockKey = containerLockKey
