//go:build !amd64

package crc64az

func update(crc uint64, p []byte) uint64 { return generic(crc, p) }
