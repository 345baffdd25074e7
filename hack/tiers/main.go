// Command tiers reads the tests' tier declarations (internal/fixture/tier)
// for make:
//
//	tiers check             fail, naming each, on tests whose declaration is wrong
//	tiers matrix-packages [managed]   the packages holding Versions or Matrix tests
//	                                  (with managed: only Matrix ones, which a
//	                                  managed-service admin changes)
//	tiers matrix-run                  a -run pattern matching those tests
//	tiers unit-packages               the packages holding server-free tests
package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
)

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		fmt.Fprintln(os.Stderr, "usage: tiers check|matrix-packages [managed]|matrix-run|unit-packages")
		os.Exit(2)
	}
	findings, declared, err := tier.Audit(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var pkgs, tests, unit []string
	for _, d := range declared {
		if d.Kind == "" {
			unit = append(unit, "./"+d.Package+"/")
		}
		if d.Kind == "" || d.Kind == "Server" || (d.Kind == "Versions" && len(os.Args) == 3 && os.Args[2] == "managed") {
			continue
		}
		pkgs = append(pkgs, "./"+d.Package+"/")
		tests = append(tests, regexp.QuoteMeta(d.Test))
	}
	slices.Sort(pkgs)
	slices.Sort(tests)
	switch os.Args[1] {
	case "check":
		for _, f := range findings {
			fmt.Fprintln(os.Stderr, f)
		}
		if len(findings) > 0 {
			os.Exit(1)
		}
	case "matrix-packages":
		fmt.Println(strings.Join(slices.Compact(pkgs), " "))
	case "unit-packages":
		slices.Sort(unit)
		fmt.Println(strings.Join(slices.Compact(unit), " "))
	case "matrix-run":
		fmt.Println("^(" + strings.Join(slices.Compact(tests), "|") + ")$")
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
}
