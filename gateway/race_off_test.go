//go:build !race

package gateway_test

// raceDetector: see race_on_test.go.
const raceDetector = false
