// Package admintoken gives an Instance's admin a password that is not kept
// in a Secret: a short-lived token that a command prints (a cloud's CLI
// generating an IAM login token) or that a file holds (kept current by the
// platform's own agent). A Source is asked for the token each time a new
// server connection logs in, and runs the command or reads the file again
// only when the token it holds is about to expire or the file changed.
//
// A token is a password: it is never logged, never put in an error, and
// an error of the command repeats none of what it printed on its standard
// output.
package admintoken

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// DefaultLifetime is how long a token whose command gave no expiry is
// used before the command runs again: well within the shortest lifetime
// of the clouds' login tokens (15 minutes for an RDS IAM token).
const DefaultLifetime = 5 * time.Minute

// renewBefore is how long before its expiry a token is renewed; a quarter
// of its lifetime when that is shorter, so a token valid for a minute is
// not renewed at every login.
const renewBefore = time.Minute

// execTimeout bounds one run of a command.
const execTimeout = 30 * time.Second

// maxToken bounds what is read as a token: a cloud's login token is a few
// kilobytes at most.
const maxToken = 64 << 10

// An Exec is a command whose standard output is the token: its first line,
// and optionally, on the second, the moment the token expires (RFC 3339).
type Exec struct {
	// Command is an absolute path, run directly (no shell).
	Command string
	Args    []string
	// Env is the command's whole environment, NAME=value: nothing of the
	// provider's own is passed on but PATH and HOME.
	Env []string
	// Redact are values (from a Secret) that a message about the command
	// never repeats, even when the command printed them on its error
	// output.
	Redact []string
	// Lifetime is how long a token without an expiry line is used;
	// DefaultLifetime when zero.
	Lifetime time.Duration
}

// A File holds the token (surrounding white space is not part of it).
type File struct {
	Path string
}

// A Source gives the current token of one Exec or File. It is safe for
// concurrent use: logins that need a token at the same moment share one
// run of the command.
type Source struct {
	exec *Exec
	file *File
	id   string
	now  func() time.Time

	mu    sync.Mutex
	token string
	// got is when the token was obtained, expires when it expires.
	got, expires time.Time
	// stat is the file's size and modification time when it was read.
	stat string
}

// FromExec returns the Source of e.
func FromExec(e Exec) *Source {
	return &Source{exec: &e, id: digest("exec", e.Command, e.Args, e.Env, e.Lifetime), now: time.Now}
}

// FromFile returns the Source of f.
func FromFile(f File) *Source {
	return &Source{file: &f, id: digest("file", f.Path), now: time.Now}
}

// ID identifies the source, not the token: two Sources with the same ID
// run the same command with the same arguments and environment, or read
// the same file. It holds no value of the environment, only a digest.
func (s *Source) ID() string { return s.id }

// Token returns the token to log in with now.
func (s *Source) Token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file != nil {
		return s.readFile()
	}
	if s.token != "" && s.now().Before(s.renewAt()) {
		return s.token, nil
	}
	got := s.now()
	tok, exp, err := s.run(ctx, got)
	if err != nil {
		return "", err
	}
	s.token, s.got, s.expires = tok, got, exp
	return tok, nil
}

// Forget drops the token held, so that the next login asks for a new one:
// the server refused it (revoked, or the platform rotated the password
// behind the token before it expired).
func (s *Source) Forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token, s.got, s.expires, s.stat = "", time.Time{}, time.Time{}, ""
}

// renewAt is when the token held is renewed.
func (s *Source) renewAt() time.Time {
	return s.expires.Add(-min(renewBefore, s.expires.Sub(s.got)/4))
}

func (s *Source) readFile() (string, error) {
	fi, err := os.Stat(s.file.Path)
	if err != nil {
		return "", errors.Wrapf(err, "cannot read the admin token file")
	}
	// Projected volumes and agents replace the file (a new inode, a new
	// modification time): size and time say whether it changed.
	stat := fmt.Sprintf("%d/%d", fi.Size(), fi.ModTime().UnixNano())
	if s.token != "" && stat == s.stat {
		return s.token, nil
	}
	if fi.Size() > maxToken {
		return "", errors.Errorf("the admin token file %s is %d bytes, more than a token's %d", s.file.Path, fi.Size(), maxToken)
	}
	b, err := os.ReadFile(s.file.Path)
	if err != nil {
		return "", errors.Wrapf(err, "cannot read the admin token file")
	}
	tok := strings.TrimSpace(string(b))
	if err := valid(tok); err != nil {
		return "", errors.Wrapf(err, "the admin token file %s", s.file.Path)
	}
	s.token, s.stat = tok, stat
	return tok, nil
}

// run runs the command once and returns its token and when it expires.
func (s *Source) run(ctx context.Context, started time.Time) (string, time.Time, error) {
	e := s.exec
	ctx, cancel := context.WithTimeout(ctx, execTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.Command, e.Args...) //nolint:gosec // The platform allows the command (--admin-token-command); no shell runs it.
	cmd.Env = e.Env
	var stdout, stderr limited
	stdout.max, stderr.max = maxToken, 4<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", time.Time{}, errors.Errorf("the admin token command %s did not finish within %s", e.Command, execTimeout)
		}
		return "", time.Time{}, errors.Errorf("the admin token command %s failed (%v)%s", e.Command, exitOf(err), s.said(stderr.Bytes()))
	}
	if stdout.over {
		return "", time.Time{}, errors.Errorf("the admin token command %s printed more than a token's %d bytes", e.Command, maxToken)
	}
	tok, exp, err := parse(stdout.Bytes())
	if err != nil {
		return "", time.Time{}, errors.Wrapf(err, "the admin token command %s", e.Command)
	}
	if exp.IsZero() {
		exp = started.Add(cmp.Or(e.Lifetime, DefaultLifetime))
	}
	return tok, exp, nil
}

// parse reads a command's output: the token on the first line, an optional
// expiry on the second.
func parse(out []byte) (string, time.Time, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), maxToken)
	var lines []string
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return "", time.Time{}, errors.New("printed no token")
	}
	if len(lines) > 2 {
		return "", time.Time{}, errors.Errorf("printed %d lines; want the token, then optionally when it expires (RFC 3339)", len(lines))
	}
	if err := valid(lines[0]); err != nil {
		return "", time.Time{}, err
	}
	var exp time.Time
	if len(lines) == 2 {
		t, err := time.Parse(time.RFC3339, lines[1])
		if err != nil {
			// Not repeated: a command that prints a user name first
			// has the token on its second line.
			return "", time.Time{}, errors.New("printed a second line that is not an expiry in RFC 3339 (such as 2026-12-06T10:00:00Z)")
		}
		exp = t
	}
	return lines[0], exp, nil
}

// valid refuses what cannot be a password: nothing, or bytes the server
// would refuse or that would end it early.
func valid(tok string) error {
	switch {
	case tok == "":
		return errors.New("holds no token")
	case !utf8.ValidString(tok) || strings.ContainsAny(tok, "\x00\r\n"):
		return errors.New("holds a token that is not one line of text")
	}
	return nil
}

// said is the first line of what a failed command printed on its error
// output, redacted, for the message.
func (s *Source) said(stderr []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(stderr)), "\n")
	for _, v := range s.exec.Redact {
		if v != "" {
			line = strings.ReplaceAll(line, v, "[redacted]")
		}
	}
	if line == "" {
		return ""
	}
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	return ": " + line
}

func exitOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Sprintf("exit status %d", ee.ExitCode())
	}
	// It did not start: the path and why, never an argument.
	return err.Error()
}

// digest identifies what a source runs or reads.
func digest(parts ...any) string {
	h := sha256.New()
	for _, p := range parts {
		_, _ = fmt.Fprintf(h, "%q\x00", p)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// limited is a buffer that keeps at most max bytes and says whether more
// came.
type limited struct {
	bytes.Buffer
	max  int
	over bool
}

// Write takes all of p, keeping what fits: the command is not stopped by
// a short write, its output is refused afterwards.
func (l *limited) Write(p []byte) (int, error) {
	n := len(p)
	if room := l.max - l.Len(); n > room {
		l.over = true
		p = p[:max(room, 0)]
	}
	_, _ = l.Buffer.Write(p)
	return n, nil
}
