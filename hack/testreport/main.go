// Command testreport reads `go test -json` on stdin, prints the tests'
// output as `go test` without -v would (a test's output only when it
// fails; -v prints everything), and ends with what the run cost: the ten
// slowest tests and packages, and how many tests passed, failed and were
// skipped. With -json FILE it also keeps the events there.
//
//	go test -json ./... | go run ./hack/testreport -title "make test"
package main

import (
	"bufio"
	"encoding/json"

	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// timing is one test's or package's wall time.
type timing struct {
	name    string
	elapsed float64
}

// report is what a run cost.
type report struct {
	tests, packages       []timing
	passed, failed, skips int
	failedNames           []string
	first, last           time.Time
}

func main() {
	title := flag.String("title", "tests", "what ran, for the summary's heading")
	keep := flag.String("json", "", "also write the events to this file")
	top := flag.Int("top", 10, "how many of the slowest to list")
	verbose := flag.Bool("v", false, "print every test's output, as go test -v does")
	flag.Parse()

	in := io.Reader(os.Stdin)
	if *keep != "" {
		f, err := os.Create(*keep)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer f.Close() //nolint:errcheck // Best effort: the report is on stdout.
		in = io.TeeReader(os.Stdin, f)
	}
	out := &printer{w: os.Stdout}
	r, err := read(in, out, *verbose)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	r.print(out, *title, *top)
	if out.err != nil {
		fmt.Fprintln(os.Stderr, out.err)
		os.Exit(1)
	}
	if r.failed > 0 {
		os.Exit(1)
	}
}

// A printer writes to w, keeping the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) print(s ...string) {
	for _, x := range s {
		if p.err == nil {
			_, p.err = io.WriteString(p.w, x)
		}
	}
}

func (p *printer) printf(format string, args ...any) { p.print(fmt.Sprintf(format, args...)) }

// A filter prints the events' output as `go test` without -v prints it: a
// package that passes shows its "ok" line; one that fails, its failed
// tests' output and its own.
type filter struct {
	out *printer
	// pkgOut is each running package's own output; failed, the output of
	// its tests that failed; testOut, each running top-level test's.
	pkgOut, failed, testOut map[string]*strings.Builder
}

func buf(m map[string]*strings.Builder, k string) *strings.Builder {
	if m[k] == nil {
		m[k] = &strings.Builder{}
	}
	return m[k]
}

func (f *filter) event(e event) {
	if e.Test != "" {
		key := e.Package + " " + strings.SplitN(e.Test, "/", 2)[0]
		buf(f.testOut, key).WriteString(e.Output)
		if strings.Contains(e.Test, "/") || !ended(e.Action) {
			return
		}
		if e.Action == "fail" {
			buf(f.failed, e.Package).WriteString(f.testOut[key].String())
		}
		delete(f.testOut, key)
		return
	}
	switch {
	case strings.HasPrefix(e.Output, "ok  ") || strings.HasPrefix(e.Output, "?   "):
		f.out.print(e.Output)
	case e.Output != "":
		buf(f.pkgOut, e.Package).WriteString(e.Output)
	case e.Action == "fail":
		f.out.print(buf(f.failed, e.Package).String(), buf(f.pkgOut, e.Package).String())
	}
	if ended(e.Action) {
		delete(f.pkgOut, e.Package)
		delete(f.failed, e.Package)
	}
}

// ended is an action that ends a test or package.
func ended(action string) bool { return action == "pass" || action == "fail" || action == "skip" }

// read copies the events' output to out (filtered, or all of it when
// verbose) and collects the timings. A line that is not an event (a build
// error) is copied as it is.
func read(in io.Reader, out *printer, verbose bool) (*report, error) {
	r := &report{}
	f := &filter{out: out, pkgOut: map[string]*strings.Builder{}, failed: map[string]*strings.Builder{}, testOut: map[string]*strings.Builder{}}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			out.print(string(line), "\n")
			continue
		}
		r.add(e)
		if verbose {
			out.print(e.Output)
			continue
		}
		f.event(e)
	}
	return r, errors.Join(sc.Err(), out.err)
}

func (r *report) add(e event) {
	if r.first.IsZero() || (!e.Time.IsZero() && e.Time.Before(r.first)) {
		r.first = e.Time
	}
	if e.Time.After(r.last) {
		r.last = e.Time
	}
	switch e.Action {
	case "pass", "fail", "skip":
	default:
		return
	}
	pkg := strings.TrimPrefix(e.Package, "github.com/ayatori/provider-postgresql/")
	if e.Test == "" {
		if e.Action == "fail" {
			r.failed++
			r.failedNames = append(r.failedNames, pkg)
		}
		if e.Action != "skip" {
			r.packages = append(r.packages, timing{pkg, e.Elapsed})
		}
		return
	}
	if strings.Contains(e.Test, "/") {
		return
	}
	switch e.Action {
	case "pass":
		r.passed++
		r.tests = append(r.tests, timing{pkg + "." + e.Test, e.Elapsed})
	case "fail":
		r.failed++
		r.failedNames = append(r.failedNames, pkg+"."+e.Test)
		r.tests = append(r.tests, timing{pkg + "." + e.Test, e.Elapsed})
	case "skip":
		r.skips++
	}
}

func (r *report) print(out *printer, title string, top int) {
	out.printf("\n== %s: %d passed, %d failed, %d skipped in %s\n", title, r.passed, r.failed, r.skips, r.last.Sub(r.first).Round(time.Second))
	for _, l := range []struct {
		what string
		ts   []timing
	}{{"tests", r.tests}, {"packages", r.packages}} {
		sort.SliceStable(l.ts, func(i, j int) bool { return l.ts[i].elapsed > l.ts[j].elapsed })
		out.printf("   slowest %s:\n", l.what)
		for i, t := range l.ts {
			if i == top {
				break
			}
			out.printf("   %7.1fs  %s\n", t.elapsed, t.name)
		}
	}
	if len(r.failedNames) > 0 {
		out.printf("   failed: %s\n", strings.Join(r.failedNames, ", "))
	}
}
