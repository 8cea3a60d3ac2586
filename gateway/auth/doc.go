// Package auth verifies the two ways an Azure Storage request proves it was
// signed with an account key:
//
//   - Shared Key (sharedkey.go, Authorization: SharedKey account:signature):
//     VerifySharedKey rebuilds the string-to-sign from what arrived on the
//     wire, signs it with each key of the addressed account and compares
//     the result with the signature in the Authorization header.
//   - Shared access signatures (sas.go, a service or account SAS in the
//     query string): VerifySAS rebuilds the token's string-to-sign, checks
//     its signature the same way and then applies the token's restrictions
//     (stored access policy, validity window, IP, protocol, resource and
//     the permission the operation needs).
//
// Public (anonymous) access is decided by the caller from the container's
// access level; ParseTime (policy.go) reads stored access policy times for
// Set Container ACL. Everything here is a pure function of the request, the
// account table, the stored-policy lookup and an injected clock, so the
// rules can be table-tested without a server.
//
// This package must never log, print or embed an account key in an error,
// and must never accept a request whose signature was not compared with
// hmac.Equal (constant time). Errors are *svcerr.Error values; the caller
// decides what an anonymous request (ErrNoCredentials) may do.
package auth
