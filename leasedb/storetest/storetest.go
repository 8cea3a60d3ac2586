// Package storetest is the conformance suite every leasedb.Store driver
// passes: each primitive of Store and Tx, exact round trips, byte-order
// listings, the collection queue, and concurrency (real goroutines,
// counted outcomes). A driver is done when Run passes, and a behaviour that
// differs between drivers is a bug in one of them.
//
// The suite only uses the leasedb interfaces; it must never reach into a
// driver's tables, and never share data between subtests (each asks
// newStore for an empty store).
//
// One file per concern, each holding its tests and the helpers only they
// use: containers.go, blobs.go (rows and round trips), inline.go (inline extents), inlineold.go (the rows
// an overwrite keeps of an inline blob), listing.go,
// listentries.go, listdelimited.go, findtagged.go, blocks.go, stageblock.go (Put
// Block through DB.StageBlock, store and generic paths alike),
// blockexpiry.go, snapshots.go, leases.go, acl.go, collection.go (intents
// and the collection queue), shares.go, adopt.go, fsck.go (ReferencedKeys), deleted.go (soft-deleted
// containers), accounts.go (accounts and keys), transactions.go (Update,
// View, Now, NextETag), races.go (the multi-store races), migrations.go
// (checks of schema upgrades the drivers call with their own SQL);
// helpers.go has the fixtures and checks they share.
package storetest

import (
	"testing"

	"github.com/blobgw/blobgw/leasedb"
)

const acct = "acct"

// Run runs the suite. newStore must return an empty, migrated store that
// the test owns, and arrange for it to be closed when t ends (t.Cleanup).
// Subtests run in parallel.
func Run(t *testing.T, newStore func(t *testing.T) leasedb.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s leasedb.Store)
	}{
		{"ContainerInsertGet", testContainerInsertGet},
		{"ContainerInsertExists", testContainerInsertExists},
		{"ContainerUpdate", testContainerUpdate},
		{"ContainerListOrderAndPaging", testContainerList},
		{"ContainerListPrefix", testContainerListPrefix},
		{"ContainerDelete", testContainerDelete},
		{"BlobPutGet", testBlobPutGet},
		{"BlobOverwrite", testBlobOverwrite},
		{"PutBlobPaths", testPutBlobPaths},
		{"InlineExtents", testInlineExtents},
		{"InlineAppend", testInlineAppend},
		{"InlineOldBytes", testInlineOldBytes},
		{"BlobDelete", testBlobDelete},
		{"BlobNeedsContainer", testBlobNeedsContainer},
		{"BlobListPrefixPaging", testBlobList},
		{"ListEntries", testListEntries},
		{"ListDelimited", testListDelimited},
		{"RoundTripTimes", testTimes},
		{"RoundTripMetadata", testMetadata},
		{"RoundTripLeaseSince", testLeaseSince},
		{"BlobLeaseWrite", testBlobLeaseWrite},
		{"BlobAttrsWrite", testBlobAttrsWrite},
		{"TagsTierHead", testTagsTierHead},
		{"RoundTripExtentBlockID", testExtentBlockID},
		{"RoundTripTierTags", testTierTags},
		{"FindTagged", testFindTagged},
		{"RoundTripContainerACL", testContainerACL},
		{"ServiceProperties", testServiceProperties},
		{"LockedSettings", testLockedSettings},
		{"StageBlock", testStageBlock},
		{"StageBlockOrder", testStageBlockOrder},
		{"StageBlockNeedsContainer", testStageBlockNeedsContainer},
		{"StageBlockConcurrent", testStageBlockConcurrent},
		{"StageBlockPaths", testStageBlockPaths},
		{"StageBlockRaces", testStageBlockRaces},
		{"BlockStats", testBlockStats},
		{"ContainerDeleteBlocks", testContainerDeleteBlocks},
		{"BlockExpiry", testBlockExpiry},
		{"SnapshotPutGet", testSnapshotPutGet},
		{"SnapshotExists", testSnapshotExists},
		{"SnapshotNeedsContainer", testSnapshotNeedsContainer},
		{"SnapshotList", testSnapshotList},
		{"SnapshotDelete", testSnapshotDelete},
		{"SnapshotIDPastSoftDeleted", testSnapshotIDPastSoftDeleted},
		{"ContainerDeleteSnapshots", testContainerDeleteSnapshots},
		{"ListLeases", testListLeases},
		{"Names", testNames},
		{"Now", testNow},
		{"NextETagUnique", testNextETag},
		{"NextETagConcurrent", testNextETagConcurrent},
		{"IntentTakeOnce", testIntentTakeOnce},
		{"IntentClaimed", testIntentClaimed},
		{"ClaimDueOnlyDue", testClaimDueOnlyDue},
		{"ClaimDueLimit", testClaimDueLimit},
		{"ClaimDueReclaim", testClaimDueReclaim},
		{"ClaimDueConcurrent", testClaimDueConcurrent},
		{"AddGCForget", testAddGCForget},
		{"QueueStats", testQueueStats},
		{"ShareRelease", testShareRelease},
		{"UpdateRollback", testUpdateRollback},
		{"UpdatePanic", testUpdatePanic},
		{"UpdateCanceled", testUpdateCanceled},
		{"ViewSeesCommitted", testView},
		{"ViewIsReadOnly", testViewReadOnly},
		{"OneStatementReads", testOneStatement},
		{"CreateOnce", func(t *testing.T, s leasedb.Store) { CreateOnce(t, s) }},
		{"Counter", func(t *testing.T, s leasedb.Store) { Counter(t, s) }},
		{"AdoptBlob", testAdoptBlob},
		{"ReferencedKeys", testReferencedKeys},
		{"QueuedReferencedKeys", testQueuedReferencedKeys},
		{"ContainerMove", testContainerMove},
		{"DeletedContainerRecords", testDeletedContainerRecords},
		{"ContainerSoftDelete", testContainerSoftDelete},
		{"VersionPutGet", testVersionPutGet},
		{"VersionListing", testVersionListing},
		{"VersionKeys", testVersionKeys},
		{"AccountSettings", testAccountSettings},
		{"SoftDeletedRows", testSoftDeletedRows},
		{"SoftDeleteOps", testSoftDeleteOps},
		{"UndeleteAfterRetention", testUndeleteAfterRetention},
		{"ClockOffsetReads", testClockOffsetReads},
		{"SoftDeletedVersions", testSoftDeletedVersions},
		{"SoftDeleteVersionOps", testSoftDeleteVersionOps},
		{"SoftDeletedManyRows", testSoftDeletedManyRows},
		{"PageBlobRow", testPageBlobRow},
		{"AccountKeys", testAccountKeys},
		{"AccountKeysSeedEmpty", testAccountKeysSeedEmpty},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}
