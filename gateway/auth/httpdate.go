package auth

import (
	"net/http"
	"time"
)

// parseHTTPDate is http.ParseTime for the date of a signed request
// (x-ms-date or Date). The Azure SDKs send http.TimeFormat
// ("Mon, 02 Jan 2006 15:04:05 GMT"); that form is read here field by field
// (time.Parse's layout walk cost a small Put Blob about 1% of the gateway's
// CPU), and anything else, or anything this reading doubts, goes to
// http.ParseTime, so the outcome is always http.ParseTime's.
func parseHTTPDate(v string) (time.Time, error) {
	if t, ok := parseTimeFormat(v); ok {
		return t, nil
	}
	return http.ParseTime(v)
}

// parseTimeFormat reads v in http.TimeFormat exactly. ok is false for
// anything time.Parse might read otherwise: another length, a field out of
// its range, a day past its month's end.
func parseTimeFormat(v string) (t time.Time, ok bool) {
	// 0         1         2
	// 01234567890123456789012345678
	// Mon, 02 Jan 2006 15:04:05 GMT
	if len(v) != len(http.TimeFormat) || v[3] != ',' || v[4] != ' ' || v[7] != ' ' ||
		v[11] != ' ' || v[16] != ' ' || v[19] != ':' || v[22] != ':' || v[25:] != " GMT" {
		return time.Time{}, false
	}
	if !weekday(v[0:3]) {
		return time.Time{}, false
	}
	month := monthOf(v[8:11])
	day, ok1 := digits(v[5:7])
	year, ok2 := digits(v[12:16])
	hour, ok3 := digits(v[17:19])
	minute, ok4 := digits(v[20:22])
	sec, ok5 := digits(v[23:25])
	if month == 0 || !ok1 || !ok2 || !ok3 || !ok4 || !ok5 ||
		day < 1 || day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	return time.Date(year, month, day, hour, minute, sec, 0, time.UTC), true
}

// weekday reports whether s is a day's three-letter English name as
// time.Parse's "Mon" reads it (its case as written).
func weekday(s string) bool {
	switch s {
	case "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun":
		return true
	}
	return false
}

// monthOf is the month s names ("Jan" ... "Dec"), 0 if none.
func monthOf(s string) time.Month {
	switch s {
	case "Jan":
		return time.January
	case "Feb":
		return time.February
	case "Mar":
		return time.March
	case "Apr":
		return time.April
	case "May":
		return time.May
	case "Jun":
		return time.June
	case "Jul":
		return time.July
	case "Aug":
		return time.August
	case "Sep":
		return time.September
	case "Oct":
		return time.October
	case "Nov":
		return time.November
	case "Dec":
		return time.December
	}
	return 0
}

// digits is the decimal value of s, all of whose bytes must be digits.
func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// daysIn is the number of days of month m in year y.
func daysIn(m time.Month, y int) int {
	if m == time.February {
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	}
	return monthDays[m-1]
}

var monthDays = [12]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
