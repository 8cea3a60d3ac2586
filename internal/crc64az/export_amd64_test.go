package crc64az

func useFold() bool { return useCLMUL }

// setFold sets whether update folds and returns the previous setting.
func setFold(on bool) bool {
	prev := useCLMUL
	useCLMUL = on
	return prev
}
