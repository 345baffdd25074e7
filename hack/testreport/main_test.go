package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// events is a run of two packages: a passes with one test that logs and
// one that skips; b fails one of its two tests.
const events = `{"Time":"2026-01-01T00:00:00Z","Action":"start","Package":"example.com/a"}
{"Time":"2026-01-01T00:00:00Z","Action":"run","Package":"example.com/a","Test":"TestQuiet"}
{"Time":"2026-01-01T00:00:01Z","Action":"output","Package":"example.com/a","Test":"TestQuiet","Output":"    a_test.go:1: only shown when it fails\n"}
{"Time":"2026-01-01T00:00:02Z","Action":"pass","Package":"example.com/a","Test":"TestQuiet","Elapsed":2}
{"Time":"2026-01-01T00:00:02Z","Action":"skip","Package":"example.com/a","Test":"TestSkipped","Elapsed":0}
{"Time":"2026-01-01T00:00:02Z","Action":"output","Package":"example.com/a","Output":"ok  \texample.com/a\t2.0s\n"}
{"Time":"2026-01-01T00:00:02Z","Action":"pass","Package":"example.com/a","Elapsed":2}
{"Time":"2026-01-01T00:00:00Z","Action":"run","Package":"example.com/b","Test":"TestSlow"}
{"Time":"2026-01-01T00:00:05Z","Action":"pass","Package":"example.com/b","Test":"TestSlow","Elapsed":5}
{"Time":"2026-01-01T00:00:05Z","Action":"run","Package":"example.com/b","Test":"TestBroken"}
{"Time":"2026-01-01T00:00:05Z","Action":"output","Package":"example.com/b","Test":"TestBroken","Output":"--- FAIL: TestBroken (0.50s)\n"}
{"Time":"2026-01-01T00:00:05Z","Action":"output","Package":"example.com/b","Test":"TestBroken/sub","Output":"    b_test.go:9: got 1, want 2\n"}
{"Time":"2026-01-01T00:00:05Z","Action":"fail","Package":"example.com/b","Test":"TestBroken/sub","Elapsed":0.5}
{"Time":"2026-01-01T00:00:06Z","Action":"fail","Package":"example.com/b","Test":"TestBroken","Elapsed":0.5}
{"Time":"2026-01-01T00:00:06Z","Action":"output","Package":"example.com/b","Output":"FAIL\texample.com/b\t6.0s\n"}
{"Time":"2026-01-01T00:00:06Z","Action":"fail","Package":"example.com/b","Elapsed":6}
# a build error, not an event
`

func TestReport(t *testing.T) {
	var out strings.Builder
	p := &printer{w: &out}
	r, err := read(strings.NewReader(events), p, false)
	if err != nil {
		t.Fatal(err)
	}
	r.print(p, "make test", 2)
	want := "ok  \texample.com/a\t2.0s\n" +
		"--- FAIL: TestBroken (0.50s)\n    b_test.go:9: got 1, want 2\nFAIL\texample.com/b\t6.0s\n" +
		"# a build error, not an event\n" +
		"\n== make test: 2 passed, 2 failed, 1 skipped in 6s\n" +
		"   slowest tests:\n       5.0s  example.com/b.TestSlow\n       2.0s  example.com/a.TestQuiet\n" +
		"   slowest packages:\n       6.0s  example.com/b\n       2.0s  example.com/a\n" +
		"   failed: example.com/b.TestBroken, example.com/b\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
