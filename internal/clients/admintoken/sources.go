package admintoken

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// unusedFor is how long a Source no Instance asked for is kept: an
// Instance's spec changed, or it was deleted.
const unusedFor = time.Hour

// Sources are the token sources of every Instance, kept from one
// reconcile to the next so that a token is reused until it is due, and
// what the platform allows them: the commands (--admin-token-command) and
// the directories of token files (--admin-token-dir). Whoever may create
// an Instance can so run no other program in the provider's pod and
// send no other file of it (its ServiceAccount token, say) to a server
// of their choosing.
type Sources struct {
	commands []string
	dirs     []string

	mu   sync.Mutex
	m    map[string]*Source
	used map[string]time.Time
}

// NewSources returns the Sources that may run commands (absolute paths)
// and read files under dirs.
func NewSources(commands, dirs []string) *Sources {
	clean := func(in []string) []string {
		out := make([]string, 0, len(in))
		for _, p := range in {
			out = append(out, filepath.Clean(p))
		}
		return out
	}
	return &Sources{commands: clean(commands), dirs: clean(dirs), m: map[string]*Source{}, used: map[string]time.Time{}}
}

// Exec returns the Source of e, the same one for the same command,
// arguments and environment; a command the platform does not allow is
// refused, naming the flag that would.
func (s *Sources) Exec(e Exec) (*Source, error) {
	if s == nil {
		return nil, errors.New("this program runs no admin token command")
	}
	if !filepath.IsAbs(e.Command) || !slices.Contains(s.commands, filepath.Clean(e.Command)) {
		return nil, errors.Errorf("spec.adminTokenSource.exec.command %s is not a command the provider may run: the platform allows one by starting the provider with --admin-token-command=%s (allowed now: %s)",
			e.Command, e.Command, listOr(s.commands))
	}
	return s.keep(FromExec(e)), nil
}

// File returns the Source of f; a file outside the directories the
// platform allows is refused, naming the flag that would allow it.
func (s *Sources) File(f File) (*Source, error) {
	if s == nil {
		return nil, errors.New("this program reads no admin token file")
	}
	p := filepath.Clean(f.Path)
	allowed := filepath.IsAbs(p) && slices.ContainsFunc(s.dirs, func(d string) bool {
		return strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/")
	})
	if !allowed {
		return nil, errors.Errorf("spec.adminTokenSource.file.path %s is not in a directory the provider may read tokens from: the platform allows one by starting the provider with --admin-token-dir=%s (allowed now: %s)",
			f.Path, filepath.Dir(p), listOr(s.dirs))
	}
	return s.keep(FromFile(File{Path: p})), nil
}

// keep returns the Source kept with src's ID, keeping src when there is
// none, and forgets those unused for long.
func (s *Sources) keep(src *Source) *Source {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for id, at := range s.used {
		if now.Sub(at) > unusedFor {
			delete(s.m, id)
			delete(s.used, id)
		}
	}
	if kept, ok := s.m[src.ID()]; ok {
		s.used[src.ID()] = now
		return kept
	}
	s.m[src.ID()] = src
	s.used[src.ID()] = now
	return src
}

func listOr(in []string) string {
	if len(in) == 0 {
		return "none"
	}
	return strings.Join(in, ", ")
}
