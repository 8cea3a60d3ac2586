package postgres

// Dialect is the dialect this driver gives sqlq, for the plan tests.
var Dialect = dialect
