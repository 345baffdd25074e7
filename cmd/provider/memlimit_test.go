package main

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestContainerMemoryLimit(t *testing.T) {
	cases := map[string]struct {
		files     map[string]string
		want      int64
		wantLimit bool
	}{
		"CgroupV2Limit":   {files: map[string]string{"memory.max": "268435456\n"}, want: 268435456, wantLimit: true},
		"CgroupV2NoLimit": {files: map[string]string{"memory.max": "max\n"}},
		"CgroupV1Limit":   {files: map[string]string{"memory/memory.limit_in_bytes": "536870912\n"}, want: 536870912, wantLimit: true},
		// v1 reports no limit as the largest page-aligned int64.
		"CgroupV1NoLimit": {files: map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}},
		"NoCgroup":        {},
		"Garbage":         {files: map[string]string{"memory.max": "lots"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			for f, body := range tc.files {
				p := filepath.Join(root, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, ok := containerMemoryLimit(root)
			if diff := cmp.Diff([]any{tc.want, tc.wantLimit}, []any{got, ok}); diff != "" {
				t.Errorf("containerMemoryLimit (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSetSoftMemoryLimit: the runtime's limit becomes 90% of the
// container's, unless GOMEMLIMIT is set, and stays unset without a
// container limit.
func TestSetSoftMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "memory.max"), []byte("209715200\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	none := func(string) string { return "" }

	if got := setSoftMemoryLimit(root, func(k string) string { return map[string]string{"GOMEMLIMIT": "100MiB"}[k] }); got != 0 {
		t.Errorf("with GOMEMLIMIT set: set %d, want nothing", got)
	}
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("with GOMEMLIMIT set: the runtime's limit changed to %d", got)
	}
	if got := setSoftMemoryLimit(t.TempDir(), none); got != 0 {
		t.Errorf("without a container limit: set %d, want nothing", got)
	}
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("without a container limit: the runtime's limit changed to %d", got)
	}
	want := int64(188743680) // 90% of 200 MiB
	if got := setSoftMemoryLimit(root, none); got != want {
		t.Errorf("set %d, want %d", got, want)
	}
	if got := debug.SetMemoryLimit(-1); got != want {
		t.Errorf("the runtime's limit is %d, want %d", got, want)
	}
}

// TestSetGCPercent: the collector's target becomes defaultGCPercent unless
// GOGC sets one (which the runtime has already applied).
func TestSetGCPercent(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	if got := setGCPercent(func(k string) string { return map[string]string{"GOGC": "200"}[k] }); got != 0 {
		t.Errorf("with GOGC set: set %d, want nothing", got)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set: the runtime's target changed to %d", got)
	}
	if got := setGCPercent(func(string) string { return "" }); got != defaultGCPercent {
		t.Errorf("set %d, want %d", got, defaultGCPercent)
	}
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Errorf("the runtime's target is %d, want %d", got, defaultGCPercent)
	}
}

// TestProfileHeap: heap sampling is off unless the profiler is served.
func TestProfileHeap(t *testing.T) {
	before := runtime.MemProfileRate
	t.Cleanup(func() { runtime.MemProfileRate = before })
	cases := map[string]struct {
		addr string
		want int
	}{
		"Served": {addr: "127.0.0.1:6060", want: 512 * 1024},
		"Off":    {addr: "0"},
		"Empty":  {addr: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			runtime.MemProfileRate = 512 * 1024
			profileHeap(tc.addr)
			if runtime.MemProfileRate != tc.want {
				t.Errorf("heap sampling rate %d, want %d", runtime.MemProfileRate, tc.want)
			}
		})
	}
}
