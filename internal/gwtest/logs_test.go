package gwtest

import "testing"

func TestParseLogLines(t *testing.T) {
	for _, tc := range []struct {
		name  string
		out   string
		lines int // -1: refused
	}{
		{"empty", "", 0},
		{"two lines", `{"msg":"request","status":200}` + "\n" + `{"msg":"start"}` + "\n", 2},
		{"redacted sig", `{"url":"/c/b?sv=1&sig=REDACTED"}` + "\n", 1},
		{"redacted encoded sig", `{"copy":"https%3A%2F%2Fh%2Fb%3Fsig%3DREDACTED"}` + "\n", 1},
		{"plain sig", `{"url":"/c/b?sv=1&sig=abc"}` + "\n", -1},
		{"encoded sig", `{"copy":"https%3A%2F%2Fh%2Fb%3Fsig%3Dabc"}` + "\n", -1},
		{"sig starting with R", `{"url":"/c/b?sig=Rx"}` + "\n", -1},
		{"text line", `{"msg":"start"}` + "\ntime=now msg=start\n", -1},
		{"array line", "[1]\n", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines, err := parseLogLines(tc.out)
			switch {
			case tc.lines < 0 && err == nil:
				t.Fatalf("accepted: %v", lines)
			case tc.lines >= 0 && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.lines >= 0 && len(lines) != tc.lines:
				t.Fatalf("%d lines, want %d", len(lines), tc.lines)
			}
		})
	}
}
