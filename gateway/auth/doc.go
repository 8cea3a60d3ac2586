// Package auth verifies Azure Storage Shared Key requests (contract §2.1):
// it rebuilds the string-to-sign from what arrived on the wire, signs it with
// each key of the addressed account and compares the result with the
// signature in the Authorization header. Everything here is a pure function
// of the request, the account table and an injected clock, so the rules can be
// table-tested without a server.
//
// This package must never log, print or embed an account key in an error,
// and must never accept a request whose signature was not compared with
// hmac.Equal (constant time). Errors are *svcerr.Error values; the caller
// decides what an anonymous request (ErrNoCredentials) may do.
package auth
