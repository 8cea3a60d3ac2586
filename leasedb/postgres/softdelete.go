package postgres

import "time"

// The soft-delete methods of leasedb.Tx (PutDeletedBlob, DeletedBlobs,
// RemoveDeletedBlob, ExpiredBlobs) are sqlq.Tx's, which tx embeds.

// SetClockOffset implements leasedb.ClockOffsetter: transactions begun
// from now on read the clock plus d.
func (s *Store) SetClockOffset(d time.Duration) { s.clockOffset.Store(int64(d)) }

// offsetNow is the clock of a one-statement read (the database's, read in
// its statement) plus the offset a test set (SetClockOffset), as a
// transaction's Tx.Now; a zero time (no row, no clock) stays zero.
func (s *Store) offsetNow(now time.Time) time.Time {
	if now.IsZero() {
		return now
	}
	return now.Add(time.Duration(s.clockOffset.Load())).UTC().Truncate(time.Microsecond)
}
