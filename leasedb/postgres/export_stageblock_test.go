package postgres

// LockForStageSQL is LockForStage's statement, for the test of what it
// reads of the TOAST table.
var LockForStageSQL = lockForStageSQL
