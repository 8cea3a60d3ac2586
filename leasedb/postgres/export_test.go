package postgres

// Dialect is the dialect this driver gives sqlq, for the plan tests.
var Dialect = dialect

// CommitReplaceSQL is CommitReplace's statement, for its plan test.
var CommitReplaceSQL = commitReplaceSQL
