package postgres

import "time"

// The soft-delete methods of leasedb.Tx (PutDeletedBlob, DeletedBlobs,
// RemoveDeletedBlob, ExpiredBlobs) are sqlq.Tx's, which tx embeds.

// SetClockOffset implements leasedb.ClockOffsetter: transactions begun
// from now on read the clock plus d.
func (s *Store) SetClockOffset(d time.Duration) { s.clockOffset.Store(int64(d)) }
