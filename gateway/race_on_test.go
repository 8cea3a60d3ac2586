//go:build race

package gateway_test

// raceDetector: this test binary runs with the race detector, whose
// runtime allocates differently (sync.Pool drops a quarter of what it is
// given), so allocation ceilings do not hold.
const raceDetector = true
