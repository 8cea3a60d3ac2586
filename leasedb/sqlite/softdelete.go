package sqlite

import "time"

// The soft-delete methods of leasedb.Tx (PutDeletedBlob, DeletedBlobs,
// RemoveDeletedBlob, ExpiredBlobs) are sqlq.Tx's, which tx embeds.

// SetClockOffset implements leasedb.ClockOffsetter: transactions begun
// from now on read the clock plus d.
func (s *Store) SetClockOffset(d time.Duration) { s.clockOffset.Store(int64(d)) }

// now is the clock of a one-statement read: this process's, plus the
// offset a test set (SetClockOffset), as a transaction's Tx.Now.
func (s *Store) now() time.Time {
	return time.Now().Add(time.Duration(s.clockOffset.Load())).UTC().Truncate(time.Microsecond)
}
