package main

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// cliRun is one finished run of the blobgw CLI: the command line it was
// given, its exit code and its output (standard output and error together,
// unless stderr holds the latter apart). ok and fails check it, so every
// test says what a command must do in one call and every failure names the
// command, the exit code and the output.
type cliRun struct {
	args   []string
	code   int
	out    string
	stderr string

	absent []string // strings the output must not contain (without)
	single bool     // the trimmed output must be one line (oneLine)
	what   string   // what the command line does not say (about)
}

// runCLI runs `blobgw args...` in-process with env as its only BLOBGW_
// environment (see runAppWith).
func runCLI(t testing.TB, env map[string]string, args ...string) cliRun {
	t.Helper()
	out, code := runAppWith(t, context.Background(), env, args...)
	return cliRun{args: args, code: code, out: out}
}

// runCLICtx is runCLI with ctx and no environment of its own.
func runCLICtx(t testing.TB, ctx context.Context, args ...string) cliRun {
	t.Helper()
	out, code := runAppWith(t, ctx, nil, args...)
	return cliRun{args: args, code: code, out: out}
}

// without makes the check that follows (ok or fails) also require that
// the output contains none of absent.
func (r cliRun) without(absent ...string) cliRun {
	r.absent = append(r.absent[:len(r.absent):len(r.absent)], absent...)
	return r
}

// oneLine makes the check that follows also require that the output,
// trimmed, is a single line.
func (r cliRun) oneLine() cliRun {
	r.single = true
	return r
}

// about names, in a failure's message, what the command line does not
// say (the standard input fed to it, say).
func (r cliRun) about(what string) cliRun {
	r.what = what
	return r
}

// ok fails t unless the run exited 0 and its output contains every string
// of want. It returns the output.
func (r cliRun) ok(t testing.TB, want ...string) string {
	t.Helper()
	return r.check(t, 0, want)
}

// fails fails t unless the run exited with code (a refusal, non-zero) and
// its output contains every string of want. It returns the output.
func (r cliRun) fails(t testing.TB, code int, want ...string) string {
	t.Helper()
	if code == 0 {
		t.Fatalf("fails(%s) with code 0: use ok", r.command())
	}
	return r.check(t, code, want)
}

// check is ok and fails: the exit code, then every wanted and refused
// string, all reported in one message with the command and its output.
func (r cliRun) check(t testing.TB, code int, want []string) string {
	t.Helper()
	var problems []string
	if r.code != code {
		problems = append(problems, fmt.Sprintf("exit %d, want %d", r.code, code))
	}
	for _, w := range want {
		if !strings.Contains(r.out, w) {
			problems = append(problems, fmt.Sprintf("output lacks %q", w))
		}
	}
	for _, a := range r.absent {
		if strings.Contains(r.out, a) {
			problems = append(problems, fmt.Sprintf("output contains %q", a))
		}
	}
	if r.single && strings.Contains(strings.TrimSpace(r.out), "\n") {
		problems = append(problems, "output is more than one line")
	}
	if len(problems) > 0 {
		msg := fmt.Sprintf("%s (exit %d): %s\noutput:\n%s", r.command(), r.code, strings.Join(problems, "; "), r.out)
		if r.what != "" {
			msg = r.what + ": " + msg
		}
		if r.stderr != "" {
			msg += "\nstandard error:\n" + r.stderr
		}
		t.Fatal(msg)
	}
	return r.out
}

// command is the command line, quoted where an argument would otherwise
// read as two or as none.
func (r cliRun) command() string {
	parts := []string{"blobgw"}
	for _, a := range r.args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// fatalRecorder is a testing.TB whose Fatal records the message and ends
// the calling goroutine, as testing.T's does, without failing the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestCLIRunCheck: ok and fails pass a run that exited as wanted with
// every wanted string and none refused, and fail any other, naming the
// command, the exit code, each problem and the output.
func TestCLIRunCheck(t *testing.T) {
	run := cliRun{args: []string{"lease", "show", "my cont"}, code: 1, out: "show: container devstoreaccount1/my cont not found\n"}
	multi := cliRun{args: []string{"lease", "list"}, code: 2, out: "usage: blobgw lease list\nmore\n"}
	tests := []struct {
		name  string
		check func(t testing.TB)
		want  []string // in the failure message; none: the check passes
	}{
		{"fails as wanted", func(t testing.TB) { run.fails(t, 1, "not found", "show:") }, nil},
		{"one line", func(t testing.TB) { run.oneLine().fails(t, 1, "not found") }, nil},
		{"absent text absent", func(t testing.TB) { run.without("created").fails(t, 1) }, nil},
		{"ok on a failure", func(t testing.TB) { run.ok(t) },
			[]string{`blobgw lease show "my cont" (exit 1)`, "exit 1, want 0", "output:\nshow: container"}},
		{"another code", func(t testing.TB) { run.fails(t, 2, "not found") }, []string{"exit 1, want 2"}},
		{"missing text", func(t testing.TB) { run.fails(t, 1, "not found", "no such") }, []string{`output lacks "no such"`}},
		{"refused text", func(t testing.TB) { run.without("devstoreaccount1").fails(t, 1) }, []string{`output contains "devstoreaccount1"`}},
		{"more than one line", func(t testing.TB) { multi.oneLine().fails(t, 2, "usage") }, []string{"output is more than one line"}},
		{"every problem", func(t testing.TB) { run.without("show").ok(t, "x") },
			[]string{"exit 1, want 0", `output lacks "x"`, `output contains "show"`}},
		{"stderr apart", func(t testing.TB) {
			cliRun{args: []string{"bench"}, code: 1, out: "report", stderr: "progress"}.ok(t)
		}, []string{"output:\nreport", "standard error:\nprogress"}},
		{"about", func(t testing.TB) { run.about("stdin \"n\"").ok(t) }, []string{`stdin "n": blobgw lease show`}},
		{"fails with code 0", func(t testing.TB) { cliRun{}.fails(t, 0) }, []string{"use ok"}},
	}
	for _, tt := range tests {
		rec := &fatalRecorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			tt.check(rec)
		}()
		<-done
		if len(tt.want) == 0 {
			if rec.msg != "" {
				t.Errorf("%s: failed: %s", tt.name, rec.msg)
			}
			continue
		}
		if rec.msg == "" {
			t.Errorf("%s: passed, want a failure", tt.name)
		}
		for _, w := range tt.want {
			if !strings.Contains(rec.msg, w) {
				t.Errorf("%s: message lacks %q:\n%s", tt.name, w, rec.msg)
			}
		}
	}
}
