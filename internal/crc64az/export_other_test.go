//go:build !amd64

package crc64az

func useFold() bool { return false }

func setFold(bool) bool { return false }
