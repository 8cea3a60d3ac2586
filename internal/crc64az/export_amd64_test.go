package crc64az

// paths are the ways update can take on this CPU, by name.
func paths() map[string]func() {
	m := map[string]func(){"generic": func() { impl = implGeneric }}
	best := bestImpl()
	if best >= implCLMUL {
		m["pclmulqdq"] = func() { impl = implCLMUL }
	}
	if best >= implVPCLMUL {
		m["vpclmulqdq"] = func() { impl = implVPCLMUL }
	}
	return m
}

// restore is deferred by whoever sets a path.
func restore() { impl = bestImpl() }
