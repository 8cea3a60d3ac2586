package auth

import (
	"math/rand"
	"net/http"
	"testing"
	"time"
)

// TestParseHTTPDate: the x-ms-date reading gives what http.ParseTime gives,
// time and error alike, for the SDK's form, its near misses and the other
// forms http.ParseTime reads.
func TestParseHTTPDate(t *testing.T) {
	inputs := []string{
		"Mon, 02 Jan 2006 15:04:05 GMT",
		"Wed, 02 Dec 2026 05:54:46 GMT",
		"Thu, 29 Feb 2024 23:59:59 GMT", // a leap day
		"Sun, 29 Feb 2026 00:00:00 GMT", // not one
		"Sat, 29 Feb 2000 00:00:00 GMT",
		"Mon, 29 Feb 1900 00:00:00 GMT",
		"Mon, 31 Apr 2026 00:00:00 GMT",
		"Mon, 00 Jan 2026 00:00:00 GMT",
		"Mon, 32 Jan 2026 00:00:00 GMT",
		"Mon, 01 Jan 0000 00:00:00 GMT",
		"Mon, 01 Jan 2026 24:00:00 GMT",
		"Mon, 01 Jan 2026 23:60:00 GMT",
		"Mon, 01 Jan 2026 23:59:60 GMT",
		"mon, 02 Jan 2006 15:04:05 GMT", // case: time.Parse's own rule
		"MON, 02 JAN 2006 15:04:05 GMT",
		"Mon, 02 jan 2006 15:04:05 GMT",
		"Xyz, 02 Jan 2006 15:04:05 GMT",
		"Mon, 02 Jan 2006 15:04:05 UTC",
		"Mon, 02 Jan 2006 15:04:05 gmt",
		"Mon, 2 Jan 2006 15:04:05 GMT",
		"Mon, 02 Jan 06 15:04:05 GMT",
		"Mon, 02 Jan 2006 15:04:05 GMT ",
		"Mon, 0a Jan 2006 15:04:05 GMT",
		"Mon, 02 Jan 2006 1:04:05 GMT",
		"Mon,  2 Jan 2006 15:04:05 GMT",
		"Monday, 02-Jan-06 15:04:05 GMT", // RFC 850
		"Mon Jan  2 15:04:05 2006",       // ANSI C
		"",
		"garbage",
	}
	for _, v := range inputs {
		same(t, v)
	}
	// Every byte of the SDK's form replaced by a few others.
	rng := rand.New(rand.NewSource(1))
	base := time.Date(2026, 12, 2, 5, 54, 46, 0, time.UTC).Format(http.TimeFormat)
	for i := range len(base) {
		for _, c := range []byte{'0', '9', ' ', ':', ',', 'a', 'Z', 0x80, byte(rng.Intn(256))} {
			b := []byte(base)
			b[i] = c
			same(t, string(b))
		}
	}
	// Random instants over four centuries.
	for range 20000 {
		tm := time.Unix(rng.Int63n(400*365*86400)-100*365*86400, 0).UTC()
		same(t, tm.Format(http.TimeFormat))
	}
}

func same(t *testing.T, v string) {
	t.Helper()
	want, werr := http.ParseTime(v)
	got, gerr := parseHTTPDate(v)
	if (werr == nil) != (gerr == nil) || !got.Equal(want) || got.Location().String() != want.Location().String() {
		t.Errorf("%q: got %v, %v; http.ParseTime %v, %v", v, got, gerr, want, werr)
	}
}

// FuzzParseHTTPDate: the same for any input.
func FuzzParseHTTPDate(f *testing.F) {
	f.Add("Mon, 02 Jan 2006 15:04:05 GMT")
	f.Add("Thu, 29 Feb 2024 23:59:59 GMT")
	f.Fuzz(func(t *testing.T, v string) { same(t, v) })
}

func BenchmarkParseHTTPDate(b *testing.B) {
	v := "Wed, 02 Dec 2026 05:54:46 GMT"
	b.Run("parseHTTPDate", func(b *testing.B) {
		for range b.N {
			if _, err := parseHTTPDate(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("http.ParseTime", func(b *testing.B) {
		for range b.N {
			if _, err := http.ParseTime(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
