// Package svcerr holds the Blob service error codes and the one table that
// maps each code to its HTTP status. Every layer returns *Error values (or
// wraps them); only the HTTP layer turns them into the XML body. Nothing in
// this package does I/O.
package svcerr

import (
	"errors"
	"fmt"
)

// Code is a Blob service error code as sent in x-ms-error-code.
type Code string

// The codes blobgw emits. Statuses are those of Azure's Blob service error
// codes and common REST API error codes tables.
const (
	AuthenticationFailed                  Code = "AuthenticationFailed"
	AuthorizationFailure                  Code = "AuthorizationFailure"
	AuthorizationPermissionMismatch       Code = "AuthorizationPermissionMismatch"
	AuthorizationProtocolMismatch         Code = "AuthorizationProtocolMismatch"
	AuthorizationSourceIPMismatch         Code = "AuthorizationSourceIPMismatch"
	AuthorizationServiceMismatch          Code = "AuthorizationServiceMismatch"
	AuthorizationResourceTypeMismatch     Code = "AuthorizationResourceTypeMismatch"
	InsufficientAccountPermissions        Code = "InsufficientAccountPermissions"
	InvalidAuthenticationInfo             Code = "InvalidAuthenticationInfo"
	NoAuthenticationInformation           Code = "NoAuthenticationInformation"
	ConditionNotMet                       Code = "ConditionNotMet"
	SourceConditionNotMet                 Code = "SourceConditionNotMet"
	TargetConditionNotMet                 Code = "TargetConditionNotMet"
	UnauthorizedBlobOverwrite             Code = "UnauthorizedBlobOverwrite"
	MultipleConditionHeadersNotSupported  Code = "MultipleConditionHeadersNotSupported"
	ConditionHeadersNotSupported          Code = "ConditionHeadersNotSupported"
	AppendPositionConditionNotMet         Code = "AppendPositionConditionNotMet"
	MaxBlobSizeConditionNotMet            Code = "MaxBlobSizeConditionNotMet"
	LeaseAlreadyPresent                   Code = "LeaseAlreadyPresent"
	LeaseIdMismatchWithLeaseOperation     Code = "LeaseIdMismatchWithLeaseOperation"
	LeaseNotPresentWithLeaseOperation     Code = "LeaseNotPresentWithLeaseOperation"
	LeaseIsBreakingAndCannotBeAcquired    Code = "LeaseIsBreakingAndCannotBeAcquired"
	LeaseIsBreakingAndCannotBeChanged     Code = "LeaseIsBreakingAndCannotBeChanged"
	LeaseIsBrokenAndCannotBeRenewed       Code = "LeaseIsBrokenAndCannotBeRenewed"
	LeaseIdMissing                        Code = "LeaseIdMissing"
	LeaseIdMismatchWithBlobOperation      Code = "LeaseIdMismatchWithBlobOperation"
	LeaseIdMismatchWithContainerOperation Code = "LeaseIdMismatchWithContainerOperation"
	LeaseNotPresentWithBlobOperation      Code = "LeaseNotPresentWithBlobOperation"
	LeaseNotPresentWithContainerOperation Code = "LeaseNotPresentWithContainerOperation"
	LeaseLost                             Code = "LeaseLost"
	InfiniteLeaseDurationRequired         Code = "InfiniteLeaseDurationRequired"
	BlobNotFound                          Code = "BlobNotFound"
	ContainerNotFound                     Code = "ContainerNotFound"
	ResourceNotFound                      Code = "ResourceNotFound"
	BlobAlreadyExists                     Code = "BlobAlreadyExists"
	ContainerAlreadyExists                Code = "ContainerAlreadyExists"
	InvalidBlobType                       Code = "InvalidBlobType"
	InvalidPageRange                      Code = "InvalidPageRange"
	SequenceNumberConditionNotMet         Code = "SequenceNumberConditionNotMet"
	SequenceNumberIncrementTooLarge       Code = "SequenceNumberIncrementTooLarge"
	PreviousSnapshotNotFound              Code = "PreviousSnapshotNotFound"
	PreviousSnapshotCannotBeNewer         Code = "PreviousSnapshotCannotBeNewer"
	BlockCountExceedsLimit                Code = "BlockCountExceedsLimit"
	BlockListTooLong                      Code = "BlockListTooLong"
	InvalidBlockList                      Code = "InvalidBlockList"
	InvalidBlobOrBlock                    Code = "InvalidBlobOrBlock"
	InvalidBlockId                        Code = "InvalidBlockId"
	SnapshotsPresent                      Code = "SnapshotsPresent"
	OperationNotAllowedOnRootBlob         Code = "OperationNotAllowedOnRootBlob"
	InvalidOperation                      Code = "InvalidOperation"
	InvalidHeaderValue                    Code = "InvalidHeaderValue"
	MissingRequiredHeader                 Code = "MissingRequiredHeader"
	MissingContentLengthHeader            Code = "MissingContentLengthHeader"
	InvalidQueryParameterValue            Code = "InvalidQueryParameterValue"
	OutOfRangeQueryParameterValue         Code = "OutOfRangeQueryParameterValue"
	InvalidResourceName                   Code = "InvalidResourceName"
	InvalidXmlDocument                    Code = "InvalidXmlDocument"
	InvalidInput                          Code = "InvalidInput"
	OutOfRangeInput                       Code = "OutOfRangeInput"
	Md5Mismatch                           Code = "Md5Mismatch"
	InvalidMd5                            Code = "InvalidMd5"
	Crc64Mismatch                         Code = "Crc64Mismatch"
	BothCrc64AndMd5HeaderPresent          Code = "BothCrc64AndMd5HeaderPresent"
	BothCrc64AndMd5RangeHeaderPresent     Code = "BothCrc64AndMd5RangeHeaderPresent"
	RequestBodyTooLarge                   Code = "RequestBodyTooLarge"
	InvalidRange                          Code = "InvalidRange"
	UnsupportedHeader                     Code = "UnsupportedHeader"
	UnsupportedQueryParameter             Code = "UnsupportedQueryParameter"
	UnsupportedXmlNode                    Code = "UnsupportedXmlNode"
	UnsupportedHttpVerb                   Code = "UnsupportedHttpVerb"
	InvalidUri                            Code = "InvalidUri"
	InvalidMetadata                       Code = "InvalidMetadata"
	MetadataTooLarge                      Code = "MetadataTooLarge"
	InvalidTag                            Code = "InvalidTag"
	BlobArchived                          Code = "BlobArchived"
	BlobIsSealed                          Code = "BlobIsSealed"
	CorsPreflightFailure                  Code = "CorsPreflightFailure"
	CannotVerifyCopySource                Code = "CannotVerifyCopySource"
	NoPendingCopyOperation                Code = "NoPendingCopyOperation"
	NotImplemented                        Code = "NotImplemented"
	InternalError                         Code = "InternalError"
	ServerBusy                            Code = "ServerBusy"
	OperationTimedOut                     Code = "OperationTimedOut"
	RequestTimeout                        Code = "RequestTimeout"
)

// Blob Batch: a batch body with more than 256 sub-requests, or with
// sub-requests of more than one operation.
const (
	ExceedsMaxBatchRequestCount        Code = "ExceedsMaxBatchRequestCount"
	AllBatchSubRequestsShouldBeSameApi Code = "AllBatchSubRequestsShouldBeSameApi"
)

// OperationNotSupportedWithFeatureMissing refuses List Blobs endBefore,
// which only accounts with Blob Listing with Apache Arrow accept.
const OperationNotSupportedWithFeatureMissing Code = "OperationNotSupportedWithFeatureMissing"

// Page blob features of Azure's other account kinds and Incremental Copy
// Blob: Get Page Ranges x-ms-previous-snapshot-url works on managed disk
// accounts only, premium page blob tiers on premium accounts only; an
// incremental copy destination takes nothing but
// incremental copies of its one source, newer snapshot each time.
const (
	UnsupportedHeaderForNonManagedDisksAccount Code = "UnsupportedHeaderForNonManagedDisksAccount"
	IncrementalCopySourceMustBeSnapshot        Code = "IncrementalCopySourceMustBeSnapshot"
	IncrementalCopyBlobMismatch                Code = "IncrementalCopyBlobMismatch"
	IncrementalCopyOfEarlierSnapshotNotAllowed Code = "IncrementalCopyOfEarlierSnapshotNotAllowed"
	OperationNotAllowedOnIncrementalCopyBlob   Code = "OperationNotAllowedOnIncrementalCopyBlob"
	BlobAccessTierNotSupportedForAccountType   Code = "BlobAccessTierNotSupportedForAccountType"
	BlobTierInadequateForContentLength         Code = "BlobTierInadequateForContentLength"
)

type entry struct {
	status int
	msg    string
}

// table is the single code → (status, default message) mapping.
var table = map[Code]entry{
	AuthenticationFailed:                  {403, "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature."},
	AuthorizationFailure:                  {403, "This request is not authorized to perform this operation."},
	AuthorizationPermissionMismatch:       {403, "This request is not authorized to perform this operation using this permission."},
	AuthorizationProtocolMismatch:         {403, "This request is not authorized to perform this operation using this protocol."},
	AuthorizationSourceIPMismatch:         {403, "This request is not authorized to perform this operation using this source IP."},
	AuthorizationServiceMismatch:          {403, "This request is not authorized to perform this operation using this service."},
	AuthorizationResourceTypeMismatch:     {403, "This request is not authorized to perform this operation using this resource type."},
	InsufficientAccountPermissions:        {403, "The account being accessed does not have sufficient permissions to execute this operation."},
	InvalidAuthenticationInfo:             {400, "Authentication information is not given in the correct format. Check the value of Authorization header."},
	NoAuthenticationInformation:           {401, "Server failed to authenticate the request. Please refer to the information in the www-authenticate header."},
	ConditionNotMet:                       {412, "The condition specified using HTTP conditional header(s) is not met."},
	SourceConditionNotMet:                 {412, "The source condition specified using HTTP conditional header(s) is not met."},
	TargetConditionNotMet:                 {412, "The target condition specified using HTTP conditional header(s) is not met."},
	UnauthorizedBlobOverwrite:             {403, "This request is not authorized to perform blob overwrites."},
	MultipleConditionHeadersNotSupported:  {400, "Multiple condition headers are not supported."},
	ConditionHeadersNotSupported:          {400, "Condition headers are not supported."},
	AppendPositionConditionNotMet:         {412, "The append position condition specified was not met."},
	MaxBlobSizeConditionNotMet:            {412, "The max blob size condition specified was not met."},
	LeaseAlreadyPresent:                   {409, "There is already a lease present."},
	LeaseIdMismatchWithLeaseOperation:     {409, "The lease ID specified did not match the lease ID for the blob."},
	LeaseNotPresentWithLeaseOperation:     {409, "There is currently no lease on the blob."},
	LeaseIsBreakingAndCannotBeAcquired:    {409, "The lease ID matched, but the lease is currently in breaking state and cannot be acquired until it is broken."},
	LeaseIsBreakingAndCannotBeChanged:     {409, "The lease ID matched, but the lease is currently in breaking state and cannot be changed."},
	LeaseIsBrokenAndCannotBeRenewed:       {409, "The lease ID matched, but the lease has been broken explicitly and cannot be renewed."},
	LeaseIdMissing:                        {412, "There is currently a lease on the blob and no lease ID was specified in the request."},
	LeaseIdMismatchWithBlobOperation:      {412, "The lease ID specified did not match the lease ID for the blob."},
	LeaseIdMismatchWithContainerOperation: {412, "The lease ID specified did not match the lease ID for the container."},
	LeaseNotPresentWithBlobOperation:      {412, "There is currently no lease on the blob."},
	LeaseNotPresentWithContainerOperation: {412, "There is currently no lease on the container."},
	LeaseLost:                             {412, "A lease ID was specified, but the lease for the blob has expired."},
	InfiniteLeaseDurationRequired:         {412, "The lease ID matched, but the specified lease must be an infinite-duration lease."},
	OperationNotAllowedOnRootBlob:         {403, "This operation is not permitted on the current version of the blob."},
	BlobNotFound:                          {404, "The specified blob does not exist."},
	ContainerNotFound:                     {404, "The specified container does not exist."},
	ResourceNotFound:                      {404, "The specified resource does not exist."},
	BlobAlreadyExists:                     {409, "The specified blob already exists."},
	ContainerAlreadyExists:                {409, "The specified container already exists."},
	InvalidBlobType:                       {409, "The blob type is invalid for this operation."},
	InvalidPageRange:                      {416, "The page range specified is invalid."},
	SequenceNumberConditionNotMet:         {412, "The sequence number condition specified was not met."},
	SequenceNumberIncrementTooLarge:       {409, "The sequence number increment cannot be performed because it would result in overflow of the sequence number."},
	PreviousSnapshotNotFound:              {409, "The previous snapshot is not found."},
	PreviousSnapshotCannotBeNewer:         {400, "The prevsnapshot query parameter value cannot be newer than snapshot query parameter value."},
	BlockCountExceedsLimit:                {409, "The committed block count cannot exceed the maximum limit of 50,000 blocks."},
	BlockListTooLong:                      {400, "The block list may not contain more than 50,000 blocks."},
	InvalidBlockList:                      {400, "The specified block list is invalid."},
	InvalidBlobOrBlock:                    {400, "The specified blob or block content is invalid."},
	InvalidBlockId:                        {400, "The specified block ID is invalid. The block ID must be Base64-encoded."},
	SnapshotsPresent:                      {409, "This operation is not permitted because the blob has snapshots."},
	InvalidOperation:                      {400, "Invalid operation against a blob snapshot."},
	InvalidHeaderValue:                    {400, "The value for one of the HTTP headers is not in the correct format."},
	MissingRequiredHeader:                 {400, "An HTTP header that's mandatory for this request is not specified."},
	MissingContentLengthHeader:            {411, "Content-Length HTTP header is missing."},
	InvalidQueryParameterValue:            {400, "Value for one of the query parameters specified in the request URI is invalid."},
	OutOfRangeQueryParameterValue:         {400, "One of the query parameters specified in the request URI is outside the permissible range."},
	InvalidResourceName:                   {400, "The specifed resource name contains invalid characters."}, // sic: Azure's spelling
	InvalidXmlDocument:                    {400, "XML specified is not syntactically valid."},
	InvalidInput:                          {400, "One of the request inputs is not valid."},
	OutOfRangeInput:                       {400, "One of the request inputs is out of range."},
	Md5Mismatch:                           {400, "The MD5 value specified in the request did not match with the MD5 value calculated by the server."},
	InvalidMd5:                            {400, "The MD5 value specified in the request is invalid. MD5 value must be 128 bits and base64 encoded."},
	Crc64Mismatch:                         {400, "The CRC64 value specified in the request did not match with the CRC64 value calculated by the server."},
	BothCrc64AndMd5HeaderPresent:          {400, "Both x-ms-content-crc64 header and Content-MD5 header are present."},
	BothCrc64AndMd5RangeHeaderPresent:     {400, "Both x-ms-range-get-content-crc64 header and x-ms-range-get-content-md5 header are present."},
	RequestBodyTooLarge:                   {413, "The request body is too large and exceeds the maximum permissible limit."},
	InvalidRange:                          {416, "The range specified is invalid for the current size of the resource."},
	UnsupportedHeader:                     {400, "One of the HTTP headers specified in the request is not supported."},
	UnsupportedQueryParameter:             {400, "One of the query parameters specified in the request URI is not supported."},
	UnsupportedXmlNode:                    {400, "One of the XML nodes specified in the request is not supported."},
	UnsupportedHttpVerb:                   {405, "The resource doesn't support specified Http Verb."},
	InvalidUri:                            {400, "The requested URI does not represent any resource on the server."},
	InvalidMetadata:                       {400, "The metadata specified is invalid. It has characters that are not permitted."},
	MetadataTooLarge:                      {400, "The size of the specified metadata exceeds the maximum size permitted."},
	InvalidTag:                            {400, "The tags specified are invalid. It contains characters that are not permitted."},
	BlobArchived:                          {409, "This operation is not permitted on an archived blob."},
	BlobIsSealed:                          {409, "The blob is sealed and its contents cannot be modified."},
	CorsPreflightFailure:                  {403, "CORS not enabled or no matching rule found for this request."},
	CannotVerifyCopySource:                {403, "Could not verify the copy source within the specified time."},
	NoPendingCopyOperation:                {409, "There is currently no pending copy operation."},
	NotImplemented:                        {501, "The requested operation is not implemented by this gateway yet."},
	InternalError:                         {500, "Server encountered an internal error. Please try again after some time."},
	ServerBusy:                            {503, "The server is busy."},
	OperationTimedOut:                     {500, "Operation could not be completed within the specified time."},
	// A request body that stalls (no bytes for the body idle timeout).
	// 408, which the Azure SDKs retry, rather than OperationTimedOut's
	// 500: the client, not the server, stopped.
	RequestTimeout: {408, "The request body was not received within the permitted time."},
	// List Blobs endBefore: only accounts with Blob Listing with Apache
	// Arrow accept it.
	ExceedsMaxBatchRequestCount:             {400, "The batch operation exceeds maximum number of allowed subrequests."},
	AllBatchSubRequestsShouldBeSameApi:      {400, "All batch subrequests should be the same api."},
	OperationNotSupportedWithFeatureMissing: {400, "The requested operation is not allowed as EndBefore parameter support is missing on this account."},

	// Managed disk accounts only, and Incremental Copy Blob.
	UnsupportedHeaderForNonManagedDisksAccount: {400, "One of the headers specified in the request is only supported for managed disks account."},
	IncrementalCopySourceMustBeSnapshot:        {409, "The source for incremental copy request must be a snapshot."},
	IncrementalCopyBlobMismatch:                {409, "The specified source blob is different than the copy source of the destination blob."},
	IncrementalCopyOfEarlierSnapshotNotAllowed: {409, "The specified snapshot is earlier than the last snapshot copied into the incremental copy blob."},
	OperationNotAllowedOnIncrementalCopyBlob:   {409, "The specified operation is not allowed on an incremental copy blob."},
	// A premium page blob tier (P4 ... P80) on a standard account.
	BlobAccessTierNotSupportedForAccountType: {400, "Blob access tier is not supported on this storage account type."},
	BlobTierInadequateForContentLength:       {409, "The specified blob tier size limit cannot be less than content length."},
}

// Error is a service error: a code, its status and optional detail elements
// that the XML body carries (HeaderName, AuthenticationErrorDetail, ...).
type Error struct {
	Code    Code
	Message string
	// Details are extra child elements of <Error>, in order.
	Details [][2]string
	// HTTPStatus, when non-zero, replaces the code's table status: a
	// copy's CannotVerifyCopySource carries the status the source answered
	// (403, 404, 409, ...).
	HTTPStatus int
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Status is the HTTP status for the error's code (500 for unknown codes).
func (e *Error) Status() int {
	if e.HTTPStatus != 0 {
		return e.HTTPStatus
	}
	return Status(e.Code)
}

// Is lets errors.Is(err, svcerr.New(code)) match on the code alone.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Status returns the HTTP status for code.
func Status(code Code) int {
	if e, ok := table[code]; ok {
		return e.status
	}
	return 500 // Internal Server Error; no net/http here, leasedb imports this package
}

// Known reports whether code is in the table.
func Known(code Code) bool { _, ok := table[code]; return ok }

// New returns an error with the code's default message.
func New(code Code) *Error { return &Error{Code: code, Message: table[code].msg} }

// Newf returns an error with a custom message.
func Newf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Header returns InvalidHeaderValue (or another header code) naming the header.
func Header(code Code, name, value string) *Error {
	e := New(code)
	e.Details = [][2]string{{"HeaderName", name}, {"HeaderValue", value}}
	return e
}

// Query returns an error naming a query parameter.
func Query(code Code, name, value, reason string) *Error {
	e := New(code)
	e.Details = [][2]string{{"QueryParameterName", name}, {"QueryParameterValue", value}}
	if reason != "" {
		e.Details = append(e.Details, [2]string{"Reason", reason})
	}
	return e
}

// As extracts a *Error from err, as errors.As does. It walks the chain
// itself: errors.As's target escapes, one allocation on every call, and
// the gateway asks this of errors, nil ones included, several times per
// request. An error with an As method of its own is left to errors.As.
func As(err error) (*Error, bool) {
	for err != nil {
		switch x := err.(type) {
		case *Error:
			return x, true
		case interface{ As(any) bool }:
			var e *Error
			if errors.As(err, &e) {
				return e, true
			}
			return nil, false
		case interface{ Unwrap() error }:
			err = x.Unwrap()
		case interface{ Unwrap() []error }:
			for _, err := range x.Unwrap() {
				if e, ok := As(err); ok {
					return e, true
				}
			}
			return nil, false
		default:
			return nil, false
		}
	}
	return nil, false
}

// HasCode reports whether err carries code.
func HasCode(err error, code Code) bool {
	e, ok := As(err)
	return ok && e.Code == code
}
