package main

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// memoryLimitShare is the share of the container's memory limit the Go
// runtime is asked to stay under: the rest is room for what the runtime
// does not count (thread stacks outside the heap, the binary's pages) and
// for a burst while the collector catches up.
const memoryLimitShare = 0.9

// containerMemoryLimit returns the memory limit of the cgroup the process
// runs in, read under root (/sys/fs/cgroup), and whether there is one.
// cgroup v2 names it memory.max ("max": none); v1
// memory/memory.limit_in_bytes, where no limit is a number near 2^63.
func containerMemoryLimit(root string) (int64, bool) {
	for _, f := range []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")} {
		b, err := os.ReadFile(filepath.Join(root, f)) //nolint:gosec // A fixed path under the cgroup root.
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		// v1 reports no limit as the largest page-aligned int64.
		if err != nil || n <= 0 || n >= 1<<62 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// setSoftMemoryLimit sets the Go runtime's soft memory limit to a share of
// the container's limit, unless GOMEMLIMIT already sets one, and returns
// the limit set (0 for none). Without it, the collector lets the heap grow
// to twice the live data (GOGC=100) whatever the container allows, and a
// wave of thousands of objects can take a provider past its limit and
// have it killed, where collecting sooner would have kept it alive.
func setSoftMemoryLimit(root string, getenv func(string) string) int64 {
	if getenv("GOMEMLIMIT") != "" {
		return 0
	}
	limit, ok := containerMemoryLimit(root)
	if !ok {
		return 0
	}
	soft := int64(float64(limit) * memoryLimitShare)
	debug.SetMemoryLimit(soft)
	return soft
}

// defaultGCPercent is the collector's target when GOGC does not set one:
// the heap may grow to 1.3 times the live data between collections, where
// Go's default lets it double. A provider's live data grows with the
// objects it manages (about 10 KB each), and at 5,000 objects the doubled
// heap took the provider to 194 MiB against the 150 MiB it aims at. At
// 5,000 objects 30 peaked at 139 MiB for 3% more of the provider's CPU
// than 50, which peaked at 154 MiB (docs/performance.md, Memory at 5,000
// objects).
const defaultGCPercent = 30

// setGCPercent sets the collector's target to defaultGCPercent unless GOGC
// already sets one, and returns the target set (0 for none).
func setGCPercent(getenv func(string) string) int {
	if getenv("GOGC") != "" {
		return 0
	}
	debug.SetGCPercent(defaultGCPercent)
	return defaultGCPercent
}

// profileHeap turns the runtime's heap sampling off unless the profiler is
// served at addr: nothing could read the samples, and their stacks are
// kept for the life of the process (2.6 MiB at 5,000 objects), besides
// the CPU of taking them.
func profileHeap(addr string) {
	if addr == "" || addr == "0" {
		runtime.MemProfileRate = 0
	}
}
