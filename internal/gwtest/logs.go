package gwtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// sasSignature finds a SAS signature value (sig=, plain or %-encoded) that
// is not the redaction mark.
var sasSignature = regexp.MustCompile(`(?i)sig(=|%3d)(?:[^R&"\s\\]|R[^E])`)

// LogLines checks a gateway's JSON log out, failing tb if a SAS signature
// reached it unredacted or a line is not one JSON object, and returns its
// lines decoded, in order.
func LogLines(tb testing.TB, out string) []map[string]any {
	tb.Helper()
	lines, err := parseLogLines(out)
	if err != nil {
		tb.Fatalf("%v:\n%s", err, out)
	}
	return lines
}

func parseLogLines(out string) ([]map[string]any, error) {
	if m := sasSignature.FindString(out); m != "" {
		return nil, fmt.Errorf("a SAS signature reached the log (%q)", m)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("not a JSON line: %q", sc.Text())
		}
		lines = append(lines, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the log: %w", err)
	}
	return lines, nil
}
