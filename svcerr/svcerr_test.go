package svcerr

import "testing"

// TestAzureMessages: the default messages of the codes clients show to
// people are Azure's own texts, as the service sends them (the response's
// Message, before its RequestId and Time lines). Before, AuthenticationFailed
// read "... value of the Authorization header ..." (Azurite's wording, not
// the service's), BlobIsSealed "The specified blob is sealed ...", and
// the lease, block count, MD5, internal error, timeout, busy, resource
// name, HTTP verb and Content-Length texts were the documentation table's paraphrases, not the service's
// words (Microsoft's storage emulator, which shares the service's status
// table, and real responses agree on these).
func TestAzureMessages(t *testing.T) {
	for _, tt := range []struct {
		code   Code
		status int
		msg    string
	}{
		{AuthenticationFailed, 403, "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature."},
		{AuthorizationFailure, 403, "This request is not authorized to perform this operation."},
		{AuthorizationPermissionMismatch, 403, "This request is not authorized to perform this operation using this permission."},
		{AuthorizationProtocolMismatch, 403, "This request is not authorized to perform this operation using this protocol."},
		{AuthorizationSourceIPMismatch, 403, "This request is not authorized to perform this operation using this source IP."},
		{AuthorizationServiceMismatch, 403, "This request is not authorized to perform this operation using this service."},
		{AuthorizationResourceTypeMismatch, 403, "This request is not authorized to perform this operation using this resource type."},
		{InsufficientAccountPermissions, 403, "The account being accessed does not have sufficient permissions to execute this operation."},
		{InvalidAuthenticationInfo, 400, "Authentication information is not given in the correct format. Check the value of Authorization header."},
		{NoAuthenticationInformation, 401, "Server failed to authenticate the request. Please refer to the information in the www-authenticate header."},
		{BlobIsSealed, 409, "The blob is sealed and its contents cannot be modified."},
		{CorsPreflightFailure, 403, "CORS not enabled or no matching rule found for this request."},
		{InvalidQueryParameterValue, 400, "Value for one of the query parameters specified in the request URI is invalid."},
		{ConditionNotMet, 412, "The condition specified using HTTP conditional header(s) is not met."},
		{BlobNotFound, 404, "The specified blob does not exist."},
		{ContainerNotFound, 404, "The specified container does not exist."},
		{ContainerAlreadyExists, 409, "The specified container already exists."},
		{BlobAlreadyExists, 409, "The specified blob already exists."},
		{InvalidRange, 416, "The range specified is invalid for the current size of the resource."},
		{LeaseIdMissing, 412, "There is currently a lease on the blob and no lease ID was specified in the request."},
		{LeaseIsBreakingAndCannotBeAcquired, 409, "The lease ID matched, but the lease is currently in breaking state and cannot be acquired until it is broken."},
		{LeaseIsBreakingAndCannotBeChanged, 409, "The lease ID matched, but the lease is currently in breaking state and cannot be changed."},
		{LeaseLost, 412, "A lease ID was specified, but the lease for the blob has expired."},
		{BlockCountExceedsLimit, 409, "The committed block count cannot exceed the maximum limit of 50,000 blocks."},
		{InvalidMd5, 400, "The MD5 value specified in the request is invalid. MD5 value must be 128 bits and base64 encoded."},
		{InternalError, 500, "Server encountered an internal error. Please try again after some time."},
		{OperationTimedOut, 500, "Operation could not be completed within the specified time."},
		{ServerBusy, 503, "The server is busy."},
		{InvalidResourceName, 400, "The specifed resource name contains invalid characters."}, // sic
		{UnsupportedHttpVerb, 405, "The resource doesn't support specified Http Verb."},
		{MissingContentLengthHeader, 411, "Content-Length HTTP header is missing."},
		{MissingRequiredHeader, 400, "An HTTP header that's mandatory for this request is not specified."},
		{InvalidHeaderValue, 400, "The value for one of the HTTP headers is not in the correct format."},
		{UnsupportedHeader, 400, "One of the HTTP headers specified in the request is not supported."},
		{UnsupportedXmlNode, 400, "One of the XML nodes specified in the request is not supported."},
		{InvalidXmlDocument, 400, "XML specified is not syntactically valid."},
		{Crc64Mismatch, 400, "The CRC64 value specified in the request did not match with the CRC64 value calculated by the server."},
		{Md5Mismatch, 400, "The MD5 value specified in the request did not match with the MD5 value calculated by the server."},
	} {
		e := New(tt.code)
		if e.Message != tt.msg || e.Status() != tt.status {
			t.Errorf("%s: %d %q, want %d %q", tt.code, e.Status(), e.Message, tt.status, tt.msg)
		}
	}
}
