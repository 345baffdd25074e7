package admintoken

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// script writes an executable shell script with body and returns its path,
// and the file each run appends a line to.
func script(t *testing.T, body string) (path, runs string) {
	t.Helper()
	dir := t.TempDir()
	path, runs = filepath.Join(dir, "token"), filepath.Join(dir, "runs")
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho run >> "+runs+"\n"+body+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return path, runs
}

func countRuns(t *testing.T, runs string) int {
	t.Helper()
	b, err := os.ReadFile(runs)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "run\n")
}

// TestExecOutput: what a command prints becomes a token and its expiry,
// or a message that repeats nothing it printed on its standard output.
func TestExecOutput(t *testing.T) {
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		body        string
		wantToken   string
		wantExpires time.Time
		wantErr     string
	}{
		"TokenOnly": {
			body: `echo 'tok-en/1+='`, wantToken: "tok-en/1+=", wantExpires: now.Add(DefaultLifetime),
		},
		"TokenAndExpiry": {
			body: `printf 'abc\n2026-12-06T10:15:00Z\n'`, wantToken: "abc", wantExpires: now.Add(15 * time.Minute),
		},
		"SurroundingBlankLines": {
			body: `printf '\n  abc  \n\n'`, wantToken: "abc", wantExpires: now.Add(DefaultLifetime),
		},
		"Nothing": {
			body: `true`, wantErr: "printed no token",
		},
		"ThreeLines": {
			body: `printf 'user\nsecret-token\nmore\n'`, wantErr: "printed 3 lines",
		},
		"SecondLineNotAnExpiry": {
			body: `printf 'admin\nsecret-token\n'`, wantErr: "second line that is not an expiry",
		},
		"Fails": {
			body: `echo secret-token; echo "denied for key s3cr3t-env" >&2; exit 3`, wantErr: "failed (exit status 3): denied for key [redacted]",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path, _ := script(t, tc.body)
			s := FromExec(Exec{Command: path, Redact: []string{"s3cr3t-env"}})
			s.now = func() time.Time { return now }
			tok, err := s.Token(context.Background())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				for _, secret := range []string{"secret-token", "s3cr3t-env"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("the error repeats %q: %v", secret, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]any{tc.wantToken, tc.wantExpires}, []any{tok, s.expires}); diff != "" {
				t.Errorf("token and expiry (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExecRenews: a token is used until shortly before it expires, then
// the command runs again; logins asking at once share one run; Forget
// runs it again at once.
func TestExecRenews(t *testing.T) {
	path, runs := script(t, `n=$(wc -l < `+"\"$RUNS\""+`); echo "token-$n"; echo "$EXPIRES"`)
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	s := FromExec(Exec{Command: path, Env: []string{"RUNS=" + filepath.Join(filepath.Dir(path), "runs"), "EXPIRES=2026-12-06T10:15:00Z"}})
	s.now = func() time.Time { return now }
	ctx := context.Background()

	var wg sync.WaitGroup
	got := make([]string, 10)
	for i := range got {
		wg.Go(func() {
			tok, err := s.Token(ctx)
			if err != nil {
				t.Error(err)
			}
			got[i] = tok
		})
	}
	wg.Wait()
	for _, tok := range got {
		if tok != "token-1" {
			t.Errorf("a concurrent login got %q, want token-1", tok)
		}
	}
	steps := []struct {
		at     time.Duration
		forget bool
		want   string
	}{
		{at: 13 * time.Minute, want: "token-1"},
		// A minute before it expires.
		{at: 14*time.Minute + time.Second, want: "token-2"},
		{at: 14*time.Minute + 2*time.Second, want: "token-2"},
		{at: 14*time.Minute + 3*time.Second, forget: true, want: "token-3"},
	}
	for _, st := range steps {
		now = time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC).Add(st.at)
		if st.at > 14*time.Minute {
			// Each run's expiry is 15 minutes after the first:
			// later runs say a later one.
			s.exec.Env[1] = "EXPIRES=" + now.Add(15*time.Minute).Format(time.RFC3339)
		}
		if st.forget {
			s.Forget()
		}
		tok, err := s.Token(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if tok != st.want {
			t.Errorf("at +%s: %q, want %q", st.at, tok, st.want)
		}
	}
	if n := countRuns(t, runs); n != 3 {
		t.Errorf("the command ran %d times, want 3", n)
	}
}

// TestFile: a file's token is read again only when the file changed, as
// an agent replacing it does; an empty or missing file is an error that
// names the file.
func TestFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	write := func(content string, mtime time.Time) {
		t.Helper()
		// As an agent does: a new file renamed over the old one.
		tmp := path + ".new"
		if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(tmp, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	s := FromFile(File{Path: path})
	ctx := context.Background()
	if _, err := s.Token(ctx); err == nil || !strings.Contains(err.Error(), "cannot read the admin token file") {
		t.Errorf("missing file: error %v", err)
	}
	base := time.Now().Add(-time.Hour)
	var got []string
	for i, content := range []string{"first\n", "second", "  third  \n"} {
		write(content, base.Add(time.Duration(i)*time.Second))
		for range 2 {
			tok, err := s.Token(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, tok)
		}
	}
	if diff := cmp.Diff([]string{"first", "first", "second", "second", "third", "third"}, got); diff != "" {
		t.Errorf("tokens read (-want +got):\n%s", diff)
	}
	write("\n", base.Add(time.Minute))
	if _, err := s.Token(ctx); err == nil || !strings.Contains(err.Error(), "holds no token") {
		t.Errorf("empty file: error %v", err)
	}
}

// TestID: the ID says what runs, never a value of its environment.
func TestID(t *testing.T) {
	a := FromExec(Exec{Command: "/bin/token", Env: []string{"KEY=s3cr3t"}})
	b := FromExec(Exec{Command: "/bin/token", Env: []string{"KEY=other"}})
	if a.ID() == b.ID() {
		t.Error("two environments share an ID: a changed Secret would keep the old pool")
	}
	if strings.Contains(a.ID(), "s3cr3t") {
		t.Errorf("the ID %q holds a value", a.ID())
	}
	if FromFile(File{Path: "/a"}).ID() == FromFile(File{Path: "/b"}).ID() {
		t.Error("two files share an ID")
	}
}

// TestSources: only the commands and directories the platform allows are
// used, and one Source serves every reconcile of the same spec.
func TestSources(t *testing.T) {
	s := NewSources([]string{"/usr/local/bin/token"}, []string{"/var/run/tokens/"})
	cases := map[string]struct {
		get     func() (*Source, error)
		wantErr string
	}{
		"AllowedCommand":  {get: func() (*Source, error) { return s.Exec(Exec{Command: "/usr/local/bin/token"}) }},
		"UncleanCommand":  {get: func() (*Source, error) { return s.Exec(Exec{Command: "/usr/local/bin/../bin/token"}) }},
		"OtherCommand":    {get: func() (*Source, error) { return s.Exec(Exec{Command: "/bin/sh"}) }, wantErr: "--admin-token-command=/bin/sh (allowed now: /usr/local/bin/token)"},
		"RelativeCommand": {get: func() (*Source, error) { return s.Exec(Exec{Command: "token"}) }, wantErr: "not a command the provider may run"},
		"FileInDir":       {get: func() (*Source, error) { return s.File(File{Path: "/var/run/tokens/admin"}) }},
		"FileInSubdir":    {get: func() (*Source, error) { return s.File(File{Path: "/var/run/tokens/..data/admin"}) }},
		"FileOutside": {get: func() (*Source, error) {
			return s.File(File{Path: "/var/run/secrets/kubernetes.io/serviceaccount/token"})
		}, wantErr: "--admin-token-dir=/var/run/secrets/kubernetes.io/serviceaccount"},
		"FileEscaping":       {get: func() (*Source, error) { return s.File(File{Path: "/var/run/tokens/../secrets/token"}) }, wantErr: "not in a directory"},
		"FileSiblingDir":     {get: func() (*Source, error) { return s.File(File{Path: "/var/run/tokens-other/admin"}) }, wantErr: "not in a directory"},
		"TheDirectoryItself": {get: func() (*Source, error) { return s.File(File{Path: "/var/run/tokens"}) }, wantErr: "not in a directory"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			src, err := tc.get()
			if tc.wantErr == "" {
				if err != nil || src == nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
	a, _ := s.Exec(Exec{Command: "/usr/local/bin/token", Args: []string{"x"}})
	b, _ := s.Exec(Exec{Command: "/usr/local/bin/token", Args: []string{"x"}})
	c, _ := s.Exec(Exec{Command: "/usr/local/bin/token", Args: []string{"y"}})
	if a != b || a == c {
		t.Errorf("the same spec gave %p and %p, another %p: want one Source per spec", a, b, c)
	}
	var none *Sources
	if _, err := none.File(File{Path: "/var/run/tokens/admin"}); err == nil {
		t.Error("no Sources read a file")
	}
}
